package keypool

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestParseRateLimitsAbsurdValues: hostile rate-limit headers yield
// bounded values: counts never negative, resets within [0, maxHint].
// "99999999h" once overflowed to a negative Duration (no wait at all).
func TestParseRateLimitsAbsurdValues(t *testing.T) {
	now := newFakeClock().Now()
	cases := []struct {
		reset string
		want  time.Duration
	}{
		{"99999999h", maxHint},
		{"99999999999999999999", maxHint}, // bare seconds beyond int64 nanoseconds
		{"9223372036s", maxHint},
		{"1d2h", 26 * time.Hour},
		{"inf", 0},
		{"NaN", 0},
		{"-5s", 0},
	}
	for _, c := range cases {
		h := http.Header{}
		h.Set("x-ratelimit-remaining-requests", "3")
		h.Set("x-ratelimit-reset-requests", c.reset)
		rl, ok := ParseRateLimits(h, now)
		if !ok || rl.Requests.Reset != c.want {
			t.Errorf("reset %q: got %v ok=%v, want %v", c.reset, rl.Requests.Reset, ok, c.want)
		}
	}
	// Anthropic RFC 3339 far future and far past
	for reset, want := range map[string]time.Duration{
		"9999-12-31T23:59:59Z": maxHint,
		"0001-01-01T00:00:00Z": 0,
		"1970-01-01T00:00:00Z": 0,
	} {
		h := http.Header{}
		h.Set("anthropic-ratelimit-requests-remaining", "1")
		h.Set("anthropic-ratelimit-requests-reset", reset)
		rl, _ := ParseRateLimits(h, now)
		if rl.Requests.Reset != want {
			t.Errorf("anthropic reset %q: got %v, want %v", reset, rl.Requests.Reset, want)
		}
	}
	// counts: 1e300, inf and negative are not counts; the first of
	// duplicate headers is read
	h := http.Header{}
	h.Set("x-ratelimit-remaining-tokens", "1e300")
	h.Set("x-ratelimit-remaining-requests", "inf")
	h.Set("anthropic-ratelimit-input-tokens-remaining", "-1")
	if rl, ok := ParseRateLimits(h, now); ok {
		t.Fatalf("absurd counts parsed: %+v", rl)
	}
	h = http.Header{"X-Ratelimit-Remaining-Requests": {"4", "900"}}
	if rl, _ := ParseRateLimits(h, now); rl.Requests.Remaining != 4 {
		t.Fatalf("duplicate header: got %+v", rl.Requests)
	}
	// a 429's cooldown from the same header is capped, not negative
	h = http.Header{}
	h.Set("x-ratelimit-remaining-requests", "0")
	h.Set("x-ratelimit-reset-requests", "99999999h")
	if o := ClassifyResponse(429, h, nil, now); !o.HasRetryAfter || o.RetryAfter != maxHint {
		t.Fatalf("429 with a huge reset: %+v", o)
	}
}

// FuzzParseRateLimits: any header values parse without panicking into
// bounded windows (counts >= 0, resets in [0, maxHint]). Seeds are the
// examples of OpenAI's rate limits guide and Anthropic's rate limits docs.
func FuzzParseRateLimits(f *testing.F) {
	f.Add("60", "59", "1s", "150000", "149984", "6m0s", "50", "49", "2026-12-01T19:10:00Z")
	f.Add("500", "0", "20ms", "30000", "12", "1d2h", "1000", "0", "2026-12-01T19:09:30.5Z")
	f.Add("-1", "NaN", "99999999h", "1e300", "inf", "-5s", "x", "1e15", "9999-12-31T23:59:59Z")
	f.Add("", "12.0", "7", "", "3", "12.03s", "", "2", "0001-01-01T00:00:00Z")
	now := newFakeClock().Now()
	f.Fuzz(func(t *testing.T, oLimit, oRemain, oReset, tLimit, tRemain, tReset, aLimit, aRemain, aReset string) {
		h := http.Header{}
		set := func(k, v string) {
			if v != "" && !strings.ContainsAny(v, "\r\n") {
				h[http.CanonicalHeaderKey(k)] = []string{v}
			}
		}
		set("x-ratelimit-limit-requests", oLimit)
		set("x-ratelimit-remaining-requests", oRemain)
		set("x-ratelimit-reset-requests", oReset)
		set("x-ratelimit-limit-tokens", tLimit)
		set("x-ratelimit-remaining-tokens", tRemain)
		set("x-ratelimit-reset-tokens", tReset)
		for _, w := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
			set("anthropic-ratelimit-"+w+"-limit", aLimit)
			set("anthropic-ratelimit-"+w+"-remaining", aRemain)
			set("anthropic-ratelimit-"+w+"-reset", aReset)
		}
		rl, ok := ParseRateLimits(h, now)
		if ok != rl.Any() {
			t.Fatalf("ok %v but Any %v", ok, rl.Any())
		}
		for _, w := range []RateLimit{rl.Requests, rl.Tokens, rl.InputTokens, rl.OutputTokens} {
			if w.Limit < 0 || w.Remaining < 0 || w.Reset < 0 || w.Reset > maxHint {
				t.Fatalf("unbounded window %+v from %v", w, h)
			}
			if !w.Set && (w.Remaining != 0 || w.Limit != 0 || w.Reset != 0) {
				t.Fatalf("unset window carries values %+v", w)
			}
		}
		if o := ClassifyResponse(429, h, nil, now); o.RetryAfter < 0 || o.RetryAfter > maxHint {
			t.Fatalf("429 cooldown %v out of bounds from %v", o.RetryAfter, h)
		}
	})
}

// TestParseRateLimitsNegativeLimit: a negative limit beside a valid
// remaining count reads as "not reported" (0), never as -1 in the admin
// API's learned windows (found by FuzzParseRateLimits).
func TestParseRateLimitsNegativeLimit(t *testing.T) {
	h := http.Header{}
	h.Set("anthropic-ratelimit-requests-limit", "-1")
	h.Set("anthropic-ratelimit-requests-remaining", "0")
	h.Set("x-ratelimit-limit-tokens", "-99")
	h.Set("x-ratelimit-remaining-tokens", "5")
	rl, ok := ParseRateLimits(h, newFakeClock().Now())
	if !ok || rl.Requests != (RateLimit{Set: true}) || rl.Tokens != (RateLimit{Remaining: 5, Set: true}) {
		t.Fatalf("got %+v", rl)
	}
}

// TestClassifyFarFutureAnthropicReset: a 429 whose Anthropic reset is in
// the year 7000 cools the key for at most maxHint, like every other hint
// (found by FuzzParseRateLimits).
func TestClassifyFarFutureAnthropicReset(t *testing.T) {
	h := http.Header{}
	h.Set("anthropic-ratelimit-requests-remaining", "0")
	h.Set("anthropic-ratelimit-requests-reset", "7000-01-01T00:00:00Z")
	if o := ClassifyResponse(429, h, nil, newFakeClock().Now()); !o.HasRetryAfter || o.RetryAfter != maxHint {
		t.Fatalf("got %+v", o)
	}
}
