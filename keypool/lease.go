package keypool

import (
	"math"
	"time"
)

// Lease is a reserved slot on one key. Release it exactly once with the
// attempt's outcome; further calls are ignored.
type Lease struct {
	pool        *Pool
	key         *Key
	start       time.Time
	model       string
	tokens      int64         // tpm reservation (AcquireOptions.Tokens)
	ttfb        time.Duration // reported by ReportTTFB
	probe       bool
	early       bool // an early probe of a cooling key
	affinityHit bool
	epoch       uint64      // the key's breakerEpoch when the lease began
	seq         uint64      // the pool's lease sequence number
	released    bool        // guarded by pool.mu
	id          string      // cluster mode: the backend's lease id
	shared      bool        // cluster mode: registered with the backend
	lrnReq      int64       // the key's requests counter after this lease began (learned.go)
	lrnTok      int64       // the key's token-estimate counter after this lease began
	learned     *RateLimits // reported by Learn; nil: none
}

// Key returns the leased key.
func (l *Lease) Key() *Key { return l.key }

// Probe reports whether this lease is a probe: a circuit breaker's
// half-open probe, the first request after a dead-key cooldown (401, 402,
// 403, quota), or an early probe of a cooling key. The caller should cap
// the attempt at Lease.ProbeTimeout so a still-broken key costs the
// client little.
func (l *Lease) Probe() bool { return l.probe }

// ProbeTimeout returns Settings.ProbeTimeout (default 5s) when the lease
// is a probe, else 0 (no special limit).
func (l *Lease) ProbeTimeout() time.Duration {
	if !l.probe {
		return 0
	}
	l.pool.mu.Lock()
	defer l.pool.mu.Unlock()
	return l.pool.settings.ProbeTimeout
}

// AffinityHit reports whether the request went to the key its session
// was pinned to (AcquireOptions.Session).
func (l *Lease) AffinityHit() bool { return l.affinityHit }

// ReportTTFB records the attempt's time to first byte, for the
// lowest_latency strategy; Outcome.TTFB, when set, takes precedence.
// Call it before Release; later calls are ignored.
func (l *Lease) ReportTTFB(d time.Duration) {
	l.pool.mu.Lock()
	defer l.pool.mu.Unlock()
	if !l.released {
		l.ttfb = d
	}
}

func (p *Pool) leaseLocked(k *Key, now time.Time, opts *AcquireOptions, early bool) *Lease {
	k.inFlight++
	k.requests++
	k.lastUsed = now
	p.seq++
	k.lastPick = p.seq
	k.lim.rpmRecord(k.rpm, now)
	if k.quota.set() {
		k.lim.roll(&k.quota, now)
		k.lim.qReq++
	}
	k.lim.window(p.settings.UsageWindow, now)
	k.lim.winReq++
	k.lrnTok += max(opts.Tokens, 0)
	l := &Lease{pool: p, key: k, start: now, model: opts.Model, epoch: k.breakerEpoch, seq: p.seq, lrnReq: k.requests, lrnTok: k.lrnTok}
	if opts.Tokens > 0 && k.tpm > 0 {
		l.tokens = opts.Tokens
		k.lim.tpmAdd(k.tpm, opts.Tokens, now)
	}
	switch {
	case early:
		l.probe, l.early = true, true
		k.probeInFlight = true
	case k.needsProbe():
		if k.breaker == BreakerOpen {
			// the open period has passed: this request is the half-open probe
			k.breaker = BreakerHalfOpen
		}
		l.probe = true
		k.probeInFlight = true
	}
	if opts.Session != "" && p.settings.AffinityTTL > 0 {
		p.aff.put(opts.Session, k.fingerprint, now, p.settings.AffinityMaxEntries)
	}
	p.refreshLocked(k, now)
	return l
}

// Release frees the slot and applies the outcome to the key's state:
//
//   - Success clears failure counters, transient cooldowns (not the
//     dead-key ones), the breaker and the model's 404 count, and starts
//     CooldownAfterSuccess. A success of a request begun after a
//     provisional verdict also lifts that verdict and its cooldown.
//   - RateLimited cools the key for the upstream's wait (Outcome.RetryAfter,
//     authoritative, capped only by MaxHintCooldown) or a ladder from
//     RateLimitCooldown doubling per 429 within RateLimitWindow (capped by
//     MaxCooldown).
//   - Timeout with Outcome.AwaitingAnswer (the upstream took the request
//     and had not answered by the deadline) changes nothing on the key:
//     no cooldown, no breaker count, no failure, and a half-open probe
//     lease ends as if it told nothing (the next lease is the probe
//     again). The verifier set with SetVerifier, if any, probes the key
//     (at most one probe per key at a time); only a probe that fails too
//     applies the failure as below (Confirm).
//   - ServerError, NetworkError and Timeout cool it by an ErrorCooldown
//     backoff (or the upstream's Retry-After) and may open the circuit
//     breaker: FailureThreshold consecutive failures open it for
//     BreakerOpen, and a failed half-open probe reopens it for twice as
//     long as last time (capped by MaxCooldown). A failure released while
//     the breaker is open, or from a lease taken before the breaker last
//     opened, is counted (Failures) but neither cools the key nor reopens
//     or lengthens the breaker: concurrent failures escalate it once.
//   - InvalidKey, NoCredit, Forbidden and QuotaExhausted are long
//     key-level verdicts. Their cooldown (InvalidKeyCooldown,
//     NoCreditCooldown, ForbiddenCooldown; a quota until the reset the
//     upstream named, else the next UTC midnight, capped by
//     MaxHintCooldown) applies at once only when it is no longer than
//     ProvisionalCooldown. A longer one starts as a provisional cooldown
//     of ProvisionalCooldown (KeyStatus.Provisional) and the verifier set
//     with SetVerifier, if any, is called to probe the key; only
//     Confirm with a dead probe outcome applies the long cooldown. Either
//     way the first request after the cooldown is a probe.
//   - ModelNotFound counts a 404 (or model-level 403) for the lease's
//     model and may bench the key for that model only.
//   - ClientError and Canceled only free the slot.
//
// A failure of a lease taken before the key was last reset (ClearCooldown
// here, or a Reset from another instance: an operator's, or a probe that
// refuted a verdict) is counted (Failures) but changes nothing else: the
// request was sent before the reset, and must not undo it.
//
// Cooldowns only lengthen; a failed early probe (Lease.Probe on a cooling
// key) does not lengthen the cooldown but pushes the next early probe
// back by ProbeBackoff x 2^n (capped by MaxProbeBackoff). Outcome.Tokens
// and Outcome.TTFB feed the tpm bucket, the quota, the usage window and
// the latency average whatever the Kind. In cluster mode (SetBackend) the
// effects on the key are shared through the Backend.
func (l *Lease) Release(o Outcome) {
	p := l.pool
	p.mu.Lock()
	if l.released {
		p.mu.Unlock()
		return
	}
	b := p.backend
	var before keyView
	if b != nil {
		before = l.key.view()
	}
	// a negative usage (a broken upstream figure) is no usage: it must not
	// refund what other requests took from the tpm bucket or the quota
	o.Tokens = max(o.Tokens, 0)
	var verify func(*Key, Outcome)
	if l.releaseLocked(o) {
		verify = p.verifier
	}
	now := p.clock.Now()
	var rel *SharedRelease
	failed := false
	if b != nil {
		rel = p.sharedReleaseLocked(l, &o, before, now)
		failed = l.key.sentFailure(&o)
	}
	p.mu.Unlock()
	if verify != nil {
		go p.runVerifier(verify, l.key, o)
	}
	if rel != nil {
		p.releaseShared(b, rel, l.key, failed)
	}
}

// releaseLocked applies o to the lease's key. It reports whether the
// pool's verifier is to be started for the key (a provisional verdict was
// made, a verifier is set and none runs for the key).
func (l *Lease) releaseLocked(o Outcome) (verify bool) {
	p := l.pool
	l.released = true
	k := l.key
	k.inFlight--
	if l.probe {
		k.probeInFlight = false
	}
	now := p.clock.Now()
	s := &p.settings
	if o.Kind == Timeout && o.AwaitingAnswer {
		// no answer yet from an upstream that took the request: maybe a
		// long generation the client asked for; the key's state waits
		// for the gateway's own probe (verify.go)
		p.accountLocked(l, &o, now)
		verify = p.unansweredLocked(k, l, &o)
		p.refreshLocked(k, now)
		p.wakeWaitersLocked()
		return verify
	}
	if o.Status != 0 {
		k.lastStatus = o.Status
	}
	if o.Message != "" {
		k.lastMessage = o.Message
	}
	p.accountLocked(l, &o, now)
	if p.smart && o.Kind != Success && o.Kind != ClientError && o.Kind != Canceled && o.Kind != ModelNotFound {
		k.noteFailure(now) // the smart strategy's recent-failure penalty
	}

	if l.seq <= k.resetSeq && o.Kind != Success && o.Kind != ClientError && o.Kind != Canceled {
		// a request sent before the key was reset (by an operator, or by
		// the gateway's probe refuting a verdict, here or on another
		// instance): its failure is older than the reset and must not
		// undo it
		k.failures++
		p.refreshLocked(k, now)
		p.wakeWaitersLocked()
		return false
	}
	if l.early && o.Kind != Success && !o.Kind.Dead() && o.Kind != ClientError && o.Kind != Canceled && o.Kind != ModelNotFound {
		// a failed early probe: the cooldown stands as it was
		k.failures++
		k.probeFails++
		k.nextProbe = now.Add(backoff(s.ProbeBackoff, s.MaxProbeBackoff, k.probeFails))
		p.refreshLocked(k, now)
		p.wakeWaitersLocked()
		return false
	}
	switch o.Kind {
	case Success:
		k.successes++
		k.consecFailures, k.consec429, k.breakerTrips = 0, 0, 0
		k.breaker = BreakerClosed
		if v := k.pending; v != nil && l.seq > v.seq {
			// served a request begun after the verdict: the verdict was wrong
			k.pending = nil
			if k.cooldownProvisional() {
				k.clearCooldown()
			}
		}
		if !k.deadCooldown() || !now.Before(k.cooldownUntil) {
			k.clearCooldown()
			k.probePending = false
		} // else an earlier request's success: the dead-key verdict stands, and so does its probe
		k.modelServed(l.model)
		if s.CooldownAfterSuccess > 0 {
			k.coolUntil(now, now.Add(s.CooldownAfterSuccess), string(ReasonCooldownAfterSuccess), "fixed", o.Status, false)
		}
	case RateLimited:
		k.failures++
		if now.Sub(k.last429) > s.RateLimitWindow {
			k.consec429 = 0
		}
		k.consec429++
		k.last429 = now
		if o.HasRetryAfter {
			k.coolUntil(now, now.Add(min(o.RetryAfter, s.MaxHintCooldown)), RateLimited.String(), hintSource(o), o.Status, false)
		} else {
			k.coolUntil(now, now.Add(backoff(s.RateLimitCooldown, s.MaxCooldown, k.consec429)), RateLimited.String(), "backoff", o.Status, true)
		}
	case ServerError, NetworkError, Timeout:
		p.transientLocked(k, &o, l.epoch, now)
	case InvalidKey, NoCredit, Forbidden, QuotaExhausted:
		k.failures++
		verify = p.verdictLocked(k, &o, now)
	case ModelNotFound:
		// not the key's fault as a whole: counted for this model only
		k.modelMissing(l.model, now, s)
	case ClientError, Canceled:
		// Not the key's fault. A probe that ended this way told us
		// nothing; the next request is the probe again.
	}
	p.refreshLocked(k, now)
	p.wakeWaitersLocked()
	return verify
}

// transientLocked applies a transient failure o (ServerError,
// NetworkError, Timeout) to k: an ErrorCooldown backoff (or the
// upstream's Retry-After) and the circuit breaker's count. epoch is the
// key's breakerEpoch when the failed request began.
func (p *Pool) transientLocked(k *Key, o *Outcome, epoch uint64, now time.Time) {
	s := &p.settings
	k.failures++
	switch {
	case epoch != k.breakerEpoch || k.breaker == BreakerOpen && now.Before(k.breakerUntil):
		// the breaker opened while this attempt was out, or is open:
		// that opening already accounts for the failure
	case k.breaker == BreakerHalfOpen || k.consecFailures+1 >= s.FailureThreshold:
		// the breaker (re)opens and governs the wait from here on
		k.consecFailures++
		k.breakerTrips++
		k.breakerEpoch++
		k.breaker = BreakerOpen
		k.breakerSince = now
		k.breakerUntil = now.Add(backoff(s.BreakerOpen, max(s.MaxCooldown, s.BreakerOpen), k.breakerTrips))
	default:
		k.consecFailures++
		k.coolUntil(now, now.Add(backoff(s.ErrorCooldown, s.MaxCooldown, k.consecFailures)), o.Kind.String(), "backoff", o.Status, true)
	}
	if o.HasRetryAfter {
		k.coolUntil(now, now.Add(min(o.RetryAfter, s.MaxHintCooldown)), o.Kind.String(), hintSource(*o), o.Status, false)
	}
}

// accountLocked books the attempt's tokens and latency.
func (p *Pool) accountLocked(l *Lease, o *Outcome, now time.Time) {
	k := l.key
	if o.Tokens != 0 || l.tokens != 0 {
		k.lim.tpmAdd(k.tpm, o.Tokens-l.tokens, now)
	}
	if o.Tokens > 0 {
		if k.quota.set() {
			k.lim.roll(&k.quota, now)
			k.lim.qTok = addTokens(k.lim.qTok, o.Tokens)
		}
		k.lim.window(p.settings.UsageWindow, now)
		k.lim.winTok = addTokens(k.lim.winTok, o.Tokens)
	}
	d := o.TTFB
	if d <= 0 {
		d = l.ttfb
	}
	if d > 0 {
		if k.emaN == 0 {
			k.ema = float64(d)
		} else {
			a := p.settings.LatencyAlpha
			k.ema = a*float64(d) + (1-a)*k.ema
		}
		k.emaN++
	}
}

// hintSource names where an outcome's wait came from, defaulting to
// "retry-after" for outcomes built by hand.
func hintSource(o Outcome) string {
	if o.Source != "" {
		return o.Source
	}
	return "retry-after"
}

// addTokens adds a non-negative token count n to the counter c,
// saturating at math.MaxInt64: two answers reporting the largest count
// (a hostile usage figure) must not wrap a quota's counter negative and
// open the quota again.
func addTokens(c, n int64) int64 {
	if n > 0 && c > math.MaxInt64-n {
		return math.MaxInt64
	}
	return c + n
}
