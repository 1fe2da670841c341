package translate

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tidwall/gjson"
)

// A third set of translation defects from public bug reports of other
// LLM gateways, each test naming the report it reproduces (see also
// peer_reports_test.go and peer_reports2_test.go).

// peerAmStream is an Anthropic Messages stream with the given content
// blocks, usage in message_start and stop_reason stop.
func peerAmStream(stop, usage string, blocks ...string) string {
	s := amEv("message_start", `{"type":"message_start","message":{"id":"msg_p","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":`+usage+`}}`)
	for _, b := range blocks {
		s += b
	}
	return s + amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":7}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
}

// peerAmBlock is one Anthropic content block at index i: start, one
// delta per payload (each a whole delta object), stop.
func peerAmBlock(i, block string, deltas ...string) string {
	s := amEv("content_block_start", `{"type":"content_block_start","index":`+i+`,"content_block":`+block+`}`)
	for _, d := range deltas {
		s += amEv("content_block_delta", `{"type":"content_block_delta","index":`+i+`,"delta":`+d+`}`)
	}
	return s + amEv("content_block_stop", `{"type":"content_block_stop","index":`+i+`}`)
}

const peerUsage = `{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":1}`

// peerThinking is a thinking block with its signature, then a text block.
var peerThinking = peerAmBlock("0", `{"type":"thinking","thinking":""}`, `{"type":"thinking_delta","thinking":"let me think"}`, `{"type":"signature_delta","signature":"SIG1"}`) +
	peerAmBlock("1", `{"type":"text","text":""}`, `{"type":"text_delta","text":"the answer"}`)

// chatStreamParts returns a translated Chat stream's content,
// reasoning_content and the finish_reason of its last choice.
func chatStreamParts(out string) (content, reasoning, finish string) {
	for _, d := range sseData(out) {
		content += d.Get("choices.0.delta.content").Str
		reasoning += d.Get("choices.0.delta.reasoning_content").Str
		if f := d.Get("choices.0.finish_reason"); f.Type == gjson.String {
			finish = f.Str
		}
	}
	return
}

// QuantumNous/new-api#5530: a Claude answer's thinking blocks reached Chat clients merged into message.content, with no reasoning_content.
func TestPeerClaudeThinkingStaysOutOfChatContent(t *testing.T) {
	out, _, err := run(t, AnthropicMessages, OpenAIChat, peerAmStream("end_turn", peerUsage, peerThinking))
	if err != nil {
		t.Fatal(err)
	}
	if c, r, f := chatStreamParts(out); c != "the answer" || r != "let me think" || f != "stop" {
		t.Errorf("stream: content %q reasoning %q finish %q\n%s", c, r, f, out)
	}
	whole := `{"id":"msg_p","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"let me think","signature":"SIG1"},{"type":"text","text":"the answer"}],"stop_reason":"end_turn","stop_sequence":null,"usage":` + peerUsage + `}`
	b, _, err := TranslateResponse(AnthropicMessages, OpenAIChat, []byte(whole), "cm")
	if err != nil {
		t.Fatal(err)
	}
	m := gjson.GetBytes(b, "choices.0.message")
	if m.Get("content").Str != "the answer" || m.Get("reasoning_content").Str != "let me think" {
		t.Errorf("whole: %s", b)
	}
}

// router-for-me/CLIProxyAPI#5424: an OpenAI-compatible upstream that sends its reasoning as message.reasoning or reasoning_details (never reasoning_content) lost it on the way to Anthropic clients: no thinking block.
func TestPeerChatReasoningFieldsBecomeThinking(t *testing.T) {
	for _, field := range []string{`"reasoning":"R1"`, `"reasoning_details":[{"type":"reasoning.text","text":"R1"}]`} {
		in := ccChunk(`{"role":"assistant","content":""}`, "", "") + ccChunk(`{`+field+`}`, "", "") + ccChunk(`{"content":"hello"}`, "", "") + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n"
		out, _, err := run(t, OpenAIChat, AnthropicMessages, in)
		if err != nil {
			t.Fatal(err)
		}
		if s := parseOK(t, AnthropicMessages, out); s.thinking != "R1" || s.text != "hello" {
			t.Errorf("stream %s: %+v", field, s)
		}
		whole := `{"id":"c1","object":"chat.completion","created":1,"model":"u","choices":[{"index":0,"message":{"role":"assistant","content":"hello",` + field + `},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
		b, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(whole), "cm")
		if err != nil {
			t.Fatal(err)
		}
		if c := gjson.GetBytes(b, "content"); c.Get("0.type").Str != "thinking" || c.Get("0.thinking").Str != "R1" || c.Get("1.text").Str != "hello" {
			t.Errorf("whole %s: %s", field, b)
		}
	}
}

// router-for-me/CLIProxyAPI#5104: a whole Chat answer from Claude carried message.reasoning instead of reasoning_content, and the next turn's request, reading only reasoning_content, dropped the thinking (and its signature) from the history.
func TestPeerChatThinkingRoundTrip(t *testing.T) {
	whole := `{"id":"msg_p","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"let me think","signature":"SIG1"},{"type":"text","text":"the answer"}],"stop_reason":"end_turn","stop_sequence":null,"usage":` + peerUsage + `}`
	b, _, err := TranslateResponse(AnthropicMessages, OpenAIChat, []byte(whole), "cm")
	if err != nil {
		t.Fatal(err)
	}
	msg := gjson.GetBytes(b, "choices.0.message")
	if msg.Get("reasoning_content").Str != "let me think" || msg.Get("thinking_blocks.0.signature").Str != "SIG1" {
		t.Fatalf("answer: %s", b)
	}
	// the client sends the assistant message back as it got it
	next := `{"model":"m","messages":[{"role":"user","content":"q"},` + msg.Raw + `,{"role":"user","content":"and then?"}]}`
	r := mustTranslate(t, OpenAIChat, AnthropicMessages, next, "up")
	a := r.Get("messages.1.content")
	if a.Get("0.type").Str != "thinking" || a.Get("0.thinking").Str != "let me think" || a.Get("0.signature").Str != "SIG1" || a.Get("1.text").Str != "the answer" {
		t.Errorf("history: %s", r.Raw)
	}
}

// theopenco/llmgateway#3254: Anthropic's stop_reason model_context_window_exceeded reached OpenAI clients as "stop", a normal completion, instead of "length".
func TestPeerContextWindowExceededIsLength(t *testing.T) {
	in := peerAmStream("model_context_window_exceeded", peerUsage, peerAmBlock("0", `{"type":"text","text":""}`, `{"type":"text_delta","text":"cut"}`))
	out, _, err := run(t, AnthropicMessages, OpenAIChat, in)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, f := chatStreamParts(out); f != "length" {
		t.Errorf("Chat finish_reason %q", f)
	}
	out, _, err = run(t, AnthropicMessages, OpenAIResponses, in)
	if err != nil {
		t.Fatal(err)
	}
	last := sseData(out)
	if r := last[len(last)-1]; r.Get("type").Str != "response.incomplete" || r.Get("response.incomplete_details.reason").Str != "max_output_tokens" {
		t.Errorf("Responses end: %s", r.Raw)
	}
	whole := `{"id":"msg_p","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"cut"}],"stop_reason":"model_context_window_exceeded","stop_sequence":null,"usage":` + peerUsage + `}`
	b, _, err := TranslateResponse(AnthropicMessages, OpenAIChat, []byte(whole), "cm")
	if err != nil || gjson.GetBytes(b, "choices.0.finish_reason").Str != "length" {
		t.Errorf("whole: %v %s", err, b)
	}
}

// laravel/ai#881: Anthropic's stop_reason refusal fell through to an unknown finish reason, and the turn ended looking like an empty success; it is content_filter for OpenAI clients.
func TestPeerRefusalIsContentFilter(t *testing.T) {
	in := peerAmStream("refusal", peerUsage, peerAmBlock("0", `{"type":"text","text":""}`, `{"type":"text_delta","text":"I can't"}`))
	out, _, err := run(t, AnthropicMessages, OpenAIChat, in)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, f := chatStreamParts(out); f != "content_filter" {
		t.Errorf("Chat finish_reason %q", f)
	}
	out, _, err = run(t, AnthropicMessages, OpenAIResponses, in)
	if err != nil {
		t.Fatal(err)
	}
	last := sseData(out)
	if r := last[len(last)-1]; r.Get("type").Str != "response.incomplete" || r.Get("response.incomplete_details.reason").Str != "content_filter" {
		t.Errorf("Responses end: %s", r.Raw)
	}
}

// miruamel/xuan#194 (CRLF upstream streams silently dropped every chunk) and praxis-proxy/praxis#739 (CRLF split across reads, "data:" without a space): SSE framing per the WHATWG event-stream grammar.
func TestPeerSSEFramingVariants(t *testing.T) {
	am := peerAmStream("end_turn", peerUsage, peerAmBlock("0", `{"type":"text","text":""}`, `{"type":"text_delta","text":"héllo ✓"}`))
	chat := ccChunk(`{"role":"assistant","content":"héllo ✓"}`, "", "") + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n"
	for name, c := range map[string]struct {
		from Dialect
		in   string
	}{
		"Anthropic CRLF":         {AnthropicMessages, strings.ReplaceAll(am, "\n", "\r\n")},
		"Anthropic CR":           {AnthropicMessages, strings.ReplaceAll(am, "\n", "\r")},
		"Anthropic no space":     {AnthropicMessages, strings.NewReplacer("data: ", "data:", "event: ", "event:").Replace(am)},
		"Chat CRLF":              {OpenAIChat, strings.ReplaceAll(chat, "\n", "\r\n")},
		"Chat no space, [DONE]:": {OpenAIChat, strings.ReplaceAll(chat, "data: ", "data:")},
	} {
		to := OpenAIChat
		if c.from == OpenAIChat {
			to = AnthropicMessages
		}
		// one byte a read: every CRLF and every multi-byte rune is split
		out, _, tr, err := collect(t, c.from, to, "client-model", iotest.OneByteReader(strings.NewReader(c.in)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s := parseOK(t, to, string(out)); s.text != "héllo ✓" || s.stop != "stop" {
			t.Errorf("%s: %+v\n%s", name, s, out)
		}
		if u := tr.Usage(); u.InputTokens == nil || u.OutputTokens == nil {
			t.Errorf("%s: usage %v", name, u)
		}
	}
}

// future-agi/future-agi#1122: Anthropic's input_tokens excludes cached tokens, and a gateway reading only it under-reported prompt tokens (and cost) by the cached share; prompt_tokens counts cache reads and writes, total_tokens adds up.
func TestPeerPromptTokensIncludeCache(t *testing.T) {
	out, tr, err := run(t, AnthropicMessages, OpenAIChat, peerAmStream("end_turn", peerUsage, peerAmBlock("0", `{"type":"text","text":""}`, `{"type":"text_delta","text":"x"}`)))
	if err != nil {
		t.Fatal(err)
	}
	var u gjson.Result
	for _, d := range sseData(out) {
		if d.Get("usage").IsObject() {
			u = d.Get("usage")
		}
	}
	if u.Get("prompt_tokens").Int() != 1103 || u.Get("completion_tokens").Int() != 7 || u.Get("total_tokens").Int() != 1110 || u.Get("prompt_tokens_details.cached_tokens").Int() != 1000 {
		t.Errorf("Chat usage %s", u.Raw)
	}
	if g := tr.Usage(); *g.InputTokens != 1103 || *g.CacheReadTokens != 1000 || *g.CacheWriteTokens != 100 {
		t.Errorf("accounted usage %v", g)
	}
	whole := `{"id":"msg_p","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":7}}`
	b, _, err := TranslateResponse(AnthropicMessages, OpenAIResponses, []byte(whole), "cm")
	if err != nil {
		t.Fatal(err)
	}
	if u := gjson.GetBytes(b, "usage"); u.Get("input_tokens").Int() != 1103 || u.Get("total_tokens").Int() != 1110 || u.Get("input_tokens_details.cached_tokens").Int() != 1000 {
		t.Errorf("Responses usage %s", u.Raw)
	}
}

// Portkey-AI/gateway#975 (image URLs not passed to Anthropic as url sources), NousResearch/hermes-agent#55432 (a data URL's image/jpg forwarded verbatim, refused) and livekit/agents#3867 (the data: prefix left in the base64 data).
func TestPeerChatImagesToAnthropic(t *testing.T) {
	r := mustTranslate(t, OpenAIChat, AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":[
		{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}},
		{"type":"image_url","image_url":{"url":"data:image/jpg;base64,QUJD"}},
		{"type":"text","text":"what is this?"}]}]}`, "up")
	c := r.Get("messages.0.content")
	wantGet(t, c, "0.source", `{"type":"url","url":"https://example.com/cat.png"}`)
	wantGet(t, c, "1.source", `{"type":"base64","media_type":"image/jpeg","data":"QUJD"}`)
	wantGet(t, c, "2.text", `"what is this?"`)
}

// langwatch/tasks#465: n=2 sent to Anthropic through a translating gateway came back as one choice with 200; a request asking for what cannot be translated is refused, never silently narrowed.
func TestPeerNRefusedNotNarrowed(t *testing.T) {
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		_, err := TranslateRequest(OpenAIChat, to, []byte(`{"model":"m","n":2,"messages":[{"role":"user","content":"x"}]}`), "up")
		var te *Error
		if !errors.As(err, &te) || te.Param != "n" || !strings.Contains(te.Message, "n=1") {
			t.Errorf("→ %s: %v", to, err)
		}
	}
	// n=1 is every dialect's default and translates
	mustTranslate(t, OpenAIChat, AnthropicMessages, `{"model":"m","n":1,"messages":[{"role":"user","content":"x"}]}`, "up")
}

// theopenco/llmgateway#1579: frequency_penalty and presence_penalty were passed to Anthropic, which answers 400 "Extra inputs are not permitted".
func TestPeerPenaltiesNotSentToAnthropic(t *testing.T) {
	r := mustTranslate(t, OpenAIChat, AnthropicMessages, `{"model":"m","frequency_penalty":0.5,"presence_penalty":0.2,"seed":7,"logit_bias":{"50256":-100},"messages":[{"role":"user","content":"x"}]}`, "up")
	for _, k := range []string{"frequency_penalty", "presence_penalty", "seed", "logit_bias"} {
		if r.Get(k).Exists() {
			t.Errorf("%s sent to Anthropic: %s", k, r.Raw)
		}
	}
}

// ujisati/claude-code-provider-proxy#11 and mnfst/llm-gateway#2789: Claude Code's metadata.user_id (about 150 characters) became OpenAI's user, longer than OpenAI-compatible upstreams accept (64 or 128), and failed every request; a short id is kept.
func TestPeerClaudeCodeUserIDToOpenAI(t *testing.T) {
	long := "user_" + strings.Repeat("a1", 32) + "_account__session_" + strings.Repeat("b", 36)
	for _, to := range []Dialect{OpenAIChat, OpenAIResponses} {
		r := mustTranslate(t, AnthropicMessages, to, `{"model":"m","max_tokens":10,"metadata":{"user_id":"`+long+`"},"messages":[{"role":"user","content":"x"}]}`, "up")
		if r.Get("user").Exists() || r.Get("metadata").Exists() || r.Get("safety_identifier").Exists() {
			t.Errorf("→ %s: %s", to, r.Raw)
		}
		r = mustTranslate(t, AnthropicMessages, to, `{"model":"m","max_tokens":10,"metadata":{"user_id":"u-42"},"messages":[{"role":"user","content":"x"}]}`, "up")
		wantGet(t, r, "user", `"u-42"`)
	}
}

// ranxi2001/sub2api#22: Codex failed to parse response.completed ("missing field reasoning_tokens") when a gateway left the usage details empty; translated Responses usage always carries reasoning_tokens and cached_tokens.
func TestPeerResponsesUsageDetailsComplete(t *testing.T) {
	in := ccChunk(`{"role":"assistant","content":"hi"}`, "", "") + ccChunk(`{}`, "stop", "") +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14}}` + "\n\ndata: [DONE]\n\n"
	out, _, err := run(t, OpenAIChat, OpenAIResponses, in)
	if err != nil {
		t.Fatal(err)
	}
	ds := sseData(out)
	done := ds[len(ds)-1]
	if done.Get("type").Str != "response.completed" {
		t.Fatalf("last event %s", done.Raw)
	}
	u := done.Get("response.usage")
	if u.Get("output_tokens_details.reasoning_tokens").Type != gjson.Number || u.Get("input_tokens_details.cached_tokens").Type != gjson.Number || u.Get("total_tokens").Int() != 14 {
		t.Errorf("stream usage %s", u.Raw)
	}
	b, _, err := TranslateResponse(AnthropicMessages, OpenAIResponses, []byte(`{"id":"msg_p","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}`), "cm")
	if err != nil {
		t.Fatal(err)
	}
	u = gjson.GetBytes(b, "usage")
	if u.Get("output_tokens_details.reasoning_tokens").Raw != "0" || u.Get("input_tokens_details.cached_tokens").Raw != "0" {
		t.Errorf("whole usage %s", u.Raw)
	}
}

// decolua/9router#1779: Claude Code failed with "Received message_stop without a current message"; a translated Anthropic stream opens with message_start even when the upstream's first chunk has no choices (Azure's prompt_filter_results).
func TestPeerAnthropicStreamOpensWithMessageStart(t *testing.T) {
	azure := `data: {"id":"","object":"","created":0,"model":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}],"choices":[]}` + "\n\n" +
		ccChunk(`{"role":"assistant","content":"hi"}`, "", "") + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n"
	out, _, err := run(t, OpenAIChat, AnthropicMessages, azure)
	if err != nil {
		t.Fatal(err)
	}
	ds := sseData(out)
	if ds[0].Get("type").Str != "message_start" || ds[len(ds)-1].Get("type").Str != "message_stop" {
		t.Fatalf("stream: %s", out)
	}
	n := 0
	for _, d := range ds {
		if d.Get("type").Str == "message_start" {
			n++
		}
	}
	if s := parseOK(t, AnthropicMessages, out); n != 1 || s.text != "hi" || s.stop != "stop" {
		t.Errorf("%d message_start, %+v", n, s)
	}
}

// james-6-23/codex2api#235: a Responses reasoning item without encrypted_content, replayed by Codex, was forwarded and refused; it carries nothing an Anthropic or Chat upstream can take and is left out.
func TestPeerBareReasoningItemLeftOut(t *testing.T) {
	body := `{"model":"m","input":[{"role":"user","content":"x"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]},{"role":"user","content":"y"}]}`
	r := mustTranslate(t, OpenAIResponses, AnthropicMessages, body, "up")
	wantGet(t, r, "messages.1", `{"role":"assistant","content":[{"type":"text","text":"a"}]}`)
	if strings.Contains(r.Raw, "thinking") {
		t.Errorf("a thinking block without a signature: %s", r.Raw)
	}
	r = mustTranslate(t, OpenAIResponses, OpenAIChat, body, "up")
	if n := len(r.Get("messages").Array()); n != 3 || r.Get("messages.1.content").Str != "a" {
		t.Errorf("Chat: %s", r.Raw)
	}
}

// 10/chatgpt-codex-proxy#9: Codex's leading additional_tools input item was sent on as {"role":"developer"} without content, and the upstream refused the request ("Missing required parameter: 'input[0].content'").
func TestPeerCodexAdditionalToolsItem(t *testing.T) {
	body := `{"model":"m","input":[{"type":"additional_tools","role":"developer","id":"at_1","tools":[{"type":"namespace","name":"collaboration","tools":[]}]},{"role":"user","content":"x"}]}`
	for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
		r := mustTranslate(t, OpenAIResponses, to, body, "up")
		r.Get("messages").ForEach(func(_, m gjson.Result) bool {
			if !m.Get("content").Exists() {
				t.Errorf("→ %s: a message without content: %s", to, r.Raw)
			}
			return true
		})
		if !strings.Contains(r.Get("messages.0.content").Raw, `"x"`) {
			t.Errorf("→ %s: %s", to, r.Raw)
		}
	}
}

// mozilla-ai/any-llm#1392: the usage-only chunk of a translated Anthropic stream carried a synthetic choice, so OpenAI clients looking for `choices: []` saw no usage.
func TestPeerUsageChunkHasNoChoices(t *testing.T) {
	out, _, err := run(t, AnthropicMessages, OpenAIChat, peerAmStream("end_turn", peerUsage, peerAmBlock("0", `{"type":"text","text":""}`, `{"type":"text_delta","text":"x"}`)))
	if err != nil {
		t.Fatal(err)
	}
	ds := sseData(out)
	u := ds[len(ds)-1]
	if !u.Get("usage").IsObject() || u.Get("choices").Raw != "[]" || u.Get("object").Str != "chat.completion.chunk" {
		t.Errorf("usage chunk %s", u.Raw)
	}
	if !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Errorf("no [DONE] after the usage chunk")
	}
}

// BerriAI/litellm#10106: an OpenAI user that is an email address became Anthropic's metadata.user_id, and Anthropic refused the request (400 "user_id appears to contain an email address"); Anthropic asks for an opaque id (a uuid or hash), at most 256 characters.
func TestPeerUserIDToAnthropicIsOpaque(t *testing.T) {
	for _, c := range []struct{ from, body string }{
		{"chat", `{"model":"m","user":"%s","messages":[{"role":"user","content":"x"}]}`},
		{"chat safety_identifier", `{"model":"m","safety_identifier":"%s","messages":[{"role":"user","content":"x"}]}`},
		{"responses", `{"model":"m","user":"%s","input":"x"}`},
	} {
		from := OpenAIChat
		if c.from == "responses" {
			from = OpenAIResponses
		}
		for _, u := range []string{"myname@example.com", "+1 555 0100 200", "John Smith", strings.Repeat("x", 300)} {
			r := mustTranslate(t, from, AnthropicMessages, strings.Replace(c.body, "%s", u, 1), "up")
			id := r.Get("metadata.user_id").Str
			if id == "" || id == u || len(id) > 256 || strings.ContainsAny(id, "@ +.") {
				t.Errorf("%s %q: metadata.user_id %q", c.from, u, id)
			}
			// the same end user always maps to the same id, another to another
			again := mustTranslate(t, from, AnthropicMessages, strings.Replace(c.body, "%s", u, 1), "up").Get("metadata.user_id").Str
			other := mustTranslate(t, from, AnthropicMessages, strings.Replace(c.body, "%s", u+"2", 1), "up").Get("metadata.user_id").Str
			if again != id || other == id {
				t.Errorf("%s %q: ids %q, %q, other %q", c.from, u, id, again, other)
			}
		}
		// an opaque id (uuid, hash, internal number) goes as it is
		for _, u := range []string{"3f2b8c1e-9d4a-4b7e-8f00-1c2d3e4f5a6b", "user_42", "a1b2c3"} {
			r := mustTranslate(t, from, AnthropicMessages, strings.Replace(c.body, "%s", u, 1), "up")
			wantGet(t, r, "metadata.user_id", `"`+u+`"`)
		}
	}
}

// jasonxu114514/opencode2api#27: an upstream turn that ended with finish_reason "tool_calls" but delivered no tool call reached Claude Code as stop_reason "tool_use" with no tool_use block, and the agent stalled with no error; a tool stop without a tool call is a plain end of turn.
func TestPeerToolStopWithoutToolCall(t *testing.T) {
	for name, in := range map[string]string{
		"empty tool_calls": ccChunk(`{"role":"assistant","content":"done"}`, "", "") + ccChunk(`{"tool_calls":[]}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n",
		"no tool_calls":    ccChunk(`{"role":"assistant","content":"done"}`, "", "") + ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n",
	} {
		out, _, err := run(t, OpenAIChat, AnthropicMessages, in)
		if err != nil {
			t.Fatal(err)
		}
		var stop string
		for _, d := range sseData(out) {
			if d.Get("type").Str == "message_delta" {
				stop = d.Get("delta.stop_reason").Str
			}
		}
		if s := parseOK(t, AnthropicMessages, out); stop != "end_turn" || s.text != "done" || len(s.tools) != 0 {
			t.Errorf("%s: stop_reason %q, %+v", name, stop, s)
		}
		out, _, err = run(t, OpenAIChat, OpenAIResponses, in)
		if err != nil {
			t.Fatal(err)
		}
		if s := parseOK(t, OpenAIResponses, out); s.stop != "stop" || s.text != "done" {
			t.Errorf("%s → Responses: %+v", name, s)
		}
	}
	whole := `{"id":"c1","object":"chat.completion","created":1,"model":"u","choices":[{"index":0,"message":{"role":"assistant","content":"done","tool_calls":[]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	b, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(whole), "cm")
	if err != nil || gjson.GetBytes(b, "stop_reason").Str != "end_turn" || gjson.GetBytes(b, "content.#").Int() != 1 {
		t.Errorf("whole: %v %s", err, b)
	}
	// an Anthropic upstream saying tool_use with no tool_use block, to a Chat client
	am := peerAmStream("tool_use", peerUsage, peerAmBlock("0", `{"type":"text","text":""}`, `{"type":"text_delta","text":"done"}`))
	out, _, err := run(t, AnthropicMessages, OpenAIChat, am)
	if err != nil {
		t.Fatal(err)
	}
	if c, _, f := chatStreamParts(out); f != "stop" || c != "done" {
		t.Errorf("Anthropic → Chat: finish_reason %q content %q", f, c)
	}
	// a real tool call keeps its tool stop
	call := ccChunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`, "", "") + ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n"
	out, _, err = run(t, OpenAIChat, AnthropicMessages, call)
	if err != nil {
		t.Fatal(err)
	}
	if s := parseOK(t, AnthropicMessages, out); s.stop != "tool" || len(s.tools) != 1 {
		t.Errorf("real call: %+v", s)
	}
}

// Upstream tool-call stream shapes that duplicated or lost calls elsewhere: the full id repeated in every chunk (DeepSeek, Qwen; langchain4j/langchain4j#4544), an empty-arguments delta in the finish chunk (vLLM; vercel/ai#3953), two finish_reason chunks (OpenRouter; skye-harris/hass_local_openai_llm#92), empty or missing ids on parallel calls (Gemini; Arize-ai/phoenix#11376) and a finish_reason "stop" after the calls (badrisnarayanan/antigravity-claude-proxy#96, which turned tool_use into end_turn).
func TestPeerToolCallStreamShapes(t *testing.T) {
	call := func(idx, id, name, args string) string {
		tc := `{"index":` + idx
		if id != "-" {
			tc += `,"id":"` + id + `","type":"function"`
		}
		tc += `,"function":{`
		if name != "" {
			tc += `"name":"` + name + `",`
		}
		return ccChunk(`{"tool_calls":[`+tc+`"arguments":`+strconv.Quote(args)+`}}]}`, "", "")
	}
	end := ccUsage + "data: [DONE]\n\n"
	role := ccChunk(`{"role":"assistant","content":null}`, "", "")
	for name, c := range map[string]struct {
		in    string
		tools []toolSum
	}{
		"id repeated": {role + call("0", "call_a", "f", `{"q":`) + call("0", "call_a", "f", `1}`) + ccChunk(`{}`, "tool_calls", "") + end,
			[]toolSum{{"f", `{"q":1}`}}},
		"empty args in the finish chunk": {role + call("0", "call_a", "f", `{"q":1}`) + strings.Replace(call("0", "-", "", ""), `"finish_reason":null`, `"finish_reason":"tool_calls"`, 1) + end,
			[]toolSum{{"f", `{"q":1}`}}},
		"two finish chunks": {role + call("0", "call_a", "f", `{}`) + ccChunk(`{}`, "tool_calls", "") + ccChunk(`{}`, "tool_calls", "") + end,
			[]toolSum{{"f", `{}`}}},
		"empty ids": {role + call("0", "", "f", `{"a":1}`) + call("1", "", "f", `{"a":2}`) + ccChunk(`{}`, "tool_calls", "") + end,
			[]toolSum{{"f", `{"a":1}`}, {"f", `{"a":2}`}}},
		"stop after the calls": {role + call("0", "call_a", "f", `{}`) + ccChunk(`{}`, "stop", "") + end,
			[]toolSum{{"f", `{}`}}},
	} {
		out, _, err := run(t, OpenAIChat, AnthropicMessages, c.in)
		if err != nil {
			t.Fatal(err)
		}
		s := parseOK(t, AnthropicMessages, out)
		if s.stop != "tool" || len(s.tools) != len(c.tools) {
			t.Errorf("%s: %+v\n%s", name, s, out)
			continue
		}
		for i := range c.tools {
			if s.tools[i] != c.tools[i] {
				t.Errorf("%s: tool %d %+v, want %+v", name, i, s.tools[i], c.tools[i])
			}
		}
		ids := map[string]bool{}
		for _, in := range anthropicToolInputs(out) {
			if in[0] == "" || ids[in[0]] {
				t.Errorf("%s: tool_use ids %v", name, anthropicToolInputs(out))
			}
			ids[in[0]] = true
		}
		if n := strings.Count(out, `"type":"message_delta"`); n != 1 {
			t.Errorf("%s: %d message_delta events", name, n)
		}
		rs, _, err := run(t, OpenAIChat, OpenAIResponses, c.in)
		if err != nil {
			t.Fatal(err)
		}
		if s := parseOK(t, OpenAIResponses, rs); len(s.tools) != len(c.tools) || s.tools[0] != c.tools[0] {
			t.Errorf("%s → Responses: %+v", name, s)
		}
	}
}

// vercel/ai#2124 (and tailcallhq/forgecode#1872, anomalyco/opencode#1295): an assistant prefill ending in white space ("Sure, ", "<thinking>\n") reached Anthropic as the final assistant content, refused with 400 "messages: final assistant content cannot end with trailing whitespace"; the prefill's trailing white space is cut, earlier turns keep theirs. Two assistant messages merged into the final turn (across a hoisted system message) are cut as one turn.
func TestPeerFinalAssistantPrefillTrimmed(t *testing.T) {
	for _, c := range []struct {
		from       Dialect
		body, want string
	}{
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"ok \n"},{"role":"user","content":"y"},{"role":"assistant","content":"Sure, "}]}`, `"Sure,"`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"text","text":"<thinking>\n"},{"type":"text","text":" \t"}]}]}`, `"<thinking>"`},
		{OpenAIResponses, `{"model":"m","input":[{"role":"user","content":"x"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Answer: "}]}]}`, `"Answer:"`},
		// two assistant messages the encoder merges into the final turn,
		// across a system message (hoisted) or after an empty one
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Hello "},{"role":"system","content":"be brief"},{"role":"assistant","content":" \n"}]}`, `"Hello"`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Hello\t"},{"role":"assistant","content":""}]}`, `"Hello"`},
		{OpenAIResponses, `{"model":"m","input":[{"role":"user","content":"x"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Well, "}]},{"role":"developer","content":"d"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"  "}]}]}`, `"Well,"`},
	} {
		r := mustTranslate(t, c.from, AnthropicMessages, c.body, "up")
		msgs := r.Get("messages").Array()
		last := msgs[len(msgs)-1]
		blocks := last.Get("content").Array()
		if last.Get("role").Str != "assistant" || blocks[len(blocks)-1].Get("text").Raw != c.want {
			t.Errorf("%s: %s", c.from, r.Raw)
		}
		if c.from == OpenAIChat && len(msgs) == 4 && msgs[1].Get("content.0.text").Str != "ok \n" {
			t.Errorf("an earlier assistant turn trimmed: %s", r.Raw)
		}
	}
	// the parsed request is not changed: encoded again for Chat, the prefill is whole
	req, err := ParseRequest(OpenAIChat, []byte(`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Sure, "}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := req.Encode(AnthropicMessages, "up"); err != nil {
		t.Fatal(err)
	}
	b, err := req.Encode(OpenAIResponses, "up")
	if err != nil || !strings.Contains(string(b), `"Sure, "`) {
		t.Errorf("%v %s", err, b)
	}
}

// Helicone/helicone#5639 (a Chat response_format json_schema passed through to Anthropic, which ignored it and answered prose) and decolua/9router#4050 (Claude Code's output_config.format on its title requests forwarded verbatim to an OpenAI-compatible upstream, refused): structured output is translated both ways.
func TestPeerStructuredOutputTranslated(t *testing.T) {
	schema := `{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`
	r := mustTranslate(t, OpenAIChat, AnthropicMessages, `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"t","strict":true,"schema":`+schema+`}},"messages":[{"role":"user","content":"x"}]}`, "up")
	wantGet(t, r, "output_config.format", `{"type":"json_schema","schema":`+schema+`}`)
	if r.Get("response_format").Exists() {
		t.Errorf("response_format sent to Anthropic: %s", r.Raw)
	}
	cc := `{"model":"m","max_tokens":50,"output_config":{"format":{"type":"json_schema","schema":` + schema + `}},"messages":[{"role":"user","content":"title this"}]}`
	r = mustTranslate(t, AnthropicMessages, OpenAIChat, cc, "up")
	wantGet(t, r, "response_format.type", `"json_schema"`)
	wantGet(t, r, "response_format.json_schema.schema", schema)
	r = mustTranslate(t, AnthropicMessages, OpenAIResponses, cc, "up")
	wantGet(t, r, "text.format.type", `"json_schema"`)
	wantGet(t, r, "text.format.schema", schema)
	for _, k := range []string{"output_config", "response_format"} {
		if r.Get(k).Exists() {
			t.Errorf("%s sent to Responses: %s", k, r.Raw)
		}
	}
}
