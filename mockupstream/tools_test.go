package mockupstream

import (
	"encoding/json"
	"strings"
	"testing"
)

const weatherTool = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"days":{"type":"integer"},"location":{"type":"string"},"unit":{"type":"string"}},"required":["location"]}}},{"type":"function","function":{"name":"noop","parameters":{"type":"object","properties":{}}}}]`

func TestChatToolCall(t *testing.T) {
	_, ts := start(t, Config{})
	url := ts.URL + "/v1/chat/completions"

	// Non-stream: the user asks for a tool.
	_, _, b := mustDo(t, "POST", url, "k", chatBody("please use the tool", weatherTool))
	m := decode(t, b)
	tc := path(m, "choices", 0, "message", "tool_calls", 0)
	if path(m, "choices", 0, "finish_reason") != "tool_calls" || path(m, "choices", 0, "message", "content") != nil {
		t.Errorf("tool answer %s", b)
	}
	if id, _ := path(tc, "id").(string); !strings.HasPrefix(id, "call_") || path(tc, "type") != "function" ||
		path(tc, "function", "name") != "get_weather" || path(tc, "function", "arguments") != `{"location":"mock"}` {
		t.Errorf("tool call %v", tc)
	}

	// No trigger word, no forced choice: plain text.
	_, _, b = mustDo(t, "POST", url, "k", chatBody("hello", weatherTool))
	if path(decode(t, b), "choices", 0, "finish_reason") != "stop" {
		t.Errorf("no trigger: %s", b)
	}
	// tool_choice naming a tool forces that tool; its schema has no string property.
	_, _, b = mustDo(t, "POST", url, "k", chatBody("hello", weatherTool+`,"tool_choice":{"type":"function","function":{"name":"noop"}}`))
	m = decode(t, b)
	if path(m, "choices", 0, "message", "tool_calls", 0, "function", "name") != "noop" || path(m, "choices", 0, "message", "tool_calls", 0, "function", "arguments") != "{}" {
		t.Errorf("named tool_choice: %s", b)
	}
	// "required" forces the first tool; "none" forbids tools.
	_, _, b = mustDo(t, "POST", url, "k", chatBody("hello", weatherTool+`,"tool_choice":"required"`))
	if path(decode(t, b), "choices", 0, "message", "tool_calls", 0, "function", "name") != "get_weather" {
		t.Errorf("required: %s", b)
	}
	_, _, b = mustDo(t, "POST", url, "k", chatBody("use a tool", weatherTool+`,"tool_choice":"none"`))
	if path(decode(t, b), "choices", 0, "finish_reason") != "stop" {
		t.Errorf("none: %s", b)
	}

	// Tool result turn.
	round := `{"model":"m","messages":[{"role":"user","content":"use the tool"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny, 21 C"}],` + weatherTool + `}`
	_, _, b = mustDo(t, "POST", url, "k", round)
	if got := path(decode(t, b), "choices", 0, "message", "content"); got != "Tool said: sunny, 21 C" {
		t.Errorf("tool result answer %q", got)
	}

	// Stream: role chunk, opening chunk with id+name, argument fragments.
	resp, err := do(t, nil, "POST", url, "k", chatBody("tool please", weatherTool+`,"stream":true,"stream_options":{"include_usage":true}`))
	if err != nil {
		t.Fatal(err)
	}
	evs := readSSE(t, resp.Body)
	resp.Body.Close()
	first := decode(t, []byte(evs[0].Data))
	if d := path(first, "choices", 0, "delta").(map[string]any); d["role"] != "assistant" || d["content"] != nil {
		t.Errorf("first chunk %s", evs[0].Data)
	}
	open := decode(t, []byte(evs[1].Data))
	call := path(open, "choices", 0, "delta", "tool_calls", 0)
	if path(call, "index") != 0.0 || path(call, "function", "name") != "get_weather" || path(call, "function", "arguments") != "" || path(call, "type") != "function" {
		t.Errorf("opening chunk %s", evs[1].Data)
	}
	if id, _ := path(call, "id").(string); !strings.HasPrefix(id, "call_") {
		t.Errorf("call id %v", path(call, "id"))
	}
	var args strings.Builder
	frags := 0
	i := 2
	for ; ; i++ {
		m := decode(t, []byte(evs[i].Data))
		c := path(m, "choices", 0, "delta", "tool_calls", 0)
		if c == nil {
			break
		}
		if path(c, "id") != nil || path(c, "function", "name") != nil || path(c, "index") != 0.0 {
			t.Errorf("fragment chunk repeats id/name or wrong index: %s", evs[i].Data)
		}
		args.WriteString(path(c, "function", "arguments").(string))
		frags++
	}
	if args.String() != `{"location":"mock"}` || frags < 3 {
		t.Errorf("arguments %q in %d fragments", args.String(), frags)
	}
	if path(decode(t, []byte(evs[i].Data)), "choices", 0, "finish_reason") != "tool_calls" {
		t.Errorf("finish chunk %s", evs[i].Data)
	}
	if u := decode(t, []byte(evs[i+1].Data)); path(u, "usage", "completion_tokens") != float64(frags) {
		t.Errorf("usage %s", evs[i+1].Data)
	}
	if evs[i+2].Data != "[DONE]" || len(evs) != i+3 {
		t.Errorf("tail %v", evs[i:])
	}
}

func TestChatReasoning(t *testing.T) {
	_, ts := start(t, Config{})
	url := ts.URL + "/v1/chat/completions"
	for _, body := range []string{
		chatBody("why sky blue", `"reasoning_effort":"low","stream":true`),
		`{"model":"deep-think-1","stream":true,"messages":[{"role":"user","content":"why sky blue"}]}`,
	} {
		resp, err := do(t, nil, "POST", url, "k", body)
		if err != nil {
			t.Fatal(err)
		}
		evs := readSSE(t, resp.Body)
		resp.Body.Close()
		var reasoning, text strings.Builder
		sawText := false
		for _, ev := range evs[1:] {
			if ev.Data == "[DONE]" {
				break
			}
			d, _ := path(decode(t, []byte(ev.Data)), "choices", 0, "delta").(map[string]any)
			if r, ok := d["reasoning_content"].(string); ok {
				if sawText {
					t.Errorf("reasoning after content")
				}
				reasoning.WriteString(r)
			}
			if c, ok := d["content"].(string); ok {
				sawText = true
				text.WriteString(c)
			}
		}
		if reasoning.String() != ReasoningText("why sky blue") || text.String() != Text("why sky blue") {
			t.Errorf("reasoning %q text %q", reasoning.String(), text.String())
		}
	}
	_, _, b := mustDo(t, "POST", url, "k", chatBody("why", `"reasoning_effort":"high"`))
	m := decode(t, b)
	if path(m, "choices", 0, "message", "reasoning_content") != ReasoningText("why") ||
		path(m, "usage", "completion_tokens_details", "reasoning_tokens") != float64(len(Words(ReasoningText("why")))) {
		t.Errorf("non-stream reasoning %s", b)
	}
	// reasoning_effort "none" and ordinary models have no reasoning.
	_, _, b = mustDo(t, "POST", url, "k", chatBody("why", `"reasoning_effort":"none"`))
	if path(decode(t, b), "choices", 0, "message", "reasoning_content") != nil {
		t.Errorf("unexpected reasoning %s", b)
	}
}

func TestFirstStringProperty(t *testing.T) {
	cases := map[string]string{
		`{"type":"object","properties":{"n":{"type":"integer"},"q":{"type":["string","null"]}}}`:            "q",
		`{"properties":{"a":{"type":"object","properties":{"x":{"type":"string"}}},"b":{"type":"string"}}}`: "b",
		`{"type":"object"}`: "",
		`not json`:          "",
	}
	for schema, want := range cases {
		if got := firstStringProperty(json.RawMessage(schema)); got != want {
			t.Errorf("%s: %q want %q", schema, got, want)
		}
	}
	if got := toolArguments(json.RawMessage(`{"properties":{"q\"x":{"type":"string"}}}`)); got != `{"q\"x":"mock"}` {
		t.Errorf("escaped name: %s", got)
	}
}

func TestMaxTokens(t *testing.T) {
	_, ts := start(t, Config{})
	_, _, b := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "k", chatBody("a long question", `"max_tokens":3`))
	m := decode(t, b)
	if path(m, "choices", 0, "message", "content") != "Mock answer to: " || path(m, "choices", 0, "finish_reason") != "length" || path(m, "usage", "completion_tokens") != 3.0 {
		t.Errorf("chat max_tokens %s", b)
	}
	_, _, b = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "k", chatBody("q", `"max_completion_tokens":2,"max_tokens":50,"reasoning_effort":"low","stream":true`))
	if !strings.Contains(string(b), `"finish_reason":"length"`) || strings.Contains(string(b), `"content":"Mock`) {
		t.Errorf("reasoning eats the budget: %s", b)
	}
	_, b = postMessages(t, ts.URL, `{"model":"c","max_tokens":2,"messages":[{"role":"user","content":"hi there"}]}`)
	m = decode(t, b)
	if path(m, "content", 0, "text") != "Mock answer " || m["stop_reason"] != "max_tokens" || path(m, "usage", "output_tokens") != 2.0 {
		t.Errorf("anthropic max_tokens %s", b)
	}
	// A limit the answer fits in changes nothing.
	_, _, b = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "k", chatBody("q", `"max_tokens":100`))
	if path(decode(t, b), "choices", 0, "finish_reason") != "stop" {
		t.Errorf("roomy limit %s", b)
	}
}
