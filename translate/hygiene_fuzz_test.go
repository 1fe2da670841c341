package translate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzSanitizeAnthropicRequest: SanitizeAnthropicRequest never panics,
// keeps a JSON body JSON, is idempotent, and a body it rewrote has no blank
// text block left in system or messages.
func FuzzSanitizeAnthropicRequest(f *testing.F) {
	f.Add([]byte(`{"model":"c","max_tokens":1,"system":" ","messages":[{"role":"user","content":[{"type":"text","text":"\n"},{"type":"text","text":"q"}]},{"role":"assistant","content":" "}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":""}]}]}]}`))
	f.Add([]byte(`{"system"""content":""`)) // not JSON, with a blank string: left as it is
	for _, b := range requestFixtures(f, AnthropicMessages) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := bytes.Clone(in)
		out := SanitizeAnthropicRequest(in)
		if !bytes.Equal(in, orig) {
			t.Fatalf("input modified")
		}
		if gjson.ValidBytes(in) && !gjson.ValidBytes(out) {
			t.Fatalf("invalid JSON out of valid JSON:\n in %s\nout %s", in, out)
		}
		if again := SanitizeAnthropicRequest(out); !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%s\n%s", out, again)
		}
		if bytes.Equal(out, in) || !gjson.ValidBytes(in) {
			return
		}
		blank := func(b gjson.Result) bool {
			return b.Get("type").Str == "text" && b.Get("text").Type == gjson.String && strings.TrimSpace(b.Get("text").Str) == ""
		}
		gjson.GetBytes(out, "system").ForEach(func(_, b gjson.Result) bool {
			if blank(b) {
				t.Fatalf("blank system block left: %s", out)
			}
			return true
		})
		gjson.GetBytes(out, "messages").ForEach(func(_, m gjson.Result) bool {
			m.Get("content").ForEach(func(_, b gjson.Result) bool {
				if blank(b) {
					t.Fatalf("blank text block left: %s", out)
				}
				return true
			})
			return true
		})
	})
}
