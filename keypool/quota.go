package keypool

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Quota is a request and/or token budget per period. Periods are aligned
// to Anchor: period n is [Anchor + n*Period, Anchor + (n+1)*Period), so
// with the zero Anchor a 24h period resets at every UTC midnight.
type Quota struct {
	// Requests is the request budget per period; 0: unlimited.
	Requests int64
	// Tokens is the token budget per period (counted from
	// Outcome.Tokens); 0: unlimited.
	Tokens int64
	// Period is the length of one period, e.g. 24h or 720h; required
	// when Requests or Tokens is set.
	Period time.Duration
	// Anchor is any period start; zero means the Unix epoch (UTC).
	Anchor time.Time
}

// set reports whether the quota limits anything.
func (q Quota) set() bool { return q.Period > 0 && (q.Requests > 0 || q.Tokens > 0) }

// ParseQuota parses a quota as written in a config: one or two budgets
// and a period, e.g. "1000 requests per 24h", "5000000 tokens per 720h",
// "1000 requests 2000000 tokens per 1d" (a comma or "and" may separate
// the budgets). The period is a Go duration or a number of days ("30d").
// The Anchor is left zero (periods aligned to the Unix epoch, UTC).
func ParseQuota(s string) (Quota, error) {
	var q Quota
	f := strings.Fields(strings.NewReplacer(",", " ", "/", " per ").Replace(strings.ToLower(s)))
	i := 0
	for i+1 < len(f) && f[i] != "per" {
		if f[i] == "and" {
			i++
			continue
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(f[i], "_", ""), 10, 64)
		if err != nil || n <= 0 {
			return Quota{}, fmt.Errorf("quota %q: %q is not a positive count", s, f[i])
		}
		switch strings.TrimSuffix(f[i+1], "s") {
		case "request", "req":
			q.Requests = n
		case "token", "tok":
			q.Tokens = n
		default:
			return Quota{}, fmt.Errorf("quota %q: unit %q, want requests or tokens", s, f[i+1])
		}
		i += 2
	}
	if i+2 != len(f) || f[i] != "per" {
		return Quota{}, fmt.Errorf(`quota %q: want "<n> requests|tokens per <period>"`, s)
	}
	d, err := parsePeriod(f[i+1])
	if err != nil || d <= 0 {
		return Quota{}, fmt.Errorf("quota %q: bad period %q", s, f[i+1])
	}
	q.Period = d
	if q.Requests == 0 && q.Tokens == 0 {
		return Quota{}, fmt.Errorf("quota %q: no budget", s)
	}
	return q, nil
}

// parsePeriod parses a Go duration, also accepting whole days ("30d").
func parsePeriod(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil {
			return 0, err
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// String formats the quota the way ParseQuota reads it, e.g.
// "1000 requests per 24h0m0s".
func (q Quota) String() string {
	var parts []string
	if q.Requests > 0 {
		parts = append(parts, strconv.FormatInt(q.Requests, 10)+" requests")
	}
	if q.Tokens > 0 {
		parts = append(parts, strconv.FormatInt(q.Tokens, 10)+" tokens")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ") + " per " + q.Period.String()
}
