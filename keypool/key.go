package keypool

import "time"

// BreakerState is the state of a key's circuit breaker.
type BreakerState uint8

// Circuit breaker states, per the classic closed / open / half-open model.
const (
	BreakerClosed BreakerState = iota
	BreakerOpen
	BreakerHalfOpen
)

// String returns "closed", "open" or "half_open".
func (b BreakerState) String() string {
	switch b {
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half_open"
	}
	return "closed"
}

// Key is one upstream key's live state inside a Pool. All mutable fields
// are guarded by the owning pool's mutex; a *Key survives config reloads
// for as long as its fingerprint stays configured.
type Key struct {
	fingerprint string
	id          string
	maxConc     int // 0: use the pool's MaxConcurrencyPerKey
	weight      int

	inFlight       int
	cooldownUntil  time.Time
	cooldownReason string // an OutcomeKind name, or "cooldown_after_success"
	lastStatus     int
	lastMessage    string
	consecFailures int
	consec429      int
	breaker        BreakerState
	breakerUntil   time.Time
	breakerTrips   int // consecutive openings without a success, for doubling
	probeInFlight  bool
	disabled       bool

	requests  int64
	failures  int64
	lastUsed  time.Time
	successes int64
}

// Fingerprint returns the key's stable identity (never the secret).
func (k *Key) Fingerprint() string { return k.fingerprint }

// ID returns the key's display label (never the secret).
func (k *Key) ID() string { return k.id }

func (k *Key) capacity(s *Settings) int {
	if k.maxConc > 0 {
		return k.maxConc
	}
	return s.MaxConcurrencyPerKey
}

// gate reports whether the key may take a request at now, and when it
// cannot, a short reason and (for time-bound reasons) when that ends.
// Reasons: "disabled", "busy", a cooldown reason, "breaker_open",
// "probe_in_flight".
func (k *Key) gate(now time.Time, s *Settings) (ok bool, reason string, until time.Time) {
	if k.disabled {
		return false, "disabled", time.Time{}
	}
	if now.Before(k.cooldownUntil) {
		return false, k.cooldownReason, k.cooldownUntil
	}
	switch k.breaker {
	case BreakerOpen:
		if now.Before(k.breakerUntil) {
			return false, "breaker_open", k.breakerUntil
		}
		if k.probeInFlight {
			return false, "probe_in_flight", time.Time{}
		}
	case BreakerHalfOpen:
		if k.probeInFlight {
			return false, "probe_in_flight", time.Time{}
		}
	}
	if k.inFlight >= k.capacity(s) {
		return false, "busy", time.Time{}
	}
	return true, "", time.Time{}
}

// coolUntil lengthens the key's cooldown to t (cooldowns never shorten
// except through a success or an explicit clear).
func (k *Key) coolUntil(t time.Time, reason string) {
	if t.After(k.cooldownUntil) {
		k.cooldownUntil = t
		k.cooldownReason = reason
	}
}

// backoff returns base * 2^(n-1), capped at max; n <= 1 yields base.
func backoff(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}
