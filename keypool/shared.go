package keypool

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"
)

// shared is a Pool's cluster-mode state (see Backend). Guarded by the
// pool's mutex.
type shared struct {
	backend  Backend
	instance string
	leaseTTL time.Duration
	poll     time.Duration
	// local are leases granted while the backend was unreachable, not
	// yet registered with it (Resync does).
	local map[*Lease]struct{}
}

// leaseSeq numbers leases process-wide, so a pool recreated by a reload
// never reuses the id of a lease still out.
var leaseSeq atomic.Uint64

// SharedOptions configure a Pool's Backend (SetBackend).
type SharedOptions struct {
	// Instance identifies this gateway instance in the cluster (lease
	// ids, events); required, unique per process.
	Instance string
	// LeaseTTL is how long a slot lives in the backend unless renewed;
	// default 2m.
	LeaseTTL time.Duration
	// Poll bounds how long a key another instance holds busy is skipped
	// when no release event arrives (events normally end it sooner);
	// default 1s.
	Poll time.Duration
}

// Default SharedOptions values.
const (
	DefaultLeaseTTL = 2 * time.Minute
	DefaultPoll     = time.Second
)

// SetBackend makes the pool share its keys' runtime state through b
// (nil: memory only, the default). It may be called at any time; leases
// already out release into whichever backend is set when they end.
func (p *Pool) SetBackend(b Backend, o SharedOptions) {
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backend, p.instance, p.leaseTTL, p.poll = b, o.Instance, o.LeaseTTL, o.Poll
	if b == nil {
		now := p.clock.Now()
		for _, k := range p.keys {
			k.shUntil, k.shReason = time.Time{}, ""
			p.refreshLocked(k, now)
		}
		p.local = nil
		p.broadcastLocked()
	}
}

// Backend returns the pool's Backend, nil in memory-only mode.
func (p *Pool) Backend() Backend {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.backend
}

// acquireSharedLocked asks the backend for a slot on one of cands (a
// single round trip) and leases the granted key. The pool's lock is held
// on entry and on return but not during the round trip; the candidates
// are reserved meanwhile (counted in flight) so local requests do not
// race for them. It returns (nil, nil) when every candidate was refused
// (the refusals are mirrored and the caller picks again).
//
// When the backend cannot be reached, the first candidate is leased on
// local state alone (degraded mode); the lease is registered later by
// Resync.
func (p *Pool) acquireSharedLocked(ctx context.Context, now time.Time, picked []*Key, early, pinned bool, opts *AcquireOptions) (*Lease, error) {
	var buf [len(p.candBuf)]*Key
	var epochs [len(p.candBuf)]uint64
	cands := buf[:copy(buf[:], picked)]
	req := &SharedAcquire{
		Pool: p.name, Instance: p.instance, LeaseTTL: p.leaseTTL,
		LeaseID:    p.instance + ":" + strconv.FormatUint(leaseSeq.Add(1), 36),
		RoundRobin: p.settings.Strategy == "round_robin",
		Candidates: make([]SharedCandidate, len(cands)),
	}
	if opts.Session != "" && p.settings.AffinityTTL > 0 {
		req.Session, req.AffinityTTL = opts.Session, p.settings.AffinityTTL
	}
	for i, k := range cands {
		c := &req.Candidates[i]
		c.Fingerprint, c.MaxConcurrency, c.RPM, c.TPM = k.fingerprint, k.capacity(&p.settings), k.rpm, k.tpm
		if k.tpm > 0 {
			c.Tokens = max(opts.Tokens, 0)
		}
		if k.quota.set() {
			k.lim.roll(&k.quota, now)
			c.QuotaRequests, c.QuotaTokens = k.quota.Requests, k.quota.Tokens
			c.QuotaPeriod, c.QuotaLeft = k.lim.qPeriod, k.lim.periodEnd(&k.quota).Sub(now)
		}
		c.Early = early
		c.Probe = early || k.needsProbe()
		epochs[i] = k.shEpoch
		k.inFlight++ // reserved for the round trip
		p.refreshLocked(k, now)
	}
	b := p.backend
	p.mu.Unlock()
	g, err := b.Acquire(ctx, req)
	p.mu.Lock()
	now = p.clock.Now()
	for _, k := range cands {
		k.inFlight--
		p.refreshLocked(k, now)
	}
	defer p.wakeWaitersLocked() // unreserved candidates may serve others
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// degraded: the local gates decide
		k := cands[0]
		if ok, _, _ := k.gate(now, &p.settings, p.pace); !ok && !early {
			return nil, nil
		}
		l := p.leaseLocked(k, now, opts, early)
		l.id, l.affinityHit = req.LeaseID, pinned
		if p.local == nil {
			p.local = map[*Lease]struct{}{}
		}
		p.local[l] = struct{}{}
		if k.quota.set() {
			k.degReq++
		}
		return l, nil
	}
	for _, r := range g.Refused {
		if r.Index < 0 || r.Index >= len(cands) {
			continue
		}
		if k := cands[r.Index]; k.shEpoch == epochs[r.Index] {
			p.mirrorLocked(k, now, r.Reason, r.Wait)
		} else if r.Wait <= 0 {
			// an event crossed the refusal: look again soon, not at once
			// (a key changing hands all the time must not make us spin)
			p.mirrorLocked(k, now, r.Reason, staleRetry)
		}
	}
	if g.Index < 0 || g.Index >= len(cands) {
		return nil, nil
	}
	k := cands[g.Index]
	l := p.leaseLocked(k, now, opts, early)
	l.id, l.shared = req.LeaseID, true
	l.affinityHit = pinned && g.Index == 0
	if g.Probe && !l.probe {
		l.probe = true
		k.probeInFlight = true
	}
	if g.HalfOpen {
		if k.breaker == BreakerClosed {
			k.breaker = BreakerHalfOpen // another instance opened it
		}
		k.breakerTrips = max(k.breakerTrips, g.BreakerTrips)
	}
	if g.Pinned != "" && req.Session != "" {
		// the session lives on another key: follow it next time (no
		// request of ours went there yet: no hit)
		p.aff.pin(req.Session, g.Pinned, now, p.settings.AffinityMaxEntries)
	}
	p.refreshLocked(k, now)
	return l, nil
}

// staleRetry is how long a busy refusal that crossed an event is mirrored.
const staleRetry = 10 * time.Millisecond

// mirrorLocked notes that the backend reported k's gate shut for wait
// (for busy and probe_in_flight: until an event, or p.poll at most).
func (p *Pool) mirrorLocked(k *Key, now time.Time, reason string, wait time.Duration) {
	if wait <= 0 {
		wait = p.poll
	}
	until := now.Add(wait)
	if until.After(k.shUntil) {
		k.shUntil, k.shReason = until, reason
	}
	p.refreshLocked(k, now)
}

// releaseShared sends rel, the release of key k, to the backend b, and,
// when it is a failure of the key (sentFailure), records the number b
// gave it (clear_order.go). p.mu must not be held.
func (p *Pool) releaseShared(b Backend, rel *SharedRelease, k *Key, failed bool) {
	err := b.Release(context.Background(), rel) // the backend logs and meters its own failures
	if !failed {
		return
	}
	order := rel.Order
	if err != nil {
		order = 0
	}
	p.mu.Lock()
	k.numberedFailure(order)
	p.mu.Unlock()
}

// sharedReleaseLocked builds the backend release of l: the slot and the
// effects l's outcome had on the key, compared with before (its state
// when the release began).
func (p *Pool) sharedReleaseLocked(l *Lease, o *Outcome, before keyView, now time.Time) *SharedRelease {
	k := l.key
	rel := &SharedRelease{
		Pool: p.name, Instance: p.instance, Fingerprint: k.fingerprint, LeaseID: l.id,
		Clear: o.Kind == Success,
	}
	if k.tpm > 0 {
		rel.TPM, rel.TokenDelta = k.tpm, o.Tokens-l.tokens
	}
	if o.Tokens > 0 && k.quota.set() {
		if _, degraded := p.local[l]; degraded {
			k.degTok = addTokens(k.degTok, o.Tokens) // pushed by Resync with the degraded requests
		} else {
			rel.QuotaTokens, rel.QuotaPeriod = o.Tokens, k.lim.qPeriod
		}
	}
	rel.SharedEffects = p.sharedEffectsLocked(k, before, now)
	if d := o.TTFB; d > 0 || l.ttfb > 0 {
		if d <= 0 {
			d = l.ttfb
		}
		rel.TTFB, rel.LatencyAlpha = d, p.settings.LatencyAlpha
	}
	rel.Learned = p.sharedLearnedLocked(l, now)
	delete(p.local, l)
	return rel
}

// sharedEffectsLocked returns what changed on k since before (its state
// when the change began) that the cluster must learn: a longer cooldown
// (up to sharedCooldownEnd), a newly opened breaker, a pending probe.
func (p *Pool) sharedEffectsLocked(k *Key, before keyView, now time.Time) SharedEffects {
	var e SharedEffects
	if k.cooldownUntil.After(before.cooldownUntil) && k.cooldownUntil.After(now) {
		e.Cooldown = k.sharedCooldownEnd(now).Sub(now)
		e.Reason, e.Heuristic = k.cooldownReason, k.cooldownHeuristic
	}
	if k.breaker == BreakerOpen && !k.breakerUntil.Equal(before.breakerUntil) && k.breakerUntil.After(now) {
		e.BreakerOpen, e.BreakerTrips = k.breakerUntil.Sub(now), k.breakerTrips
	}
	e.ProbePending = k.probePending && !before.probePending
	return e
}

// sharedCooldownEnd returns the end of k's cooldown (running at now) as
// the cluster learns it: a provisional verdict whose probe runs
// (KeyStatus.VerdictDue) is shared until the probe's answer is due, not
// for the whole provisional cooldown. Other instances then tell their
// clients to come back at the answer, or wait for it within their
// acquire timeout, and the probe's Confirm shares the answer (a Clear
// when it refutes the verdict, the long cooldown when it confirms it).
// The rest of the provisional cooldown is this instance's alone: should
// the probe tell nothing, another instance's request meets the key's
// answer itself, and starts its own probe.
func (k *Key) sharedCooldownEnd(now time.Time) time.Time {
	if k.cooldownProvisional() && k.verifying && now.Before(k.verifyBy) && k.verifyBy.Before(k.cooldownUntil) {
		return k.verifyBy
	}
	return k.cooldownUntil
}

// keyView is the part of a key's state a release may change and the
// cluster must learn.
type keyView struct {
	cooldownUntil time.Time
	breakerUntil  time.Time
	probePending  bool
}

func (k *Key) view() keyView {
	return keyView{cooldownUntil: k.cooldownUntil, breakerUntil: k.breakerUntil, probePending: k.probePending}
}

// Notify applies an event from another instance (see SharedEvent): the
// key's mirrored gate is shut for ev.Wait, or cleared when ev says the key
// served or was reset, or (a plain release) reopened when it was only
// busy; waiting requests are woken to look again. A Clear older than the
// key's latest failure released here (ev.Order before it, see
// clear_order.go) is taken as a plain release: it must not undo what this
// instance learned after the success. Events of this pool's own instance
// and unknown keys are ignored.
func (p *Pool) Notify(ev SharedEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.byFP[ev.Fingerprint]
	if k == nil || p.backend == nil || ev.Instance == p.instance {
		return
	}
	now := p.clock.Now()
	k.shEpoch++
	switch {
	case ev.Reset:
		k.shUntil, k.shReason = time.Time{}, ""
		k.clearCooldown()
		k.breaker, k.breakerTrips, k.consecFailures, k.consec429 = BreakerClosed, 0, 0, 0
		k.probePending = false
		k.pending = nil
		k.resetSeq = p.seq // a lease out now must not undo the reset with its failure
	case ev.Clear && !k.staleClear(&ev):
		k.shUntil, k.shReason = time.Time{}, ""
		if !k.deadCooldown() {
			k.clearCooldown()
		}
		if k.breaker == BreakerOpen {
			k.breaker, k.breakerTrips = BreakerClosed, 0
		}
		k.consecFailures = 0
	case k.shReason == reasonBusy || k.shReason == reasonProbe:
		// a plain release, or a Clear older than the key's latest
		// failure here (staleClear): a slot may have come free
		k.shUntil, k.shReason = time.Time{}, ""
	}
	if ev.Wait > 0 {
		if until := now.Add(ev.Wait); until.After(k.shUntil) {
			k.shUntil, k.shReason = until, ev.Reason
		}
	}
	if ev.EMA > 0 {
		k.ema = float64(ev.EMA)
		k.emaN = max(k.emaN, 1)
	}
	p.notifyLearnedLocked(k, ev.Learned, now)
	p.refreshLocked(k, now)
	p.broadcastLocked()
}

// Resync pushes to the backend what the pool did while it was
// unreachable: leases still live (so they count against caps), each
// key's cooldown and breaker, and the quota spent. Call it when the
// backend is reachable again. Errors are the backend's.
func (p *Pool) Resync(ctx context.Context) error {
	p.mu.Lock()
	b := p.backend
	if b == nil {
		p.mu.Unlock()
		return nil
	}
	now := p.clock.Now()
	byKey := map[*Key][]string{}
	for l := range p.local {
		if !l.released {
			byKey[l.key] = append(byKey[l.key], l.id)
		}
	}
	pushed := p.local
	var keys []SharedSync
	for _, k := range p.keys {
		s := SharedSync{Fingerprint: k.fingerprint, Leases: byKey[k], LeaseTTL: p.leaseTTL}
		s.ProbePending = k.probePending
		if now.Before(k.cooldownUntil) {
			s.Cooldown = k.sharedCooldownEnd(now).Sub(now)
			s.Reason, s.Heuristic = k.cooldownReason, k.cooldownHeuristic
		}
		if k.breaker == BreakerOpen && now.Before(k.breakerUntil) {
			s.BreakerOpen, s.BreakerTrips = k.breakerUntil.Sub(now), k.breakerTrips
		}
		if k.quota.set() && (k.degReq > 0 || k.degTok > 0) {
			k.lim.roll(&k.quota, now)
			s.QuotaPeriod, s.QuotaRequests, s.QuotaTokens = k.lim.qPeriod, k.degReq, k.degTok
		}
		if len(s.Leases) > 0 || s.Cooldown > 0 || s.BreakerOpen > 0 || s.ProbePending || s.QuotaRequests > 0 || s.QuotaTokens > 0 {
			keys = append(keys, s)
		}
	}
	p.local = nil
	p.mu.Unlock()
	err := b.Sync(ctx, p.name, keys)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		// try again next time: keep what was not pushed
		if p.local == nil {
			p.local = map[*Lease]struct{}{}
		}
		for l := range pushed {
			if !l.released {
				p.local[l] = struct{}{}
			}
		}
		return err
	}
	for _, s := range keys {
		if k := p.byFP[s.Fingerprint]; k != nil {
			k.degReq, k.degTok = max(k.degReq-s.QuotaRequests, 0), max(k.degTok-s.QuotaTokens, 0)
		}
	}
	// a lease released while the sync was on its way may have been
	// registered after its release: free it again (no other effect)
	var again []*SharedRelease
	for l := range pushed {
		if l.released {
			again = append(again, &SharedRelease{Pool: p.name, Instance: p.instance, Fingerprint: l.key.fingerprint, LeaseID: l.id})
		}
	}
	p.mu.Unlock()
	for _, rel := range again {
		_ = b.Release(ctx, rel)
	}
	p.mu.Lock()
	return nil
}

// SharedSnapshot returns the cluster-wide state of every key, in
// configured order (the order of Snapshot); nil without a Backend.
// Errors are the backend's.
func (p *Pool) SharedSnapshot(ctx context.Context) ([]SharedKeyState, error) {
	p.mu.Lock()
	b := p.backend
	fps := make([]string, len(p.keys))
	for i, k := range p.keys {
		fps[i] = k.fingerprint
	}
	p.mu.Unlock()
	if b == nil {
		return nil, nil
	}
	return b.Snapshot(ctx, p.name, fps)
}

// clearShared tells the backend an operator cleared the keys.
func (p *Pool) clearShared(fps []string) {
	p.mu.Lock()
	b, inst := p.backend, p.instance
	p.mu.Unlock()
	if b == nil {
		return
	}
	for _, fp := range fps {
		_ = b.Clear(context.Background(), p.name, fp, inst)
	}
}
