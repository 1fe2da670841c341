package keypool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// More key-pool defects from public bug reports of other LLM gateways,
// replayed through ClassifyResponseFor and Lease.Release as the gateway
// does (see also peer_reports_test.go).

// answer classifies one upstream answer on a leased key and releases the
// lease with it, as the gateway's proxy does.
func answer(t *testing.T, p *Pool, clk *fakeClock, status int, h http.Header, body string) (string, Outcome) {
	t.Helper()
	l := mustAcquire(t, p)
	o := ClassifyResponseFor("gemini-x", status, h, []byte(body), clk.Now())
	l.Release(o)
	return l.Key().ID(), o
}

// tbphp/gpt-load#178: "can a 400 go straight to the invalid keys?" (no: a 400 is mostly the request's, a bad parameter or a failed tool call); only Google's API_KEY_INVALID reason says the key is dead.
func TestPeerBadRequestNeverBenchesTheKey(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{})
	for _, body := range []string{
		`{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"foo\": Cannot find field.","status":"INVALID_ARGUMENT"}}`,
		`{"error":{"code":400,"message":"Function calling config is set without function_declarations.","status":"INVALID_ARGUMENT"}}`,
		`{"error":{"message":"Invalid 'messages[2].tool_calls': empty array.","type":"invalid_request_error","param":"messages","code":"empty_array"}}`,
	} {
		for i := 0; i < 10; i++ {
			if _, o := answer(t, p, clk, 400, nil, body); o.Kind != ClientError {
				t.Fatalf("400 %s: %v", body, o.Kind)
			}
		}
	}
	if s := status(p, "k0"); s.State != "ready" || s.Failures != 0 || s.ConsecutiveFailures != 0 {
		t.Fatalf("after 30 bad requests: %+v", s)
	}
	_, o := answer(t, p, clk, 400, nil, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`)
	if s := status(p, "k0"); o.Kind != InvalidKey || s.Reason != "invalid_key" {
		t.Fatalf("API_KEY_INVALID: %v, %+v", o.Kind, s)
	}
}

// tbphp/gpt-load#319: a client calling a wrong endpoint got 404s that, retried, blacklisted every key of the group.
func TestPeerWrongEndpointNeverBenchesKeys(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{FailureThreshold: 3})
	for i := 0; i < 40; i++ {
		if _, o := answer(t, p, clk, 404, nil, `404 page not found`); o.Kind != ClientError || o.Kind.Retryable() {
			t.Fatalf("404: %v (retryable %v)", o.Kind, o.Kind.Retryable())
		}
	}
	for _, id := range []string{"k0", "k1"} {
		if s := status(p, id); s.State != "ready" || s.Breaker != "closed" || s.ConsecutiveFailures != 0 {
			t.Fatalf("%s after 40 wrong-endpoint requests: %+v", id, s)
		}
	}
}

// tbphp/gpt-load#278 and #361: a 503 "model is overloaded" (or a 500 from a flaky node) blacklisted a key that works again minutes later; a transient upstream failure only cools the key briefly.
func TestPeerOverloadedIsTransient(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{})
	for _, c := range []struct {
		status int
		body   string
	}{
		{503, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{500, `{"error":{"message":"internal error","type":"server_error"}}`},
	} {
		_, o := answer(t, p, clk, c.status, nil, c.body)
		s := status(p, "k0")
		if o.Kind != ServerError || !o.Kind.Transient() || o.Kind.Dead() || s.Reason != "server_error" || s.SecondsLeft != 5 || s.Provisional {
			t.Fatalf("%d: %v, %+v", c.status, o.Kind, s)
		}
		clk.Advance(DefaultErrorCooldown)
		if s := status(p, "k0"); s.State != "ready" {
			t.Fatalf("%d: not back after the error cooldown: %+v", c.status, s)
		}
		mustAcquire(t, p).Release(Outcome{Kind: Success, Status: 200})
	}
}

// BerriAI/litellm#34836 (25 consecutive 500s left a deployment fully in rotation) and QuantumNous/new-api#4100 (one random 429/502/503 disabled a channel at once): one failure only cools, consecutive ones open the circuit breaker.
func TestPeerConsecutiveFailuresOpenTheBreaker(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{FailureThreshold: 3, BreakerOpen: 30 * time.Second})
	// one 502 on k0 between successes: cooled for the error cooldown, breaker closed
	id, _ := answer(t, p, clk, 502, nil, `bad gateway`)
	if s := status(p, id); s.Breaker != "closed" || s.ConsecutiveFailures != 1 {
		t.Fatalf("after one 502: %+v", s)
	}
	clk.Advance(DefaultErrorCooldown)
	for i := 0; i < 4; i++ {
		mustAcquire(t, p).Release(Outcome{Kind: Success, Status: 200})
	}
	if s := status(p, id); s.Breaker != "closed" || s.ConsecutiveFailures != 0 || s.State != "ready" {
		t.Fatalf("%s after successes: %+v", id, s)
	}
	// k1 answers 500 every time: served no more once the breaker opens
	served := map[string]int{}
	for i := 0; i < 25; i++ {
		l := mustAcquire(t, p)
		served[l.Key().ID()]++
		if l.Key().ID() == "k1" {
			l.Release(ClassifyResponseFor("m", 500, nil, []byte(`{"error":{"message":"boom","type":"server_error"}}`), clk.Now()))
		} else {
			l.Release(Outcome{Kind: Success, Status: 200})
		}
		clk.Advance(DefaultErrorCooldown)
	}
	// three failures open it; over the next 110s only one half-open probe
	// per open period (30s, then 60s doubled) reaches k1
	if s := status(p, "k1"); served["k1"] != 5 || served["k0"] != 20 || s.Breaker != "open" {
		t.Fatalf("k1 served %d of 25 requests, %+v", served["k1"], s)
	}
}

// tbphp/gpt-load#143: an IP-level 429 hit every key and all were blacklisted for good, emptying the group; a 429 only cools each key for the named wait, and all come back.
func TestPeerRateLimitOnEveryKeyIsTemporary(t *testing.T) {
	p, clk := newTestPool(t, 3, Settings{})
	h := http.Header{"Retry-After": {"20"}}
	for i := 0; i < 3; i++ {
		answer(t, p, clk, 429, h, `{"error":{"message":"Too many requests from this IP","type":"rate_limit_error"}}`)
		clk.Advance(time.Second)
	}
	// every key out: a request that may not wait so long fails fast with the shortest wait
	var ue *UnavailableError
	if _, err := p.Acquire(context.Background(), AcquireOptions{Timeout: time.Second}); !errors.As(err, &ue) || ue.RetryAfter != 17*time.Second {
		t.Fatalf("all cooling: %v", err)
	}
	clk.Advance(20 * time.Second)
	for i := 0; i < 3; i++ {
		if s := status(p, fmt.Sprintf("k%d", i)); s.State != "ready" || s.Reason != "" {
			t.Fatalf("k%d after the wait: %+v", i, s)
		}
	}
}

// iOfficeAI/AionUi#2782: 429 retries ignored Retry-After and rotated into other keys during the cooldown; the pool keeps the limited key out for the named wait and serves from the others.
func TestPeerRetryAfterBenchesOnlyThatKey(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{MaxCooldown: 10 * time.Second})
	id, o := answer(t, p, clk, 429, http.Header{"Retry-After": {"30"}}, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
	if o.Kind != RateLimited || o.RetryAfter != 30*time.Second {
		t.Fatalf("outcome %+v", o)
	}
	if s := status(p, id); s.SecondsLeft != 30 || s.Source != "retry-after" {
		t.Fatalf("limited key: %+v", s)
	}
	for i := 0; i < 5; i++ {
		l := mustAcquire(t, p)
		if l.Key().ID() == id {
			t.Fatalf("request %d went to the key cooling for 30s", i)
		}
		l.Release(Outcome{Kind: Success, Status: 200})
		clk.Advance(5 * time.Second)
	}
	clk.Advance(5 * time.Second)
	if s := status(p, id); s.State != "ready" {
		t.Fatalf("after 30s: %+v", s)
	}
}

// ArsalanDotMe/switchboard-go#4: a key marked exhausted was never un-marked, so a replenished account stayed unused; a spent quota benches the key until its reset, then the key serves again.
func TestPeerExhaustedKeyReturnsAtReset(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{})
	_, o := answer(t, p, clk, 429, nil, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`)
	if o.Kind != QuotaExhausted {
		t.Fatalf("insufficient_quota: %v", o.Kind)
	}
	p.Confirm("fp0", o) // an independent probe agrees
	s := status(p, "k0")
	now := clk.Now()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	if s.Reason != "quota_exhausted" || !s.Until.Equal(midnight) {
		t.Fatalf("exhausted: %+v, want until %v", s, midnight)
	}
	clk.Advance(midnight.Sub(now))
	l := mustAcquire(t, p)
	l.Release(Outcome{Kind: Success, Status: 200})
	if s := status(p, "k0"); s.State != "ready" || s.Reason != "" {
		t.Fatalf("after the reset: %+v", s)
	}
}

// tbphp/gpt-load#129 and #317: a 401 (key revoked or suspended) was retried until a failure threshold of 3; the key is out at its first 401.
func TestPeerUnauthorizedBenchesAtOnce(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{FailureThreshold: 3})
	id, o := answer(t, p, clk, 401, nil, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	if s := status(p, id); o.Kind != InvalidKey || s.Reason != "invalid_key" || s.State == "ready" {
		t.Fatalf("after one 401: %v %+v", o.Kind, s)
	}
	for i := 0; i < 5; i++ {
		l := mustAcquire(t, p)
		if l.Key().ID() == id {
			t.Fatalf("request %d sent to the revoked key", i)
		}
		l.Release(Outcome{Kind: Success, Status: 200})
	}
}

// diegosouzapw/OmniRoute#1772: a 429 saying the quota is spent was classed as a transient rate limit and the exhausted account retried every few minutes; a structured quota code benches the key until the reset. (Free text alone is not evidence here: upstreams echo the client's input in their messages.)
func TestPeerQuotaCodeIsNotATransientRateLimit(t *testing.T) {
	clk := newFakeClock()
	for _, body := range []string{
		`{"error":{"message":"Subscription quota exceeded.","type":"rate_limit_error","code":"quota_exceeded"}}`,
		`{"error":{"message":"billing","code":"billing_hard_limit_reached"}}`,
	} {
		if o := ClassifyResponseFor("m", 429, nil, []byte(body), clk.Now()); o.Kind != QuotaExhausted || o.Kind.Transient() {
			t.Fatalf("%s: %v", body, o.Kind)
		}
	}
	if o := ClassifyResponseFor("m", 429, http.Header{"Retry-After": {"20"}}, []byte(`{"error":{"code":"quota_exceeded"}}`), clk.Now()); o.Kind != RateLimited {
		t.Fatalf("quota code with a 20s wait: %v, want a transient rate limit", o.Kind)
	}
}

// BerriAI/litellm#3646: with every deployment cooling, a request failed at once instead of waiting for the first to come back; a request whose timeout covers the wait gets the first key back.
func TestPeerWaitForTheFirstKeyBack(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{})
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: 8 * time.Second, HasRetryAfter: true})
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: 3 * time.Second, HasRetryAfter: true})
	got := make(chan string, 1)
	go func() {
		l, err := p.Acquire(context.Background(), AcquireOptions{Timeout: 10 * time.Second})
		if err != nil {
			got <- err.Error()
			return
		}
		got <- l.Key().ID()
		l.Release(Outcome{Kind: Success, Status: 200})
	}()
	waitFor(t, func() bool { return clk.pending() > 0 })
	clk.Advance(3 * time.Second)
	if id := <-got; id != "k1" {
		t.Fatalf("waiting request got %q, want k1 (back first)", id)
	}
}
