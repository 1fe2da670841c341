package translate

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tidwall/gjson"
)

func ccChunk(delta string, finish string, extra string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}]` + extra + "}\n\n"
}

const ccUsage = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14,"prompt_tokens_details":{"cached_tokens":6}}}` + "\n\n"

func amEv(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }

func run(t *testing.T, from, to Dialect, in string) (string, *StreamTranslator, error) {
	t.Helper()
	out, _, tr, err := collect(t, from, to, "client-model", strings.NewReader(in))
	return string(out), tr, err
}

// every translated stream must parse with the client SDK
func parseOK(t *testing.T, to Dialect, out string) summary {
	t.Helper()
	return clientSummary(t, to, []byte(out))
}

func TestChatUpstreamReasoningVariants(t *testing.T) {
	for _, field := range []string{`{"reasoning_content":"R1"}`, `{"reasoning":"R1"}`, `{"reasoning_details":[{"type":"reasoning.text","text":"R1"}]}`} {
		in := ccChunk(`{"role":"assistant","content":""}`, "", "") + ccChunk(field, "", "") + ccChunk(`{"content":"hello"}`, "", "") + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n"
		for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
			out, _, err := run(t, OpenAIChat, to, in)
			if err != nil {
				t.Fatal(err)
			}
			s := parseOK(t, to, out)
			if s.thinking != "R1" || s.text != "hello" || s.stop != "stop" {
				t.Errorf("%s %s: %+v", field, to, s)
			}
		}
	}
}

func TestChatUpstreamUsageVariants(t *testing.T) {
	base := ccChunk(`{"role":"assistant","content":"hi"}`, "", "")
	cases := map[string]string{
		"trailing usage chunk":         base + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n",
		"usage null until last":        strings.ReplaceAll(base+ccChunk(`{}`, "stop", ""), "]}\n", `],"usage":null}`+"\n") + ccUsage + "data: [DONE]\n\n",
		"usage on finish chunk":        base + ccChunk(`{}`, "stop", `,"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":6}}`) + "data: [DONE]\n\n",
		"no DONE, no final blank line": base + ccChunk(`{}`, "stop", "") + strings.TrimRight(ccUsage, "\n"),
	}
	for name, in := range cases {
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
			out, tr, err := run(t, OpenAIChat, to, in)
			if err != nil {
				t.Fatal(name, err)
			}
			u := tr.Usage()
			if u.InputTokens == nil || *u.InputTokens != 10 || *u.OutputTokens != 4 || *u.CacheReadTokens != 6 || u.CacheWriteTokens != nil || u.ReasoningTokens != nil {
				t.Errorf("%s → %s: usage %v", name, to, u)
			}
			if name == "no DONE, no final blank line" && to == OpenAIChat {
				// passed through as the upstream ended it: whole after its
				// finish reason, nothing added (no [DONE] it did not send);
				// the last event, cut at the end of input, is dispatched
				// with its blank line
				same, _, tr, _ := collect(t, OpenAIChat, to, "", strings.NewReader(in))
				if tr.Truncated() || string(same) != in+"\n\n" {
					t.Errorf("%s → %s: truncated %v:\n%s", name, to, tr.Truncated(), same)
				}
				continue
			}
			s := parseOK(t, to, out)
			if s.in == nil || *s.in != 10 || *s.out != 4 {
				t.Errorf("%s → %s: client usage %v %v\n%s", name, to, p(s.in), p(s.out), out)
			}
			if to == AnthropicMessages && !strings.Contains(out, `"cache_read_input_tokens":6`) {
				t.Errorf("%s: cache read not reported: %s", name, out)
			}
			if to == AnthropicMessages && strings.Contains(out, `cache_creation_input_tokens`) {
				t.Errorf("%s: unreported cache write invented", name)
			}
		}
	}
}

func TestChatUpstreamNoUsage(t *testing.T) {
	in := ccChunk(`{"role":"assistant","content":"hi"}`, "", "") + ccChunk(`{}`, "stop", "") + "data: [DONE]\n\n"
	out, tr, _ := run(t, OpenAIChat, OpenAIChat, in)
	if !tr.Usage().IsZero() {
		t.Error("usage invented")
	}
	_ = out
	out, _, _ = run(t, OpenAIChat, OpenAIResponses, in)
	if !strings.Contains(out, `"usage":null`) || strings.Contains(out, `"input_tokens":0`) {
		t.Errorf("usage must stay null: %s", out)
	}
	out, _, _ = run(t, OpenAIChat, AnthropicMessages, in)
	md := gjson.Get(strings.Split(strings.Split(out, "event: message_delta\ndata: ")[1], "\n")[0], "usage")
	if md.Raw != `{"output_tokens":0}` { // the schema requires output_tokens
		t.Errorf("message_delta usage invented: %s", md.Raw)
	}
}

func TestChatUpstreamTruncated(t *testing.T) {
	// no finish_reason, no [DONE], no final blank line, mid tool call: a
	// truncation, relayed as an error in every dialect (never as a finish
	// with the half-streamed tool call)
	in := ccChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"f","arguments":""}}]}`, "", "") +
		strings.TrimRight(ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}`, "", ""), "\n")
	for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		out, tr, err := run(t, OpenAIChat, to, in)
		if err != nil || !tr.Truncated() {
			t.Fatal(err, tr.Truncated())
		}
		sdkErr, finished := sdkOutcome(to, []byte(out))
		if sdkErr == nil || finished || !strings.Contains(sdkErr.Error(), "without a finish reason") {
			t.Errorf("%s: SDK error %v finished %v\n%s", to, sdkErr, finished, out)
		}
		if strings.Contains(out, `"finish_reason":"tool_calls"`) || strings.Contains(out, "[DONE]") || strings.Contains(out, "message_stop") || strings.Contains(out, "response.completed") {
			t.Errorf("%s: closed as a normal finish:\n%s", to, out)
		}
	}
}

func TestChatUpstreamToolIndexes(t *testing.T) {
	// index starting at 1 (Anthropic's compat layer) and interleaved calls
	in := ccChunk(`{"role":"assistant","content":"ok "}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":1,"id":"call_a","type":"function","function":{"name":"fa","arguments":"{\"x\""}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":2,"id":"call_b","type":"function","function":{"name":"fb","arguments":"{\"y\""}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":1,"function":{"arguments":":1}"}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":2,"function":{"arguments":":2}"}}]}`, "", "") +
		ccChunk(`{}`, "tool_calls", "") + "data: [DONE]\n\n"
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		out, _, err := run(t, OpenAIChat, to, in)
		if err != nil {
			t.Fatal(err)
		}
		s := parseOK(t, to, out)
		if len(s.tools) != 2 || s.tools[0] != (toolSum{"fa", `{"x":1}`}) || s.tools[1] != (toolSum{"fb", `{"y":2}`}) || s.text != "ok " {
			t.Errorf("%s: %+v\n%s", to, s, out)
		}
	}
}

func TestChatUpstreamAzureFirstChunk(t *testing.T) {
	in := `data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[]}` + "\n\n" +
		ccChunk(`{"role":"assistant","content":"x"}`, "", "") + ccChunk(`{}`, "stop", "") + "data: [DONE]\n\n"
	out, _, _ := run(t, OpenAIChat, AnthropicMessages, in)
	s := parseOK(t, AnthropicMessages, out)
	if s.text != "x" || !strings.Contains(out, `"id":"msg_1"`) {
		t.Errorf("%+v %s", s, out)
	}
}

func TestUpstreamErrorMidStream(t *testing.T) {
	ccIn := ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + `data: {"error":{"message":"Rate limit reached for sk-abcdefghijklmnop","type":"requests","code":"rate_limit_exceeded"}}` + "\n\n"
	amIn := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","model":"c","usage":{"input_tokens":3,"output_tokens":1}}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"partial"}}`) +
		amEv("error", `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`)
	for from, in := range map[Dialect]string{OpenAIChat: ccIn, AnthropicMessages: amIn} {
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
			out, _, err := run(t, from, to, in)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "sk-abcdefghijklmnop") {
				t.Errorf("secret leaked: %s", out)
			}
			switch to {
			case OpenAIChat:
				// the error chunk is the last one: no [DONE]
				if !strings.HasSuffix(out, "\n\n") || !strings.HasPrefix(out[strings.LastIndex(out[:len(out)-2], "\n\n")+2:], `data: {"error":{`) || strings.Contains(out, "[DONE]") {
					t.Errorf("%s→chat: %s", from, out)
				}
			case AnthropicMessages:
				// Anthropic's own API ends the stream at the error event
				if !strings.Contains(out, "event: error\ndata: {\"type\":") || strings.Contains(out, "message_stop") ||
					!strings.HasPrefix(out[strings.LastIndex(out[:len(out)-2], "\n\n")+2:], "event: error\n") {
					t.Errorf("%s→anthropic: %s", from, out)
				}
				if from == AnthropicMessages {
					continue
				}
				if from == OpenAIChat && !strings.Contains(out, `"rate_limit_error"`) {
					t.Errorf("class lost: %s", out)
				}
			case OpenAIResponses:
				if !strings.Contains(out, "event: error\n") || !strings.Contains(out, "event: response.failed\n") {
					t.Errorf("%s→responses: %s", from, out)
				}
			}
			// the SDKs surface it as an error
			if to == AnthropicMessages && from == OpenAIChat {
				if !strings.Contains(out, "rate_limit_error") {
					t.Error(out)
				}
			}
		}
	}
}

func TestUpstreamReadError(t *testing.T) {
	boom := errors.New("connection reset")
	for _, from := range []Dialect{OpenAIChat, AnthropicMessages} {
		in := ccChunk(`{"role":"assistant","content":"par"}`, "", "")
		if from == AnthropicMessages {
			in = amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","model":"c","usage":{"input_tokens":3,"output_tokens":1}}}`)
		}
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
			out, _, tr, err := collect(t, from, to, "m", io.MultiReader(strings.NewReader(in), iotest.ErrReader(boom)))
			if err != boom {
				t.Errorf("%s→%s: err %v", from, to, err)
			}
			if tr.EventsWritten() == 0 || !strings.Contains(string(out), "error") {
				t.Errorf("%s→%s: %s", from, to, out)
			}
			switch to {
			case OpenAIChat:
				if strings.Contains(string(out), "[DONE]") || !strings.HasSuffix(string(out), `"code":"upstream_unavailable"}}`+"\n\n") {
					t.Errorf("not an error chunk at the end: %s", out)
				}
			case AnthropicMessages:
				if strings.Contains(string(out), "message_stop") {
					t.Errorf("message_stop after the error: %s", out)
				}
			case OpenAIResponses:
				if !strings.Contains(string(out), "response.failed") {
					t.Errorf("no response.failed: %s", out)
				}
			}
		}
	}
}

func TestEmptyUpstream(t *testing.T) {
	for _, from := range []Dialect{OpenAIChat, AnthropicMessages} {
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
			out, _, err := run(t, from, to, "")
			if err != nil || !strings.Contains(out, "error") {
				t.Errorf("%s→%s: %v %q", from, to, err, out)
			}
		}
	}
}

func TestAnthropicUpstreamEdgeCases(t *testing.T) {
	start := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":1}}}`)
	// max_tokens inside a tool call with no content_block_stop (MAPPING §6 #6)
	trunc := start + amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\": \"unfin"}}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":50}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	for _, to := range []Dialect{OpenAIChat, OpenAIResponses} {
		out, tr, _ := run(t, AnthropicMessages, to, trunc)
		u := tr.Usage()
		if *u.InputTokens != 123 || *u.OutputTokens != 50 || *u.CacheReadTokens != 100 || *u.CacheWriteTokens != 20 {
			t.Errorf("usage %v", u)
		}
		if to == OpenAIChat {
			if !strings.Contains(out, `"finish_reason":"length"`) || !strings.Contains(out, `"prompt_tokens":123`) || !strings.Contains(out, `"cache_write_tokens":20`) {
				t.Errorf("chat: %s", out)
			}
			continue
		}
		if !strings.Contains(out, "response.incomplete") || !strings.Contains(out, `"reason":"max_output_tokens"`) {
			t.Errorf("responses: %s", out)
		}
	}
	// stop_sequence survives
	seq := start + amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"###"},"usage":{"output_tokens":2}}`)
	out, _, _ := run(t, AnthropicMessages, OpenAIChat, seq+amEv("message_stop", `{"type":"message_stop"}`))
	s := parseOK(t, OpenAIChat, out)
	if s.text != "x" || s.stop != "stop" || !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Errorf("%+v %s", s, out)
	}
	// without its message_stop, after its finish: whole, and the client
	// gets its terminator (an upstream that leaves its terminal event out)
	if out, tr, _ := run(t, AnthropicMessages, OpenAIChat, seq); tr.Truncated() || !strings.HasSuffix(out, "data: [DONE]\n\n") || strings.Contains(out, `"error"`) {
		t.Errorf("no message_stop: %s", out)
	}
	// passed through, it is left as the upstream ended it
	if out, _, tr, _ := collect(t, AnthropicMessages, AnthropicMessages, "", strings.NewReader(seq)); tr.Truncated() || string(out) != seq {
		t.Errorf("no message_stop, passthrough: %s", out)
	}
	// server tool blocks are skipped, redacted thinking does not break indexes
	srv := start + amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"abc"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"found"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":2}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"pause_turn"},"usage":{"output_tokens":2}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	for _, to := range []Dialect{OpenAIChat, OpenAIResponses} {
		out, _, _ := run(t, AnthropicMessages, to, srv)
		s := parseOK(t, to, out)
		if s.text != "found" || len(s.tools) != 0 || s.stop != "stop" {
			t.Errorf("%s: %+v\n%s", to, s, out)
		}
	}
}

func TestStreamWriterError(t *testing.T) {
	gone := errors.New("client gone")
	n := 0
	tr := NewStreamTranslator(OpenAIChat, AnthropicMessages, "m", EventWriterFunc(func(p []byte) error {
		n++
		if n == 3 {
			return gone
		}
		return nil
	}))
	in := ccChunk(`{"role":"assistant","content":"a"}`, "", "") + ccChunk(`{"content":"b"}`, "", "") + ccChunk(`{"content":"c"}`, "", "") + ccChunk(`{}`, "stop", "")
	if err := tr.Run(strings.NewReader(in)); err != gone {
		t.Fatalf("got %v", err)
	}
	if tr.EventsWritten() != 2 || n != 3 {
		t.Errorf("events %d calls %d", tr.EventsWritten(), n)
	}
}

func TestEventsAreWholeSSEBlocks(t *testing.T) {
	in := ccChunk(`{"role":"assistant","content":"a"}`, "", "") + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n"
	for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		_, evs, _, _ := collect(t, OpenAIChat, to, "m", strings.NewReader(in))
		for _, e := range evs {
			got := readAllEvents(t, bytes.NewReader(e))
			if len(got) != 1 || !bytes.HasSuffix(e, []byte("\n\n")) {
				t.Errorf("%s: WriteEvent got %d events: %q", to, len(got), e)
			}
		}
	}
}

func TestAnthropicUsageOnlyOnMessageDelta(t *testing.T) {
	in := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","model":"c","content":[]}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":2}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	for _, to := range []Dialect{OpenAIChat, OpenAIResponses} {
		out, tr, _ := run(t, AnthropicMessages, to, in)
		u := tr.Usage()
		if *u.InputTokens != 10 || *u.CacheReadTokens != 3 || *u.OutputTokens != 2 || u.CacheWriteTokens != nil {
			t.Errorf("%s: %v", to, u)
		}
		s := parseOK(t, to, out)
		if *s.in != 10 || *s.out != 2 {
			t.Errorf("%s: %v %v", to, p(s.in), p(s.out))
		}
	}
}

func TestChatUpstreamReusedToolIndex(t *testing.T) {
	// some providers number every call 0 and tell them apart by id
	in := ccChunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"fa","arguments":"{\"x\":1}"}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"id":"call_b","type":"function","function":{"name":"fb","arguments":"{\"y\":2}"}}]}`, "", "") +
		ccChunk(`{}`, "tool_calls", "") + "data: [DONE]\n\n"
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		out, _, _ := run(t, OpenAIChat, to, in)
		s := parseOK(t, to, out)
		if len(s.tools) != 2 || s.tools[0] != (toolSum{"fa", `{"x":1}`}) || s.tools[1] != (toolSum{"fb", `{"y":2}`}) {
			t.Errorf("%s: %+v", to, s)
		}
	}
}

func TestChatUpstreamNullErrorAndEmptyReasoning(t *testing.T) {
	in := ccChunk(`{"role":"assistant","content":"","reasoning_content":"","reasoning":"R"}`, "", `,"error":null`) +
		ccChunk(`{"content":"ok"}`, "", `,"error":null`) + ccChunk(`{}`, "stop", "") + "data: [DONE]\n\n"
	out, _, _ := run(t, OpenAIChat, AnthropicMessages, in)
	s := parseOK(t, AnthropicMessages, out)
	if s.text != "ok" || s.thinking != "R" {
		t.Errorf("%+v\n%s", s, out)
	}
	out, _, _ = run(t, OpenAIChat, OpenAIChat, in)
	if strings.Contains(out, "upstream") || !strings.Contains(out, `"content":"ok"`) {
		t.Errorf("passthrough: %s", out)
	}
}
