package translate

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// stringStreams returns one upstream stream per dialect whose thinking
// and text deltas are the JSON string body s (the bytes between the
// quotes, as the upstream wrote them) and whose one tool call's
// arguments are the JSON string body args; each ends with a tool-call
// stop and usage 10 in, 4 out.
func stringStreams(s, args string) map[Dialect]string {
	return map[Dialect]string{
		OpenAIChat: ccChunk(`{"role":"assistant","reasoning_content":"`+s+`"}`, "", "") +
			ccChunk(`{"content":"`+s+`"}`, "", "") +
			ccChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"`+args+`"}}]}`, "", "") +
			ccChunk(`{}`, "tool_calls", "") +
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14}}` + "\n\n" +
			"data: [DONE]\n\n",
		AnthropicMessages: amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"up","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`) +
			amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`) +
			amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"`+s+`"}}`) +
			amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`) +
			amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
			amEv("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`) +
			amEv("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"`+s+`"}}`) +
			amEv("content_block_stop", `{"type":"content_block_stop","index":1}`) +
			amEv("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`) +
			amEv("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"`+args+`"}}`) +
			amEv("content_block_stop", `{"type":"content_block_stop","index":2}`) +
			amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":4}}`) +
			amEv("message_stop", `{"type":"message_stop"}`),
		OpenAIResponses: rsPreamble +
			rsEv("response.output_item.added", 2, `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}`) +
			rsEv("response.reasoning_summary_part.added", 3, `,"item_id":"rs_1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}`) +
			rsEv("response.reasoning_summary_text.delta", 4, `,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"`+s+`"`) +
			rsEv("response.output_item.done", 5, `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"`+s+`"}]}`) +
			rsEv("response.output_item.added", 6, `,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`) +
			rsEv("response.output_text.delta", 7, `,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"`+s+`"`) +
			rsEv("response.output_item.done", 8, `,"output_index":1,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"`+s+`","annotations":[]}]}`) +
			rsEv("response.output_item.added", 9, `,"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"f","arguments":""}`) +
			rsEv("response.function_call_arguments.delta", 10, `,"item_id":"fc_1","output_index":2,"delta":"`+args+`"`) +
			rsEv("response.output_item.done", 11, `,"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"f","arguments":"`+args+`"}`) +
			rsEv("response.completed", 12, `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"up","output":[],"usage":{"input_tokens":10,"output_tokens":4,"total_tokens":14}}`),
	}
}

// TestStreamStringsKeepTheirText: a string in an upstream's stream event
// that holds a raw control byte (invalid JSON, RFC 8259 section 7) and
// an escape after it, or an escape RFC 8259 does not define, reaches the
// client (official SDKs) whole, as the upstream wrote it: gjson's
// unescaper stopped at the byte and the rest of the text, thinking or
// arguments was lost ("a\x01b\nc" came out as "a"). A valid string is
// read as encoding/json reads it.
func TestStreamStringsKeepTheirText(t *testing.T) {
	cases := []struct{ raw, want, args, wantArgs string }{
		{"a\x01b\\nc", "a\x01b\nc", `{\"q\":\t\"x\\\"y\"}`, `{"q":"x\"y"}`},
		{"\x1f\\u00e9\\\" end", "\x1fé\" end", "{\\\"q\\\":\\\"\\\\u00e9\\\"}\t", `{"q":"é"}`},
		{`x\qy\n`, "x\\qy\n", `{\"q\": 1}`, `{"q":1}`},
		{`tail\u12`, `tail\u12`, `{}`, `{}`},
		{"tab\there\\t\\ud83d\\ude00", "tab\there\t\U0001F600", `{}`, `{}`},
		{"plain \\\\ \\/ \\b\\f\\r", "plain \\ / \b\f\r", `{}`, `{}`},
	}
	for _, c := range cases {
		for from, in := range stringStreams(c.raw, c.args) {
			for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
				if from == to {
					continue
				}
				out, tr, err := run(t, from, to, in)
				if err != nil || tr.UpstreamError() != nil || tr.Truncated() {
					t.Fatalf("%q %s → %s: %v %v", c.raw, from, to, err, tr.UpstreamError())
				}
				s := parseOK(t, to, out)
				if s.text != c.want || s.thinking != c.want {
					t.Errorf("%q %s → %s: text %q thinking %q, want %q", c.raw, from, to, s.text, s.thinking, c.want)
				}
				if len(s.tools) != 1 || !jsonEqual(s.tools[0].args, c.wantArgs) {
					t.Errorf("%q %s → %s: tools %+v, want args %s", c.raw, from, to, s.tools, c.wantArgs)
				}
			}
		}
	}
}

// TestLenientStringsLeavesValidJSON: valid JSON is returned as it is,
// without a copy, white space and escapes included.
func TestLenientStringsLeavesValidJSON(t *testing.T) {
	for _, in := range []string{`{"a":"x\ny\u00e9\"\\\/"}`, "{\"a\" : [1, 2]}", ``, `"\ud83d\ude00"`} {
		if out, copied := lenientStrings([]byte(in), nil); copied || string(out) != in {
			t.Errorf("%q: %q copied %v", in, out, copied)
		}
	}
	// white space between data: lines stays white space
	if out, _ := lenientStrings([]byte("{\"a\":\n\"b\x01\"}"), nil); string(out) != `{"a":`+"\n"+`"b\u0001"}` {
		t.Errorf("got %q", out)
	}
}

// FuzzStreamStringText: any text s, written by encoding/json into a
// Chat upstream's content delta, reaches an Anthropic and a Responses
// client as encoding/json reads that delta back (invalid UTF-8 as U+FFFD,
// byte by byte); the same delta with its control characters written raw
// (save \n and \r, which would end the SSE line) reads the same.
func FuzzStreamStringText(f *testing.F) {
	for _, s := range []string{"a\x01b\nc", "\x1f\"é\\", "\U0001F600\u2028", "\xff\xfe", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		want = string([]rune(want))
		body := string(b[1 : len(b)-1])
		var raw strings.Builder // each rune as encoding/json writes it, control characters raw
		for rest := s; rest != ""; {
			r, n := utf8.DecodeRuneInString(rest)
			if r < 0x20 && r != '\n' && r != '\r' {
				raw.WriteByte(byte(r))
			} else {
				e, _ := json.Marshal(rest[:n])
				raw.Write(e[1 : len(e)-1])
			}
			rest = rest[n:]
		}
		for _, in := range []string{body, raw.String()} {
			up := ccChunk(`{"role":"assistant","content":"`+in+`"}`, "", "") + ccChunk(`{}`, "stop", "") + "data: [DONE]\n\n"
			for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
				out, tr, err := run(t, OpenAIChat, to, up)
				if err != nil || tr.UpstreamError() != nil {
					t.Fatalf("%q → %s: %v %v", in, to, err, tr.UpstreamError())
				}
				if want == "" {
					continue // no text block
				}
				got := parseOK(t, to, out).text
				if !utf8.ValidString(got) || got != want {
					t.Fatalf("%q → %s: text %q, want %q", in, to, got, want)
				}
			}
		}
	})
}
