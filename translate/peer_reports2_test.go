package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// More translation defects from public gateway bug reports, each test
// naming the report it reproduces (see also peer_reports_test.go).

// sseData returns the data payloads of an SSE stream, in order.
func sseData(out string) []gjson.Result {
	var ds []gjson.Result
	for _, line := range strings.Split(out, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
			ds = append(ds, gjson.Parse(d))
		}
	}
	return ds
}

// chatToolDeltas lists a translated Chat stream's tool_calls deltas as
// "index:id:name:arguments" strings, in order.
func chatToolDeltas(out string) []string {
	var r []string
	for _, d := range sseData(out) {
		d.Get("choices.0.delta.tool_calls").ForEach(func(_, tc gjson.Result) bool {
			r = append(r, tc.Get("index").Raw+":"+tc.Get("id").Str+":"+tc.Get("function.name").Str+":"+tc.Get("function.arguments").Str)
			return true
		})
	}
	return r
}

// anthropicToolInputs returns each tool_use block's id and the
// concatenated partial_json of its input_json_delta events, by block index.
func anthropicToolInputs(out string) map[int64][2]string {
	m := map[int64][2]string{}
	for _, d := range sseData(out) {
		i := d.Get("index").Int()
		switch d.Get("type").Str {
		case "content_block_start":
			if d.Get("content_block.type").Str == "tool_use" {
				m[i] = [2]string{d.Get("content_block.id").Str, ""}
			}
		case "content_block_delta":
			if v, ok := m[i]; ok && d.Get("delta.type").Str == "input_json_delta" {
				v[1] += d.Get("delta.partial_json").Str
				m[i] = v
			}
		}
	}
	return m
}

// BerriAI/litellm#25390 (also #25836, #25561, #25605): streamed tool_use reached Anthropic clients with input {} when the upstream sent the call whole in one chunk.
func TestPeerChatToolCallInOneChunk(t *testing.T) {
	call := `{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"grep_tool","arguments":"{\"pattern\":\"GetExerciseAnchors\",\"path\":\"lib/a.dart\"}"}}]}`
	args := `{"pattern":"GetExerciseAnchors","path":"lib/a.dart"}`
	for name, in := range map[string]string{
		"call and finish_reason in one chunk": ccChunk(call, "tool_calls", "") + ccUsage + "data: [DONE]\n\n",
		"call, then finish_reason":            ccChunk(call, "", "") + ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n",
	} {
		out, _, err := run(t, OpenAIChat, AnthropicMessages, in)
		if err != nil {
			t.Fatal(err)
		}
		if got := anthropicToolInputs(out); len(got) != 1 || got[0] != [2]string{"call_1", args} {
			t.Errorf("%s: tool_use blocks %v\n%s", name, got, out)
		}
		if s := parseOK(t, AnthropicMessages, out); s.stop != "tool" || len(s.tools) != 1 || s.tools[0] != (toolSum{"grep_tool", args}) {
			t.Errorf("%s: %+v", name, s)
		}
		rs, _, err := run(t, OpenAIChat, OpenAIResponses, in)
		if err != nil {
			t.Fatal(err)
		}
		if s := parseOK(t, OpenAIResponses, rs); len(s.tools) != 1 || s.tools[0] != (toolSum{"grep_tool", args}) {
			t.Errorf("%s to Responses: %+v", name, s)
		}
	}
}

// BerriAI/litellm#5231, maximhq/bifrost#1961 and BerriAI/litellm#15884: parallel Anthropic tool_use blocks streamed to Chat all had index 0 (or -1, without id and name).
func TestPeerAnthropicParallelToolCallIndexes(t *testing.T) {
	in := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking both."}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"weather","input":{}}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Rome\"}"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":2}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	out, _, err := run(t, AnthropicMessages, OpenAIChat, in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`0:toolu_1:weather:`, `0:::{"city":`, `0:::"Paris"}`, `1:toolu_2:weather:`, `1:::{"city":"Rome"}`}
	if got := chatToolDeltas(out); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tool_calls deltas %q, want %q", got, want)
	}
	s := parseOK(t, OpenAIChat, out)
	if s.text != "Checking both." || s.stop != "tool" || len(s.tools) != 2 || s.tools[0].args != `{"city":"Paris"}` || s.tools[1].args != `{"city":"Rome"}` {
		t.Errorf("SDK view: %+v", s)
	}
}

// mcowger/plexus#691: a Responses upstream's parallel function calls reached Chat clients all at index 0, their arguments concatenated.
func TestPeerResponsesParallelCallsChatIndexes(t *testing.T) {
	fc := func(seq, idx int, id, call string) string {
		return rsEv("response.output_item.added", seq, `,"output_index":`+itoa(idx)+`,"item":{"id":"`+id+`","type":"function_call","status":"in_progress","call_id":"`+call+`","name":"add_task","arguments":""}`)
	}
	delta := func(seq, idx int, id, d string) string {
		return rsEv("response.function_call_arguments.delta", seq, `,"item_id":"`+id+`","output_index":`+itoa(idx)+`,"delta":"`+d+`"`)
	}
	done := func(seq, idx int, id, call, args string) string {
		return rsEv("response.output_item.done", seq, `,"output_index":`+itoa(idx)+`,"item":{"id":"`+id+`","type":"function_call","status":"completed","call_id":"`+call+`","name":"add_task","arguments":"`+args+`"}`)
	}
	a1, a2, a3 := `{\"title\":\"Walk\"}`, `{\"title\":\"Cook\"}`, `{\"title\":\"Read\"}`
	in := rsPreamble + fc(2, 0, "fc_1", "call_1") + delta(3, 0, "fc_1", a1) + done(4, 0, "fc_1", "call_1", a1) +
		fc(5, 1, "fc_2", "call_2") + delta(6, 1, "fc_2", a2) + done(7, 1, "fc_2", "call_2", a2) +
		fc(8, 2, "fc_3", "call_3") + delta(9, 2, "fc_3", a3) + done(10, 2, "fc_3", "call_3", a3) +
		rsEv("response.completed", 11, rsDone)
	out, _, err := run(t, OpenAIResponses, OpenAIChat, in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`0:call_1:add_task:`, `0:::{"title":"Walk"}`, `1:call_2:add_task:`, `1:::{"title":"Cook"}`, `2:call_3:add_task:`, `2:::{"title":"Read"}`}
	if got := chatToolDeltas(out); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tool_calls deltas %q, want %q", got, want)
	}
	if s := parseOK(t, OpenAIChat, out); len(s.tools) != 3 || s.tools[2].args != `{"title":"Read"}` || s.stop != "tool" {
		t.Errorf("SDK view: %+v", s)
	}
}

// praxis-proxy/ai#266: Chat tool-call deltas interleaved by index were written to the wrong Anthropic block (one global open block).
func TestPeerChatInterleavedToolDeltasToAnthropic(t *testing.T) {
	in := ccChunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}},{"index":1,"id":"call_2","type":"function","function":{"name":"g","arguments":""}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"b\""}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":1,"function":{"arguments":":2}"}}]}`, "", "") +
		ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n"
	out, _, err := run(t, OpenAIChat, AnthropicMessages, in)
	if err != nil {
		t.Fatal(err)
	}
	got := anthropicToolInputs(out)
	if len(got) != 2 || got[0] != [2]string{"call_1", `{"a":1}`} || got[1] != [2]string{"call_2", `{"b":2}`} {
		t.Errorf("tool_use blocks %v\n%s", got, out)
	}
	// every block is closed exactly once, after its last delta
	stops := map[int64]int{}
	for _, d := range sseData(out) {
		switch d.Get("type").Str {
		case "content_block_stop":
			stops[d.Get("index").Int()]++
		case "content_block_delta":
			if stops[d.Get("index").Int()] != 0 {
				t.Errorf("delta after its block closed: %s", d.Raw)
			}
		}
	}
	if stops[0] != 1 || stops[1] != 1 {
		t.Errorf("content_block_stop counts %v", stops)
	}
}

// vllm-project/vllm#45807 and praxis-proxy/ai#1246: a Chat stop on a caller's stop string was reported to Anthropic clients as end_turn with stop_sequence null.
func TestPeerChatStopStringIsStopSequence(t *testing.T) {
	fin := func(sr string) string {
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":` + sr + `}]}` + "\n\n"
	}
	text := ccChunk(`{"role":"assistant","content":"alpha beta "}`, "", "")
	for _, c := range []struct{ sr, stop, seq string }{
		{`"STOPPROBE"`, "stop_sequence", "STOPPROBE"}, // vLLM names the matched stop string
		{`null`, "end_turn", ""},                      // a natural end
		{`151645`, "end_turn", ""},                    // a stop token id
	} {
		out, _, err := run(t, OpenAIChat, AnthropicMessages, text+fin(c.sr)+ccUsage+"data: [DONE]\n\n")
		if err != nil {
			t.Fatal(err)
		}
		var md gjson.Result
		for _, d := range sseData(out) {
			if d.Get("type").Str == "message_delta" {
				md = d
			}
		}
		if md.Get("delta.stop_reason").Str != c.stop || md.Get("delta.stop_sequence").Str != c.seq {
			t.Errorf("stop_reason %s: message_delta %s", c.sr, md.Raw)
		}
		body := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"alpha beta "},"finish_reason":"stop","stop_reason":` + c.sr + `}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
		ans, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(body), "cm")
		if err != nil || gjson.GetBytes(ans, "stop_reason").Str != c.stop || gjson.GetBytes(ans, "stop_sequence").Str != c.seq {
			t.Errorf("stop_reason %s: answer %v %s", c.sr, err, ans)
		}
		// the other dialects keep their plain stop
		rs, _, _ := run(t, OpenAIChat, OpenAIResponses, text+fin(c.sr)+ccUsage+"data: [DONE]\n\n")
		if s := parseOK(t, OpenAIResponses, rs); s.stop != "stop" || s.text != "alpha beta " {
			t.Errorf("stop_reason %s to Responses: %+v", c.sr, s)
		}
	}
	// a turn with tool calls (finish_reason "stop", as with a named tool_choice) stays
	// tool_use whatever stop string is named: Anthropic clients run calls only on it
	call := ccChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"q\":1}"}}]}`, "", "")
	out, _, err := run(t, OpenAIChat, AnthropicMessages, call+fin(`"STOPPROBE"`)+ccUsage+"data: [DONE]\n\n")
	var md gjson.Result
	for _, d := range sseData(out) {
		if d.Get("type").Str == "message_delta" {
			md = d
		}
	}
	if err != nil || md.Get("delta.stop_reason").Str != "tool_use" || md.Get("delta.stop_sequence").Str != "" {
		t.Errorf("tool call with a stop string: %v message_delta %s", err, md.Raw)
	}
	body := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"q\":1}"}}]},"finish_reason":"stop","stop_reason":"STOPPROBE"}]}`
	if ans, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(body), "cm"); err != nil || gjson.GetBytes(ans, "stop_reason").Str != "tool_use" || gjson.GetBytes(ans, "stop_sequence").Str != "" {
		t.Errorf("tool call with a stop string, answer: %v %s", err, ans)
	}
	// an Anthropic upstream's stop_sequence reaches a Chat client as finish_reason "stop"
	am := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"A B C "}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"STOP"},"usage":{"output_tokens":4}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	out, _, err = run(t, AnthropicMessages, OpenAIChat, am)
	if err != nil {
		t.Fatal(err)
	}
	var frs []string
	for _, d := range sseData(out) {
		if fr := d.Get("choices.0.finish_reason"); fr.Type == gjson.String {
			frs = append(frs, fr.Str)
		}
	}
	if strings.Join(frs, ",") != "stop" {
		t.Errorf("finish_reason %v", frs)
	}
}

// BerriAI/litellm#24443 and #32505, agentscope-ai/agentscope-java#2221: tool_choice none/auto/any translated to an invalid or opposite value.
func TestPeerToolChoiceTranslation(t *testing.T) {
	amTools := `"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"x"}]`
	for _, c := range []struct{ in, chat, resp string }{
		{`{"type":"none"}`, `"none"`, `"none"`},
		{`{"type":"auto"}`, `"auto"`, `"auto"`},
		{`{"type":"any"}`, `"required"`, `"required"`},
		{`{"type":"tool","name":"f"}`, `{"type":"function","function":{"name":"f"}}`, `{"type":"function","name":"f"}`},
	} {
		body := `{"model":"m","max_tokens":5,"tool_choice":` + c.in + `,` + amTools + `}`
		out, err := TranslateRequest(AnthropicMessages, OpenAIChat, []byte(body), "up")
		if err != nil || gjson.GetBytes(out, "tool_choice").Raw != c.chat {
			t.Errorf("%s to Chat: %v %s", c.in, err, gjson.GetBytes(out, "tool_choice").Raw)
		}
		out, err = TranslateRequest(AnthropicMessages, OpenAIResponses, []byte(body), "up")
		if err != nil || gjson.GetBytes(out, "tool_choice").Raw != c.resp {
			t.Errorf("%s to Responses: %v %s", c.in, err, gjson.GetBytes(out, "tool_choice").Raw)
		}
	}
	// and back: OpenAI "none" disables tools, "required" forces one; never the other way round
	for in, want := range map[string]string{`"none"`: `{"type":"none"}`, `"required"`: `{"type":"any"}`, `"auto"`: `{"type":"auto"}`} {
		body := `{"model":"m","tool_choice":` + in + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"x"}]}`
		out, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(body), "up")
		if err != nil || gjson.GetBytes(out, "tool_choice").Raw != want {
			t.Errorf("Chat %s to Anthropic: %v %s", in, err, out)
		}
	}
}

// BerriAI/litellm#3286: an OpenAI stop of "\n" sent to Anthropic failed with "stop_sequences: each stop sequence must contain non-whitespace".
func TestPeerWhitespaceStopToAnthropic(t *testing.T) {
	for stop, want := range map[string]string{`["\n","END"]`: `["END"]`, `"\n"`: ``, `[" ","\t"]`: ``, `"END"`: `["END"]`} {
		out, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(`{"model":"m","stop":`+stop+`,"messages":[{"role":"user","content":"x"}]}`), "up")
		if err != nil || gjson.GetBytes(out, "stop_sequences").Raw != want {
			t.Errorf("stop %s: %v %s", stop, err, out)
		}
	}
}

// run-llama/llama_index#17278, UKGovernmentBEIS/inspect_ai#2772, elizaOS/eliza#7567: an assistant tool-call turn with content "" or null became an empty text block (refused by Anthropic) or was dropped.
func TestPeerEmptyAssistantContentWithToolCalls(t *testing.T) {
	for _, content := range []string{`""`, `null`, `[]`, `[{"type":"text","text":""}]`} {
		body := `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":` + content + `,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"q\":1}"}}]},{"role":"tool","tool_call_id":"call_1","content":"ok"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
		out, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(body), "up")
		if err != nil {
			t.Fatalf("%s: %v", content, err)
		}
		if a := gjson.GetBytes(out, "messages.1"); a.Get("role").Str != "assistant" || a.Get("content.#").Int() != 1 ||
			a.Get("content.0.type").Str != "tool_use" || a.Get("content.0.input.q").Int() != 1 {
			t.Errorf("content %s: assistant turn %s", content, a.Raw)
		}
		if r := gjson.GetBytes(out, "messages.2.content.0"); r.Get("type").Str != "tool_result" || r.Get("tool_use_id").Str != "call_1" {
			t.Errorf("content %s: tool_result %s", content, r.Raw)
		}
		out, err = TranslateRequest(OpenAIChat, OpenAIResponses, []byte(body), "up")
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		gjson.GetBytes(out, "input").ForEach(func(_, it gjson.Result) bool {
			types = append(types, it.Get("type").Str)
			return true
		})
		if strings.Join(types, ",") != "message,function_call,function_call_output" {
			t.Errorf("content %s: Responses input items %v: %s", content, types, out)
		}
	}
}

// openai/codex#7051: "An assistant message with 'tool_calls' must be followed by tool messages" when parallel function_call items (after a reasoning item) were translated to Chat.
func TestPeerResponsesParallelCallHistory(t *testing.T) {
	body := `{"model":"m","input":[{"role":"user","content":"x"},{"type":"reasoning","id":"rs_1","summary":[]},` +
		`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"g","arguments":"{\"n\":2}"},` +
		`{"type":"function_call_output","call_id":"c1","output":"a"},{"type":"function_call_output","call_id":"c2","output":"b"},{"role":"user","content":"next"}]}`
	out, err := TranslateRequest(OpenAIResponses, OpenAIChat, []byte(body), "up")
	if err != nil {
		t.Fatal(err)
	}
	var shape []string
	gjson.GetBytes(out, "messages").ForEach(func(_, m gjson.Result) bool {
		s := m.Get("role").Str
		if n := m.Get("tool_calls.#").Int(); n > 0 {
			s += "(" + m.Get("tool_calls.0.id").Str + "," + m.Get("tool_calls.1.id").Str + ")"
		}
		if id := m.Get("tool_call_id").Str; id != "" {
			s += "(" + id + ")"
		}
		shape = append(shape, s)
		return true
	})
	if strings.Join(shape, " ") != "user assistant(c1,c2) tool(c1) tool(c2) user" {
		t.Errorf("Chat messages %v: %s", shape, out)
	}
	out, err = TranslateRequest(OpenAIResponses, AnthropicMessages, []byte(body), "up")
	if err != nil {
		t.Fatal(err)
	}
	m := gjson.GetBytes(out, "messages")
	if m.Get("#").Int() != 3 || m.Get("1.content.#").Int() != 2 || m.Get("2.content.0.tool_use_id").Str != "c1" ||
		m.Get("2.content.1.tool_use_id").Str != "c2" || m.Get("2.content.2.text").Str != "next" {
		t.Errorf("Anthropic messages: %s", m.Raw)
	}
}

// BerriAI/litellm#38790: Claude Code's cache_control {"ttl":"1h"} reached an OpenAI-compatible upstream, which refused it; the native Anthropic path keeps it.
func TestPeerCacheControlTTLNotSentToOpenAI(t *testing.T) {
	body := `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
		`"tools":[{"name":"f","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}`
	for _, to := range []Dialect{OpenAIChat, OpenAIResponses} {
		out, err := TranslateRequest(AnthropicMessages, to, []byte(body), "up")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "cache_control") || strings.Contains(string(out), "ttl") {
			t.Errorf("to %s: %s", to, out)
		}
		if !strings.Contains(string(out), `"S"`) || !strings.Contains(string(out), `"x"`) {
			t.Errorf("to %s lost the text: %s", to, out)
		}
	}
	out, err := TranslateRequest(AnthropicMessages, AnthropicMessages, []byte(body), "")
	if err != nil || string(out) != body {
		t.Errorf("passthrough changed: %v %s", err, out)
	}
}

// WordPress/ai-provider-for-anthropic#30 and JohnnyZ93/oai-compatible-copilot#217: a thinking block's signature was dropped, and the next turn failed with "thinking.signature: Field required".
func TestPeerThinkingSignatureRoundTrip(t *testing.T) {
	in := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Need the weather."}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkYIBxgCKkA"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Oslo\"}"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	tools := `"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}]`
	wantTurn := func(name string, req []byte) {
		t.Helper()
		a := gjson.GetBytes(req, "messages.1")
		if a.Get("role").Str != "assistant" || a.Get("content.0.type").Str != "thinking" || a.Get("content.0.thinking").Str != "Need the weather." ||
			a.Get("content.0.signature").Str != "EqQBCkYIBxgCKkA" || a.Get("content.1.type").Str != "tool_use" || a.Get("content.1.id").Str != "toolu_1" {
			t.Errorf("%s: next turn's assistant message %s", name, a.Raw)
		}
	}

	// a Chat client: the streamed thinking_blocks go back in the assistant message
	out, _, err := run(t, AnthropicMessages, OpenAIChat, in)
	if err != nil {
		t.Fatal(err)
	}
	var blocks, reasoning string
	for _, d := range sseData(out) {
		if b := d.Get("choices.0.delta.thinking_blocks"); b.Exists() {
			blocks = b.Raw
		}
		reasoning += d.Get("choices.0.delta.reasoning_content").Str
	}
	if reasoning != "Need the weather." || gjson.Get(blocks, "0.signature").Str != "EqQBCkYIBxgCKkA" {
		t.Fatalf("Chat stream: reasoning %q, thinking_blocks %s", reasoning, blocks)
	}
	next := `{"model":"claude-sonnet-4-5","reasoning_effort":"medium",` + tools + `,"messages":[{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":null,"reasoning_content":"Need the weather.","thinking_blocks":` + blocks + `,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},` +
		`{"role":"tool","tool_call_id":"toolu_1","content":"sunny"}]}`
	req, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(next), "up")
	if err != nil {
		t.Fatal(err)
	}
	wantTurn("Chat", req)

	// a Responses client (Codex): the reasoning item's encrypted_content carries it
	rs, _, err := run(t, AnthropicMessages, OpenAIResponses, in)
	if err != nil {
		t.Fatal(err)
	}
	var output string
	for _, d := range sseData(rs) {
		if d.Get("type").Str == "response.completed" {
			output = d.Get("response.output").Raw
		}
	}
	if gjson.Get(output, "#").Int() != 2 || gjson.Get(output, "0.type").Str != "reasoning" || gjson.Get(output, "0.encrypted_content").Str == "" {
		t.Fatalf("Responses output %s", output)
	}
	nextR := `{"model":"claude-sonnet-4-5","reasoning":{"effort":"medium"},"tools":[{"type":"function","name":"weather","parameters":{"type":"object"}}],` +
		`"input":[{"role":"user","content":"weather?"},` + gjson.Get(output, "0").Raw + `,` + gjson.Get(output, "1").Raw + `,` +
		`{"type":"function_call_output","call_id":"toolu_1","output":"sunny"}]}`
	req, err = TranslateRequest(OpenAIResponses, AnthropicMessages, []byte(nextR), "up")
	if err != nil {
		t.Fatal(err)
	}
	wantTurn("Responses", req)
}

// higress-group/higress#4107: reasoning_effort became a fixed thinking.budget_tokens not kept below max_tokens, and Claude answered 400 "max_tokens must be greater than thinking.budget_tokens".
func TestPeerThinkingBudgetBelowMaxTokens(t *testing.T) {
	for _, mt := range []string{`"max_tokens":16384,`, `"max_tokens":1000,`, `"max_completion_tokens":3000,`, ``} {
		for _, eff := range []string{"low", "medium", "high"} {
			for _, c := range []struct {
				from Dialect
				body string
			}{
				{OpenAIChat, `{"model":"claude-sonnet-4-5",` + mt + `"reasoning_effort":"` + eff + `","messages":[{"role":"user","content":"x"}]}`},
				{OpenAIResponses, `{"model":"claude-sonnet-4-5",` + strings.NewReplacer("max_tokens", "max_output_tokens", "max_completion_tokens", "max_output_tokens").Replace(mt) + `"reasoning":{"effort":"` + eff + `"},"input":"x"}`},
			} {
				out, err := TranslateRequest(c.from, AnthropicMessages, []byte(c.body), "up")
				if err != nil {
					t.Fatal(err)
				}
				budget, max := gjson.GetBytes(out, "thinking.budget_tokens").Int(), gjson.GetBytes(out, "max_tokens").Int()
				if budget < 1024 || max <= budget {
					t.Errorf("%s: budget_tokens %d, max_tokens %d", c.body, budget, max)
				}
				// never less than the client allowed
				if asked := gjson.Get("{"+strings.TrimSuffix(mt, ",")+"}", "@values.0").Int(); max < asked {
					t.Errorf("%s: max_tokens %d below the %d asked", c.body, max, asked)
				}
			}
		}
	}
}

// BerriAI/litellm#4687: Anthropic refuses "Requests which include tool_use or tool_result blocks must define tools" when a follow-up request carries tool history but no tools.
func TestPeerToolHistoryWithoutTools(t *testing.T) {
	for _, c := range []struct {
		from Dialect
		body string
	}{
		{OpenAIChat, `{"model":"claude-3-5-sonnet","messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_current_weather","arguments":"{\"location\":\"Tokyo\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"10C"}]}`},
		{OpenAIResponses, `{"model":"claude-3-5-sonnet","input":[{"role":"user","content":"weather?"},{"type":"function_call","call_id":"call_1","name":"get_current_weather","arguments":"{\"location\":\"Tokyo\"}"},{"type":"function_call_output","call_id":"call_1","output":"10C"}]}`},
	} {
		out, err := TranslateRequest(c.from, AnthropicMessages, []byte(c.body), "up")
		if err != nil {
			t.Fatal(err)
		}
		// the tools the history names are declared, and the model may not call them now
		if gjson.GetBytes(out, "tools.#").Int() != 1 || gjson.GetBytes(out, "tools.0.name").Str != "get_current_weather" ||
			gjson.GetBytes(out, "tool_choice.type").Str != "none" || gjson.GetBytes(out, "messages.1.content.0.input.location").Str != "Tokyo" {
			t.Errorf("from %s: %s", c.from, out)
		}
	}
	// a request that declares its tools keeps them and its tool_choice
	out, _ := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(`{"model":"m","tools":[{"type":"function","function":{"name":"g","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"g","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"10C"}]}`), "up")
	if gjson.GetBytes(out, "tools.#").Int() != 1 || gjson.GetBytes(out, "tool_choice").Exists() {
		t.Errorf("declared tools: %s", out)
	}
}

// BerriAI/litellm#13373 ("Content block not found", Claude Code's streaming fallback), diegosouzapw/OmniRoute#682 (a content_block_start per argument delta) and farion1231/cc-switch#2556 (tool_use started without input): translated Anthropic streams must be well-formed.
func TestPeerAnthropicStreamBlocksWellFormed(t *testing.T) {
	chat := ccChunk(`{"role":"assistant","content":null,"reasoning_content":"think"}`, "", "") +
		ccChunk(`{"content":"Looking."}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"Glob","arguments":""}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"pattern\""}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":":\"*.py\"}"}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"Read","arguments":"{}"}}]}`, "", "") +
		ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n"
	resp := rsPreamble +
		rsEv("response.output_item.added", 2, `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}`) +
		rsEv("response.reasoning_summary_text.delta", 3, `,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"think"`) +
		rsEv("response.output_item.done", 4, `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"think"}]}`) +
		rsEv("response.output_item.added", 5, `,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`) +
		rsEv("response.output_text.delta", 6, `,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Looking."`) +
		rsEv("response.output_item.done", 7, `,"output_index":1,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Looking.","annotations":[]}]}`) +
		rsEv("response.output_item.added", 8, `,"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"Glob","arguments":""}`) +
		rsEv("response.function_call_arguments.delta", 9, `,"item_id":"fc_1","output_index":2,"delta":"{\"pattern\""`) +
		rsEv("response.function_call_arguments.delta", 10, `,"item_id":"fc_1","output_index":2,"delta":":\"*.py\"}"`) +
		rsEv("response.output_item.done", 11, `,"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"Glob","arguments":"{\"pattern\":\"*.py\"}"}`) +
		rsEv("response.output_item.added", 12, `,"output_index":3,"item":{"id":"fc_2","type":"function_call","status":"in_progress","call_id":"call_2","name":"Read","arguments":""}`) +
		rsEv("response.function_call_arguments.delta", 13, `,"item_id":"fc_2","output_index":3,"delta":"{}"`) +
		rsEv("response.output_item.done", 14, `,"output_index":3,"item":{"id":"fc_2","type":"function_call","status":"completed","call_id":"call_2","name":"Read","arguments":"{}"}`) +
		rsEv("response.completed", 15, rsDone)
	for from, in := range map[Dialect]string{OpenAIChat: chat, OpenAIResponses: resp} {
		out, _, err := run(t, from, AnthropicMessages, in)
		if err != nil {
			t.Fatal(err)
		}
		open := map[int64]bool{}
		var starts []string
		var next int64
		for _, d := range sseData(out) {
			i := d.Get("index").Int()
			switch d.Get("type").Str {
			case "content_block_start":
				if i != next || open[i] {
					t.Errorf("from %s: block %d started out of order or twice: %s", from, i, d.Raw)
				}
				next++
				open[i] = true
				b := d.Get("content_block")
				starts = append(starts, b.Get("type").Str)
				if b.Get("type").Str == "tool_use" && (b.Get("input").Raw != "{}" || b.Get("id").Str == "" || b.Get("name").Str == "") {
					t.Errorf("from %s: tool_use start %s", from, b.Raw)
				}
			case "content_block_delta", "content_block_stop":
				if !open[i] {
					t.Errorf("from %s: %s for a block not open (Content block not found): %s", from, d.Get("type").Str, d.Raw)
				}
				if d.Get("type").Str == "content_block_stop" {
					open[i] = false
				}
			case "message_delta":
				for j, o := range open {
					if o {
						t.Errorf("from %s: block %d still open at message_delta", from, j)
					}
				}
			}
		}
		if strings.Join(starts, ",") != "thinking,text,tool_use,tool_use" {
			t.Errorf("from %s: blocks %v", from, starts)
		}
		s := parseOK(t, AnthropicMessages, out)
		if s.thinking != "think" || s.text != "Looking." || len(s.tools) != 2 || s.tools[0] != (toolSum{"Glob", `{"pattern":"*.py"}`}) || s.stop != "tool" {
			t.Errorf("from %s: %+v", from, s)
		}
	}
}

// router-for-me/CLIProxyAPI#736 (Responses system items left in Anthropic's messages) and anthropics/claude-code#63423 (Claude Code sending role "system" inside messages).
func TestPeerSystemMessagesPlacement(t *testing.T) {
	out, err := TranslateRequest(OpenAIResponses, AnthropicMessages, []byte(`{"model":"claude-sonnet-4-5","input":[{"role":"system","content":"You are helpful."},{"role":"developer","content":"Be brief."},{"role":"user","content":"Hello"}]}`), "up")
	if err != nil {
		t.Fatal(err)
	}
	if gjson.GetBytes(out, "system.0.text").Str != "You are helpful." || gjson.GetBytes(out, "system.1.text").Str != "Be brief." ||
		gjson.GetBytes(out, "messages.#").Int() != 1 || gjson.GetBytes(out, "messages.0.role").Str != "user" {
		t.Errorf("Responses to Anthropic: %s", out)
	}
	// an Anthropic client's stray system message keeps its place and role towards OpenAI, which takes it
	am := `{"model":"m","max_tokens":5,"system":"S","messages":[{"role":"user","content":"x"},{"role":"system","content":"late"},{"role":"user","content":"y"}]}`
	out, err = TranslateRequest(AnthropicMessages, OpenAIChat, []byte(am), "up")
	if err != nil || gjson.GetBytes(out, "messages.#.role").Raw != `["system","user","system","user"]` || gjson.GetBytes(out, "messages.2.content").Str != "late" {
		t.Errorf("to Chat: %v %s", err, out)
	}
	out, err = TranslateRequest(AnthropicMessages, OpenAIResponses, []byte(am), "up")
	if err != nil || gjson.GetBytes(out, "instructions").Str != "S" || gjson.GetBytes(out, "input.#.role").Raw != `["user","system","user"]` {
		t.Errorf("to Responses: %v %s", err, out)
	}
}

// musistudio/llms#68 (claude-code-router's transformer) and BerriAI/litellm#38267: an Anthropic document (PDF) block was silently dropped on the way to an OpenAI upstream, in a user turn or a tool_result.
func TestPeerDocumentBlocksToOpenAI(t *testing.T) {
	doc := `{"type":"document","title":"secret.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK"}}`
	const uri = "data:application/pdf;base64,JVBERi0xLjQK"
	body := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[` + doc + `,{"type":"text","text":"codeword?"}]}]}`
	out, err := TranslateRequest(AnthropicMessages, OpenAIChat, []byte(body), "up")
	if err != nil {
		t.Fatal(err)
	}
	if p := gjson.GetBytes(out, "messages.0.content.0"); p.Get("type").Str != "file" || p.Get("file.file_data").Str != uri || p.Get("file.filename").Str != "secret.pdf" ||
		gjson.GetBytes(out, "messages.0.content.1.text").Str != "codeword?" {
		t.Errorf("to Chat: %s", out)
	}
	out, err = TranslateRequest(AnthropicMessages, OpenAIResponses, []byte(body), "up")
	if err != nil {
		t.Fatal(err)
	}
	if p := gjson.GetBytes(out, "input.0.content.0"); p.Get("type").Str != "input_file" || p.Get("file_data").Str != uri || p.Get("filename").Str != "secret.pdf" {
		t.Errorf("to Responses: %s", out)
	}
	// Claude Code's Read of a PDF: the document comes back inside a tool_result
	tr := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"read it"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"a.pdf"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[` + doc + `]}]}]}`
	out, err = TranslateRequest(AnthropicMessages, OpenAIChat, []byte(tr), "up")
	if err != nil {
		t.Fatal(err)
	}
	var file gjson.Result
	gjson.GetBytes(out, "messages").ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, p gjson.Result) bool {
			if p.Get("type").Str == "file" {
				file = p
			}
			return true
		})
		return true
	})
	if file.Get("file.file_data").Str != uri || gjson.GetBytes(out, "messages.2.tool_call_id").Str != "toolu_1" {
		t.Errorf("tool_result document to Chat: %s", out)
	}
	// and the other way: OpenAI file parts reach Anthropic as documents
	for from, b := range map[Dialect]string{
		OpenAIChat:      `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"filename":"a.pdf","file_data":"` + uri + `"}},{"type":"text","text":"?"}]}]}`,
		OpenAIResponses: `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","filename":"a.pdf","file_data":"` + uri + `"},{"type":"input_text","text":"?"}]}]}`,
	} {
		out, err := TranslateRequest(from, AnthropicMessages, []byte(b), "up")
		if d := gjson.GetBytes(out, "messages.0.content.0"); err != nil || d.Get("type").Str != "document" || d.Get("source.media_type").Str != "application/pdf" || d.Get("source.data").Str != "JVBERi0xLjQK" {
			t.Errorf("from %s: %v %s", from, err, out)
		}
	}
}

// LeenHawk/gproxy#91 and ENTERPILOT/GoModel#963: Anthropic's structured outputs refuse an object schema that leaves additionalProperties open, which OpenAI's non-strict response_format allows; an arbitrary {"type":"object"} closed would admit only {}.
func TestPeerStructuredOutputSchemaClosed(t *testing.T) {
	schema := `{"type":"object","properties":{"answer":{"type":"number"},"properties":{"type":"object","properties":{"type":{"type":"string"}}},` +
		`"steps":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}}}},"free":{"type":"object"},` +
		`"either":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"null"}]},"open":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":true},` +
		`"ref":{"$ref":"#/$defs/R"}},"required":["answer"],"$defs":{"R":{"type":"object","properties":{"r":{"type":"boolean"}}}}}`
	for from, body := range map[Dialect]string{
		OpenAIChat:      `{"model":"claude-sonnet-4-5","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":` + schema + `}},"messages":[{"role":"user","content":"2+2?"}]}`,
		OpenAIResponses: `{"model":"claude-sonnet-4-5","text":{"format":{"type":"json_schema","name":"x","schema":` + schema + `}},"input":"2+2?"}`,
	} {
		out, err := TranslateRequest(from, AnthropicMessages, []byte(body), "up")
		if err != nil {
			t.Fatal(err)
		}
		s := gjson.GetBytes(out, "output_config.format.schema")
		for path, want := range map[string]string{
			"additionalProperties":                                       "false",
			"properties.properties.additionalProperties":                 "false", // a property named "properties"
			"properties.properties.properties.type.type":                 `"string"`,
			"properties.properties.properties.type.additionalProperties": "",
			"properties.steps.items.additionalProperties":                "false",
			"properties.either.anyOf.0.additionalProperties":             "false",
			"properties.either.anyOf.1.additionalProperties":             "",
			"properties.open.additionalProperties":                       "true", // as sent
			"properties.free":                                            `{"type":"object"}`,
			"properties.answer":                                          `{"type":"number"}`,
			"$defs.R.additionalProperties":                               "false",
			"required":                                                   `["answer"]`,
			"properties.ref":                                             `{"$ref":"#/$defs/R"}`,
		} {
			if got := s.Get(path).Raw; got != want {
				t.Errorf("from %s: %s = %s, want %s", from, path, got, want)
			}
		}
	}
	// nesting deeper than closedMaxDepth, or a schema larger than closedMaxBytes, is copied as sent below that point
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 40) + `{"type":"string"}` + strings.Repeat(`}}`, 40)
	got := closedObjects(deep)
	if n := strings.Count(got, `"additionalProperties":false`); n != closedMaxDepth || !strings.HasSuffix(got, strings.Repeat(`{"type":"object","properties":{"a":`, 8)[len(`{"type":"object","properties":{"a":`):]+`{"type":"string"}`+strings.Repeat(`}}`, 8)+strings.Repeat(`},"additionalProperties":false}`, 32)) {
		t.Errorf("deep schema: %d closed: %s", n, got)
	}
	if big := `{"type":"object","properties":{"a":{"type":"string","description":"` + strings.Repeat("x", closedMaxBytes) + `"}}}`; closedObjects(big) != big {
		t.Error("a schema over closedMaxBytes was changed")
	}
	// a schema already closed is unchanged; OpenAI upstreams get the schema as sent
	closed := `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`
	out, _ := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(`{"model":"claude-sonnet-4-5","response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":`+closed+`}},"messages":[{"role":"user","content":"q"}]}`), "up")
	if got := gjson.GetBytes(out, "output_config.format.schema").Raw; got != closed {
		t.Errorf("closed schema changed: %s", got)
	}
	out, _ = TranslateRequest(OpenAIChat, OpenAIResponses, []byte(`{"model":"gpt-5","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":`+schema+`}},"messages":[{"role":"user","content":"q"}]}`), "up")
	if got := gjson.GetBytes(out, "text.format.schema").Raw; got != schema {
		t.Errorf("to Responses: %s", got)
	}
}
