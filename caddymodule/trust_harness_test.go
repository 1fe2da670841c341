package caddymodule

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/llmgateway/llm_gateway/keypool"
)

// trustAnswer is what trustUpstream answers for one key: an HTTP status
// (0: 200), extra headers (name, value pairs), and a body sent as
// text/event-stream when sse is set, application/json otherwise.
type trustAnswer struct {
	status int
	hdr    []string
	sse    bool
	body   string
}

// trustUpstream answers each key (its bearer token or x-api-key) as told
// and counts the requests per key.
type trustUpstream struct {
	mu   sync.Mutex
	ans  map[string]trustAnswer
	seen map[string]int
}

func (u *trustUpstream) set(key string, a trustAnswer) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ans[key] = a
}

func (u *trustUpstream) count(key string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[key]
}

func (u *trustUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if key == "" {
		key = r.Header.Get("X-Api-Key")
	}
	u.mu.Lock()
	a, ok := u.ans[key]
	u.seen[key]++
	u.mu.Unlock()
	if !ok {
		w.WriteHeader(500)
		return
	}
	for i := 0; i+1 < len(a.hdr); i += 2 {
		w.Header().Set(a.hdr[i], a.hdr[i+1])
	}
	writeTestAnswer(w, a.status, a.sse, a.body)
}

// trustGateway starts a trustUpstream and a gateway with three pools of
// two keys each (threeDialectGateway): "tc" (model x-chat,
// OpenAI Chat keys), "ta" (x-anth, Anthropic) and "tr" (x-resp,
// Responses); key ids <pool>a and <pool>b, secrets trustKey(pool, ab).
func trustGateway(t *testing.T) (*trustUpstream, string) {
	t.Helper()
	u := &trustUpstream{ans: map[string]trustAnswer{}, seen: map[string]int{}}
	return u, threeDialectGateway(t, u, [3]string{"tc", "ta", "tr"}, trustKey)
}

// threeDialectGateway starts up on 127.0.0.1 and a gateway with three
// pools of two keys each (ids <pool>a and <pool>b, secrets key(pool,
// ab), by priority, affinity off): names[0] serves model x-chat with
// OpenAI Chat keys, names[1] x-anth with Anthropic keys, names[2] x-resp
// with Responses keys. It returns the gateway's address.
func threeDialectGateway(t *testing.T, up http.Handler, names [3]string, key func(pool, ab string) string) string {
	t.Helper()
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	pool := func(name, model, dialect string) string {
		s := "\t\tpool " + name + " {\n\t\t\tmodels " + model + "\n\t\t\tstrategy priority\n\t\t\taffinity off\n\t\t\trequest_timeout 10s\n"
		for i, ab := range []string{"a", "b"} {
			s += "\t\t\tkey " + key(name, ab) + " " + srv.URL + "/v1 {\n\t\t\t\tid " + name + ab + "\n\t\t\t\tdialect " + dialect +
				"\n\t\t\t\tpriority " + fmt.Sprint(i+1) + "\n\t\t\t}\n"
		}
		return s + "\t\t}\n"
	}
	return gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tusage_file off\n"+
		pool(names[0], "x-chat", "openai")+pool(names[1], "x-anth", "anthropic")+pool(names[2], "x-resp", "responses")+"\t}\n")
}

// trustKey is the secret of key ab ("a" or "b") of pool.
func trustKey(pool, ab string) string {
	return pool + "-key-" + ab + "-5c8e1a9f3b7d2c4e6a0f"
}

// trustPools maps an upstream dialect to its pool and model.
var trustPools = []struct{ up, pool, model string }{
	{"chat", "tc", "x-chat"},
	{"anthropic", "ta", "x-anth"},
	{"responses", "tr", "x-resp"},
}

// trustFailures returns the failures counted so far on keys a and b of
// pool (by id).
func trustFailures(t *testing.T, pool string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, ab := range []string{"a", "b"} {
		out[pool+ab] = int64(keyStatus(t, pool, pool+ab).Failures)
	}
	return out
}

// trustUnblamed checks that keys a and b of pool are ready, count no
// consecutive failure and no failure since before (trustFailures).
func trustUnblamed(t *testing.T, label, pool string, before map[string]int64) {
	t.Helper()
	for id, n := range before {
		if st := keyStatus(t, pool, id); st.State != keypool.StateReady || int64(st.Failures) != n || st.ConsecutiveFailures != 0 || st.Reason != "" {
			t.Errorf("%s: key %s blamed: %+v", label, id, st)
		}
	}
}

// writeTestAnswer writes a test upstream's answer: status (0: 200), an
// event stream when sse (else JSON), body, flushed.
func writeTestAnswer(w http.ResponseWriter, status int, sse bool, body string) {
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	if status == 0 {
		status = 200
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
	w.(http.Flusher).Flush()
}
