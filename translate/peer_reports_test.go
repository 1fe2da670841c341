package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Tests for translation defects public gateway bug reports describe
// (LiteLLM, CLIProxyAPI, claude-code-router, new-api, Bifrost): each names
// the report it reproduces.

// An upstream that ends a turn with tool calls but finish_reason "stop"
// (Gemini's and Ollama's OpenAI-compatible endpoints do; LiteLLM
// issue 21041 and pull request 34718) or stop_reason "end_turn" must
// still tell the client to run the tools: Anthropic clients (Claude
// Code) run tool_use blocks only on stop_reason "tool_use", and OpenAI
// clients key off finish_reason "tool_calls".
func TestToolCallsWithStopFinishAreToolUse(t *testing.T) {
	call := `{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`
	in := ccChunk(call, "", "") + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n"
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		out, _, err := run(t, OpenAIChat, to, in)
		if err != nil {
			t.Fatal(err)
		}
		if s := parseOK(t, to, out); s.stop != "tool" || len(s.tools) != 1 || s.tools[0].args != `{"a":1}` {
			t.Errorf("Chat stream to %s: %+v", to, s)
		}
	}
	body := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}]}`
	out, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(body), "cm")
	if err != nil || gjson.GetBytes(out, "stop_reason").Str != "tool_use" {
		t.Errorf("Chat answer to Anthropic: %v %s", err, out)
	}

	// the same from an Anthropic-compatible upstream: end_turn after tool_use
	am := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	sout, _, err := run(t, AnthropicMessages, OpenAIChat, am)
	if err != nil {
		t.Fatal(err)
	}
	if s := parseOK(t, OpenAIChat, sout); s.stop != "tool" {
		t.Errorf("Anthropic stream to Chat: %+v", s)
	}
	amBody := `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":9}}`
	out, _, err = TranslateResponse(AnthropicMessages, OpenAIChat, []byte(amBody), "cm")
	if err != nil || gjson.GetBytes(out, "choices.0.finish_reason").Str != "tool_calls" {
		t.Errorf("Anthropic answer to Chat: %v %s", err, out)
	}
	// finish reasons that say something else are kept
	trunc := ccChunk(call, "", "") + ccChunk(`{}`, "length", "") + ccUsage + "data: [DONE]\n\n"
	out2, _, _ := run(t, OpenAIChat, AnthropicMessages, trunc)
	if s := parseOK(t, AnthropicMessages, out2); s.stop != "length" {
		t.Errorf("length with a tool call: %+v", s)
	}
}

// Anthropic takes only image/jpeg, image/png, image/gif and image/webp as
// an image's media_type and refuses data that does not match it ("Image
// does not match the provided media type"). OpenAI clients label JPEG
// data URLs image/jpg, or send another type than the bytes hold
// (NousResearch/hermes-agent issue 55432; anthropics/claude-code issues
// 12015, 13131): the type sent is the one the bytes show, else the label
// normalised.
func TestImageMediaTypeForAnthropic(t *testing.T) {
	const (
		png  = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGAAAAAFAAE="
		jpeg = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJ"
		gif  = "R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs="
		webp = "UklGRiQAAABXRUJQVlA4IBgAAAAwAQCdASoBAAEAAwA0JaQAA3AA/vuUAAA="
		text = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="
	)
	for _, c := range []struct{ label, data, want string }{
		{"image/jpg", jpeg, "image/jpeg"},
		{"image/png", jpeg, "image/jpeg"}, // the bytes win
		{"image/jpeg", png, "image/png"},
		{"application/octet-stream", gif, "image/gif"},
		{"", webp, "image/webp"},
		{"IMAGE/JPG", text, "image/jpeg"}, // unknown bytes: the label, normalised
		{"image/PNG", text, "image/png"},
		{"image/webp", webp, "image/webp"},
	} {
		for _, from := range []Dialect{OpenAIChat, OpenAIResponses} {
			url := "data:" + c.label + ";base64," + c.data
			body := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}}]}]}`
			if from == OpenAIResponses {
				body = `{"model":"claude-sonnet-4-5","input":[{"role":"user","content":[{"type":"input_image","image_url":"` + url + `"}]}]}`
			}
			out, err := TranslateRequest(from, AnthropicMessages, []byte(body), "")
			if err != nil {
				t.Fatalf("%s %s: %v", from, c.label, err)
			}
			src := gjson.GetBytes(out, "messages.0.content.0.source")
			if src.Get("media_type").Str != c.want || src.Get("data").Str != c.data {
				t.Errorf("%s %q: source %s, want media_type %s", from, c.label, src.Raw, c.want)
			}
		}
	}
}

// Responses upstreams that stream function-call arguments in other
// shapes than OpenAI's: arguments only in
// response.function_call_arguments.done with an output_item.done that
// does not repeat them (LM Studio, Codex Spark: LiteLLM issue 25321,
// Gitlawb/openclaude issue 1259), and two calls whose output items are
// open at once with their argument deltas interleaved (parallel calls
// streamed by output_index). Every call reaches the client with its
// arguments, as the official SDKs accumulate them.
func TestResponsesUpstreamFunctionCallShapes(t *testing.T) {
	fc := func(seq, idx int, id, call, name string) string {
		return rsEv("response.output_item.added", seq, `,"output_index":`+itoa(idx)+`,"item":{"id":"`+id+`","type":"function_call","status":"in_progress","call_id":"`+call+`","name":"`+name+`","arguments":""}`)
	}
	delta := func(seq, idx int, id, d string) string {
		return rsEv("response.function_call_arguments.delta", seq, `,"item_id":"`+id+`","output_index":`+itoa(idx)+`,"delta":"`+d+`"`)
	}
	argsDone := func(seq, idx int, id, a string) string {
		return rsEv("response.function_call_arguments.done", seq, `,"item_id":"`+id+`","output_index":`+itoa(idx)+`,"arguments":"`+a+`"`)
	}
	itemDone := func(seq, idx int, id, call, name, args string) string {
		a := ""
		if args != "" {
			a = `,"arguments":"` + args + `"`
		}
		return rsEv("response.output_item.done", seq, `,"output_index":`+itoa(idx)+`,"item":{"id":"`+id+`","type":"function_call","status":"completed","call_id":"`+call+`","name":"`+name+`"`+a+`}`)
	}
	end := rsEv("response.completed", 20, rsDone)
	a1, a2 := `{\"a\":1}`, `{\"b\":[2,3]}`
	cases := []struct {
		name, in string
	}{
		{"arguments only in function_call_arguments.done", rsPreamble + fc(2, 0, "fc_1", "call_1", "f") + argsDone(3, 0, "fc_1", a1) + itemDone(4, 0, "fc_1", "call_1", "f", "") +
			fc(5, 1, "fc_2", "call_2", "g") + argsDone(6, 1, "fc_2", a2) + itemDone(7, 1, "fc_2", "call_2", "g", "") + end},
		{"interleaved deltas", rsPreamble + fc(2, 0, "fc_1", "call_1", "f") + fc(3, 1, "fc_2", "call_2", "g") +
			delta(4, 0, "fc_1", `{\"a\"`) + delta(5, 1, "fc_2", `{\"b\":`) + delta(6, 0, "fc_1", `:1}`) + delta(7, 1, "fc_2", `[2,3]}`) +
			itemDone(8, 0, "fc_1", "call_1", "f", a1) + itemDone(9, 1, "fc_2", "call_2", "g", a2) + end},
		{"second call done first", rsPreamble + fc(2, 0, "fc_1", "call_1", "f") + fc(3, 1, "fc_2", "call_2", "g") +
			delta(4, 1, "fc_2", `{\"b\":[2,3]}`) + itemDone(5, 1, "fc_2", "call_2", "g", a2) +
			delta(6, 0, "fc_1", `{\"a\":1}`) + itemDone(7, 0, "fc_1", "call_1", "f", a1) + end},
		{"interleaved, arguments only in done events", rsPreamble + fc(2, 0, "fc_1", "call_1", "f") + fc(3, 1, "fc_2", "call_2", "g") +
			argsDone(4, 0, "fc_1", a1) + argsDone(5, 1, "fc_2", a2) + itemDone(6, 0, "fc_1", "call_1", "f", "") + itemDone(7, 1, "fc_2", "call_2", "g", "") + end},
	}
	want := []toolSum{{"f", `{"a":1}`}, {"g", `{"b":[2,3]}`}}
	for _, c := range cases {
		for _, to := range []Dialect{AnthropicMessages, OpenAIChat} {
			out, _, err := run(t, OpenAIResponses, to, c.in)
			if err != nil {
				t.Fatalf("%s to %s: %v", c.name, to, err)
			}
			s := parseOK(t, to, out)
			if s.stop != "tool" || len(s.tools) != 2 || s.tools[0] != want[0] || s.tools[1] != want[1] {
				t.Errorf("%s to %s: %+v", c.name, to, s)
			}
		}
	}
}

// A Chat upstream whose first tool_calls delta for an index lacks the
// function name (or the id), which a later delta of the same index
// brings: arguments before id and name (TriDefender/zcode-api pull
// request 23: "buffer arguments that arrive before id/name"), or the id
// first and the name next. The call reaches the client with its real id
// and name and all of its arguments, never as a nameless tool_use.
func TestChatUpstreamToolNameLate(t *testing.T) {
	cases := map[string]string{
		"arguments before id and name": ccChunk(`{"role":"assistant","tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}`, "", "") +
			ccChunk(`{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"f","arguments":":1}"}}]}`, "", ""),
		"id first, name next": ccChunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_9","type":"function"}]}`, "", "") +
			ccChunk(`{"tool_calls":[{"index":0,"function":{"name":"f"}}]}`, "", "") +
			ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}`, "", ""),
	}
	for name, calls := range cases {
		in := calls + ccChunk(`{"tool_calls":[{"index":1,"id":"call_10","type":"function","function":{"name":"g","arguments":"{}"}}]}`, "", "") +
			ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n"
		out, _, err := run(t, OpenAIChat, AnthropicMessages, in)
		if err != nil {
			t.Fatal(err)
		}
		s := parseOK(t, AnthropicMessages, out)
		if len(s.tools) != 2 || s.tools[0] != (toolSum{"f", `{"a":1}`}) || s.tools[1] != (toolSum{"g", "{}"}) || s.stop != "tool" {
			t.Errorf("%s: %+v", name, s)
		}
		var ids []string
		for _, line := range strings.Split(out, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && gjson.Get(d, "content_block.type").Str == "tool_use" {
				ids = append(ids, gjson.Get(d, "content_block.id").Str+"/"+gjson.Get(d, "content_block.name").Str)
			}
		}
		if strings.Join(ids, ",") != "call_9/f,call_10/g" {
			t.Errorf("%s: tool_use blocks %v", name, ids)
		}
		rs, _, _ := run(t, OpenAIChat, OpenAIResponses, in)
		if s := parseOK(t, OpenAIResponses, rs); len(s.tools) != 2 || s.tools[0] != (toolSum{"f", `{"a":1}`}) {
			t.Errorf("%s to Responses: %+v", name, s)
		}
	}
}

// OpenAI-compatible upstreams that end with a finish_reason outside
// OpenAI's set: ZhipuAI / z.ai send "model_context_window_exceeded" when
// the context window is full (earendil-works/pi issues 1869 and 2700,
// anomalyco/opencode pull request 18918, theopenco/llmgateway pull
// request 3254), and Anthropic-backed shims pass Anthropic's stop reasons
// through ("max_tokens", "tool_use"). Each keeps its meaning for the
// client: a length stop (Anthropic model_context_window_exceeded /
// max_tokens, Responses incomplete), never a clean end_turn.
func TestChatUpstreamNonOpenAIFinishReasons(t *testing.T) {
	for fr, want := range map[string]string{
		"model_context_window_exceeded": stopContextLimit,
		"max_tokens":                    stopMaxTokens,
		"refusal":                       stopRefusal,
		"end_turn":                      stopEndTurn,
	} {
		in := ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + ccChunk(`{}`, fr, "") + ccUsage + "data: [DONE]\n\n"
		out, _, err := run(t, OpenAIChat, AnthropicMessages, in)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, line := range strings.Split(out, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && gjson.Get(d, "type").Str == "message_delta" {
				got = gjson.Get(d, "delta.stop_reason").Str
			}
		}
		if got != want {
			t.Errorf("stream %s: stop_reason %q, want %q", fr, got, want)
		}
		body := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"partial"},"finish_reason":"` + fr + `"}]}`
		am, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(body), "cm")
		if err != nil || gjson.GetBytes(am, "stop_reason").Str != want {
			t.Errorf("answer %s: %v %s", fr, err, am)
		}
	}
	// to a Responses client a full context window is an incomplete answer
	in := ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + ccChunk(`{}`, "model_context_window_exceeded", "") + ccUsage + "data: [DONE]\n\n"
	out, _, _ := run(t, OpenAIChat, OpenAIResponses, in)
	if s := parseOK(t, OpenAIResponses, out); s.stop != "length" || s.text != "partial" {
		t.Errorf("Responses: %+v", s)
	}
	body := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"partial"},"finish_reason":"model_context_window_exceeded"}]}`
	rs, _, err := TranslateResponse(OpenAIChat, OpenAIResponses, []byte(body), "cm")
	if err != nil || gjson.GetBytes(rs, "status").Str != "incomplete" || gjson.GetBytes(rs, "incomplete_details.reason").Str != "max_output_tokens" {
		t.Errorf("Responses answer: %v %s", err, rs)
	}
}

// Anthropic refuses an assistant turn that holds thinking blocks but does
// not start with one ("If an assistant message contains any thinking
// blocks, the first block must be thinking or redacted_thinking. Found
// text."; anthropics/claude-code issue 20705). A Chat client that keeps
// an answer's text and its tool calls in two assistant messages (the
// second with the signed thinking_blocks) has them merged into one
// Anthropic turn: the signed thinking goes first, as Anthropic produced
// it; a turn that starts with thinking keeps its order.
func TestAnthropicTurnStartsWithThinking(t *testing.T) {
	for _, c := range []struct{ name, msgs, want string }{
		{"split text and tool call", `{"role":"assistant","content":"Let me check."},{"role":"assistant","content":null,"thinking_blocks":[{"type":"thinking","thinking":"t","signature":"sig"}],"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			`[{"type":"thinking","thinking":"t","signature":"sig"},{"type":"text","text":"Let me check."},{"type":"tool_use","id":"call_1","name":"f","input":{}}]`},
		{"redacted after text", `{"role":"assistant","content":"Let me check."},{"role":"assistant","content":null,"thinking_blocks":[{"type":"redacted_thinking","data":"enc"}],"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			`[{"type":"redacted_thinking","data":"enc"},{"type":"text","text":"Let me check."},{"type":"tool_use","id":"call_1","name":"f","input":{}}]`},
		{"already first", `{"role":"assistant","content":"Let me check.","thinking_blocks":[{"type":"thinking","thinking":"t","signature":"sig"}],"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			`[{"type":"thinking","thinking":"t","signature":"sig"},{"type":"text","text":"Let me check."},{"type":"tool_use","id":"call_1","name":"f","input":{}}]`},
	} {
		body := `{"model":"claude-sonnet-4-5","reasoning_effort":"low","messages":[{"role":"user","content":"x"},` + c.msgs +
			`,{"role":"tool","tool_call_id":"call_1","content":"ok"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
		out, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(body), "")
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(out, "messages.1.content").Raw; got != c.want {
			t.Errorf("%s: assistant turn %s\nwant %s", c.name, got, c.want)
		}
		if gjson.GetBytes(out, "thinking.type").Str != "enabled" {
			t.Errorf("%s: thinking off: %s", c.name, out)
		}
	}
}

// An upstream that writes non-BMP characters as JSON escapes can split a
// UTF-16 surrogate pair across two deltas ("…\ud83d" then "\ude00…";
// elizaOS issue 30904, elie222/rakazo issue 416): decoded one delta at a
// time, each half becomes U+FFFD and the emoji is lost. Translated
// streams join the pair again, in text, reasoning and tool arguments;
// a half with no partner is still U+FFFD.
func TestSplitSurrogatePairJoined(t *testing.T) {
	chat := ccChunk(`{"role":"assistant","reasoning_content":"r\ud83d"}`, "", "") + ccChunk(`{"reasoning_content":"\ude00s"}`, "", "") +
		ccChunk(`{"content":"a\ud83d"}`, "", "") + ccChunk(`{"content":"\ude00b\ud83d"}`, "", "") + ccChunk(`{"content":"c"}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"e\":\"\ud83d"}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\ude00\"}"}}]}`, "", "") +
		ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n"
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		out, _, err := run(t, OpenAIChat, to, chat)
		if err != nil {
			t.Fatal(err)
		}
		s := parseOK(t, to, out)
		if s.text != "a😀b\uFFFDc" || len(s.tools) != 1 || !jsonEqual(s.tools[0].args, `{"e":"😀"}`) {
			t.Errorf("Chat to %s: %+v", to, s)
		}
		if to == AnthropicMessages && s.thinking != "r😀s" {
			t.Errorf("Chat to %s: thinking %q", to, s.thinking)
		}
	}
	ms := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`)
	am := ms + amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\ud83d"}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ude00b\ud83d"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	for _, to := range []Dialect{OpenAIChat, OpenAIResponses} {
		out, _, err := run(t, AnthropicMessages, to, am)
		if err != nil {
			t.Fatal(err)
		}
		if s := parseOK(t, to, out); s.text != "a😀b\uFFFD" {
			t.Errorf("Anthropic to %s: %q", to, s.text)
		}
	}
}

// TestSplitSurrogatePairResponsesUpstream is TestSplitSurrogatePairJoined
// for a Responses upstream (output_text, reasoning summary and
// function-call argument deltas).
func TestSplitSurrogatePairResponsesUpstream(t *testing.T) {
	in := rsPreamble +
		rsEv("response.output_item.added", 2, `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}`) +
		rsEv("response.reasoning_summary_text.delta", 3, `,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"r\ud83d"`) +
		rsEv("response.reasoning_summary_text.delta", 4, `,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"\ude00s"`) +
		rsEv("response.output_item.done", 5, `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"r😀s"}]}`) +
		rsEv("response.output_item.added", 6, `,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`) +
		rsEv("response.output_text.delta", 7, `,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"a\ud83d"`) +
		rsEv("response.output_text.delta", 8, `,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"\ude00b"`) +
		rsEv("response.output_item.done", 9, `,"output_index":1,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"a😀b"}]}`) +
		rsEv("response.output_item.added", 10, `,"output_index":2,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":""}`) +
		rsEv("response.function_call_arguments.delta", 11, `,"item_id":"fc_1","output_index":2,"delta":"{\"e\":\"\ud83d"`) +
		rsEv("response.function_call_arguments.delta", 12, `,"item_id":"fc_1","output_index":2,"delta":"\ude00\"}"`) +
		rsEv("response.output_item.done", 13, `,"output_index":2,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":"{\"e\":\"😀\"}"}`) +
		rsEv("response.completed", 14, rsDone)
	for _, to := range []Dialect{AnthropicMessages, OpenAIChat} {
		out, _, err := run(t, OpenAIResponses, to, in)
		if err != nil {
			t.Fatal(err)
		}
		s := parseOK(t, to, out)
		if s.text != "a😀b" || s.thinking != "r😀s" || len(s.tools) != 1 || !jsonEqual(s.tools[0].args, `{"e":"😀"}`) {
			t.Errorf("Responses to %s: %+v", to, s)
		}
	}
}

// OpenAI refuses a Chat tool call id longer than 40 characters ("Invalid
// 'messages[2].tool_calls[0].id': string too long. Expected a string with
// maximum length 40"; langgenius/dify issue 28987) and a Responses
// call_id longer than 64 (orchidfiles/ungate issue 26). Ids written by
// other vendors or gateways can be longer (a UUID-based chatcmpl- id makes
// call_<uuid>_0, 43 characters): translated to OpenAI, a long id becomes
// a short one derived from it, the same in the call and in its result;
// ids within the limit are kept.
func TestLongToolCallIDsToOpenAI(t *testing.T) {
	long := "call_227d1187-c515-4929-994c-353eaecb0f36_0"          // 43
	long2 := "toolu_" + strings.Repeat("x", 60) + "__thought__sig" // 80
	body := `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"x"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"` + long + `","name":"f","input":{}},{"type":"tool_use","id":"` + long2 + `","name":"f","input":{}},{"type":"tool_use","id":"toolu_short","name":"f","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + long + `","content":"1"},{"type":"tool_result","tool_use_id":"` + long2 + `","content":"2"},{"type":"tool_result","tool_use_id":"toolu_short","content":"3"}]}]}`
	cc, err := TranslateRequest(AnthropicMessages, OpenAIChat, []byte(body), "")
	if err != nil {
		t.Fatal(err)
	}
	calls := gjson.GetBytes(cc, "messages.1.tool_calls.#.id").Array()
	results := gjson.GetBytes(cc, "messages.#(role==\"tool\")#.tool_call_id").Array()
	if len(calls) != 3 || len(results) != 3 {
		t.Fatalf("%s", cc)
	}
	seen := map[string]bool{}
	for i := range calls {
		id := calls[i].Str
		if len(id) > 40 || id != results[i].Str || seen[id] {
			t.Errorf("Chat: call %d id %q, result %q", i, id, results[i].Str)
		}
		seen[id] = true
	}
	if calls[2].Str != "toolu_short" {
		t.Errorf("short id changed: %s", calls[2].Str)
	}
	rs, err := TranslateRequest(AnthropicMessages, OpenAIResponses, []byte(body), "")
	if err != nil {
		t.Fatal(err)
	}
	fc := gjson.GetBytes(rs, `input.#(type=="function_call")#.call_id`).Array()
	fo := gjson.GetBytes(rs, `input.#(type=="function_call_output")#.call_id`).Array()
	if len(fc) != 3 || len(fo) != 3 {
		t.Fatalf("%s", rs)
	}
	for i := range fc {
		if len(fc[i].Str) > 64 || fc[i].Str != fo[i].Str {
			t.Errorf("Responses: call %d id %q, output %q", i, fc[i].Str, fo[i].Str)
		}
	}
	if fc[0].Str != long || fc[2].Str != "toolu_short" {
		t.Errorf("Responses ids within 64 changed: %v", fc)
	}
}

// Anthropic's current models refuse a request that sets both temperature
// and top_p ("`temperature` and `top_p` cannot both be specified for this
// model. Please use only one."; cloud-apim/otoroshi-llm-extension issue
// 140, opencode issue 28930, a LiteLLM proxy in
// jekalmin/extended_openai_conversation issue 428), which OpenAI accepts:
// translated to Anthropic for Claude 4.1 and later, temperature is kept
// and top_p dropped; either one alone is kept, and models that take both
// (earlier Claude models, other vendors' on an Anthropic endpoint) get both.
func TestTemperatureAndTopPToAnthropic(t *testing.T) {
	for _, c := range []struct {
		from             Dialect
		body, temp, topP string
	}{
		{OpenAIChat, `{"model":"claude-sonnet-4-5","temperature":0.2,"top_p":0.9,"messages":[{"role":"user","content":"x"}]}`, "0.2", ""},
		{OpenAIResponses, `{"model":"claude-sonnet-4-5","temperature":1.5,"top_p":0.5,"input":"x"}`, "1", ""},
		{OpenAIChat, `{"model":"claude-sonnet-4-5","top_p":0.9,"messages":[{"role":"user","content":"x"}]}`, "", "0.9"},
		{OpenAIChat, `{"model":"claude-sonnet-4-5","temperature":0,"messages":[{"role":"user","content":"x"}]}`, "0", ""},
		// models that take both keep both: Claude before 4.1, other vendors'
		{OpenAIChat, `{"model":"claude-3-5-sonnet-20241022","temperature":0.2,"top_p":0.9,"messages":[{"role":"user","content":"x"}]}`, "0.2", "0.9"},
		{OpenAIChat, `{"model":"claude-sonnet-4-20250514","temperature":0.2,"top_p":0.9,"messages":[{"role":"user","content":"x"}]}`, "0.2", "0.9"},
		{OpenAIChat, `{"model":"deepseek-chat","temperature":0.2,"top_p":0.9,"messages":[{"role":"user","content":"x"}]}`, "0.2", "0.9"},
		{OpenAIChat, `{"model":"claude-opus-4-1-20250805","temperature":0.2,"top_p":0.9,"messages":[{"role":"user","content":"x"}]}`, "0.2", ""},
		{OpenAIChat, `{"model":"claude-haiku-4-5","temperature":0.2,"top_p":0.9,"messages":[{"role":"user","content":"x"}]}`, "0.2", ""},
	} {
		out, err := TranslateRequest(c.from, AnthropicMessages, []byte(c.body), "")
		if err != nil {
			t.Fatal(err)
		}
		if g := gjson.GetBytes(out, "temperature").Raw; g != c.temp {
			t.Errorf("%s: temperature %q, want %q: %s", c.body, g, c.temp, out)
		}
		if g := gjson.GetBytes(out, "top_p").Raw; g != c.topP {
			t.Errorf("%s: top_p %q, want %q: %s", c.body, g, c.topP, out)
		}
	}
	// an Anthropic client's own request is passed through as sent
	am := `{"model":"claude-3-5-sonnet","max_tokens":5,"temperature":0.2,"top_p":0.9,"messages":[{"role":"user","content":"x"}]}`
	if out, err := TranslateRequest(AnthropicMessages, AnthropicMessages, []byte(am), ""); err != nil || string(out) != am {
		t.Errorf("passthrough changed: %v %s", err, out)
	}
}
