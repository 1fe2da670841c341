package caddymodule

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestFailoverMovesToAnotherKey: a key answering 401, 5xx or resetting the
// connection leaves rotation and the request still succeeds on another.
func TestFailoverMovesToAnotherKey(t *testing.T) {
	cases := []struct {
		name   string
		bad    mockupstream.KeyBehavior
		reason string
		state  string
	}{
		{"401", mockupstream.KeyBehavior{Status: 401}, "invalid_key", "cooling"},
		{"403", mockupstream.KeyBehavior{Status: 403}, "forbidden", "cooling"},
		{"500", mockupstream.KeyBehavior{Status: 500}, "server_error", "cooling"},
		{"503", mockupstream.KeyBehavior{Status: 503}, "server_error", "cooling"},
		{"reset", mockupstream.KeyBehavior{ResetRate: 1}, "network_error", "cooling"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, base := mock(t, mockupstream.Config{Seed: 1, Keys: map[string]mockupstream.KeyBehavior{"mk-1": c.bad}})
			pool := "fo" + c.name
			gw := gateway(t, gatewayBlock(poolBlock(pool, base, 2, "")))
			resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if v := resp.Header.Get("X-Routed-Via"); v != pool+"/k2" {
				t.Fatalf("routed via %q, want %s/k2", v, pool)
			}
			s := keyStatus(t, pool, "k1")
			if string(s.State) != c.state || string(s.Reason) != c.reason || s.InFlight != 0 {
				t.Fatalf("k1 = %+v, want %s/%s", s, c.state, c.reason)
			}
			// the bad key stays out of rotation
			for range 3 {
				if resp, _ := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "again", false)); resp.StatusCode != 200 {
					t.Fatalf("follow-up status %d", resp.StatusCode)
				}
			}
			want := int64(1)
			if c.reason == "invalid_key" || c.reason == "forbidden" {
				want = 2 // and the gateway's own probe confirming the verdict
			}
			eventually(t, 5*time.Second, "bad key's requests settle", func() bool { return m.Stats("mk-1").Requests >= want })
			if n := m.Stats("mk-1").Requests; n != want {
				t.Fatalf("bad key got %d requests, want %d", n, want)
			}
			if n := m.Stats("mk-2").OK; n != 4 {
				t.Fatalf("good key served %d, want 4", n)
			}
		})
	}
}

// TestAllKeysRateLimitedWaits: every key answers 429 with Retry-After 1;
// the request waits and succeeds as soon as the first key frees.
func TestAllKeysRateLimitedWaits(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{Cooldown: time.Second}})
	gw := gateway(t, gatewayBlock(poolBlock("rl429", base, 3, "")))
	// use every key directly so that the mock holds them all in cooldown
	for i := 1; i <= 3; i++ {
		req, _ := http.NewRequest(http.MethodPost, base+"/chat/completions", bytesReader(chatBody("mock-gpt", "warm", false)))
		req.Header.Set("Authorization", fmt.Sprintf("Bearer mk-%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("warm-up: %v %v", err, resp)
		}
		resp.Body.Close()
	}
	start := time.Now()
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "patience", false))
	elapsed := time.Since(start)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := gjson.GetBytes(body, "choices.0.message.content").String(); got != mockupstream.Text("patience") {
		t.Fatalf("content %q", got)
	}
	var limited, ok int64
	for _, st := range m.AllStats() {
		limited += st.RateLimited
		ok += st.OK
	}
	if limited != 3 || ok != 4 {
		t.Fatalf("mock saw %d 429s and %d successes, want 3 and 4 (3 warm-ups + 1)", limited, ok)
	}
	t.Logf("waited %v for the first key to free", elapsed)
	if elapsed < 500*time.Millisecond {
		t.Fatalf("answered after %v: did not wait for a cooldown", elapsed)
	}
}

// TestNoKeyAvailableSummary: when every key is out of rotation the client
// gets an error with Retry-After and a per-key summary without secrets:
// 503 while k1's 401 is a provisional verdict, 429 once the gateway's
// probe has confirmed it (k1 is then out of rotation and the one key that
// can serve is rate limited: KeysRateLimited).
func TestNoKeyAvailableSummary(t *testing.T) {
	_, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"mk-1": {Status: 401},
		"mk-2": {Status: 429, RetryAfter: "90"},
	}})
	gw := gateway(t, gatewayBlock(poolBlock("dead", base, 2, "\t\t\tacquire_timeout 2s\n")))
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
	if ra := resp.Header.Get("Retry-After"); ra != "90" {
		t.Fatalf("Retry-After %q, want 90", ra)
	}
	// k1's 401 is provisional (60s) until the gateway's own probe
	// confirms it (then invalid_key_cooldown, 300s)
	msg := gjson.GetBytes(body, "error.message").String()
	m := regexp.MustCompile(`^pool "dead": no key available: k1 cooling \(invalid_key, (60|59|300|299)s left\); k2 cooling \(rate_limited, 90s left\)$`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("message %q", msg)
	}
	want := http.StatusServiceUnavailable
	if m[1] == "300" || m[1] == "299" {
		want = http.StatusTooManyRequests
	}
	if resp.StatusCode != want {
		t.Fatalf("status %d with k1 %ss left, want %d: %s", resp.StatusCode, m[1], want, body)
	}
	if typ := gjson.GetBytes(body, "error.type").String(); typ == "" {
		t.Fatalf("no error.type: %s", body)
	}
	// readiness reflects it
	r, err := http.Get(gw + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != 503 {
		t.Fatalf("readyz %d", r.StatusCode)
	}
}

// TestRetryBudget: with max_retries 1, two transient failures end the
// request with 502 and a third key is not tried.
func TestRetryBudget(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"mk-1": {Status: 500}, "mk-2": {Status: 502},
	}})
	gw := gateway(t, gatewayBlock(poolBlock("budget", base, 3, "\t\t\tmax_retries 1\n")))
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
	if resp.StatusCode != 502 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if m.Stats("mk-3").Requests != 0 {
		t.Fatal("third key tried beyond max_retries")
	}
	if msg := gjson.GetBytes(body, "error.message").String(); !strings.HasPrefix(msg, "all upstream attempts failed (2 attempts; last: upstream error (Bad Gateway") {
		t.Fatalf("message %q", msg)
	}
}
