package keypool

import (
	"context"
	"time"
)

// Backend is runtime state shared by the pools of the same name in several
// gateway instances (a cluster behind one load balancer), so that a key's
// limits are the vendor's and not one instance's: a key capped at one
// concurrent request has one in flight across the cluster, a cooldown
// learned by one instance stops the others, a quota is counted once.
//
// A Pool without a Backend (the default, "state memory") keeps all state
// in its own memory. With one, the Pool still keeps its full local state
// and makes every decision it can locally (strategy, local gates, the
// outcome arithmetic of Lease.Release); the Backend is the authority on
// the gates that must hold cluster-wide and is consulted once per
// acquisition (Acquire) and once per release (Release). Everything it
// refuses is mirrored locally (see SharedRefusal) until its wait ends or
// an event (Pool.Notify) says the key changed, so a waiting request is
// woken by another instance's release instead of polling.
//
// Times crossing the interface are durations relative to the backend's
// own clock, so instances whose clocks disagree still agree on how long a
// cooldown lasts.
//
// When a call fails (the store is unreachable) the Pool serves on its
// local state alone; leases granted meanwhile are registered later by
// Pool.Resync. Implementations must be safe for concurrent use and
// should fail fast while they know the store is down.
type Backend interface {
	// Acquire atomically examines req.Candidates in order and takes a
	// slot (a lease that expires after req.LeaseTTL unless renewed) on
	// the best one whose shared gates are open. Errors mean the shared
	// state could not be consulted.
	Acquire(ctx context.Context, req *SharedAcquire) (SharedGrant, error)
	// Release frees the lease and applies rel's effects.
	Release(ctx context.Context, rel *SharedRelease) error
	// Sync pushes local state gathered while the backend was unreachable.
	Sync(ctx context.Context, pool string, keys []SharedSync) error
	// Clear ends the shared cooldown, breaker and pending probe of one
	// key (an operator's clear), telling every instance.
	Clear(ctx context.Context, pool, fingerprint, instance string) error
	// Snapshot returns the shared state of the given keys, in order.
	Snapshot(ctx context.Context, pool string, fingerprints []string) ([]SharedKeyState, error)
}

// SharedAcquire is one acquisition asked of a Backend.
type SharedAcquire struct {
	// Pool is the pool's name; state is shared by pools of equal name.
	Pool string
	// Instance identifies the asking gateway instance (events it causes
	// are ignored by its own pools).
	Instance string
	// LeaseID identifies the slot to take, unique in the cluster.
	LeaseID string
	// LeaseTTL is how long the slot lives unless renewed or released: a
	// crashed instance's slots come back after it.
	LeaseTTL time.Duration
	// Candidates are the keys the local pool would take, best first.
	Candidates []SharedCandidate
	// RoundRobin asks for the candidate with the fewest leases cluster-
	// wide, ties broken by a cursor shared by the cluster (the
	// round_robin strategy); otherwise the first eligible is taken.
	RoundRobin bool
	// Session and AffinityTTL: when both are set, a candidate the
	// session is pinned to is preferred, and the session is pinned to
	// the granted key for AffinityTTL.
	Session     string
	AffinityTTL time.Duration
}

// SharedCandidate is one key offered to Backend.Acquire with its limits
// (config is each instance's; only runtime state is shared).
type SharedCandidate struct {
	// Fingerprint is the key's stable identity (never the secret).
	Fingerprint string
	// MaxConcurrency is the cap on live leases of the key (>= 1).
	MaxConcurrency int
	// RPM is the requests-per-minute limit (sliding 60 s window); 0: none.
	RPM int
	// TPM is the tokens-per-minute bucket size; 0: none. Tokens is the
	// reservation charged to it now (AcquireOptions.Tokens).
	TPM    int64
	Tokens int64
	// QuotaRequests and QuotaTokens are the budgets of the current quota
	// period, numbered QuotaPeriod, which ends QuotaLeft from now; zero
	// budgets: no quota. Counters of another period number are reset.
	QuotaRequests int64
	QuotaTokens   int64
	QuotaPeriod   int64
	QuotaLeft     time.Duration
	// Probe asks that the lease be a probe (the local breaker wants one);
	// Early marks an early probe of a key the local pool sees cooling:
	// the shared open breaker and a shared cooldown computed by a pool (a
	// backoff, Heuristic) are not checked for it, a cooldown the upstream
	// named is. Either way, and whenever the shared breaker or a pending
	// dead-key probe asks for one, the lease needs the key's single probe
	// token.
	Probe bool
	Early bool
}

// SharedGrant is the answer of Backend.Acquire.
type SharedGrant struct {
	// Index is the granted candidate's position, -1 when none was.
	Index int
	// Probe is set when the lease holds the key's probe token; HalfOpen
	// when it is the half-open probe of a shared breaker whose open
	// period ended (a failure reopens it), BreakerTrips that breaker's
	// consecutive openings. An early probe during the open period leaves
	// the breaker open.
	Probe        bool
	HalfOpen     bool
	BreakerTrips int
	// Pinned is the key the session is pinned to when that is not the
	// granted key ("" otherwise).
	Pinned string
	// Refused lists the candidates examined and refused.
	Refused []SharedRefusal
}

// SharedRefusal says why a candidate was refused: Reason is "busy",
// "probe_in_flight", "breaker_open", "rpm", "tpm", "quota" or a cooldown
// reason (an OutcomeKind name or "cooldown_after_success"); Wait is how
// long the gate stays shut (0 for busy and probe_in_flight, which open on
// a release event).
type SharedRefusal struct {
	Index  int
	Reason string
	Wait   time.Duration
}

// SharedRelease is one lease's end, with the effects its outcome had on
// the local key that the cluster must share.
type SharedRelease struct {
	Pool        string
	Instance    string
	Fingerprint string
	// LeaseID is the lease to free; a probe token it holds is returned.
	LeaseID string
	// TPM and TokenDelta correct the tpm bucket by the difference between
	// the tokens used and those reserved.
	TPM        int64
	TokenDelta int64
	// QuotaTokens are added to the quota of period QuotaPeriod.
	QuotaTokens int64
	QuotaPeriod int64
	// Clear: the attempt succeeded; a transient shared cooldown (not a
	// dead-key one: invalid_key, no_credit, forbidden, quota_exhausted)
	// ends, the breaker closes, a pending probe is done. Applied before
	// the SharedEffects.
	Clear bool
	// Order is set by Backend.Release when it returns nil: the release's
	// place in the one order in which the backend applies the releases
	// of the key, strictly increasing per key (a Redis backend: the
	// server's TIME in Unix nanoseconds in the script that applies it,
	// raised past the key's previous number); 0 when the backend keeps
	// none. A Clear's event carries it (SharedEvent.Order). See
	// clear_order.go.
	Order int64
	SharedEffects
	// TTFB, when > 0, feeds the shared latency average with weight
	// LatencyAlpha.
	TTFB         time.Duration
	LatencyAlpha float64
	// Learned, when non-nil, are the limits the attempt's answer reported
	// (Lease.Learn) as of the release: the backend keeps the latest per
	// key and model and passes them on in its event.
	Learned *SharedLearned
}

// SharedEffects are the changes to a key that the cluster must share:
// they only ever lengthen a cooldown or open a breaker.
type SharedEffects struct {
	// Cooldown > 0 lengthens the shared cooldown to now+Cooldown (never
	// shortens it), recording Reason (an OutcomeKind name or
	// "cooldown_after_success") and Heuristic (the length was computed by
	// the pool, a backoff, not named by the upstream: only such a cooldown
	// yields to an early probe).
	Cooldown  time.Duration
	Reason    string
	Heuristic bool
	// BreakerOpen > 0 opens the shared breaker for that long, its
	// BreakerTrips-th consecutive opening.
	BreakerOpen  time.Duration
	BreakerTrips int
	// ProbePending: the next lease of the key must be a probe (a dead-key
	// cooldown was set).
	ProbePending bool
}

// SharedSync is one key's local state pushed by Pool.Resync after an
// outage of the backend.
type SharedSync struct {
	Fingerprint string
	// Leases are the ids of leases granted locally while the backend was
	// unreachable and still live; they are registered for LeaseTTL.
	Leases   []string
	LeaseTTL time.Duration
	// SharedEffects hold the key's local cooldown, open breaker and
	// pending probe at sync time.
	SharedEffects
	// QuotaRequests and QuotaTokens were counted locally in period
	// QuotaPeriod while unreachable; they are added to the shared quota.
	QuotaPeriod   int64
	QuotaRequests int64
	QuotaTokens   int64
}

// SharedKeyState is one key's cluster-wide state (Backend.Snapshot).
type SharedKeyState struct {
	Fingerprint string
	// InFlight counts the live leases of every instance.
	InFlight int
	// CooldownLeft and CooldownReason describe the shared cooldown.
	CooldownLeft   time.Duration
	CooldownReason string
	// Breaker is "closed", "open" or "half_open"; BreakerLeft is the
	// open period left.
	Breaker     string
	BreakerLeft time.Duration
	// ProbeInFlight: some instance holds the key's probe token.
	ProbeInFlight bool
	// RPMUsed counts leases in the last 60 s; TPMLevel is the tpm
	// bucket's level.
	RPMUsed  int
	TPMLevel int64
	// QuotaPeriod, QuotaRequests and QuotaTokens are the shared quota
	// counters.
	QuotaPeriod   int64
	QuotaRequests int64
	QuotaTokens   int64
	// LatencyEMA is the shared TTFB moving average.
	LatencyEMA time.Duration
	// Learned are the latest learned limits per model (resets from now;
	// windows past their reset left out).
	Learned []SharedLearned
}

// SharedEvent tells a Pool that another instance changed a key's shared
// state (see Pool.Notify). Every event also means a slot or probe token
// of the key may have come free.
type SharedEvent struct {
	// Instance is the instance that caused it; a pool ignores its own.
	Instance    string
	Fingerprint string
	// Reset: an operator cleared the key (cooldown, breaker, probes).
	Reset bool
	// Clear: the key served a request; transient cooldowns end.
	Clear bool
	// Order, for a Clear, is its release's place in the backend's order
	// of the key's releases (SharedRelease.Order); 0 when unknown (an
	// older instance's). An instance whose latest failure of the key was
	// numbered after it, or is not numbered yet, ignores the Clear (see
	// Pool.Notify): it is older than what that instance knows.
	Order int64
	// Wait > 0: the key is shut for that long (Reason says why).
	Wait   time.Duration
	Reason string
	// EMA, when > 0, is the key's new shared latency average.
	EMA time.Duration
	// Learned, when non-nil, are limits the instance learned from an
	// answer's rate-limit headers (SharedRelease.Learned).
	Learned *SharedLearned
}
