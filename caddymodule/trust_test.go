package caddymodule

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

// interposed is an upstream that answers some requests itself (answer
// returns true) and hands the rest to the mock. It counts the requests
// it answered per Authorization/x-api-key value.
type interposed struct {
	mu     sync.Mutex
	counts map[string]int
}

func (ip *interposed) count(key string) int {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	return ip.counts[key]
}

func interpose(t *testing.T, m *mockupstream.Server, answer func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool) (*interposed, string) {
	t.Helper()
	ip := &interposed{counts: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if key == "" {
			key = r.Header.Get("X-Api-Key")
		}
		if answer(w, r, key, body) {
			ip.mu.Lock()
			ip.counts[key]++
			ip.mu.Unlock()
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return ip, srv.URL + "/v1"
}

// readyFor reports whether every key of the pool can take a request for
// model now.
func readyFor(t *testing.T, pool string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		s := keyStatus(t, pool, id)
		if s.State != "ready" || s.Reason != "" {
			t.Fatalf("key %s after the hostile request: %+v, want ready", id, s)
		}
	}
}

// TestModelForbiddenNeverBenchesKeys: a request for a model the upstream
// project may not use (403 model_not_found on every key) moves to at most
// one more key, then the client gets the upstream's answer in its
// dialect; every key stays ready for every other model.
func TestModelForbiddenNeverBenchesKeys(t *testing.T) {
	m, _ := mock(t, mockupstream.Config{})
	ip, base := interpose(t, m, func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool {
		if gjson.GetBytes(body, "model").String() != "o1-pro" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"error":{"message":"Project proj_abc does not have access to model o1-pro","type":"invalid_request_error","param":null,"code":"model_not_found"}}`)
		return true
	})
	gw := gateway(t, gatewayBlock(poolBlock("main", base, 4, "\t\t\tmodels *\n")))
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("main/o1-pro", "hi", false))
	if resp.StatusCode != 403 || gjson.GetBytes(body, "error.code").String() != "model_not_found" {
		t.Fatalf("client got %d %s, want the upstream's 403 model_not_found", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("x-should-retry %q, want false", resp.Header.Get("X-Should-Retry"))
	}
	tried := 0
	for i := 1; i <= 4; i++ {
		tried += ip.count(fmt.Sprintf("mk-%d", i))
	}
	if tried != 2 {
		t.Fatalf("the request was tried on %d keys, want 2 (one more key, then the answer)", tried)
	}
	readyFor(t, "main", "k1", "k2", "k3", "k4")
	// an Anthropic client gets it in Anthropic's shape
	resp, body = post(t, gw+"/v1/messages", []byte(`{"model":"o1-pro","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`),
		"Anthropic-Version", "2023-06-01")
	if resp.StatusCode != 403 || gjson.GetBytes(body, "type").String() != "error" || gjson.GetBytes(body, "error.type").String() != "permission_error" {
		t.Fatalf("anthropic client got %d %s", resp.StatusCode, body)
	}
	readyFor(t, "main", "k1", "k2", "k3", "k4")
	// every other model is served by every key
	for i := range 4 {
		if resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", fmt.Sprint("other ", i), false)); resp.StatusCode != 200 {
			t.Fatalf("other model: %d %s", resp.StatusCode, body)
		}
	}
	for i := 1; i <= 4; i++ {
		if n := m.Stats(fmt.Sprintf("mk-%d", i)).OK; n != 1 {
			t.Fatalf("mk-%d served %d of the 4 follow-up requests, want 1 (every key in rotation)", i, n)
		}
	}
}

// TestEchoedTextNeverBenchesKeys: a 400 whose message echoes a client
// field named "credit balance" is the request's fault: relayed, no key
// touched. Anthropic's real "credit balance is too low" 400 still takes
// the key out, once the gateway's own probe confirms it.
func TestEchoedTextNeverBenchesKeys(t *testing.T) {
	m, _ := mock(t, mockupstream.Config{})
	const credit = `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`
	_, base := interpose(t, m, func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case key == "broke" && r.Method == http.MethodPost:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, credit)
			return true
		case gjson.GetBytes(body, "credit balance").Exists():
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"type":"error","error":{"type":"invalid_request_error","message":"credit balance: Extra inputs are not permitted"}}`)
			return true
		}
		return false
	})
	gw := gateway(t, gatewayBlock(poolBlock("echo", base, 3, "\t\t\tkey broke "+base+" {\n\t\t\t\tid broke\n\t\t\t\tdialect anthropic\n\t\t\t}\n"+
		"\t\t\tstrategy priority\n")))
	hostile := []byte(`{"model":"claude-x","max_tokens":5,"credit balance":1,"messages":[{"role":"user","content":"hi"}]}`)
	for range 3 {
		resp, body := post(t, gw+"/v1/chat/completions", hostile)
		if resp.StatusCode != 400 || !strings.Contains(gjson.GetBytes(body, "error.message").String(), "Extra inputs") {
			t.Fatalf("hostile request: %d %s, want the upstream's 400 relayed", resp.StatusCode, body)
		}
		if resp.Header.Get("X-Should-Retry") != "false" {
			t.Fatalf("relayed 400: x-should-retry %q", resp.Header.Get("X-Should-Retry"))
		}
	}
	readyFor(t, "echo", "k1", "k2", "k3")
	// the real message, on the key that really is out of credit
	kp := poolFor(t, "echo")
	kp.SetDisabled("k1", true)
	kp.SetDisabled("k2", true)
	kp.SetDisabled("k3", true)
	resp, body := post(t, gw+"/v1/messages", []byte(`{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`),
		"Anthropic-Version", "2023-06-01")
	if resp.StatusCode == 200 {
		t.Fatalf("broke key answered 200: %s", body)
	}
	eventually(t, 5*time.Second, "the probe confirms no credit", func() bool {
		s := keyStatus(t, "echo", "broke")
		return s.Reason == "no_credit" && !s.Provisional && s.SecondsLeft > 3600
	})
}

// TestInvalidKeyConfirmedByProbe: a real 401 benches the key for
// invalid_key_cooldown only after the gateway's own probe (the models
// list) confirms it; until then the cooldown is provisional.
func TestInvalidKeyConfirmedByProbe(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"mk-1": {Status: 401}}})
	gw := gateway(t, gatewayBlock(poolBlock("inv", base, 2, "\t\t\tinvalid_key_cooldown 2h\n\t\t\tprovisional_cooldown 30s\n")))
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "inv/k2" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), body)
	}
	eventually(t, 5*time.Second, "the probe confirms the 401", func() bool {
		s := keyStatus(t, "inv", "k1")
		return s.Reason == "invalid_key" && !s.Provisional && s.SecondsLeft > 3000
	})
	if n := m.Stats("mk-1").Requests; n != 2 {
		t.Fatalf("mk-1 saw %d requests, want 2 (the client's and the gateway's probe)", n)
	}
}

// TestScopeAfterPoolPrefix: "<pool>/<model>" and "auto" are checked
// against the gateway key's models and the pool's models after the pool
// prefix is resolved.
func TestScopeAfterPoolPrefix(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	gw := gateway(t, "\tllm_gateway {\n"+
		"\t\tapi_key sk-scope-gpt-only-01 {\n\t\t\tid gpt-only\n\t\t\tmodels gpt-*\n\t\t}\n"+
		"\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool gpt-pool {\n\t\t\tmodels gpt-*\n\t\t\tkey g-1 "+base+"\n\t\t}\n"+
		"\t\tpool claude-pool {\n\t\t\tmodels claude-*\n\t\t\tdefault_model claude-opus-4\n\t\t\tkey c-1 "+base+"\n\t\t}\n\t}\n")
	scoped := []string{"Authorization", "Bearer sk-scope-gpt-only-01"}
	cases := []struct {
		key   []string
		model string
		want  int
		msg   string
	}{
		{scoped, "gpt-pool/claude-opus-4", 403, "claude-opus-4"},
		{scoped, "claude-pool/claude-opus-4", 403, "may not use model"},
		{scoped, "auto", 403, "may not use"},
		{scoped, "gpt-pool/gpt-4o", 200, ""},
		{nil, "gpt-pool/claude-opus-4", 403, "does not serve model"},
		{nil, "claude-pool/claude-opus-4", 200, ""},
		{nil, "auto", 200, ""},
	}
	for _, c := range cases {
		resp, body := post(t, gw+"/v1/chat/completions", chatBody(c.model, "hi", false), c.key...)
		if resp.StatusCode != c.want || !strings.Contains(gjson.GetBytes(body, "error.message").String(), c.msg) {
			t.Fatalf("%v %s: %d %s, want %d %q", c.key, c.model, resp.StatusCode, body, c.want, c.msg)
		}
		if c.want == 403 && (gjson.GetBytes(body, "error.type").String() != "permission_error" && gjson.GetBytes(body, "error.code").String() == "") {
			t.Fatalf("%s: error shape %s", c.model, body)
		}
	}
	// Anthropic client: 403 in Anthropic's shape
	resp, body := post(t, gw+"/v1/messages", []byte(`{"model":"gpt-pool/claude-opus-4","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`),
		"Authorization", "", "X-Api-Key", "sk-scope-gpt-only-01", "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != 403 || gjson.GetBytes(body, "error.type").String() != "permission_error" {
		t.Fatalf("anthropic: %d %s", resp.StatusCode, body)
	}
}

// TestHungKeyNonStreamed: a non-streamed request on a key that never
// sends its response headers moves to the next key after
// attempt_timeout, not after the whole total_timeout; the key cools for
// timeout once the gateway's probe times out too.
func TestHungKeyNonStreamed(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"mk-1": {Latency: time.Minute}}})
	gw := gateway(t, gatewayBlock(poolBlock("hung", base, 2, "\t\t\tstrategy priority\n\t\t\tattempt_timeout 400ms\n\t\t\tprobe_timeout 300ms\n\t\t\ttotal_timeout 30s\n")))
	kp := poolFor(t, "hung")
	_ = kp
	start := time.Now()
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
	took := time.Since(start)
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "hung/k2" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), body)
	}
	if took > 10*time.Second {
		t.Fatalf("answered after %v: the hung key was waited for past attempt_timeout", took)
	}
	eventually(t, 3*time.Second, "hung key cooling for timeout", func() bool {
		return keyStatus(t, "hung", "k1").Reason == keypool.Timeout.Reason()
	})
	if m.Stats("mk-2").OK != 1 {
		t.Fatalf("mk-2 OK = %d", m.Stats("mk-2").OK)
	}
}

// TestWrongTypesRejectedWithParam: a translated request whose field has
// the wrong type or an impossible value gets the vendor's 400, naming the
// field (param and code for OpenAI dialects), instead of being dropped or
// coerced; nothing goes upstream.
func TestWrongTypesRejectedWithParam(t *testing.T) {
	m, gw := dialectGateway(t)
	cases := []struct {
		path, body, param, code, anthropicMsg string
	}{
		{"/v1/responses", `{"model":"claude-x","input":"hi","max_output_tokens":"zzz"}`, "max_output_tokens", "invalid_type", ""},
		{"/v1/chat/completions", `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"max_tokens":1e308}`, "max_tokens", "", ""},
		{"/v1/messages", `{"model":"gpt-x","max_tokens":"many","messages":[{"role":"user","content":"hi"}]}`, "", "", "max_tokens"},
	}
	for _, c := range cases {
		hdr := []string{}
		if c.path == "/v1/messages" {
			hdr = []string{"Anthropic-Version", "2023-06-01"}
		}
		resp, body := post(t, gw+c.path, []byte(c.body), hdr...)
		if resp.StatusCode != 400 || resp.Header.Get("X-Should-Retry") != "false" {
			t.Fatalf("%s %s: %d %v %s", c.path, c.body, resp.StatusCode, resp.Header.Get("X-Should-Retry"), body)
		}
		if c.param != "" && gjson.GetBytes(body, "error.param").String() != c.param {
			t.Fatalf("%s: param in %s, want %s", c.path, body, c.param)
		}
		if c.code != "" && gjson.GetBytes(body, "error.code").String() != c.code {
			t.Fatalf("%s: code in %s, want %s", c.path, body, c.code)
		}
		if c.anthropicMsg != "" && (gjson.GetBytes(body, "error.type").String() != "invalid_request_error" ||
			!strings.HasPrefix(gjson.GetBytes(body, "error.message").String(), c.anthropicMsg)) {
			t.Fatalf("%s: %s", c.path, body)
		}
	}
	if n := m.Stats("oa-key").Requests + m.Stats("an-key").Requests; n != 0 {
		t.Fatalf("%d requests went upstream", n)
	}
}

// TestRequestCaused403TriesOneMoreKey: a 403 the request itself causes
// (here an anthropic-beta the account lacks) is tried on one more key;
// when that key answers the same, the client gets the upstream's 403 (not
// retryable), the second key is not blamed, and no other key is touched.
func TestRequestCaused403TriesOneMoreKey(t *testing.T) {
	m, _ := mock(t, mockupstream.Config{})
	ip, base := interpose(t, m, func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool {
		if r.Header.Get("Anthropic-Beta") != "evil-beta" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"type":"error","error":{"type":"permission_error","message":"Your organization does not have access to this beta feature."}}`)
		return true
	})
	root := strings.TrimSuffix(base, "/v1")
	var keys strings.Builder
	for i := 1; i <= 4; i++ {
		fmt.Fprintf(&keys, "\t\t\tkey an-%d %s {\n\t\t\t\tid a%d\n\t\t\t\tdialect anthropic\n\t\t\t}\n", i, root, i)
	}
	gw := gateway(t, gatewayBlock("\t\tpool beta {\n"+keys.String()+"\t\t}\n"))
	resp, body := post(t, gw+"/v1/messages", []byte(`{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`),
		"Anthropic-Version", "2023-06-01", "Anthropic-Beta", "evil-beta")
	if resp.StatusCode != 403 || gjson.GetBytes(body, "error.type").String() != "permission_error" || resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header.Get("X-Should-Retry"), body)
	}
	tried := 0
	for i := 1; i <= 4; i++ {
		tried += ip.count(fmt.Sprintf("an-%d", i))
	}
	if tried != 2 {
		t.Fatalf("tried on %d keys, want 2", tried)
	}
	cooling := 0
	for i := 1; i <= 4; i++ {
		if s := keyStatus(t, "beta", fmt.Sprintf("a%d", i)); s.State != "ready" {
			cooling++
		}
	}
	if cooling > 1 {
		t.Fatalf("%d keys out of rotation after one request, want at most 1 (and only provisionally)", cooling)
	}
	// the gateway's own probe (no beta header) refutes the first key's verdict
	eventually(t, 5*time.Second, "every key back in rotation", func() bool {
		for i := 1; i <= 4; i++ {
			if keyStatus(t, "beta", fmt.Sprintf("a%d", i)).State != "ready" {
				return false
			}
		}
		return true
	})
}
