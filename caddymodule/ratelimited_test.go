package caddymodule

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestPoolRateLimitedAnswers429: when every key of the pool is held by a
// rate limit (cooling on its upstream's 429 with Retry-After, on the 429
// of an upstream cooldown window after a success, or on an upstream's
// concurrency 429) the client gets 429 in its dialect (OpenAI
// rate_limit_error / rate_limit_exceeded, Anthropic rate_limit_error) with
// Retry-After and the per-key summary, through the official SDKs of all
// three client dialects, streamed and whole: the SDKs raise their
// RateLimitError and wait out Retry-After, as for the vendor's own 429.
// A gateway that answered 503 sent them down their server-error path
// (LiteLLM's router answers 429 too when no deployment is free:
// BerriAI/litellm#20867). A pool where one key cools on a 5xx beside one
// on a 429 still answers 503.
func TestPoolRateLimitedAnswers429(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"rl-secret-1": {Status: 429, RetryAfter: "30"},
		"rl-secret-2": {Status: 429, RetryAfter: "30"},
		"cd-secret-1": {Cooldown: 30 * time.Second},
		"cc-secret-1": {MaxConcurrency: 1, StreamHold: true},
		"mx-secret-1": {Status: 429, RetryAfter: "30"},
		"mx-secret-2": {Status: 500},
	}})
	pool := func(name, extra string, secrets ...string) string {
		var b strings.Builder
		b.WriteString("\t\tpool " + name + " {\n\t\t\tmodels " + name + "-*\n" + extra)
		for i, s := range secrets {
			b.WriteString("\t\t\tkey " + s + " " + base + " {\n\t\t\t\tid k" + strconv.Itoa(i+1) + "\n\t\t\t}\n")
		}
		b.WriteString("\t\t}\n")
		return b.String()
	}
	gw := gateway(t, gatewayBlock(
		pool("rl", "\t\t\tacquire_timeout 100ms\n", "rl-secret-1", "rl-secret-2"),
		pool("cd", "\t\t\tacquire_timeout 100ms\n", "cd-secret-1"),
		pool("cc", "\t\t\tacquire_timeout 50ms\n\t\t\tmax_concurrency_per_key 4\n", "cc-secret-1"),
		pool("mx", "\t\t\tacquire_timeout 100ms\n", "mx-secret-1", "mx-secret-2"),
	))
	// want429 checks one SDK's view of a pool's rate limit
	want429 := func(t *testing.T, o sdkOutcome, cd, summary string, raMin, raMax int) {
		t.Helper()
		if o.ok || o.status != http.StatusTooManyRequests || o.typ != "rate_limit_error" {
			t.Fatalf("%s: %s; want 429 rate_limit_error", cd, o)
		}
		if ra, err := strconv.Atoi(o.retryAfter); err != nil || ra < raMin || ra > raMax {
			t.Errorf("%s: Retry-After %q, want %d..%d", cd, o.retryAfter, raMin, raMax)
		}
		if !strings.Contains(o.msg, summary) || strings.Contains(o.msg, "secret") {
			t.Errorf("%s: message %q, want the per-key summary %q without secrets", cd, o.msg, summary)
		}
	}
	clients := []string{"chat", "anthropic", "responses"}

	t.Run("every key cooling on its 429", func(t *testing.T) {
		for _, cd := range clients {
			for _, stream := range []bool{false, true} {
				o := sdkCall(gw, cd, "rl-model", stream)
				want429(t, o, cd, `pool "rl": no key available: k1 cooling (rate_limited, `, 28, 30)
				if !strings.Contains(o.msg, "k2 cooling (rate_limited, ") {
					t.Errorf("%s: message %q", cd, o.msg)
				}
			}
		}
		// each key was asked once: the later requests found both cooling
		if a, b := m.Stats("rl-secret-1").Requests, m.Stats("rl-secret-2").Requests; a != 1 || b != 1 {
			t.Errorf("upstream requests %d, %d; want 1 each", a, b)
		}
	})

	t.Run("upstream cooldown window after a success", func(t *testing.T) {
		if o := sdkCall(gw, "chat", "cd-model", false); !o.ok {
			t.Fatalf("first request: %s", o)
		}
		for _, cd := range clients {
			want429(t, sdkCall(gw, cd, "cd-model", false), cd, `pool "cd": no key available: k1 cooling (rate_limited, `, 28, 30)
		}
	})

	t.Run("upstream concurrency 429", func(t *testing.T) {
		// one streamed request holds the upstream's only slot
		ctx, cancel := context.WithCancel(context.Background())
		held := make(chan struct{})
		go func() {
			defer close(held)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+"/v1/chat/completions",
				strings.NewReader(string(chatBody("cc-model", "hold", true))))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+gatewayKey)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = resp.Body.Read(make([]byte, 1<<10))
				<-ctx.Done()
				resp.Body.Close()
			}
		}()
		defer func() { cancel(); <-held }()
		eventually(t, 5*time.Second, "held stream upstream", func() bool { return m.Stats("cc-secret-1").InFlight == 1 })
		for _, cd := range clients {
			want429(t, sdkCall(gw, cd, "cc-model", false), cd, `pool "cc": no key available: k1 `, 1, 3)
		}
		if st := m.Stats("cc-secret-1"); st.RateLimited == 0 {
			t.Errorf("the upstream answered no concurrency 429: %+v", st)
		}
	})

	t.Run("one key cooling on a 5xx keeps 503", func(t *testing.T) {
		for _, cd := range clients {
			o := sdkCall(gw, cd, "mx-model", false)
			server := map[bool]string{true: "api_error", false: "server_error"}[cd == "anthropic"]
			if o.ok || o.status != http.StatusServiceUnavailable || o.typ != server || o.retryAfter == "" {
				t.Fatalf("%s: %s; want 503 %s with Retry-After", cd, o, server)
			}
			if !strings.Contains(o.msg, "k1 cooling (rate_limited, ") || !strings.Contains(o.msg, "k2 cooling (server_error, ") {
				t.Errorf("%s: message %q", cd, o.msg)
			}
		}
	})
}
