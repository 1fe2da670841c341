package keypool

import (
	"fmt"
	"strings"
	"time"
)

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
	// InvalidKeyCooldown is how long a key whose 401 (InvalidKey) was
	// confirmed by a probe (Pool.Confirm) stays out of rotation. Default
	// 5m.
	InvalidKeyCooldown time.Duration
	// NoCreditCooldown is how long a key whose NoCredit (402, Anthropic's
	// credit-balance 400) was confirmed by a probe stays out of rotation.
	// Default 24h.
	NoCreditCooldown time.Duration
	// ForbiddenCooldown is how long a key whose key-level 403 (Forbidden)
	// was confirmed by a probe stays out of rotation. Default 24h.
	ForbiddenCooldown time.Duration
	// ProvisionalCooldown bounds what one client request can do to a key:
	// a long key-level verdict (InvalidKey, NoCredit, Forbidden, or
	// QuotaExhausted until a reset further away than this) whose cooldown
	// would exceed it starts as a provisional cooldown of this length, and
	// becomes the long one only when an independent probe confirms it
	// (Pool.SetVerifier, Pool.Confirm). A verdict no longer than this
	// applies directly. Default 60s.
	ProvisionalCooldown time.Duration
	// FailureThreshold is the number of consecutive transient failures
	// that opens a key's circuit breaker. Default 3.
	FailureThreshold int
	// BreakerOpen is how long an open breaker stays open before one
	// half-open probe is let through. Default 30s; doubles (capped at
	// MaxCooldown) each time a probe fails.
	BreakerOpen time.Duration

	// RateLimitWindow is how long consecutive 429s keep doubling the
	// RateLimitCooldown ladder: a 429 more than this after the previous
	// one starts the ladder again. Default 1h.
	RateLimitWindow time.Duration
	// ModelNotFoundThreshold is how many 404s for one model on one key,
	// within ModelNotFoundWindow, bench that key for that model.
	// Default 3.
	ModelNotFoundThreshold int
	// ModelNotFoundWindow is the window ModelNotFoundThreshold counts in.
	// Default 15m.
	ModelNotFoundWindow time.Duration
	// ModelNotFoundCooldown is how long a key is benched for a model.
	// Default 10m. Other models keep using the key.
	ModelNotFoundCooldown time.Duration
	// ProbeTimeout is the attempt timeout the caller should use for a
	// lease whose Probe() is true (a half-open breaker probe, the first
	// request after a dead-key cooldown, or an early probe of a cooling
	// key), and a good bound for the verifier's own probe of a key
	// suspected on a Timeout with Outcome.AwaitingAnswer (SetVerifier).
	// Default 5s. The pool only reports it; the caller applies it.
	ProbeTimeout time.Duration
	// ProbeBackoff is the wait before the next early probe of a cooling
	// key after one failed; it doubles per failed probe up to
	// MaxProbeBackoff. Default 30s.
	ProbeBackoff time.Duration
	// MaxProbeBackoff caps ProbeBackoff's doubling. Default 15m.
	MaxProbeBackoff time.Duration

	// Strategy names the selection strategy: "round_robin" (default),
	// "priority", "weighted", "least_used", "lowest_latency", "pace" or
	// "random", "smart". See Strategies and the strategy_*.go files.
	Strategy string
	// AffinityTTL is how long a session stays pinned to the key that last
	// served it, counted from its last request. 0 means the default 30m;
	// a negative value turns affinity off.
	AffinityTTL time.Duration
	// AffinityMaxEntries bounds the affinity table (least recently used
	// sessions are forgotten first). Default 100000.
	AffinityMaxEntries int
	// UsageWindow is the window least_used counts requests or tokens in;
	// windows are aligned to the Unix epoch and counts reset at each
	// boundary. Default 1m.
	UsageWindow time.Duration
	// LeastUsedBy is what least_used counts: "requests" (default) or
	// "tokens" (from Outcome.Tokens).
	LeastUsedBy string
	// LatencyAlpha is the weight of a new TTFB sample in lowest_latency's
	// exponential moving average, in (0, 1]. Default 0.2.
	LatencyAlpha float64
	// LatencyExplore is the share of requests lowest_latency sends to a
	// random eligible key, so slow or unmeasured keys get re-measured,
	// in [0, 1). Default 0.05; negative means 0.
	LatencyExplore float64
	// PaceLead is how far ahead of its budget line a key may run under
	// the pace strategy, as a fraction of its period budget. Default
	// 0.01 (1%); at least one request is always allowed.
	PaceLead float64
	// LearnLimitsOff turns off learning limits from the upstreams'
	// rate-limit headers (Lease.Learn is then ignored and what was
	// learned is forgotten); the configured RPM, TPM and Quota still
	// apply. Default false: learning is on.
	LearnLimitsOff bool
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
	DefaultProvisionalCooldown  = 60 * time.Second
	DefaultFailureThreshold     = 3
	DefaultBreakerOpen          = 30 * time.Second

	DefaultRateLimitWindow        = time.Hour
	DefaultModelNotFoundThreshold = 3
	DefaultModelNotFoundWindow    = 15 * time.Minute
	DefaultModelNotFoundCooldown  = 10 * time.Minute
	DefaultProbeTimeout           = 5 * time.Second
	DefaultProbeBackoff           = 30 * time.Second
	DefaultMaxProbeBackoff        = 15 * time.Minute
	DefaultStrategy               = "round_robin"
	DefaultAffinityTTL            = 30 * time.Minute
	DefaultAffinityMaxEntries     = 100_000
	DefaultUsageWindow            = time.Minute
	DefaultLatencyAlpha           = 0.2
	DefaultLatencyExplore         = 0.05
	DefaultPaceLead               = 0.01
)

// DefaultSettings returns the Settings every zero field stands for: each
// field set to its documented default (the Default* constants). It is the
// one source of the pool defaults; configuration layers show it rather
// than repeat the values.
func DefaultSettings() Settings { return Settings{}.withDefaults() }

// MarshalText returns the quota as ParseQuota reads it, e.g.
// "1000 requests per 24h0m0s"; empty for the zero Quota (no budget).
func (q Quota) MarshalText() ([]byte, error) {
	if !q.set() {
		return []byte{}, nil
	}
	return []byte(q.String()), nil
}

// UnmarshalText parses a quota with ParseQuota ("1000 requests per 24h",
// "5000000 tokens per 30d", both joined by "and"); empty text is the zero
// Quota. Errors are ParseQuota's.
func (q *Quota) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*q = Quota{}
		return nil
	}
	v, err := ParseQuota(string(b))
	if err != nil {
		return err
	}
	*q = v
	return nil
}

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
	def(&s.ProvisionalCooldown, DefaultProvisionalCooldown)
	def(&s.BreakerOpen, DefaultBreakerOpen)
	if s.FailureThreshold <= 0 {
		s.FailureThreshold = DefaultFailureThreshold
	}
	def(&s.RateLimitWindow, DefaultRateLimitWindow)
	if s.ModelNotFoundThreshold <= 0 {
		s.ModelNotFoundThreshold = DefaultModelNotFoundThreshold
	}
	def(&s.ModelNotFoundWindow, DefaultModelNotFoundWindow)
	def(&s.ModelNotFoundCooldown, DefaultModelNotFoundCooldown)
	def(&s.ProbeTimeout, DefaultProbeTimeout)
	def(&s.ProbeBackoff, DefaultProbeBackoff)
	def(&s.MaxProbeBackoff, DefaultMaxProbeBackoff)
	if s.Strategy == "" {
		s.Strategy = DefaultStrategy
	}
	if s.AffinityTTL == 0 {
		s.AffinityTTL = DefaultAffinityTTL
	}
	if s.AffinityMaxEntries <= 0 {
		s.AffinityMaxEntries = DefaultAffinityMaxEntries
	}
	def(&s.UsageWindow, DefaultUsageWindow)
	if s.LeastUsedBy == "" {
		s.LeastUsedBy = "requests"
	}
	if s.LatencyAlpha <= 0 || s.LatencyAlpha > 1 {
		s.LatencyAlpha = DefaultLatencyAlpha
	}
	if s.LatencyExplore == 0 {
		s.LatencyExplore = DefaultLatencyExplore
	}
	s.LatencyExplore = min(max(s.LatencyExplore, 0), 0.99)
	if s.PaceLead <= 0 {
		s.PaceLead = DefaultPaceLead
	}
	return s
}

// Validate reports a setting that cannot work: an unknown Strategy or
// LeastUsedBy. New and Reconcile call it.
func (s Settings) Validate() error {
	if s.Strategy != "" {
		if _, ok := strategies[s.Strategy]; !ok {
			return fmt.Errorf("unknown strategy %q (want one of %s)", s.Strategy, strings.Join(Strategies(), ", "))
		}
	}
	if s.LeastUsedBy != "" && s.LeastUsedBy != "requests" && s.LeastUsedBy != "tokens" {
		return fmt.Errorf("least_used counts %q: want requests or tokens", s.LeastUsedBy)
	}
	return nil
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
	// Weight is the key's share under the weighted strategy; default 1.
	Weight int
	// Standby makes the key a standby under the weighted strategy (a
	// configured weight of 0): it serves only when no key with a positive
	// weight is eligible for the request. Other strategies ignore it.
	Standby bool
	// Priority orders keys under the priority strategy: lower numbers
	// first; a key is used only while no key with a lower number is
	// eligible. Default 0.
	Priority int
	// Host groups keys that share an upstream (the normalised base_url).
	// When an attempt's Outcome.HostDown is set, the caller skips every
	// key with the same Host for the rest of that request. Optional.
	Host string
	// RPM caps the requests leased to the key in any 60 s window
	// (a sliding window, exact). 0: no cap.
	RPM int
	// TPM caps the tokens (Outcome.Tokens, plus AcquireOptions.Tokens
	// reserved while in flight) per minute, as a token bucket refilled at
	// TPM per minute: the key is not leased while the bucket is empty.
	// 0: no cap.
	TPM int64
	// Quota is a budget per period (e.g. 1000 requests per 24h). The key
	// is not leased once the budget of the current period is spent, and
	// the pace strategy spreads its use over the period.
	Quota Quota
}
