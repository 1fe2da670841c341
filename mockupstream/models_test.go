package mockupstream

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestKeyModels: a key's Models list is its GET /v1/models answer, in the
// OpenAI shape or, with anthropic-version, the Anthropic one; keys without
// a list keep the server's; ModelsStatus refuses the list only; Latency
// delays it; SetKey changes it live.
func TestKeyModels(t *testing.T) {
	s, ts := start(t, Config{Model: "mock-a", Keys: map[string]KeyBehavior{
		"own":   {Models: []string{"m-1", "m-2"}},
		"none":  {Models: []string{}},
		"no404": {ModelsStatus: 404},
		"slow":  {Models: []string{"m-slow"}, Latency: 150 * time.Millisecond},
	}})
	ids := func(b []byte) []string {
		var v struct {
			Data []struct {
				ID   string `json:"id"`
				Type string `json:"type"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		out := []string{}
		for _, d := range v.Data {
			out = append(out, d.ID)
		}
		return out
	}
	eq := func(a, b []string) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	st, _, b := mustDo(t, "GET", ts.URL+"/v1/models", "own", "")
	if st != 200 || !eq(ids(b), []string{"m-1", "m-2"}) || path(decode(t, b), "object") != "list" || path(decode(t, b), "data", 0, "object") != "model" {
		t.Errorf("own: %d %s", st, b)
	}
	st, _, b = mustDo(t, "GET", ts.URL+"/v1/models", "own", "", "Anthropic-Version", "2023-06-01")
	m := decode(t, b)
	if st != 200 || !eq(ids(b), []string{"m-1", "m-2"}) || path(m, "data", 0, "type") != "model" || m["has_more"] != false ||
		m["first_id"] != "m-1" || m["last_id"] != "m-2" || path(m, "data", 1, "display_name") != "m-2" {
		t.Errorf("own, anthropic shape: %d %s", st, b)
	}
	if st, _, b = mustDo(t, "GET", ts.URL+"/v1/models", "none", ""); st != 200 || len(ids(b)) != 0 {
		t.Errorf("none: %d %s", st, b)
	}
	if st, _, b = mustDo(t, "GET", ts.URL+"/v1/models", "other", ""); st != 200 || !eq(ids(b), []string{"mock-a"}) {
		t.Errorf("server list: %d %s", st, b)
	}
	if st, _, _ = mustDo(t, "GET", ts.URL+"/v1/models", "no404", ""); st != 404 {
		t.Errorf("models_status 404: %d", st)
	}
	if st, _, _ = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "no404", chatBody("x", "")); st != 200 {
		t.Errorf("chat with models_status 404: %d", st)
	}
	if ks := s.Stats("no404"); ks.Failed != 1 || ks.OK != 1 {
		t.Errorf("no404 stats %+v", ks)
	}

	t0 := time.Now()
	if st, _, b = mustDo(t, "GET", ts.URL+"/v1/models", "slow", ""); st != 200 || !eq(ids(b), []string{"m-slow"}) || time.Since(t0) < 150*time.Millisecond {
		t.Errorf("slow: %d %s after %v", st, b, time.Since(t0))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if resp, err := do(t, ctx, "GET", ts.URL+"/v1/models", "slow", ""); err == nil {
		resp.Body.Close()
		t.Errorf("slow list answered before its latency: %d", resp.StatusCode)
	}
	eventuallyStats(t, func() bool { return s.Stats("slow").Canceled == 1 })

	s.SetKey("own", KeyBehavior{Models: []string{"m-3"}})
	if st, _, b = mustDo(t, "GET", ts.URL+"/v1/models", "own", ""); st != 200 || !eq(ids(b), []string{"m-3"}) {
		t.Errorf("after SetKey: %d %s", st, b)
	}
}

func eventuallyStats(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 2s")
		}
	}
}
