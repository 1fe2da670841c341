package translate

import (
	"testing"

	"github.com/tidwall/gjson"
)

// A Chat client that sends reasoning_effort and an explicit thinking
// budget (LiteLLM's "thinking" form, OpenRouter's "reasoning.max_tokens")
// gets the budget it named from an Anthropic upstream, not the effort's
// mapping.
func TestChatExplicitThinkingBudgetWins(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct {
		name, extra, model string
		budget             int64  // budget_tokens sent, 0: none
		effort             string // output_config.effort sent (adaptive models)
		thinking           string // thinking.type, "": no thinking
	}{
		{"effort alone", `"reasoning_effort":"low"`, "claude-sonnet-4-5", 2048, "", "enabled"},
		{"budget beats effort", `"reasoning_effort":"low","thinking":{"type":"enabled","budget_tokens":20000}`, "claude-sonnet-4-5", 20000, "", "enabled"},
		{"budget alone", `"thinking":{"type":"enabled","budget_tokens":3000}`, "claude-sonnet-4-5", 3000, "", "enabled"},
		{"budget beats none", `"reasoning_effort":"none","thinking":{"type":"enabled","budget_tokens":3000}`, "claude-sonnet-4-5", 3000, "", "enabled"},
		{"openrouter form", `"reasoning_effort":"high","reasoning":{"max_tokens":1500}`, "claude-sonnet-4-5", 1500, "", "enabled"},
		{"adaptive model: the budget's effort", `"reasoning_effort":"low","thinking":{"type":"enabled","budget_tokens":20000}`, "claude-opus-4-6", 0, "high", "adaptive"},
		{"disabled beats effort", `"reasoning_effort":"high","thinking":{"type":"disabled"}`, "claude-sonnet-4-5", 0, "", ""},
		{"below the minimum: the effort", `"reasoning_effort":"medium","thinking":{"type":"enabled","budget_tokens":10}`, "claude-sonnet-4-5", 8192, "", "enabled"},
	} {
		body := `{"model":"` + c.model + `",` + c.extra + `,"max_tokens":64000,` + msgs + `}`
		out, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(body), "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		th := gjson.GetBytes(out, "thinking")
		if th.Get("type").Str != c.thinking || th.Get("budget_tokens").Int() != c.budget || gjson.GetBytes(out, "output_config.effort").Str != c.effort {
			t.Errorf("%s: %s", c.name, out)
		}
		// the same request parsed once (the gateway's path) encodes the same
		r, err := ParseRequestFor(OpenAIChat, []byte(body), AnthropicMessages)
		if err != nil {
			t.Fatal(err)
		}
		if enc, err := r.Encode(AnthropicMessages, ""); err != nil || string(enc) != string(out) {
			t.Errorf("%s: Encode %v %s", c.name, err, enc)
		}
	}
	// an OpenAI upstream keeps the client's explicit reasoning_effort
	body := `{"model":"o4-mini","reasoning_effort":"low","thinking":{"type":"enabled","budget_tokens":20000},` + msgs + `}`
	out, err := TranslateRequest(OpenAIChat, OpenAIResponses, []byte(body), "")
	if err != nil || gjson.GetBytes(out, "reasoning.effort").Str != "low" {
		t.Errorf("to Responses: %v %s", err, out)
	}
}
