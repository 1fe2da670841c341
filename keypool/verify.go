package keypool

import (
	"context"
	"strconv"
	"time"
)

// Provisional verdicts.
//
// A long key-level verdict (InvalidKey, NoCredit, Forbidden, or a
// QuotaExhausted whose reset is further away than
// Settings.ProvisionalCooldown) reached from a client's request is only
// provisional: the key cools for ProvisionalCooldown, and the long
// cooldown applies only when an independent probe (one the caller builds
// itself, never the client's body) confirms it through Confirm. One
// client request can thus never bench a key for longer than
// ProvisionalCooldown, whatever the upstream answered it.
//
// A timeout while the upstream had taken the request and not answered yet
// (Outcome.AwaitingAnswer) is weaker still: the client's request may ask
// for a long generation, so the key is not touched at all until the
// verifier's probe times out or fails too (Confirm).

// SetVerifier sets the function the pool calls when a provisional verdict
// is made on a key (nil: none; the verdict then stays provisional and
// expires after Settings.ProvisionalCooldown), and within, the longest fn
// takes (its probe's timeout): while fn runs for a key cooling on a
// provisional verdict, the key's answer is due within of the start
// (KeyStatus.VerdictDue), and a request turned away meanwhile is told to
// come back then (UnavailableError.RetryAfter), not at the end of the
// provisional cooldown. fn runs in its own
// goroutine, never under the pool's lock, and at most one call per key is
// in flight: the key counts as being verified until fn returns. k is the
// key, o the client request's outcome that led to the verdict (o.Kind is
// InvalidKey, NoCredit, Forbidden or QuotaExhausted, or Timeout with
// o.AwaitingAnswer: the probe should then be cheap and bounded by a short
// timeout such as Settings.ProbeTimeout). fn should send its
// own probe request for k (e.g. a one-token completion on the key's
// credentials), classify the answer and report it with Confirm before it
// returns. For QuotaExhausted the probe must spend quota (a models list
// may still answer 200 on a spent quota).
func (p *Pool) SetVerifier(fn func(k *Key, o Outcome), within time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.verifier, p.verifyIn = fn, within
}

// Confirm reports the outcome of an independent probe of the key with the
// given fingerprint, which has a provisional verdict pending:
//
//   - probe.Kind.Dead() (InvalidKey, NoCredit, Forbidden,
//     QuotaExhausted): the long cooldown for the probe's kind applies,
//     counted from now (InvalidKeyCooldown, NoCreditCooldown,
//     ForbiddenCooldown; a quota until the reset the probe named, else the
//     one the client's answer named if still ahead, else the next UTC
//     midnight, capped by MaxHintCooldown), and the first request after it
//     is a probe. In cluster mode the cooldown reaches the Backend like
//     any released cooldown (Backend.Release of an unregistered lease id).
//   - probe.Kind == Success: the client's request caused the verdict; the
//     provisional cooldown ends at once (in cluster mode through
//     Backend.Clear, which also closes the key's shared breaker: the key
//     just served the probe).
//   - probe.Kind.Transient() (ServerError, NetworkError, Timeout) when
//     the pending verdict is a Timeout awaiting an answer
//     (Outcome.AwaitingAnswer): the key is unresponsive on the gateway's
//     own word, and the probe's failure is applied as Release applies a
//     transient failure (ErrorCooldown backoff, breaker count; a half-open
//     breaker reopens), shared in cluster mode like the dead-key case.
//   - anything else (network error, timeout, cancellation, a rate limit):
//     the provisional cooldown stands and expires normally; a pending
//     Timeout is dropped and the key keeps its state.
//
// The pending verdict is used up either way. Confirm of an unknown key or
// of a key with no pending verdict does nothing.
func (p *Pool) Confirm(fingerprint string, probe Outcome) {
	p.mu.Lock()
	k := p.byFP[fingerprint]
	if k == nil || k.pending == nil {
		p.mu.Unlock()
		return
	}
	now := p.clock.Now()
	v := *k.pending
	k.pending = nil
	b := p.backend
	before := k.view()
	var rel *SharedRelease
	clearShared, failed := false, false
	hung := v.kind == Timeout && probe.Kind.Transient()
	if hung || probe.Kind.Dead() {
		if probe.Status != 0 {
			k.lastStatus = probe.Status
		}
		if probe.Message != "" {
			k.lastMessage = probe.Message
		}
	}
	switch {
	case hung:
		p.transientLocked(k, &probe, v.epoch, now)
		if p.smart {
			k.noteFailure(now)
		}
		if b != nil {
			rel = &SharedRelease{
				Pool: p.name, Instance: p.instance, Fingerprint: k.fingerprint,
				LeaseID:       p.instance + ":confirm:" + strconv.FormatUint(leaseSeq.Add(1), 36), // never registered
				SharedEffects: p.sharedEffectsLocked(k, before, now),
			}
			failed = k.sentFailure(&probe) // a Clear older than the probe must not undo it
		}
	case probe.Kind.Dead():
		d, src := p.settings.deadCooldown(&probe, now)
		if probe.Kind == QuotaExhausted && !probe.HasRetryAfter && v.kind == QuotaExhausted && v.until.After(now) {
			d, src = min(v.until.Sub(now), p.settings.MaxHintCooldown), v.source
		}
		if k.cooldownProvisional() {
			k.clearCooldown()
		}
		status := probe.Status
		if status == 0 {
			status = v.status
		}
		k.coolUntil(now, now.Add(d), probe.Kind.String(), src, status, false)
		k.probePending = true
		if b != nil {
			rel = &SharedRelease{
				Pool: p.name, Instance: p.instance, Fingerprint: k.fingerprint,
				LeaseID:       p.instance + ":confirm:" + strconv.FormatUint(leaseSeq.Add(1), 36), // never registered
				SharedEffects: p.sharedEffectsLocked(k, before, now),
			}
			rel.ProbePending = k.probePending
		}
	case probe.Kind == Success:
		if k.cooldownProvisional() {
			k.clearCooldown()
			k.probePending = false
			clearShared = b != nil
		}
	}
	p.refreshLocked(k, now)
	p.broadcastLocked()
	name, inst := p.name, p.instance
	p.mu.Unlock()
	if rel != nil {
		p.releaseShared(b, rel, k, failed)
	}
	if clearShared {
		_ = b.Clear(context.Background(), name, fingerprint, inst)
	}
}

// verdictLocked applies a long key-level verdict o (InvalidKey, NoCredit,
// Forbidden, QuotaExhausted) from a client's request to k: directly when
// its cooldown is no longer than ProvisionalCooldown, else as a
// provisional cooldown with the verdict pending. It reports whether the
// verifier is to be started.
func (p *Pool) verdictLocked(k *Key, o *Outcome, now time.Time) (verify bool) {
	s := &p.settings
	d, src := s.deadCooldown(o, now)
	k.probePending = true
	if d <= s.ProvisionalCooldown {
		k.coolUntil(now, now.Add(d), o.Kind.String(), src, o.Status, false)
		return false
	}
	if !now.Add(d).After(k.cooldownUntil) {
		return false // already out of rotation at least that long
	}
	k.coolProvisional(now, s.ProvisionalCooldown, o.Kind, o.Status)
	v := &verdict{kind: o.Kind, status: o.Status, seq: p.seq}
	if k.pending != nil && k.pending.kind.Dead() {
		v.seq = k.pending.seq // a request begun since the first verdict still lifts it
	}
	if o.Kind == QuotaExhausted {
		v.until, v.source = now.Add(d), src
	}
	k.pending = v
	if p.verifier == nil || k.verifying {
		return false
	}
	k.verifying, k.verifyBy = true, now.Add(p.verifyIn)
	return true
}

// unansweredLocked takes note of a Timeout awaiting the answer
// (Outcome.AwaitingAnswer) of lease l on k: nothing changes on the key;
// a pending Timeout verdict is recorded for the verifier's probe unless a
// verdict is already pending or no verifier is set. It reports whether
// the verifier is to be started.
func (p *Pool) unansweredLocked(k *Key, l *Lease, o *Outcome) (verify bool) {
	if p.verifier == nil || k.pending != nil {
		return false // no one to probe, or a verdict already awaits its probe
	}
	k.pending = &verdict{kind: Timeout, status: o.Status, seq: p.seq, epoch: l.epoch}
	if k.verifying {
		return false // the running probe's Confirm takes it
	}
	k.verifying, k.verifyBy = true, p.clock.Now().Add(p.verifyIn)
	return true
}

// deadCooldown returns the long cooldown of a dead-key outcome and where
// its length comes from ("fixed", or the quota's hint source).
func (s *Settings) deadCooldown(o *Outcome, now time.Time) (time.Duration, string) {
	switch o.Kind {
	case InvalidKey:
		return s.InvalidKeyCooldown, "fixed"
	case NoCredit:
		return s.NoCreditCooldown, "fixed"
	case Forbidden:
		return s.ForbiddenCooldown, "fixed"
	}
	d, src := o.RetryAfter, hintSource(*o)
	if !o.HasRetryAfter {
		d, src = nextUTCMidnight(now).Sub(now), "utc-midnight"
	}
	return min(max(d, 0), s.MaxHintCooldown), src
}

// runVerifier runs fn for k and marks the key's verification done when it
// returns, waking the requests that waited for the probe's answer.
func (p *Pool) runVerifier(fn func(*Key, Outcome), k *Key, o Outcome) {
	defer func() {
		p.mu.Lock()
		k.verifying, k.verifyBy = false, time.Time{}
		p.wakeWaitersLocked()
		p.mu.Unlock()
	}()
	fn(k, o)
}

// probing reports whether k, whose gate is shut for reason, cools on a
// provisional verdict whose verifier's probe runs and answers before the
// cooldown ends, with nothing else keeping the key out past the answer
// (heldPast): a request may wait for that answer (Acquire) instead of
// being turned away, and one turned away may come back then
// (KeyStatus.VerdictDue).
func (k *Key) probing(reason string, now time.Time) bool {
	return k.verifying && k.cooldownProvisional() && reason == k.cooldownReason &&
		now.Before(k.cooldownUntil) && now.Before(k.verifyBy) && k.verifyBy.Before(k.cooldownUntil) &&
		!k.heldPast(k.verifyBy, now)
}

// heldPast reports whether, as far as now tells, a gate of k other than
// its cooldown keeps it out of rotation past t even if the cooldown ended
// then: disabled, a hold, an open breaker, or its rpm, tpm or quota
// limit. (A shared mirror of another instance's verdict is not counted:
// the probe's refutation clears it cluster-wide.)
func (k *Key) heldPast(t, now time.Time) bool {
	if k.disabled {
		return true
	}
	if _, until := k.held(now); until.After(t) {
		return true
	}
	if k.breaker == BreakerOpen && k.breakerUntil.After(t) {
		return true
	}
	if until, ok := k.lim.rpmGate(k.rpm, now); !ok && until.After(t) {
		return true
	}
	if until, ok := k.lim.tpmGate(k.tpm, now); !ok && until.After(t) {
		return true
	}
	if k.quota.set() {
		k.lim.roll(&k.quota, now)
		if k.lim.quotaSpent(&k.quota) && k.lim.periodEnd(&k.quota).After(t) {
			return true
		}
	}
	return false
}
