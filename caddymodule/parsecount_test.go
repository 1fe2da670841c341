package caddymodule

import (
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/llmgateway/llm_gateway/translate"
)

// TestOneParsePerRequest: through a real gateway, a request's body is
// parsed in full exactly once (translate.ParseCount), whether it passes
// through, is translated, or is retried on a second key after a 500 or a
// 429 (the retry reuses the encoded body).
func TestOneParsePerRequest(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"pc-fail-500": {Status: 500},
		"pc-fail-429": {Status: 429, RetryAfter: "30"},
	}})
	key := func(secret, id string) string {
		return "\t\t\tkey " + secret + " " + base + " {\n\t\t\t\tid " + id + "\n\t\t\t}\n"
	}
	gw := gateway(t, gatewayBlock(
		"\t\tpool one {\n\t\t\tmodels one-*\n"+key("pc-ok-1", "ok1")+"\t\t}\n",
		"\t\tpool r500 {\n\t\t\tmodels r500-*\n\t\t\tstrategy round_robin\n"+key("pc-fail-500", "bad")+key("pc-ok-2", "ok2")+"\t\t}\n",
		"\t\tpool r429 {\n\t\t\tmodels r429-*\n\t\t\tstrategy round_robin\n"+key("pc-fail-429", "limited")+key("pc-ok-3", "ok3")+"\t\t}\n"))
	anth := func(model string, stream bool) []byte {
		s := "false"
		if stream {
			s = "true"
		}
		return []byte(`{"model":"` + model + `","max_tokens":100,"stream":` + s + `,"system":"be brief","messages":[{"role":"user","content":"count my parses"}]}`)
	}
	cases := []struct {
		name, path string
		body       []byte
		hdr        []string
	}{
		{"passthrough", "/v1/chat/completions", chatBody("one-a", "count my parses", false), nil},
		{"passthrough stream", "/v1/chat/completions", chatBody("one-a", "count my parses", true), nil},
		{"translated", "/v1/messages", anth("one-a", false), []string{"Anthropic-Version", "2023-06-01"}},
		{"translated stream", "/v1/messages", anth("one-a", true), []string{"Anthropic-Version", "2023-06-01"}},
		{"retried after 500", "/v1/messages", anth("r500-a", false), []string{"Anthropic-Version", "2023-06-01"}},
		{"retried after 500 again", "/v1/chat/completions", chatBody("r500-a", "count my parses", true), nil},
		{"retried after 429", "/v1/messages", anth("r429-a", true), []string{"Anthropic-Version", "2023-06-01"}},
		{"retried after 429 again", "/v1/messages", anth("r429-a", false), []string{"Anthropic-Version", "2023-06-01"}},
	}
	for _, c := range cases {
		before := translate.ParseCount()
		resp, b := post(t, gw+c.path, c.body, c.hdr...)
		if resp.StatusCode != 200 || !strings.Contains(string(b), "parses") {
			t.Fatalf("%s: %d %.300s", c.name, resp.StatusCode, b)
		}
		if n := translate.ParseCount() - before; n != 1 {
			t.Errorf("%s: %d full parses, want 1", c.name, n)
		}
	}
	// the retries happened: each failing key was tried, the other answered
	if s := m.Stats("pc-fail-500"); s.Failed == 0 {
		t.Fatalf("the 500 key was never tried: %+v", s)
	}
	if s := m.Stats("pc-fail-429"); s.RateLimited == 0 {
		t.Fatalf("the 429 key was never tried: %+v", s)
	}
	// the mock counts a stream once its handler returns, which may be
	// after the client has read the last event
	eventually(t, 2*time.Second, "second keys answered 2 and 2", func() bool {
		return m.Stats("pc-ok-2").OK == 2 && m.Stats("pc-ok-3").OK == 2
	})
}
