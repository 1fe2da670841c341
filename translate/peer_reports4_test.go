package translate

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A fourth set of public bug reports of other LLM gateways, tried against
// the translation (see also peer_reports_test.go, peer_reports2_test.go
// and peer_reports3_test.go). Each test names the report it reproduces.

// rsCompleted is a Responses response.completed event at seq whose
// output is the given items, with usage.
func rsCompleted(seq int, output string) string {
	return rsEv("response.completed", seq, `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"up","output":[`+output+`],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`)
}

// BerriAI/litellm#25321 (a comment there): an upstream Responses stream
// (LM Studio) that sends a function call's arguments only in
// response.function_call_arguments.done, never as deltas, reached Claude
// Code as tool_use with input {}. The arguments reach Anthropic and Chat
// clients whole.
func TestPeerResponsesArgumentsOnlyInDone(t *testing.T) {
	item := `{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"Read","arguments":"{\"path\":\"a.go\"}"}`
	in := rsPreamble +
		rsEv("response.output_item.added", 2, `,"output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"Read","arguments":""}`) +
		rsEv("response.function_call_arguments.done", 3, `,"item_id":"fc_1","output_index":0,"arguments":"{\"path\":\"a.go\"}"`) +
		rsEv("response.output_item.done", 4, `,"output_index":0,"item":`+item) +
		rsCompleted(5, item)
	for _, to := range []Dialect{AnthropicMessages, OpenAIChat} {
		out, _, err := run(t, OpenAIResponses, to, in)
		if err != nil {
			t.Fatal(err)
		}
		s := parseOK(t, to, out)
		if len(s.tools) != 1 || s.tools[0].name != "Read" || !jsonEqual(s.tools[0].args, `{"path":"a.go"}`) || s.stop != "tool" {
			t.Errorf("%s: %+v\n%s", to, s, out)
		}
	}
}

// router-for-me/CLIProxyAPI#1004: a Responses client's
// response.output_item.done for a function_call carried an empty name
// (the name came only in the first upstream chunk), which broke the
// Vercel AI SDK. The name is in output_item.added, output_item.done and
// response.completed alike, from a Chat or an Anthropic upstream.
func TestPeerFunctionCallDoneKeepsName(t *testing.T) {
	chat := ccChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"test_tool","arguments":""}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":"}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"5}"}}]}`, "", "") + ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n"
	anth := peerAmStream("tool_use", peerUsage, peerAmBlock("0", `{"type":"tool_use","id":"toolu_1","name":"test_tool","input":{}}`,
		`{"type":"input_json_delta","partial_json":"{\"x\":"}`, `{"type":"input_json_delta","partial_json":"5}"}`))
	for from, in := range map[Dialect]string{OpenAIChat: chat, AnthropicMessages: anth} {
		out, _, err := run(t, from, OpenAIResponses, in)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, d := range sseData(out) {
			var it gjson.Result
			switch typ := d.Get("type").Str; typ {
			case "response.output_item.added", "response.output_item.done":
				it = d.Get("item")
			case "response.completed":
				it = d.Get("response.output.0")
			default:
				continue
			}
			typ := d.Get("type").Str
			seen[typ] = true
			if it.Get("type").Str != "function_call" || it.Get("name").Str != "test_tool" || it.Get("call_id").Str == "" {
				t.Errorf("from %s, %s: %s", from, typ, d.Raw)
			}
			if typ != "response.output_item.added" && !jsonEqual(it.Get("arguments").Str, `{"x":5}`) {
				t.Errorf("from %s, %s arguments: %s", from, typ, d.Raw)
			}
		}
		if len(seen) != 3 {
			t.Errorf("from %s: events seen %v\n%s", from, seen, out)
		}
	}
}

// BerriAI/litellm#18238: a Chat chunk whose delta carries both content and
// the start of a tool call lost the tool call (its name) on the way to an
// Anthropic client. Both reach Anthropic and Responses clients, text first.
func TestPeerTextAndToolCallInOneChunk(t *testing.T) {
	in := ccChunk(`{"role":"assistant","content":"首先初始化项目：","tool_calls":[{"index":0,"id":"toolu_bdrk_1","type":"function","function":{"name":"Bash","arguments":""}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":\"ls\"}"}}]}`, "", "") +
		ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n"
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		out, _, err := run(t, OpenAIChat, to, in)
		if err != nil {
			t.Fatal(err)
		}
		s := parseOK(t, to, out)
		if s.text != "首先初始化项目：" || len(s.tools) != 1 || s.tools[0].name != "Bash" || !jsonEqual(s.tools[0].args, `{"command":"ls"}`) || s.stop != "tool" {
			t.Errorf("%s: %+v\n%s", to, s, out)
		}
	}
}

// bigduu/Bamboo-agent#351: a replayed Chat tool call of a tool without
// parameters has arguments "" (stream accumulators start empty); sent to
// Anthropic as input "" it was refused, and every later turn of the
// session with it. It becomes input {} (and arguments "{}" for a
// Responses upstream); arguments that are not JSON at all are refused in
// the client's words, never sent on as a string.
func TestPeerEmptyToolArgumentsAreEmptyObject(t *testing.T) {
	body := func(args string) string {
		return `{"model":"m","messages":[{"role":"user","content":"time?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"now","arguments":` + args + `}}]},{"role":"tool","tool_call_id":"call_1","content":"12:00"}],"tools":[{"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}}]}`
	}
	for _, args := range []string{`""`, `"  "`} {
		out, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(body(args)), "claude-x")
		if err != nil {
			t.Fatalf("arguments %s: %v", args, err)
		}
		if in := gjson.GetBytes(out, "messages.1.content.0"); in.Get("type").Str != "tool_use" || in.Get("input").Raw != "{}" {
			t.Errorf("arguments %s to Anthropic: %s", args, out)
		}
		out, err = TranslateRequest(OpenAIChat, OpenAIResponses, []byte(body(args)), "gpt-x")
		if err != nil {
			t.Fatalf("arguments %s: %v", args, err)
		}
		if fc := gjson.GetBytes(out, `input.#(type=="function_call")`); fc.Get("arguments").Str != "{}" {
			t.Errorf("arguments %s to Responses: %s", args, out)
		}
	}
	_, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(body(`"{\"a\":1"`)), "claude-x")
	if err == nil || !strings.Contains(err.Error(), "call_1") || !strings.Contains(err.Error(), "JSON") {
		t.Errorf("broken arguments to Anthropic: %v", err)
	}
}

// earendil-works/pi#7817 (an OpenAI-compatible Responses upstream says
// incomplete_details.reason "length" where OpenAI says
// "max_output_tokens", and the turn was shown as an error) and
// BerriAI/litellm#37710 (an incomplete response whose output is only a
// reasoning item answered 500): both are a length stop, streamed and
// whole, for Anthropic (max_tokens) and Chat (length) clients.
func TestPeerIncompleteLengthIsLength(t *testing.T) {
	want := map[Dialect]string{AnthropicMessages: "max_tokens", OpenAIChat: "length"}
	stopOf := func(to Dialect, b []byte) string {
		if to == AnthropicMessages {
			return gjson.GetBytes(b, "stop_reason").Str
		}
		return gjson.GetBytes(b, "choices.0.finish_reason").Str
	}
	for _, reason := range []string{"max_output_tokens", "length"} {
		inc := `"status":"incomplete","incomplete_details":{"reason":"` + reason + `"}`
		in := rsPreamble + rsContent +
			rsEv("response.incomplete", 5, `,"response":{"id":"resp_1","object":"response","created_at":1,`+inc+`,"model":"up","output":[{"id":"msg_1","type":"message","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"partial","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`)
		whole := `{"id":"resp_1","object":"response","created_at":1,` + inc + `,"model":"up","output":[{"id":"rs_1","type":"reasoning","summary":[]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`
		for to, w := range want {
			out, _, err := run(t, OpenAIResponses, to, in)
			if err != nil {
				t.Fatal(err)
			}
			if s := parseOK(t, to, out); s.text != "partial" || s.stop != "length" {
				t.Errorf("%s stream to %s: %+v\n%s", reason, to, s, out)
			}
			b, _, err := TranslateResponse(OpenAIResponses, to, []byte(whole), "cm")
			if err != nil || stopOf(to, b) != w {
				t.Errorf("%s reasoning-only whole answer to %s: %v %s", reason, to, err, b)
			}
		}
	}
}

// getomnico/omni#402 (a no-argument tool call streamed by Anthropic has
// no input_json_delta, or an empty one, and clients failed to parse its
// arguments): Chat and Responses clients get arguments "{}", streamed
// and whole.
func TestPeerNoArgToolUseIsEmptyObject(t *testing.T) {
	streams := []string{
		peerAmStream("tool_use", peerUsage, peerAmBlock("0", `{"type":"tool_use","id":"toolu_1","name":"now","input":{}}`)),
		peerAmStream("tool_use", peerUsage, peerAmBlock("0", `{"type":"tool_use","id":"toolu_1","name":"now","input":{}}`, `{"type":"input_json_delta","partial_json":""}`)),
	}
	for i, in := range streams {
		for _, to := range []Dialect{OpenAIChat, OpenAIResponses} {
			out, _, err := run(t, AnthropicMessages, to, in)
			if err != nil {
				t.Fatal(err)
			}
			if s := parseOK(t, to, out); len(s.tools) != 1 || s.tools[0].name != "now" || s.tools[0].args != "{}" {
				t.Errorf("stream %d to %s: %+v\n%s", i, to, s, out)
			}
		}
	}
	whole := `{"id":"msg_p","type":"message","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"toolu_1","name":"now","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`
	for to, path := range map[Dialect]string{OpenAIChat: "choices.0.message.tool_calls.0.function.arguments", OpenAIResponses: "output.0.arguments"} {
		b, _, err := TranslateResponse(AnthropicMessages, to, []byte(whole), "cm")
		if err != nil || gjson.GetBytes(b, path).Str != "{}" {
			t.Errorf("whole to %s: %v %s", to, err, b)
		}
	}
}

// maximhq/bifrost#5354: an Anthropic-protocol stream whose message_start
// counts the whole prompt as input_tokens with no cache, and whose
// message_delta then gives the real split (the uncached tail and
// cache_read_input_tokens), was counted about twice. The prompt is the
// message_delta's split, once: 10000 tokens of which 9950 cached, in what
// Chat and Responses clients see and in the usage booked.
func TestPeerCacheReadOnlyInMessageDelta(t *testing.T) {
	in := amEv("message_start", `{"type":"message_start","message":{"id":"msg_p","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`) +
		peerAmBlock("0", `{"type":"text","text":""}`, `{"type":"text_delta","text":"hi"}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":50,"cache_creation_input_tokens":0,"cache_read_input_tokens":9950,"output_tokens":20}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	paths := map[Dialect][2]string{
		OpenAIChat:      {"usage.prompt_tokens", "usage.prompt_tokens_details.cached_tokens"},
		OpenAIResponses: {"response.usage.input_tokens", "response.usage.input_tokens_details.cached_tokens"},
	}
	for _, to := range []Dialect{OpenAIChat, OpenAIResponses, AnthropicMessages} {
		out, tr, err := run(t, AnthropicMessages, to, in)
		if err != nil {
			t.Fatal(err)
		}
		if u := tr.Usage(); u.String() != "in=10000 out=20 cache_read=9950 cache_write=0 reasoning=-" {
			t.Errorf("%s: usage booked %s", to, u)
		}
		p, ok := paths[to]
		if !ok {
			continue
		}
		ds := sseData(out)
		last := ds[len(ds)-1]
		if last.Get(p[0]).Int() != 10000 || last.Get(p[1]).Int() != 9950 {
			t.Errorf("%s: %s", to, last.Raw)
		}
	}
}

// StringKe/claudex#8 (the text Claude Code puts beside a tool_result in
// one user message was dropped on the way to a Responses upstream) and
// NanmiCoder/cc-haha#1278 (an image inside a tool_result was dropped on
// the way to a Chat upstream): both reach Chat and Responses upstreams,
// in order, after the tool's output.
func TestPeerToolResultSiblingsKept(t *testing.T) {
	body := `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"shoot"},{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"screenshot","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"here"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},{"type":"text","text":"Now reply visibly"}]}],"tools":[{"name":"screenshot","input_schema":{"type":"object","properties":{}}}]}`
	const img = "data:image/png;base64,iVBORw0KGgo="
	out, err := TranslateRequest(AnthropicMessages, OpenAIChat, []byte(body), "gpt-x")
	if err != nil {
		t.Fatal(err)
	}
	msgs := gjson.GetBytes(out, "messages").Array()
	if len(msgs) != 4 || msgs[2].Get("role").Str != "tool" || msgs[2].Get("content").Str != "here" ||
		msgs[3].Get("role").Str != "user" || msgs[3].Get(`content.#(type=="image_url").image_url.url`).Str != img ||
		msgs[3].Get("content.@reverse.0.text").Str != "Now reply visibly" {
		t.Errorf("to Chat: %s", out)
	}
	out, err = TranslateRequest(AnthropicMessages, OpenAIResponses, []byte(body), "gpt-x")
	if err != nil {
		t.Fatal(err)
	}
	items := gjson.GetBytes(out, "input").Array()
	if len(items) != 4 || items[2].Get("type").Str != "function_call_output" || items[2].Get(`output.#(type=="input_image").image_url`).Str != img ||
		items[2].Get(`output.#(type=="input_text").text`).Str != "here" ||
		items[3].Get("role").Str != "user" || items[3].Get("content.0.text").Str != "Now reply visibly" {
		t.Errorf("to Responses: %s", out)
	}
}

// vercel/ai#7883 and OpenRouterTeam/ai-sdk-provider#254: two output items
// with one id ("Duplicate item found with id rs_…"). A whole Anthropic
// answer whose first two blocks are reasoning (thinking, then
// redacted_thinking) gave both reasoning items the id rs_<id>; the Vercel
// AI SDK merges reasoning parts by item id, so the redacted block was lost
// on replay. Every output item of a whole Responses answer has its own id.
func TestPeerResponsesOutputItemIDsUnique(t *testing.T) {
	whole := `{"id":"msg_p","type":"message","role":"assistant","model":"claude-x","content":[` +
		`{"type":"thinking","thinking":"let me think","signature":"SIG1"},{"type":"redacted_thinking","data":"RED"},{"type":"text","text":"first"},` +
		`{"type":"tool_use","id":"toolu_1","name":"now","input":{}},{"type":"thinking","thinking":"again","signature":"SIG2"},{"type":"text","text":"second"}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`
	b, _, err := TranslateResponse(AnthropicMessages, OpenAIResponses, []byte(whole), "cm")
	if err != nil {
		t.Fatal(err)
	}
	items := gjson.GetBytes(b, "output").Array()
	ids := map[string]bool{}
	for _, it := range items {
		id := it.Get("id").Str
		if id == "" || ids[id] {
			t.Errorf("item id %q empty or repeated: %s", id, b)
		}
		ids[id] = true
	}
	if len(items) != 6 || items[1].Get("encrypted_content").Str == items[0].Get("encrypted_content").Str {
		t.Errorf("output: %s", b)
	}
}

// vercel/ai#7834 (Gemini's OpenAI-compatible endpoint answered tool calls
// with id "") and diegosouzapw/OmniRoute#419 (such calls became Responses
// function_call items with an empty call_id): a Chat upstream's tool calls
// without an id, or with "", streamed or whole, reach Anthropic clients
// as tool_use blocks and Responses clients as function_call items with
// ids of their own, none empty and no two alike (BerriAI/litellm#23510:
// Anthropic refuses repeated tool_use ids).
func TestPeerChatToolCallsWithoutIDs(t *testing.T) {
	stream := ccChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"type":"function","function":{"name":"a","arguments":"{}"}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":1,"id":"","type":"function","function":{"name":"b","arguments":"{}"}}]}`, "", "") +
		ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n"
	whole := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"a","arguments":"{}"}},{"id":"","type":"function","function":{"name":"b","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	check := func(label string, ids []string) {
		t.Helper()
		if len(ids) != 2 || ids[0] == "" || ids[1] == "" || ids[0] == ids[1] {
			t.Errorf("%s: tool call ids %q", label, ids)
		}
	}
	out, _, err := run(t, OpenAIChat, AnthropicMessages, stream)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range anthropicToolInputs(out) {
		ids = append(ids, v[0])
	}
	check("stream to Anthropic", ids)
	out, _, err = run(t, OpenAIChat, OpenAIResponses, stream)
	if err != nil {
		t.Fatal(err)
	}
	ids = nil
	var items []string
	for _, d := range sseData(out) {
		if d.Get("type").Str == "response.output_item.done" {
			ids = append(ids, d.Get("item.call_id").Str)
			items = append(items, d.Get("item.id").Str)
		}
	}
	check("stream to Responses, call_id", ids)
	check("stream to Responses, item id", items)
	b, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(whole), "cm")
	if err != nil {
		t.Fatal(err)
	}
	check("whole to Anthropic", []string{gjson.GetBytes(b, "content.0.id").Str, gjson.GetBytes(b, "content.1.id").Str})
	b, _, err = TranslateResponse(OpenAIChat, OpenAIResponses, []byte(whole), "cm")
	if err != nil {
		t.Fatal(err)
	}
	check("whole to Responses, call_id", []string{gjson.GetBytes(b, "output.0.call_id").Str, gjson.GetBytes(b, "output.1.call_id").Str})
	check("whole to Responses, item id", []string{gjson.GetBytes(b, "output.0.id").Str, gjson.GetBytes(b, "output.1.id").Str})
}

// farion1231/cc-switch#5093 (SenseNova sends "finish_reason": "" on every
// chunk; the first one was taken for the end of the turn, the thinking
// block closed, the real finish_reason swallowed and the later blocks left
// open, so Claude Desktop dropped the message) and ollama/ollama#4357 (the
// same "" on every chunk): "" is no finish reason. Anthropic and Responses
// clients get the thinking, the whole text and the real stop, every block
// closed.
func TestPeerEmptyFinishReasonIsNone(t *testing.T) {
	ch := func(delta, fr string) string {
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}]}` + "\n\n"
	}
	in := ch(`{"role":"assistant","reasoning_content":"hmm"}`, `""`) + ch(`{"reasoning_content":" more"}`, `""`) +
		ch(`{"content":"hello"}`, `""`) + ch(`{"content":" world"}`, `""`) + ch(`{}`, `"length"`) + ccUsage + "data: [DONE]\n\n"
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		out, _, err := run(t, OpenAIChat, to, in)
		if err != nil {
			t.Fatal(err)
		}
		if s := parseOK(t, to, out); s.thinking != "hmm more" || s.text != "hello world" || s.stop != "length" {
			t.Errorf("%s: %+v\n%s", to, s, out)
		}
		if to == AnthropicMessages {
			if n, m := strings.Count(out, "event: content_block_start"), strings.Count(out, "event: content_block_stop"); n != 2 || m != 2 ||
				strings.Count(out, "event: message_delta") != 1 {
				t.Errorf("blocks started %d, stopped %d:\n%s", n, m, out)
			}
		}
	}
}

// looplj/axonhub#1412, raine/claude-code-proxy#20 and
// farion1231/cc-switch#2851: Claude Code sends output_config.effort
// "xhigh" (its default for Claude Opus 4.7, per Anthropic's effort docs:
// low, medium, high, xhigh, max), and translating gateways refused it as
// not one of low, medium, high, max. Translated to an OpenAI upstream it
// is reasoning effort "xhigh", which OpenAI has too; passed through to
// Anthropic it is unchanged.
func TestPeerAnthropicEffortXHigh(t *testing.T) {
	body := `{"model":"claude-opus-4-7","max_tokens":1000,"thinking":{"type":"adaptive"},"output_config":{"effort":"xhigh"},"messages":[{"role":"user","content":"hi"}]}`
	for to, path := range map[Dialect]string{OpenAIChat: "reasoning_effort", OpenAIResponses: "reasoning.effort"} {
		out, err := TranslateRequest(AnthropicMessages, to, []byte(body), "gpt-5.2")
		if err != nil || gjson.GetBytes(out, path).Str != "xhigh" {
			t.Errorf("to %s: %v %s", to, err, out)
		}
	}
	out, err := TranslateRequest(AnthropicMessages, AnthropicMessages, []byte(body), "claude-opus-4-7")
	if err != nil || gjson.GetBytes(out, "output_config.effort").Str != "xhigh" {
		t.Errorf("to Anthropic: %v %s", err, out)
	}
	if err := ValidateRequest(AnthropicMessages, []byte(body)); err != nil {
		t.Errorf("validate: %v", err)
	}
	bad := strings.Replace(body, `"xhigh"`, `"extreme"`, 1)
	if _, err := TranslateRequest(AnthropicMessages, OpenAIChat, []byte(bad), "gpt-5"); err == nil || !strings.Contains(err.Error(), "'xhigh'") {
		t.Errorf("an unknown effort: %v", err)
	}
}

// softwaremill/sttp-ai#338 (Gemini's OpenAI-compatible endpoint answered
// without a top-level id) with vercel/ai#7834 (and tool calls with id
// ""): the ids the gateway gives such calls differ from one answer to the
// next, whole or streamed, so a conversation's turns do not all carry
// call__0 (Anthropic refuses a history that repeats a tool_use id, OpenAI
// one that repeats an item id), and they stay valid tool ids.
func TestPeerChatToolCallIDsWithoutAnswerID(t *testing.T) {
	fixed := idBase
	idBase = randomIDBase
	t.Cleanup(func() { idBase = fixed })
	whole := `{"object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"","type":"function","function":{"name":"a","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
	stream := `data: {"object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"","type":"function","function":{"name":"a","arguments":"{}"}}]},"finish_reason":null}]}` + "\n\n" +
		`data: {"object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"
	valid := regexp.MustCompile(`^call_[a-zA-Z0-9_-]+_0$`)
	seen := map[string]bool{}
	for turn := 0; turn < 2; turn++ {
		b, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(whole), "cm")
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := run(t, OpenAIChat, AnthropicMessages, stream)
		if err != nil {
			t.Fatal(err)
		}
		ins := anthropicToolInputs(out)
		if len(ins) != 1 {
			t.Fatalf("stream: %s", out)
		}
		for _, id := range []string{gjson.GetBytes(b, "content.0.id").Str, ins[0][0]} {
			if !valid.MatchString(id) || seen[id] {
				t.Errorf("turn %d: tool_use id %q invalid or already given (%v)", turn, id, seen)
			}
			seen[id] = true
		}
	}
}
