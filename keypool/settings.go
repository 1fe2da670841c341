package keypool

import "time"

// Settings are the per-pool knobs that govern gates and cooldowns. Zero
// values are replaced by the defaults documented on each field (see
// Settings.withDefaults).
type Settings struct {
	// MaxConcurrencyPerKey is the in-flight cap of a key that does not set
	// its own. Default 1.
	MaxConcurrencyPerKey int
	// CooldownAfterSuccess is how long a key rests after each successful
	// request, for upstreams that reject a key used again too soon.
	// Default 0 (no rest).
	CooldownAfterSuccess time.Duration
	// RateLimitCooldown is the backoff base after a 429 without
	// Retry-After; it doubles with each consecutive 429. Default 3s.
	RateLimitCooldown time.Duration
	// ErrorCooldown is the backoff base after a transient failure (5xx,
	// connection reset, timeout); it doubles with each consecutive
	// failure. Default 5s.
	ErrorCooldown time.Duration
	// MaxCooldown caps every computed backoff. A Retry-After sent by the
	// upstream is authoritative and may exceed it, up to MaxHintCooldown.
	// Default 10m.
	MaxCooldown time.Duration
	// MaxHintCooldown caps a cooldown taken from an upstream hint such as
	// Retry-After, so a bogus hint cannot freeze a key for a week.
	// Default 24h.
	MaxHintCooldown time.Duration
	// InvalidKeyCooldown is how long a key that got 401 stays out of
	// rotation. Default 5m.
	InvalidKeyCooldown time.Duration
	// NoCreditCooldown is how long a key that got 402 stays out of
	// rotation. Default 24h.
	NoCreditCooldown time.Duration
	// ForbiddenCooldown is how long a key that got 403 stays out of
	// rotation. Default 24h.
	ForbiddenCooldown time.Duration
	// FailureThreshold is the number of consecutive transient failures
	// that opens a key's circuit breaker. Default 3.
	FailureThreshold int
	// BreakerOpen is how long an open breaker stays open before one
	// half-open probe is let through. Default 30s; doubles (capped at
	// MaxCooldown) each time a probe fails.
	BreakerOpen time.Duration
}

// Default values of Settings.
const (
	DefaultMaxConcurrencyPerKey = 1
	DefaultRateLimitCooldown    = 3 * time.Second
	DefaultErrorCooldown        = 5 * time.Second
	DefaultMaxCooldown          = 10 * time.Minute
	DefaultMaxHintCooldown      = 24 * time.Hour
	DefaultInvalidKeyCooldown   = 5 * time.Minute
	DefaultNoCreditCooldown     = 24 * time.Hour
	DefaultForbiddenCooldown    = 24 * time.Hour
	DefaultFailureThreshold     = 3
	DefaultBreakerOpen          = 30 * time.Second
)

func (s Settings) withDefaults() Settings {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if s.MaxConcurrencyPerKey <= 0 {
		s.MaxConcurrencyPerKey = DefaultMaxConcurrencyPerKey
	}
	if s.CooldownAfterSuccess < 0 {
		s.CooldownAfterSuccess = 0
	}
	def(&s.RateLimitCooldown, DefaultRateLimitCooldown)
	def(&s.ErrorCooldown, DefaultErrorCooldown)
	def(&s.MaxCooldown, DefaultMaxCooldown)
	def(&s.MaxHintCooldown, DefaultMaxHintCooldown)
	def(&s.InvalidKeyCooldown, DefaultInvalidKeyCooldown)
	def(&s.NoCreditCooldown, DefaultNoCreditCooldown)
	def(&s.ForbiddenCooldown, DefaultForbiddenCooldown)
	def(&s.BreakerOpen, DefaultBreakerOpen)
	if s.FailureThreshold <= 0 {
		s.FailureThreshold = DefaultFailureThreshold
	}
	return s
}

// KeyConfig describes one upstream key to a Pool. The pool never sees the
// secret itself: the caller identifies keys by a fingerprint and maps it
// back to its credentials.
type KeyConfig struct {
	// Fingerprint identifies the key's state across config reloads; a
	// stable hash of the secret and its upstream. Required, unique.
	Fingerprint string
	// ID is the label shown in logs, metrics and errors (a configured id
	// or the masked secret). Never the secret.
	ID string
	// MaxConcurrency overrides Settings.MaxConcurrencyPerKey when > 0.
	MaxConcurrency int
	// Weight is reserved for weighted strategies; default 1.
	Weight int
}
