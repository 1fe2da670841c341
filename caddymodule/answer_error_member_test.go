package caddymodule

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestAnswerWithErrorMember: an answer that a relay decorated with an
// "error" member ("error":{} or null, or a warning beside real choices)
// is an answer: the first key's 200 reaches the client, passed through
// or translated, and the key stays ready with no failure counted.
func TestAnswerWithErrorMember(t *testing.T) {
	m, gw := streamPair(t)
	const choice = `"id":"c","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"fine answer"},"finish_reason":"stop"}]`
	for _, c := range []struct{ name, body, path string }{
		{"error {} beside choices", `{` + choice + `,"error":{}}`, "/v1/chat/completions"},
		{"warning beside choices", `{` + choice + `,"error":{"message":"relay warning","type":"server_error"}}`, "/v1/chat/completions"},
		{"error {} beside choices, anthropic client", `{` + choice + `,"error":{}}`, "/v1/messages"},
	} {
		poolFor(t, "oa").ClearCooldown("")
		m.SetKey("oa-1", mockupstream.KeyBehavior{ReplayBody: []byte(c.body), ReplayStatus: 200, ReplayContentType: "application/json"})
		body, hdr := string(chatBody("gpt-x", "hello there", false)), []string(nil)
		if c.path == "/v1/messages" {
			body = `{"model":"gpt-x","max_tokens":100,"messages":[{"role":"user","content":"hello there"}]}`
			hdr = []string{"Anthropic-Version", "2023-06-01"}
		}
		resp, b := post(t, gw+c.path, []byte(body), hdr...)
		text := gjson.GetBytes(b, "choices.0.message.content").Str
		if c.path == "/v1/messages" {
			text = gjson.GetBytes(b, "content.0.text").Str
		}
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "oa/o1" || text != "fine answer" {
			t.Errorf("%s: %d via %q: %s", c.name, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
		}
		if s := keyStatus(t, "oa", "o1"); s.State != keypool.StateReady || s.ConsecutiveFailures != 0 || s.Reason != "" {
			t.Errorf("%s: first key %s %s failures %d", c.name, s.State, s.Reason, s.ConsecutiveFailures)
		}
		m.SetKey("oa-1", mockupstream.KeyBehavior{})
	}
}
