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
	host        string
	maxConc     int // 0: use the pool's MaxConcurrencyPerKey
	weight      int
	priority    int
	rpm         int
	tpm         int64
	quota       Quota

	// index bookkeeping (see index.go and the strategies)
	idx      int       // position in Pool.keys; -1 once dropped by Reconcile
	slot     int       // position inside the strategy's index
	wakeAt   time.Time // when the pool's timed heap re-examines the key
	ready    bool      // in the strategy's index
	level    int       // in-flight level the round-robin index filed the key under
	pass     float64
	lastPick uint64 // pool pick sequence number of the last lease

	inFlight          int
	cooldownUntil     time.Time
	cooldownStart     time.Time
	cooldownReason    string // an OutcomeKind name, or "cooldown_after_success"
	cooldownSource    string // where the length came from, see KeyStatus.Source
	cooldownStatus    int
	cooldownHeuristic bool      // computed by the pool (backoff), not named by the upstream
	pending           *verdict  // a long verdict awaiting confirmation (Pool.Confirm); nil: none
	verifying         bool      // the pool's verifier is running for this key
	verifyBy          time.Time // when the running verifier's answer is due (SetVerifier's within after it started)
	lastStatus        int
	lastMessage       string
	consecFailures    int
	failOrder         int64 // the backend's number of the key's latest failure released here (clear_order.go)
	failsSent         int   // failures released to the backend and not numbered yet
	consec429         int
	last429           time.Time
	breaker           BreakerState
	breakerSince      time.Time
	breakerUntil      time.Time
	breakerTrips      int    // consecutive openings without a success, for doubling
	breakerEpoch      uint64 // bumped at every opening; a lease taken before it cannot reopen the breaker
	probeInFlight     bool
	probePending      bool // the next lease after a dead-key cooldown is a probe
	probeFails        int  // failed early probes since the cooldown began
	nextProbe         time.Time
	disabled          bool
	holds             []hold // out of rotation until a time, by reason (Pool.Hold)

	lim     limits
	models  map[string]*modelState
	lrn     *learnedKey // limits learned from rate-limit headers (learned.go); nil: none
	lrnTok  int64       // AcquireOptions.Tokens of every lease so far, for the learned token windows
	standby bool        // KeyConfig.Standby: weight 0 under weighted
	ema     float64     // TTFB moving average in ns; 0: never measured
	emaN    int64

	// cluster mode (see shared.go): a gate the Backend reported shut,
	// mirrored until it opens or an event says the key changed
	shUntil  time.Time
	shReason string
	shEpoch  uint64 // bumped by every event, so a stale refusal is not mirrored
	// resetSeq is the pool's lease sequence number (Pool.seq) when the
	// key was last reset (ClearCooldown, or a Reset event from another
	// instance): a lease numbered up to it began before the reset, and its
	// failure must not undo it (Lease.Release)
	resetSeq uint64
	degReq   int64 // quota requests and tokens counted while the Backend was unreachable
	degTok   int64

	requests  int64
	failures  int64
	lastUsed  time.Time
	successes int64
}

// Fingerprint returns the key's stable identity (never the secret).
func (k *Key) Fingerprint() string { return k.fingerprint }

// ID returns the key's display label (never the secret).
func (k *Key) ID() string { return k.id }

// Host returns the upstream host group the key was configured with
// (KeyConfig.Host), "" when none.
func (k *Key) Host() string { return k.host }

// Priority returns the key's configured priority (KeyConfig.Priority).
func (k *Key) Priority() int { return k.priority }

func (k *Key) capacity(s *Settings) int {
	if k.maxConc > 0 {
		return k.maxConc
	}
	return s.MaxConcurrencyPerKey
}

// Gate reasons that are not time-bound (the typed Reason constants, as
// the strings gate and the cluster backend carry).
const (
	reasonDisabled = string(ReasonDisabled)
	reasonBusy     = string(ReasonBusy)
	reasonProbe    = string(ReasonProbeInFlight)
	reasonBreaker  = string(ReasonBreakerOpen)
	reasonRPM      = string(ReasonRPM)
	reasonTPM      = string(ReasonTPM)
	reasonQuota    = string(ReasonQuota)
	reasonPace     = string(ReasonPace)
	reasonLearned  = string(ReasonLearned)
)

// gate reports whether the key may take a request at now, and when it
// cannot, a short reason and (for time-bound reasons) when that ends.
// Reasons: "disabled", a cooldown reason, "breaker_open",
// "probe_in_flight", "busy", "rpm", "tpm", "quota", "pace" (ahead of its
// budget line; only when pace is true).
func (k *Key) gate(now time.Time, s *Settings, pace bool) (ok bool, reason string, until time.Time) {
	if k.disabled {
		return false, reasonDisabled, time.Time{}
	}
	if r, t := k.held(now); r != "" {
		return false, string(r), t
	}
	if now.Before(k.shUntil) {
		return false, k.shReason, k.shUntil
	}
	if now.Before(k.cooldownUntil) {
		return false, k.cooldownReason, k.cooldownUntil
	}
	switch k.breaker {
	case BreakerOpen:
		if now.Before(k.breakerUntil) {
			return false, reasonBreaker, k.breakerUntil
		}
	}
	if k.probeInFlight {
		return false, reasonProbe, time.Time{}
	}
	if k.inFlight >= k.capacity(s) {
		return false, reasonBusy, time.Time{}
	}
	if t, ok := k.lim.rpmGate(k.rpm, now); !ok {
		return false, reasonRPM, t
	}
	if t, ok := k.lim.tpmGate(k.tpm, now); !ok {
		return false, reasonTPM, t
	}
	if k.quota.set() {
		k.lim.roll(&k.quota, now)
		if k.lim.quotaSpent(&k.quota) {
			return false, reasonQuota, k.lim.periodEnd(&k.quota)
		}
		if pace {
			if t, ok := k.lim.paceGate(&k.quota, now, s.PaceLead); !ok {
				return false, reasonPace, t
			}
		}
	}
	return true, "", time.Time{}
}

// hold keeps a key out of rotation until a time for a reason that is not
// a failure of the key (see Pool.Hold).
type hold struct {
	reason Reason
	until  time.Time
}

// held returns the reason and end of the latest hold still running at
// now ("" when none).
func (k *Key) held(now time.Time) (Reason, time.Time) {
	var r Reason
	var until time.Time
	for _, h := range k.holds {
		if now.Before(h.until) && h.until.After(until) {
			r, until = h.reason, h.until
		}
	}
	return r, until
}

// needsProbe reports whether the next lease of k is a probe: the breaker
// is open (its open time has passed, or gate would have refused) or
// half-open, or a dead-key cooldown just ended.
func (k *Key) needsProbe() bool {
	return k.breaker != BreakerClosed || k.probePending
}

// coolUntil lengthens the key's cooldown to t (cooldowns never shorten
// except through a success or an explicit clear), recording why.
func (k *Key) coolUntil(now, t time.Time, reason, source string, status int, heuristic bool) {
	if t.After(k.cooldownUntil) {
		if !now.Before(k.cooldownUntil) {
			k.cooldownStart = now
			k.probeFails, k.nextProbe = 0, time.Time{}
		}
		k.cooldownUntil = t
		k.cooldownReason = reason
		k.cooldownSource = source
		k.cooldownStatus = status
		k.cooldownHeuristic = heuristic
	}
}

// coolProvisional lengthens the cooldown to now+d as the provisional form
// of a long verdict of kind (see Settings.ProvisionalCooldown), and
// does nothing when the cooldown already lasts that long.
func (k *Key) coolProvisional(now time.Time, d time.Duration, kind OutcomeKind, status int) {
	k.coolUntil(now, now.Add(d), kind.String(), sourceProvisional, status, false)
}

// sourceProvisional is the cooldown source of a provisional verdict.
const sourceProvisional = "provisional"

// cooldownProvisional reports whether the cooldown is a provisional
// verdict (Settings.ProvisionalCooldown).
func (k *Key) cooldownProvisional() bool { return k.cooldownSource == sourceProvisional }

// verdict is a long key-level verdict (InvalidKey, NoCredit, Forbidden, a
// long QuotaExhausted), or a suspicion of a hung key (Timeout with
// Outcome.AwaitingAnswer), made from a client's request, awaiting an
// independent probe's confirmation (Pool.Confirm).
type verdict struct {
	kind   OutcomeKind
	status int
	seq    uint64    // the pool's lease sequence when it was first made: later leases began after it
	until  time.Time // QuotaExhausted: the reset the answer named; zero otherwise
	source string    // where until came from (Outcome.Source)
	epoch  uint64    // Timeout: the breakerEpoch of the lease that timed out
}

// clearCooldown ends the cooldown.
func (k *Key) clearCooldown() {
	k.cooldownUntil, k.cooldownStart = time.Time{}, time.Time{}
	k.cooldownReason, k.cooldownSource, k.cooldownStatus, k.cooldownHeuristic = "", "", 0, false
	k.probeFails, k.nextProbe = 0, time.Time{}
}

// deadCooldown reports whether the current cooldown is one a success does
// not clear (a dead-key class).
func (k *Key) deadCooldown() bool {
	switch k.cooldownReason {
	case InvalidKey.String(), NoCredit.String(), Forbidden.String(), QuotaExhausted.String():
		return true
	}
	return false
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

// modelState counts one model's 404s on one key.
type modelState struct {
	hits       []time.Time // most recent last, at most the threshold
	benchUntil time.Time
}

// maxModelsPerKey bounds a key's per-model table; expired entries go
// first when it is full.
const maxModelsPerKey = 256

// benched reports whether the key is benched for model at now, and until
// when.
func (k *Key) benched(model string, now time.Time) (bool, time.Time) {
	if model == "" || k.models == nil {
		return false, time.Time{}
	}
	m := k.models[model]
	if m == nil || !now.Before(m.benchUntil) {
		return false, time.Time{}
	}
	return true, m.benchUntil
}

// modelMissing records a 404 for model and reports whether it benched the
// key for that model.
func (k *Key) modelMissing(model string, now time.Time, s *Settings) bool {
	if model == "" {
		return false
	}
	if k.models == nil {
		k.models = map[string]*modelState{}
	}
	m := k.models[model]
	if m == nil {
		if len(k.models) >= maxModelsPerKey {
			for name, x := range k.models {
				if !now.Before(x.benchUntil) {
					delete(k.models, name)
				}
			}
			if len(k.models) >= maxModelsPerKey {
				return false
			}
		}
		m = &modelState{}
		k.models[model] = m
	}
	cut := now.Add(-s.ModelNotFoundWindow)
	keep := m.hits[:0]
	for _, t := range m.hits {
		if t.After(cut) {
			keep = append(keep, t)
		}
	}
	m.hits = append(keep, now)
	if len(m.hits) >= s.ModelNotFoundThreshold {
		m.hits = m.hits[:0]
		m.benchUntil = now.Add(s.ModelNotFoundCooldown)
		return true
	}
	return false
}

// modelServed forgets the 404 count of model after a success.
func (k *Key) modelServed(model string) {
	if model != "" && k.models != nil {
		if m := k.models[model]; m != nil && len(m.hits) > 0 {
			m.hits = m.hits[:0]
		}
	}
}

// holdReason is the reason of the latest running hold, "" when none.
func (k *Key) holdReason(now time.Time) Reason {
	r, _ := k.held(now)
	return r
}
