package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// orModeration is OpenRouter's moderation refusal (its errors docs:
// error.metadata with reasons and flagged_input), as an error object.
const orModeration = `{"error":{"code":403,"message":"x-chat requires moderation on OpenAI. Your input was flagged for \"harassment\".","metadata":{"reasons":["harassment"],"flagged_input":"you are a ...","provider_name":"OpenAI"}}}`

// TestErrorMetadataKept: an upstream error's metadata object reaches the
// StreamError's body, as the same error with its HTTP status carries it,
// wherever the gateway reads an OpenAI-shaped error object: a Chat chunk's
// error before the first content (held passthrough and translated), after
// it, and a 200 answer that is an error object. Metadata that is not an
// object, too large or not valid JSON is left out; credentials in it are
// redacted; an error without metadata keeps its body as before.
func TestErrorMetadataKept(t *testing.T) {
	role := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	text := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n"
	for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		for _, pre := range []string{role, role + text} {
			_, tr, _ := runEnd(t, OpenAIChat, to, false, strings.NewReader(pre+"data: "+orModeration+"\n\n"))
			se := tr.UpstreamError()
			if se == nil || se.Status != 403 {
				t.Fatalf("to %s, content sent %v: upstream error %+v", to, pre != role, se)
			}
			m := gjson.GetBytes(se.Body, "error.metadata")
			if m.Get("flagged_input").Str != "you are a ..." || m.Get("reasons.0").Str != "harassment" || !gjson.ValidBytes(se.Body) {
				t.Errorf("to %s, content sent %v: body %s", to, pre != role, se.Body)
			}
			if gjson.GetBytes(se.Body, "error.message").Str == "" || gjson.GetBytes(se.Body, "error.code").Str != "403" {
				t.Errorf("to %s: body lost its fields: %s", to, se.Body)
			}
		}
	}
	if se := AnswerError(OpenAIChat, []byte(orModeration)); se == nil || gjson.GetBytes(se.Body, "error.metadata.flagged_input").Str != "you are a ..." {
		t.Errorf("whole answer: %+v", se)
	}

	plain := `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`
	want := `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`
	for name, c := range map[string]struct{ in, want string }{
		"no metadata":      {plain, want},
		"metadata null":    {`{"error":{"message":"The server had an error","type":"server_error","metadata":null}}`, want},
		"metadata string":  {`{"error":{"message":"The server had an error","type":"server_error","metadata":"x"}}`, want},
		"metadata too big": {`{"error":{"message":"The server had an error","type":"server_error","metadata":{"raw":"` + strings.Repeat("a", maxErrorMetadata) + `"}}}`, want},
		"metadata invalid": {`{"error":{"message":"The server had an error","type":"server_error","metadata":{"raw":tru}}}`, want},
		"key in metadata": {`{"error":{"message":"The server had an error","type":"server_error","metadata":{"raw":"bad key sk-proj-abcdefghijklmnop"}}}`,
			`{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null,"metadata":{"raw":"bad key [redacted]"}}}`},
	} {
		se := AnswerError(OpenAIChat, []byte(c.in))
		if se == nil || string(se.Body) != c.want {
			t.Errorf("%s: %+v, want body %s", name, se, c.want)
		}
	}
	// an Anthropic upstream's error body has no metadata member
	se := AnswerError(AnthropicMessages, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded","metadata":{"a":1}}}`))
	if se == nil || string(se.Body) != `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` {
		t.Errorf("anthropic: %+v", se)
	}
}
