package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestChatReasoningToContent: an assistant message's `reasoning` becomes
// `reasoning_content` (bytes otherwise unchanged); messages that already
// carry reasoning_content, other roles and bodies without the field are
// left alone, the last without a copy.
func TestChatReasoningToContent(t *testing.T) {
	in := `{"model":"deepseek-reasoner","reasoning_effort":"high","messages":[` +
		`{"role":"user","content":"list files","reasoning":"not an assistant"},` +
		`{"role":"assistant","content":"","reasoning":"I should run ls.","tool_calls":[{"id":"c1","type":"function","function":{"name":"Bash","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"a.txt"},` +
		`{"role":"assistant","reasoning_content":"kept","reasoning":"other","content":"done"}]}`
	out := ChatReasoningToContent([]byte(in))
	if got := gjson.GetBytes(out, "messages.1.reasoning_content").String(); got != "I should run ls." || gjson.GetBytes(out, "messages.1.reasoning").Exists() {
		t.Fatalf("assistant turn: %s", out)
	}
	if !gjson.GetBytes(out, "messages.0.reasoning").Exists() || gjson.GetBytes(out, "messages.3.reasoning_content").String() != "kept" ||
		gjson.GetBytes(out, "messages.3.reasoning").String() != "other" {
		t.Fatalf("other messages changed: %s", out)
	}
	if len(out) != len(in)+len("_content") || !gjson.ValidBytes(out) {
		t.Fatalf("more than the name changed: %s", out)
	}
	// two identical turns: each renamed once
	twice := `{"messages":[{"role":"assistant","reasoning":"r","content":"x"},{"role":"assistant","reasoning":"r","content":"x"}]}`
	if got := string(ChatReasoningToContent([]byte(twice))); got != `{"messages":[{"role":"assistant","reasoning_content":"r","content":"x"},{"role":"assistant","reasoning_content":"r","content":"x"}]}` {
		t.Fatalf("identical turns: %s", got)
	}
	// pretty-printed, with a "reasoning" string inside a value before the
	// key: only the key token of the assistant turn is renamed
	pretty := "{\n  \"messages\": [\n    { \"role\" : \"assistant\",\n      \"content\": \"\\\"reasoning\\\": no\",\n      \"reasoning\" :\t\"r\" }\n  ]\n}"
	want := strings.Replace(pretty, `"reasoning" :`, `"reasoning_content" :`, 1)
	if got := string(ChatReasoningToContent([]byte(pretty))); got != want {
		t.Fatalf("pretty-printed:\n got %s\nwant %s", got, want)
	}
	plain := []byte(`{"model":"m","reasoning_effort":"low","messages":[{"role":"user","content":"hi"}]}`)
	if got := ChatReasoningToContent(plain); &got[0] != &plain[0] {
		t.Fatal("a body without reasoning was copied")
	}
}
