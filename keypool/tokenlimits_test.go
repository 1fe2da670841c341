package keypool

import (
	"context"
	"testing"
	"time"
)

// TestTokenLimitsOutliveReset: the token budgets learned per key and
// model are reported by TokenLimits, and still after the window's reset
// (the size of a budget does not change when it refills); keys and
// models with nothing learned are left out.
func TestTokenLimitsOutliveReset(t *testing.T) {
	p, clk := newTestPool(t, 3, Settings{MaxConcurrencyPerKey: 4})
	skipAllBut := func(k *Key) func(*Key) bool { return func(x *Key) bool { return x != k } }
	ks := p.keys
	learnOn := func(k *Key, model string, rl RateLimits) {
		l, err := p.Acquire(context.Background(), AcquireOptions{Model: model, Skip: skipAllBut(k)})
		if err != nil {
			t.Fatal(err)
		}
		l.Learn(rl)
		l.Release(Outcome{Kind: Success, Status: 200})
	}
	learnOn(ks[0], "gpt-x", RateLimits{Tokens: RateLimit{Limit: 30000, Remaining: 29000, Reset: time.Second, Set: true}})
	learnOn(ks[1], "claude-x", RateLimits{
		Tokens:      RateLimit{Limit: 90000, Remaining: 90000, Reset: time.Second, Set: true},
		InputTokens: RateLimit{Limit: 40000, Remaining: 40000, Reset: time.Second, Set: true}})
	learnOn(ks[2], "gpt-x", RateLimits{Requests: RateLimit{Limit: 500, Remaining: 499, Reset: time.Second, Set: true}})
	clk.Advance(time.Hour) // every window has reset
	got := p.TokenLimits("gpt-x")
	if len(got) != 1 || got[ks[0]] != (TokenLimit{Tokens: 30000}) {
		t.Fatalf("gpt-x: %v", got)
	}
	if got := p.TokenLimits("claude-x"); len(got) != 1 || got[ks[1]] != (TokenLimit{Tokens: 90000, InputTokens: 40000}) {
		t.Fatalf("claude-x: %v", got)
	}
	if got := p.TokenLimits("other"); got != nil {
		t.Fatalf("other: %v", got)
	}
	if got := p.TokenLimitOf(ks[1], "claude-x"); got != (TokenLimit{Tokens: 90000, InputTokens: 40000}) {
		t.Fatalf("TokenLimitOf claude-x: %v", got)
	}
	if got := p.TokenLimitOf(ks[0], "claude-x"); got != (TokenLimit{}) {
		t.Fatalf("TokenLimitOf a key with nothing learned for the model: %v", got)
	}
}

// TestOverLimitLeavesKeyReady: a 429 saying the request alone exceeds the
// key's limit (ClientError with OverLimit) neither cools the key nor
// counts as a failure.
func TestOverLimitLeavesKeyReady(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{})
	for i := 0; i < 5; i++ {
		l := mustAcquire(t, p)
		l.Release(Outcome{Kind: ClientError, Status: 429, OverLimit: 30000, OverLimitOrg: "org-abc"})
	}
	st := p.Snapshot()[0]
	if st.State != StateReady || st.ConsecutiveFailures != 0 || st.Failures != 0 || st.Reason != "" {
		t.Fatalf("status %+v", st)
	}
}
