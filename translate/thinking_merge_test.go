package translate

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestAnthropicMergedTurnStartsWithThinking: a system message between a
// text-only assistant message and an assistant message with signed
// thinking (Chat → Anthropic) is hoisted to "system", which leaves the
// two assistant messages adjacent and merged into one Anthropic turn;
// that turn must still start with the thinking (Anthropic refuses an
// assistant turn with thinking blocks that starts with text), the text
// and the tool call following in their order.
func TestAnthropicMergedTurnStartsWithThinking(t *testing.T) {
	const (
		text  = `{"role":"assistant","content":"Let me check."}`
		sys   = `{"role":"system","content":"Be brief."}`
		call  = `"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]`
		think = `{"type":"thinking","thinking":"t","signature":"sig"}`
		red   = `{"type":"redacted_thinking","data":"enc"}`
		use   = `{"type":"tool_use","id":"call_1","name":"f","input":{}}`
	)
	for _, c := range []struct{ name, msgs, want string }{
		{"system between text and thinking", text + `,` + sys + `,{"role":"assistant","content":null,"thinking_blocks":[` + think + `],` + call + `}`,
			`[` + think + `,{"type":"text","text":"Let me check."},` + use + `]`},
		{"two system messages, redacted and signed", text + `,` + sys + `,{"role":"developer","content":"Cite."},{"role":"assistant","content":null,"thinking_blocks":[` + red + `,` + think + `],` + call + `}`,
			`[` + red + `,` + think + `,{"type":"text","text":"Let me check."},` + use + `]`},
		{"second message has text after its thinking", text + `,` + sys + `,{"role":"assistant","content":"More.","thinking_blocks":[` + think + `],` + call + `}`,
			`[` + think + `,{"type":"text","text":"Let me check."},{"type":"text","text":"More."},` + use + `]`},
		{"thinking already first", `{"role":"assistant","content":"A.","thinking_blocks":[` + think + `]},` + sys + `,{"role":"assistant","content":"B.",` + call + `}`,
			`[` + think + `,{"type":"text","text":"A."},{"type":"text","text":"B."},` + use + `]`},
	} {
		body := `{"model":"claude-sonnet-4-5","reasoning_effort":"low","messages":[{"role":"user","content":"x"},` + c.msgs +
			`,{"role":"tool","tool_call_id":"call_1","content":"ok"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
		out, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(body), "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("%s: invalid JSON %s", c.name, out)
		}
		if got := gjson.GetBytes(out, "messages.1.content").Raw; got != c.want {
			t.Errorf("%s: assistant turn %s\nwant %s", c.name, got, c.want)
		}
		if n := gjson.GetBytes(out, "messages.#").Int(); n != 3 || gjson.GetBytes(out, "messages.2.content.0.type").Str != "tool_result" {
			t.Errorf("%s: %d turns: %s", c.name, n, out)
		}
		if s := gjson.GetBytes(out, "system.0.text").Str; s != "Be brief." {
			t.Errorf("%s: system %q", c.name, s)
		}
	}
}
