package keypool

import (
	"context"
	"errors"
	"testing"
	"time"
)

// BerriAI/litellm#40130: a second 429 on a key already cooling kept the first, shorter deadline (Retry-After 1s then 60s; or two 60s cooldowns 10s apart).
func TestPeerRecoolingExtendsTheDeadline(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 2})
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: time.Second, HasRetryAfter: true})
	b.Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: time.Minute, HasRetryAfter: true})
	if s := status(p, "k0"); s.SecondsLeft != 60 || s.Reason != "rate_limited" {
		t.Fatalf("after Retry-After 1s then 60s: %+v", s)
	}
	clk.Advance(2 * time.Second)
	// served again only after the later deadline: a request now fails fast with its Retry-After
	var ue *UnavailableError
	if _, err := p.Acquire(context.Background(), AcquireOptions{Timeout: time.Second}); !errors.As(err, &ue) || ue.RetryAfter != 58*time.Second {
		t.Fatalf("2s after: %v", err)
	}

	p, clk = newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 2})
	a, b = mustAcquire(t, p), mustAcquire(t, p)
	a.Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: time.Minute, HasRetryAfter: true})
	clk.Advance(10 * time.Second)
	b.Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: time.Minute, HasRetryAfter: true})
	if s := status(p, "k0"); s.SecondsLeft != 60 {
		t.Fatalf("two 60s cooldowns 10s apart: %+v", s)
	}
	clk.Advance(55 * time.Second) // 65s after the first 429, 55s after the second
	if s := status(p, "k0"); s.SecondsLeft != 5 {
		t.Fatalf("55s after the second 429: %+v", s)
	}
	clk.Advance(6 * time.Second)
	if s := status(p, "k0"); s.SecondsLeft != 0 {
		t.Fatalf("after the second deadline: %+v", s)
	}
	mustAcquire(t, p).Release(Outcome{Kind: Success, Status: 200})
}
