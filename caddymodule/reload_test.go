package caddymodule

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestReloadKeepsPoolState: a config reload that keeps a key keeps its
// cooldown; settings change for new acquisitions; a removed key is gone.
func TestReloadKeepsPoolState(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"mk-1": {Status: 429, RetryAfter: "120"}}})
	port := freePort(t)
	cfg := func(n int, extra string) string {
		return fmt.Sprintf("{\n\tadmin off\n\tpersist_config off\n}\nhttp://127.0.0.1:%d {\n%s}\n", port,
			gatewayBlock(poolBlock("reload", base, n, extra)))
	}
	loadCaddyfile(t, cfg(2, ""))
	t.Cleanup(func() { _ = loadCaddyfileErr("{\n\tadmin off\n}\n") })
	gw := fmt.Sprintf("http://127.0.0.1:%d", port)

	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if s := keyStatus(t, "reload", "k1"); s.Reason != "rate_limited" || s.SecondsLeft != 120 {
		t.Fatalf("k1 before reload: %+v", s)
	}

	// reload: a third key and a new per-key cap
	loadCaddyfile(t, cfg(3, "\t\t\tmax_concurrency_per_key 4\n"))
	// the old server closes its idle keep-alive connections on reload
	http.DefaultClient.CloseIdleConnections()
	s := keyStatus(t, "reload", "k1")
	if s.Reason != "rate_limited" || s.SecondsLeft < 119 {
		t.Fatalf("k1 forgot its cooldown over the reload: %+v", s)
	}
	if s.Cap != 4 || s.Requests != 1 {
		t.Fatalf("k1 after reload: cap %d requests %d", s.Cap, s.Requests)
	}
	if len(poolFor(t, "reload").Snapshot()) != 3 {
		t.Fatal("k3 not added")
	}

	// reload again without k2 and k3: they get no more traffic
	loadCaddyfile(t, cfg(1, ""))
	http.DefaultClient.CloseIdleConnections()
	if n := len(poolFor(t, "reload").Snapshot()); n != 1 {
		t.Fatalf("%d keys after removing two", n)
	}
	before := m.Stats("mk-2").Requests + m.Stats("mk-3").Requests
	m.SetKey("mk-1", mockupstream.KeyBehavior{})
	poolFor(t, "reload").ClearCooldown("")
	for range 3 {
		if resp, _ := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false)); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if after := m.Stats("mk-2").Requests + m.Stats("mk-3").Requests; after != before {
		t.Fatalf("removed keys got %d requests", after-before)
	}
	if m.Stats("mk-1").OK != 3 {
		t.Fatalf("k1 served %d", m.Stats("mk-1").OK)
	}
}
