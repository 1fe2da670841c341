package keypool

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxClientRetryAfter is the longest Retry-After the official OpenAI and
// Anthropic client SDKs wait out before retrying by themselves: a longer
// one is ignored and the SDK retries after its own backoff of 0.5-8 s,
// only to be refused again. Per the SDKs' retry code: openai-python and
// anthropic-sdk-python (BaseClient._calculate_retry_timeout honours
// retry_after only when 0 < retry_after <= 60), openai-node and
// anthropic-sdk-typescript (makeRequest honours it only below 60 * 1000
// ms). A wait longer than this is therefore a "do not retry" for a client
// (a gateway sends x-should-retry: false with it), and a key out of
// rotation for longer than this is dead to a client that meets it.
const MaxClientRetryAfter = time.Minute

// RetryAfter returns how long an upstream asked the client to wait, read
// from its response headers, and whether any hint was present.
//
// Sources, most precise first:
//   - retry-after-ms: milliseconds, a float (sent by OpenAI and honoured by
//     its official SDKs);
//   - Retry-After: delay-seconds or an HTTP-date, per RFC 9110 section 10.2.3.
//
// A date in the past yields (0, true): the upstream asked for no wait.
// Negative, NaN and unparseable values are ignored (not a hint); values
// beyond a year (including +Inf and numbers that would overflow a
// Duration) are clamped to a year, and callers cap hints further with
// Settings.MaxHintCooldown.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			if d, ok := hintDuration(ms, time.Millisecond); ok {
				return d, true
			}
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return hintDuration(secs, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return min(d, maxHint), true
	}
	return 0, false
}

// maxHint bounds any wait read from an upstream hint.
const maxHint = 365 * 24 * time.Hour

// hintDuration converts a hint in units of unit, rejecting NaN and
// negative values and clamping huge ones to maxHint.
func hintDuration(v float64, unit time.Duration) (time.Duration, bool) {
	if v != v || v < 0 {
		return 0, false
	}
	if v*float64(unit) >= float64(maxHint) {
		return maxHint, true
	}
	return time.Duration(v * float64(unit)), true
}
