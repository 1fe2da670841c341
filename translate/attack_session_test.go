package translate

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// TestAttackSessionEchoOddTypes: a Responses request whose settings have
// the wrong types (temperature a string, metadata an array, reasoning a
// string, a setting twice, once under an escaped name) is refused before
// anything is echoed; one it accepts is echoed as valid JSON that the SDK
// reads, invalid UTF-8 in its strings written as U+FFFD (a translated
// answer's strings are, and RFC 8259 requires UTF-8).
func TestAttackSessionEchoOddTypes(t *testing.T) {
	for _, b := range []string{
		`{"model":"m","input":"hi","temperature":"hot"}`,
		`{"model":"m","input":"hi","metadata":["a"]}`,
		`{"model":"m","input":"hi","reasoning":"x"}`,
		`{"model":"m","input":"hi","metadata":{"a":1}}`,
		`{"model":"m","input":"hi","temperature":0.3,"temperatur\u0065":"hot"}`,
		`{"model":"m","input":"hi","metad\u0061ta":["a"]}`,
		`{"model":"m","input":"hi","text":{"format":5}}`,
		`{"model":"m","input":"hi","temperature":1e999}`,
	} {
		for _, to := range []Dialect{AnthropicMessages, OpenAIChat} {
			if _, err := ParseRequestFor(OpenAIResponses, []byte(b), to); err == nil {
				t.Errorf("%s to %s: accepted (%v)", b, to, err)
			}
		}
	}
	answer := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"up","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	for _, c := range []struct{ body, key, want string }{
		{`{"model":"m","input":"hi","metadata":{"a":"x` + "\xff" + `y"}}`, "metadata.a", "x\ufffdy"},
		{`{"model":"m","input":"hi","instructions":"` + "\xc3" + `"}`, "instructions", "\ufffd"},
		{`{"model":"m","input":"hi","user":"a\u0000b"}`, "user", "a\x00b"},
	} {
		r, err := ParseRequestFor(OpenAIResponses, []byte(c.body), AnthropicMessages)
		if err != nil {
			t.Fatalf("%q: %v", c.body, err)
		}
		out, _, err := TranslateResponseWith(AnthropicMessages, OpenAIResponses, answer, "m", ResponseOptions{Echo: r.ResponsesEchoMembers()})
		if err != nil || !utf8.Valid(out) || !gjson.ValidBytes(out) {
			t.Fatalf("%q: %v, not valid UTF-8 JSON: %q", c.body, err, out)
		}
		if got := gjson.GetBytes(out, c.key).Str; got != c.want {
			t.Errorf("%q: %s = %q, want %q", c.body, c.key, got, c.want)
		}
		var sdk responses.Response
		if err := json.Unmarshal(out, &sdk); err != nil || sdk.Status != "completed" {
			t.Errorf("%q: SDK: %v %q", c.body, err, sdk.Status)
		}
	}
}
