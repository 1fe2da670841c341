package mockupstream

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAnthropicValidator: the mock refuses what Anthropic refuses, with
// Anthropic's 400 body, and records the request.
func TestAnthropicValidator(t *testing.T) {
	_, ts := start(t, Config{})
	cases := []struct {
		name, body, want string
	}{
		{"no max_tokens", `{"model":"c","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Field required"},
		{"empty text block", msgBody("", `[{"role":"user","content":[{"type":"text","text":""}]}]`), "text content blocks must be non-empty"},
		{"whitespace text next to tool_use", msgBody(anthTools, `[{"role":"user","content":"weather?"},{"role":"assistant","content":[{"type":"text","text":" \n"},{"type":"tool_use","id":"t1","name":"ping","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]`), "text content blocks must contain non-whitespace text"},
		{"blank system block", `{"model":"c","max_tokens":5,"system":[{"type":"text","text":"  "}],"messages":[{"role":"user","content":"hi"}]}`, "text content blocks must contain non-whitespace text"},
		{"blank text in tool_result", msgBody(anthTools, `[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ping","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":""}]}]}]`), "text content blocks must be non-empty"},
		{"empty user content", msgBody("", `[{"role":"user","content":""}]`), "messages.0: all messages must have non-empty content"},
		{"unsigned thinking", msgBody(anthTools, `[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"tool_use","id":"t1","name":"ping","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]`), "messages.1.content.0.thinking.signature: Field required"},
	}
	for _, c := range cases {
		st, b := postMessages(t, ts.URL, c.body)
		var e struct {
			Type  string `json:"type"`
			Error struct{ Type, Message string }
		}
		_ = json.Unmarshal(b, &e)
		if st != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: %d %s, want 400 %q", c.name, st, b, c.want)
		}
	}
	// what Anthropic accepts passes: signed thinking, an empty final
	// assistant prefill, text next to tool_use
	ok := msgBody(anthTools, `[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"c2ln"},{"type":"text","text":"calling"},{"type":"tool_use","id":"t1","name":"ping","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},{"role":"assistant","content":""}]`)
	if msg := ValidateAnthropicRequest([]byte(ok)); msg != "" {
		t.Errorf("valid request refused: %s", msg)
	}
	if st, b := postMessages(t, ts.URL, ok); st != 200 {
		t.Errorf("valid request: %d %s", st, b)
	}
}

// TestDeepSeekVendor: a deepseek key answers with reasoning_content and
// refuses a tool-call assistant message without it, as DeepSeek does in
// thinking mode.
func TestDeepSeekVendor(t *testing.T) {
	s, ts := start(t, Config{Keys: map[string]KeyBehavior{"ds": {Vendor: VendorDeepSeek}}})
	const tools = `"tools":[{"type":"function","function":{"name":"ping","parameters":{"type":"object","properties":{}}}}]`
	missing := `{"model":"deepseek-chat","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ping","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}],` + tools + `}`
	st, _, b := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "ds", missing)
	if st != 400 || !strings.Contains(string(b), "Missing `reasoning_content` field in the assistant message at message index 1") ||
		!strings.Contains(string(b), `"invalid_request_error"`) {
		t.Errorf("missing reasoning_content: %d %s", st, b)
	}
	withRC := strings.Replace(missing, `"content":null,`, `"content":null,"reasoning_content":"need ping",`, 1)
	st, _, b = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "ds", withRC)
	if st != 200 {
		t.Fatalf("with reasoning_content: %d %s", st, b)
	}
	var resp struct {
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
			}
		}
	}
	if err := json.Unmarshal(b, &resp); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("%v %s", err, b)
	}
	if resp.Choices[0].Message.ReasoningContent == "" || resp.Choices[0].Message.Content != ToolText("ok") {
		t.Errorf("answer %+v", resp.Choices[0].Message)
	}
	if !strings.Contains(string(s.Stats("ds").LastBody), `"reasoning_content":"need ping"`) {
		t.Errorf("last body %s", s.Stats("ds").LastBody)
	}
	// other keys do not apply DeepSeek's rule
	if st, _, b := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "other", missing); st != 200 {
		t.Errorf("plain key: %d %s", st, b)
	}
}
