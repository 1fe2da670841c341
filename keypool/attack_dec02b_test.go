package keypool

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAttackDec02bHugeUsageKeepsQuotaShut: two concurrent leases whose
// upstream reported the largest token count (a hostile or broken usage
// figure clamped to math.MaxInt64) leave the key's token quota used up;
// the sum must not wrap negative and open the quota again ("never stops").
func TestAttackDec02bHugeUsageKeepsQuotaShut(t *testing.T) {
	kcs := keys(1)
	kcs[0].Quota = Quota{Tokens: 1000, Period: time.Hour}
	p, _ := newPoolWith(t, Settings{MaxConcurrencyPerKey: 10}, kcs)
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release(Outcome{Kind: Success, Tokens: math.MaxInt64})
	b.Release(Outcome{Kind: Success, Tokens: math.MaxInt64})
	_, err := p.Acquire(context.Background(), AcquireOptions{})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Keys[0].Reason != "quota" {
		t.Fatalf("after two answers of MaxInt64 tokens: %v, want the key refused for its quota", err)
	}
	if st := p.Snapshot()[0]; st.QuotaTokens < 1000 {
		t.Fatalf("quota tokens used %d, want at least the quota (1000)", st.QuotaTokens)
	}
}

// TestAttackDec02bNegativeUsageRefundsNothing: an Outcome.Tokens below
// zero (a broken usage figure) is no usage: it does not empty the key's
// tpm bucket of what other requests used, nor lower its token quota.
func TestAttackDec02bNegativeUsageRefundsNothing(t *testing.T) {
	kcs := keys(1)
	kcs[0].TPM = 1000
	kcs[0].Quota = Quota{Tokens: 5000, Period: time.Hour}
	p, _ := newPoolWith(t, Settings{MaxConcurrencyPerKey: 10}, kcs)
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release(Outcome{Kind: Success, Tokens: 1000})
	b.Release(Outcome{Kind: Success, Tokens: -1 << 40})
	if _, err := p.Acquire(context.Background(), AcquireOptions{}); err == nil {
		t.Fatal("a negative usage emptied the tpm bucket: the key was leased although 1000 of its 1000 tpm were used")
	}
	if st := p.Snapshot()[0]; st.QuotaTokens != 1000 {
		t.Fatalf("quota tokens used %d, want 1000", st.QuotaTokens)
	}
}

// TestAttackDec02bHostileRateLimitHeaders: rate-limit headers a hostile or
// broken upstream (or a relay) sends: negative, NaN, 1e308, Inf, hex,
// durations past int64, dates in the far past or future, thousands of
// repeated values. None panics; a key is held for model m no longer than
// max_hint_cooldown (24h by default), and values that are no count hold
// it not at all (a reset past the cap holds it exactly the cap).
func TestAttackDec02bHostileRateLimitHeaders(t *testing.T) {
	type hdrs = map[string][]string
	many := make([]string, 5000)
	for i := range many {
		many[i] = "0"
	}
	many[0] = "7"
	cases := []struct {
		name string
		h    hdrs
		hold time.Duration // the most the key may be held; 0: not at all
	}{
		{"negative remaining", hdrs{"X-Ratelimit-Remaining-Requests": {"-1"}, "X-Ratelimit-Reset-Requests": {"1h"}}, 0},
		{"NaN remaining", hdrs{"X-Ratelimit-Remaining-Requests": {"NaN"}, "X-Ratelimit-Reset-Requests": {"1h"}}, 0},
		{"Inf remaining", hdrs{"X-Ratelimit-Remaining-Tokens": {"-Inf"}, "X-Ratelimit-Reset-Tokens": {"1h"}}, 0},
		{"1e308 remaining", hdrs{"X-Ratelimit-Remaining-Requests": {"1e308"}, "X-Ratelimit-Reset-Requests": {"1h"}}, 0},
		{"hex remaining", hdrs{"X-Ratelimit-Remaining-Requests": {"0x0"}, "X-Ratelimit-Reset-Requests": {"1h"}}, 0},
		{"reset 1e308s", hdrs{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"1e308s"}}, 0},
		{"reset -5s", hdrs{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"-5s"}}, 0},
		{"reset past int64", hdrs{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"99999999999999999999h"}}, 24 * time.Hour},
		{"reset many units", hdrs{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {strings.Repeat("9999999d", 2000)}}, 24 * time.Hour},
		{"anthropic year 9999", hdrs{"Anthropic-Ratelimit-Requests-Remaining": {"0"}, "Anthropic-Ratelimit-Requests-Reset": {"9999-12-31T23:59:59Z"}}, 24 * time.Hour},
		{"anthropic year 1", hdrs{"Anthropic-Ratelimit-Tokens-Remaining": {"0"}, "Anthropic-Ratelimit-Tokens-Reset": {"0001-01-01T00:00:00Z"}}, 0},
		{"anthropic not a date", hdrs{"Anthropic-Ratelimit-Requests-Remaining": {"0"}, "Anthropic-Ratelimit-Requests-Reset": {"tomorrow"}}, 0},
		{"5000 repeated values, first 7", hdrs{"X-Ratelimit-Remaining-Requests": many, "X-Ratelimit-Reset-Requests": {"1h"}}, 0},
	}
	for _, c := range cases {
		p, clk := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 4})
		rl, _ := ParseRateLimits(http.Header(c.h), clk.Now())
		k := learn(t, p, "m", rl)
		st := status(p, k.ID())
		held := time.Duration(0)
		if st.State != StateReady {
			held = time.Duration(st.SecondsLeft) * time.Second
		}
		if held != c.hold {
			t.Errorf("%s: key %s for %v (%s), want %v", c.name, st.State, held, st.Reason, c.hold)
		}
	}
}
