package caddymodule

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
)

// goDecodingUpstream is an OpenAI-compatible upstream that reads requests
// with encoding/json, as many Go relays and local servers do (member
// names matched case-insensitively, the last match winning), and records
// the model and stream flag it read.
type goDecodingUpstream struct {
	mu   sync.Mutex
	read []string
}

func (u *goDecodingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"cheap-1","object":"model"},{"id":"expensive-1","object":"model"}]}`)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var req struct {
		Model  string
		Stream bool
	}
	_ = json.Unmarshal(b, &req)
	u.mu.Lock()
	u.read = append(u.read, req.Model)
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"`+req.Model+`","choices":[{"index":0,"message":{"role":"assistant","content":"ran `+req.Model+`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)
}

func (u *goDecodingUpstream) models() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.read...)
}

// TestAttackDec02cCaseFoldedModelBypass: a gateway key scoped to cheap-*
// sends a second model member whose name differs only in letter case
// ("MODEL", "Model", "ſtream" for stream). The gateway routed and
// scope-checked the exact "model" and passed the body through, and an
// upstream that decodes with Go's encoding/json ran the other one: the
// scope was bypassed. Every client dialect now gets a 400 in its dialect,
// nothing goes upstream and no key changes state.
func TestAttackDec02cCaseFoldedModelBypass(t *testing.T) {
	up := &goDecodingUpstream{}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	const scoped = "sk-scoped-caller-0123456789"
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+scoped+" {\n\t\t\tid cheap-only\n\t\t\tmodels cheap-*\n\t\t}\n\t\tusage_file off\n"+
		"\t\tpool gofold {\n\t\t\tmodels cheap-* expensive-*\n\t\t\tkey sk-gofold-upstream-0123456789 "+srv.URL+"/v1 {\n\t\t\t\tid gf1\n\t\t\t}\n\t\t}\n\t}\n")
	auth := []string{"Authorization", "Bearer " + scoped}

	// the scope holds for the plain request
	if resp, b := post(t, gw+"/v1/chat/completions", chatBody("expensive-1", "hi", false), auth...); resp.StatusCode != 403 {
		t.Fatalf("expensive-1 with the scoped key: %d %s", resp.StatusCode, b)
	}
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"cheap-1","MODEL":"expensive-1",` + msgs + `}`},
		{"/v1/chat/completions", `{"Model":"expensive-1","model":"cheap-1",` + msgs + `}`},
		{"/v1/chat/completions", `{"model":"cheap-1","Stream":true,` + msgs + `}`},
		{"/v1/chat/completions", `{"model":"cheap-1","stream":false,"ſtream":true,` + msgs + `}`},
		{"/v1/messages", `{"model":"cheap-1","max_tokens":20,"MODEL":"expensive-1",` + msgs + `}`},
		{"/v1/responses", `{"model":"cheap-1","input":"hi","mOdEl":"expensive-1"}`},
	} {
		resp, b := post(t, gw+c.path, []byte(c.body), append(auth, "Anthropic-Version", "2023-06-01")...)
		msg := gjson.GetBytes(b, "error.message").Str
		if resp.StatusCode != 400 || !strings.Contains(msg, "only in letter case") {
			t.Errorf("%s %s: %d %s, want 400 naming the letter case", c.path, c.body, resp.StatusCode, b)
		}
		if c.path == "/v1/messages" && gjson.GetBytes(b, "type").Str != "error" {
			t.Errorf("%s: not an Anthropic error object: %s", c.path, b)
		}
	}
	if got := up.models(); len(got) != 0 {
		t.Fatalf("the upstream ran %v", got)
	}
	if s := keyStatus(t, "gofold", "gf1"); s.State != "ready" {
		t.Errorf("key gf1 is %q after the client's bad requests", s.State)
	}
	// a well-formed request of the scope still runs what it names
	if resp, b := post(t, gw+"/v1/chat/completions", chatBody("cheap-1", "hi", false), auth...); resp.StatusCode != 200 || gjson.GetBytes(b, "choices.0.message.content").Str != "ran cheap-1" {
		t.Fatalf("cheap-1: %d %s", resp.StatusCode, b)
	}
}
