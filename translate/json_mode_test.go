package translate

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestJSONModeToAnthropic: an OpenAI client's JSON mode (Chat
// response_format, Responses text.format {"type":"json_object"}) is not
// dropped on the way to an Anthropic key, which has no schema-less JSON
// mode: the request's last system block asks for one JSON object and
// nothing around it, after the client's own system prompt; a json_schema
// format goes to Anthropic's structured outputs (output_config.format,
// Anthropic structured outputs docs) and gets no such text. LiteLLM
// likewise maps response_format for Claude instead of dropping it.
func TestJSONModeToAnthropic(t *testing.T) {
	for _, c := range []struct {
		name     string
		from     Dialect
		body     string
		system   []string // the system texts sent, in order
		format   string   // output_config.format sent, "" for none
		thinking bool
	}{
		{"chat json_object", OpenAIChat, `{"model":"m","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"List 3 colours as JSON."}]}`,
			[]string{jsonObjectInstruction}, "", false},
		{"chat json_object after the system prompt", OpenAIChat, `{"model":"m","response_format":{"type":"json_object"},"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"JSON please"}]}`,
			[]string{"You are terse.", jsonObjectInstruction}, "", false},
		{"responses json_object", OpenAIResponses, `{"model":"m","instructions":"Be brief.","text":{"format":{"type":"json_object"}},"input":"JSON please"}`,
			[]string{"Be brief.", jsonObjectInstruction}, "", false},
		{"chat json_object with thinking", OpenAIChat, `{"model":"claude-sonnet-4-5","reasoning_effort":"low","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"JSON please"}]}`,
			[]string{jsonObjectInstruction}, "", true},
		{"chat json_schema", OpenAIChat, `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"c","schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}},"messages":[{"role":"user","content":"JSON please"}]}`,
			nil, `{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}}`, false},
		{"chat text", OpenAIChat, `{"model":"m","response_format":{"type":"text"},"messages":[{"role":"user","content":"hi"}]}`,
			nil, "", false},
	} {
		out, err := TranslateRequest(c.from, AnthropicMessages, []byte(c.body), "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var sys []string
		gjson.GetBytes(out, "system").ForEach(func(_, b gjson.Result) bool {
			sys = append(sys, b.Get("text").Str)
			return true
		})
		if len(sys) != len(c.system) {
			t.Errorf("%s: system %q, want %q: %s", c.name, sys, c.system, out)
			continue
		}
		for i := range sys {
			if sys[i] != c.system[i] {
				t.Errorf("%s: system %q, want %q", c.name, sys, c.system)
			}
		}
		if f := gjson.GetBytes(out, "output_config.format").Raw; f != c.format {
			t.Errorf("%s: output_config.format %s, want %s", c.name, f, c.format)
		}
		if th := gjson.GetBytes(out, "thinking").Exists(); th != c.thinking {
			t.Errorf("%s: thinking %v: %s", c.name, th, out)
		}
	}
}
