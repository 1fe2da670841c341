package translate

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestCountTokensBodyForResponses(t *testing.T) {
	in := []byte(`{"model":"claude-x","system":"be brief","messages":[{"role":"user","content":"two words"}],` +
		`"tools":[{"name":"calc","description":"adds","input_schema":{"type":"object","properties":{"a":{"type":"number"}}}}]}`)
	out, err := CountTokensBody(OpenAIResponses, in, "gpt-5")
	if err != nil {
		t.Fatal(err)
	}
	got := gjson.ParseBytes(out)
	if got.Get("model").Str != "gpt-5" || got.Get("instructions").Str != "be brief" ||
		got.Get("input.0.content.0.text").Str != "two words" || got.Get("tools.0.name").Str != "calc" {
		t.Fatalf("body %s", out)
	}
	for _, f := range []string{"max_output_tokens", "store", "stream", "include", "max_tokens"} {
		if got.Get(f).Exists() {
			t.Fatalf("%s sent to input_tokens: %s", f, out)
		}
	}
	if b, err := CountTokensBody(AnthropicMessages, in, "claude-y"); err != nil || gjson.GetBytes(b, "model").Str != "claude-y" || gjson.GetBytes(b, "system").Str != "be brief" {
		t.Fatalf("anthropic %s %v", b, err)
	}
	if _, err := CountTokensBody(OpenAIChat, in, ""); err == nil {
		t.Fatal("chat has no counting endpoint")
	}
	if _, err := CountTokensBody(OpenAIResponses, []byte(`{"model":"x","messages":"nope"}`), ""); err == nil {
		t.Fatal("invalid messages accepted")
	}
}

func TestCountTokensAnswer(t *testing.T) {
	for _, c := range []struct {
		from     Dialect
		in, want string
		ok       bool
	}{
		// ../shared/fixtures/openai-responses/pydantic-ai__responses-input-tokens
		{OpenAIResponses, `{"input_tokens":16,"object":"response.input_tokens"}`, `{"input_tokens":16}`, true},
		{AnthropicMessages, `{"input_tokens":7}`, `{"input_tokens":7}`, true},
		{OpenAIResponses, `{"object":"response.input_tokens"}`, ``, false},
		{OpenAIResponses, `{"input_tokens":"16"}`, ``, false},
	} {
		out, ok := CountTokensAnswer(c.from, []byte(c.in))
		if ok != c.ok || string(out) != c.want {
			t.Fatalf("%s: %s %v", c.in, out, ok)
		}
	}
}
