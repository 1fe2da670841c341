package keypool

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter returns how long an upstream asked the client to wait, read
// from its response headers, and whether any hint was present.
//
// Sources, most precise first:
//   - retry-after-ms: milliseconds, a float (sent by OpenAI and honoured by
//     its official SDKs);
//   - Retry-After: delay-seconds or an HTTP-date, per RFC 9110 section 10.2.3.
//
// A date in the past or a negative value yields (0, true): the upstream
// asked for no wait. Unparseable values are ignored.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms == ms { // ms == ms rejects NaN
			if ms < 0 {
				return 0, true
			}
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs == secs {
		if secs < 0 {
			return 0, true
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}
