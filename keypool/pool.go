package keypool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Pool is a set of upstream keys with gates (disabled, cooldown, circuit
// breaker, concurrency cap, rpm, tpm, quota), session affinity and a
// selection strategy (Settings.Strategy). It is safe for concurrent use.
//
// Selection: the strategy picks among eligible keys; the default,
// round_robin, takes the key with the fewest requests in flight, ties
// round robin in the configured key order, so load spreads evenly across
// equally idle keys. Only ready keys are indexed; a key behind a
// time-bound gate waits in a heap ordered by the time the gate opens, so
// a request costs the same whether 0 or 9 999 of 10 000 keys are cooling.
//
// Keys are deliberately never ranked by failure count or error rate: a key
// that failed once would then be avoided forever while the others are
// worn out, and a long-healthy key that hit one 5xx would starve. Failures
// act only through gates (cooldown, breaker, per-model bench), which
// expire.
type Pool struct {
	name  string
	clock Clock

	mu       sync.Mutex
	settings Settings
	pace     bool // strategy "pace": keys ahead of their budget line are gated
	smart    bool // strategy "smart": recent failures are remembered
	keys     []*Key
	byFP     map[string]*Key
	strat    strategy
	timed    keyHeap // keys behind a time-bound gate, by the time it opens
	aff      affinityTable
	rng      *rand.Rand
	seq      uint64              // lease sequence, for "leased longest ago" ties
	changed  chan struct{}       // closed and replaced whenever a key may have become eligible
	waiting  int                 // requests blocked in Acquire
	ctx      pickCtx             // reused by pickLocked
	candBuf  [3]*Key             // pickLocked's result
	verifier func(*Key, Outcome) // SetVerifier; nil: none
	verifyIn time.Duration       // SetVerifier's within: how long its probe takes at most

	shared // cluster state (backend.go, shared.go); zero: memory only
}

// New returns a pool named name (used in errors) with the given settings
// and keys. clock may be nil for the system clock. It fails when a key has
// no fingerprint, two keys share one, or a setting is invalid (see
// Settings.Validate).
func New(name string, s Settings, keys []KeyConfig, clock Clock) (*Pool, error) {
	if clock == nil {
		clock = SystemClock{}
	}
	seed := uint64(clock.Now().UnixNano())
	p := &Pool{
		name: name, clock: clock, changed: make(chan struct{}), byFP: map[string]*Key{},
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
	if err := p.Reconcile(s, keys); err != nil {
		return nil, err
	}
	return p, nil
}

// Name returns the pool's name.
func (p *Pool) Name() string { return p.name }

// Settings returns the pool's effective settings, defaults filled in.
func (p *Pool) Settings() Settings {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.settings
}

// Reconcile applies a new configuration to the pool while keeping the live
// state (in-flight counts, cooldowns, breaker, counters, latency averages,
// rpm/tpm/quota usage, affinity pins) of every key whose fingerprint is
// still configured. Keys no longer configured are dropped; their
// outstanding leases still release correctly. New settings apply to
// subsequent acquisitions.
func (p *Pool) Reconcile(s Settings, keys []KeyConfig) error {
	if err := s.Validate(); err != nil {
		return err
	}
	seen := make(map[string]bool, len(keys))
	for i, kc := range keys {
		if kc.Fingerprint == "" {
			return fmt.Errorf("key %d: empty fingerprint", i)
		}
		if seen[kc.Fingerprint] {
			return fmt.Errorf("key %q: configured twice in pool %q", kc.ID, p.name)
		}
		seen[kc.Fingerprint] = true
		if (kc.Quota.Requests > 0 || kc.Quota.Tokens > 0) && kc.Quota.Period <= 0 {
			return fmt.Errorf("key %q: quota needs a period", kc.ID)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settings = s.withDefaults()
	p.pace = p.settings.Strategy == "pace"
	p.smart = p.settings.Strategy == "smart"
	for _, k := range p.keys {
		k.idx = -1 // re-set below for keys still configured
	}
	nk := make([]*Key, 0, len(keys))
	byFP := make(map[string]*Key, len(keys))
	for i, kc := range keys {
		k := p.byFP[kc.Fingerprint]
		if k == nil {
			k = &Key{fingerprint: kc.Fingerprint}
		}
		k.id = kc.ID
		if k.id == "" {
			k.id = kc.Fingerprint
		}
		k.host = kc.Host
		k.maxConc = kc.MaxConcurrency
		k.weight = max(kc.Weight, 1)
		k.priority = kc.Priority
		k.standby = kc.Standby
		if p.settings.LearnLimitsOff {
			k.lrn = nil
		}
		k.rpm = max(kc.RPM, 0)
		k.lim.rpmResize(k.rpm)
		k.tpm = max(kc.TPM, 0)
		if k.quota.Period != kc.Quota.Period || !k.quota.Anchor.Equal(kc.Quota.Anchor) {
			k.lim.qInit = false // a different schedule: start counting afresh
		}
		k.quota = kc.Quota
		k.idx, k.ready = i, false
		nk = append(nk, k)
		byFP[kc.Fingerprint] = k
	}
	p.keys, p.byFP = nk, byFP
	p.strat = strategies[p.settings.Strategy]()
	p.strat.build(p.keys, &p.settings)
	p.timed = newTimedHeap(len(p.keys))
	now := p.clock.Now()
	for _, k := range p.keys {
		p.refreshLocked(k, now)
	}
	p.broadcastLocked()
	return nil
}

// Len returns the number of configured keys.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.keys)
}

// broadcastLocked wakes every waiter. p.mu must be held.
func (p *Pool) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// wakeWaitersLocked wakes the waiters, if any.
func (p *Pool) wakeWaitersLocked() {
	if p.waiting > 0 {
		p.broadcastLocked()
	}
}

// refreshLocked re-evaluates k's gates at now and files it accordingly:
// in the strategy's index when ready, in the timed heap when a
// time-bound gate is closed, nowhere when it waits for an event (a
// release, an enable).
func (p *Pool) refreshLocked(k *Key, now time.Time) {
	if k.idx < 0 {
		return // dropped by Reconcile; an outstanding lease released
	}
	k.lim.window(p.settings.UsageWindow, now)
	ok, _, until := k.gate(now, &p.settings, p.pace)
	switch {
	case ok && !k.ready:
		k.ready = true
		p.strat.add(k)
	case ok:
		p.strat.update(k)
	case k.ready:
		k.ready = false
		p.strat.remove(k)
	}
	if !ok && !until.IsZero() {
		if !until.After(now) {
			until = now.Add(time.Millisecond) // a gate must open in the future, or draining would spin
		}
		p.timed.setWake(k, until)
	} else {
		p.timed.remove(k)
	}
}

// drainTimedLocked re-evaluates every key whose time-bound gate has
// opened by now.
func (p *Pool) drainTimedLocked(now time.Time) {
	for {
		k := p.timed.top()
		if k == nil || k.wakeAt.After(now) {
			return
		}
		p.timed.remove(k)
		p.refreshLocked(k, now)
	}
}

// AcquireOptions tune one Acquire call.
type AcquireOptions struct {
	// Skip, when non-nil, excludes keys for this request (e.g. keys that
	// already failed it, keys on a host that is down, or keys the caller
	// cannot route). It is called with the pool's lock held and must not
	// call back into the pool.
	Skip func(k *Key) bool
	// Timeout bounds how long Acquire waits for an eligible key; 0 means
	// do not wait. Measured on the pool's clock.
	Timeout time.Duration
	// Model is the upstream model the request asks for; keys benched for
	// it (after repeated 404s, see ModelNotFound) are not used. Empty:
	// any key.
	Model string
	// Session identifies a conversation (a client-sent session header or
	// a hash of the conversation's first messages). While affinity is on
	// (Settings.AffinityTTL > 0), a session goes back to the key that
	// served it last as long as that key is eligible; otherwise it is
	// placed by the strategy and re-pinned. Empty: no affinity.
	Session string
	// Tokens is an estimate of the tokens the request will use, reserved
	// against the key's tpm bucket while it is in flight and replaced by
	// Outcome.Tokens at release. 0: nothing reserved.
	Tokens int64
}

// ErrNoKeys is wrapped by the *UnavailableError returned when a pool has
// no key that could ever serve the request (none configured, or all
// skipped or disabled).
var ErrNoKeys = errors.New("no usable key")

// Acquire reserves a slot on the best eligible key and returns a Lease that
// must be released exactly once. When no key is eligible but every
// candidate is cooling, one request may be let through as an early probe
// of a key whose computed cooldown is more than half over (see
// Lease.Probe). Otherwise it waits, without polling, until a key frees up
// or a gate opens, up to opts.Timeout or until ctx is done; a key cooling
// on a provisional verdict whose probe runs (SetVerifier) is waited for
// like a busy one, since the probe's answer may put it back at once. It
// fails fast when waiting cannot help (every key is skipped or disabled,
// or the earliest gate opens after the timeout and no key is merely busy
// or being probed).
//
// Errors: ctx.Err() when ctx ends first; *UnavailableError (with a per-key
// summary and a suggested Retry-After) when the wait times out or cannot
// succeed.
func (p *Pool) Acquire(ctx context.Context, opts AcquireOptions) (*Lease, error) {
	var deadline time.Time
	var timer Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		p.mu.Lock()
		now := p.clock.Now()
		if deadline.IsZero() {
			deadline = now.Add(opts.Timeout)
		}
		cands, early, pinned := p.pickLocked(now, &opts)
		var wake time.Time
		anyBusy := false
		if len(cands) == 0 {
			var retry bool
			wake, anyBusy, retry = p.blockedLocked(now, &opts)
			if retry {
				// a gate opened a hair before its timed-heap entry fell
				// due; the key is indexed now
				cands, early, pinned = p.pickLocked(now, &opts)
			}
		}
		if len(cands) == 0 && !anyBusy {
			if k := p.earlyProbeLocked(now, &opts); k != nil {
				cands, early = append(p.candBuf[:0], k), true
			}
		}
		if len(cands) > 0 {
			if p.backend == nil {
				l := p.leaseLocked(cands[0], now, &opts, early)
				l.affinityHit = pinned
				p.mu.Unlock()
				return l, nil
			}
			l, err := p.acquireSharedLocked(ctx, now, cands, early, pinned, &opts)
			p.mu.Unlock()
			if l != nil || err != nil {
				return l, err
			}
			continue // every candidate was refused: pick again
		}
		remaining := deadline.Sub(now)
		if remaining <= 0 || (!anyBusy && (wake.IsZero() || wake.After(deadline))) {
			err := p.unavailableLocked(now, &opts, wake)
			p.mu.Unlock()
			return nil, err
		}
		ch := p.changed
		p.waiting++
		p.mu.Unlock()

		wait := remaining
		if !wake.IsZero() && wake.Sub(now) < wait {
			wait = wake.Sub(now)
		}
		if timer != nil {
			timer.Stop()
		}
		timer = p.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.waiting--
			p.mu.Unlock()
			return nil, ctx.Err()
		case <-ch:
		case <-timer.C():
		}
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
	}
}

// pickLocked picks the keys to lease for opts at now: the session's
// pinned key when it is eligible (pinned is then true), else the
// strategy's choice. Without a Backend it returns one key; with one, up
// to len(p.candBuf) in order of preference, so a key another instance
// holds costs no extra round trip. The slice is p.candBuf's; nil when no
// key is eligible.
func (p *Pool) pickLocked(now time.Time, opts *AcquireOptions) (cands []*Key, early, pinned bool) {
	p.drainTimedLocked(now)
	c := &p.ctx
	c.p, c.now, c.skip, c.model, c.tokens = p, now, opts.Skip, opts.Model, opts.Tokens
	defer func() { c.skip, c.exclude = nil, nil }()
	n := 1
	if p.backend != nil {
		n = len(p.candBuf)
	}
	cands = p.candBuf[:0]
	if opts.Session != "" && p.settings.AffinityTTL > 0 {
		if fp := p.aff.get(opts.Session, now, p.settings.AffinityTTL); fp != "" {
			if k := p.byFP[fp]; k != nil && k.ready && c.accept(k) && p.strat.allowAffinity(k, c) {
				cands, pinned = append(cands, k), true
			}
		}
	}
	for len(cands) < n {
		c.exclude = cands
		k := p.strat.pick(c)
		if k == nil {
			break
		}
		cands = append(cands, k)
	}
	if len(cands) == 0 {
		return nil, false, false
	}
	return cands, false, pinned
}

// blockedLocked is the slow path after a failed pick: it looks at every
// key not skipped and returns the earliest time a time-bound gate (or a
// model bench) opens, and whether any key is only busy or cooling on a
// provisional verdict whose probe runs (so a release or the probe's
// answer may help; the wake is then the probe's due time). A key whose gates are open but which was not yet indexed (its
// timed-heap entry is due a few nanoseconds later, through rounding) is
// indexed at once and retry is set.
func (p *Pool) blockedLocked(now time.Time, opts *AcquireOptions) (wake time.Time, anyBusy, retry bool) {
	for _, k := range p.keys {
		if opts.Skip != nil && opts.Skip(k) {
			continue
		}
		ok, reason, until := k.gate(now, &p.settings, p.pace)
		if b, bu := k.benched(opts.Model, now); b && (ok || bu.After(until)) {
			ok, reason, until = false, ModelNotFound.String(), bu
		}
		if ok && k.lrn != nil {
			if lok, lu := k.learnedGate(opts.Model, opts.Tokens, now); !lok {
				ok, reason, until = false, reasonLearned, lu
			}
		}
		if ok && !k.ready {
			p.refreshLocked(k, now)
			retry = true
		}
		switch {
		case ok:
			anyBusy = true // eligible yet not picked: try again at once
		case reason == reasonBusy || reason == reasonProbe:
			anyBusy = true // a release may help (a shared one is also re-checked at until)
		case k.probing(reason, now):
			// the running probe of a provisional verdict may put the key
			// back at any moment (Confirm wakes the waiters); its answer
			// is due at verifyBy
			anyBusy = true
			until = k.verifyBy
		}
		if !ok && !until.IsZero() && (wake.IsZero() || until.Before(wake)) {
			wake = until
		}
	}
	return wake, anyBusy, retry
}

// earlyProbeLocked returns a key that may take this request as an early
// probe: every candidate is cooling (the caller checked none is busy),
// and this key's cooldown or open breaker was computed by the pool (a
// backoff, not a wait the upstream named, not a dead-key class), is past
// half-way, its next probe is due and no probe of it is in flight. The
// key with the largest share of its cooldown elapsed wins.
func (p *Pool) earlyProbeLocked(now time.Time, opts *AcquireOptions) *Key {
	var best *Key
	bestFrac := 0.0
	for _, k := range p.keys {
		if r, _ := k.held(now); r != "" || k.disabled || k.probeInFlight || k.inFlight >= k.capacity(&p.settings) || now.Before(k.nextProbe) || now.Before(k.shUntil) {
			continue
		}
		if opts.Skip != nil && opts.Skip(k) {
			continue
		}
		if b, _ := k.benched(opts.Model, now); b {
			continue
		}
		if k.lrn != nil {
			if ok, _ := k.learnedGate(opts.Model, opts.Tokens, now); !ok {
				continue // the vendor said it would refuse: not worth a probe
			}
		}
		var start, end time.Time
		switch {
		case now.Before(k.cooldownUntil) && k.cooldownHeuristic:
			start, end = k.cooldownStart, k.cooldownUntil
			if k.breaker == BreakerOpen && k.breakerUntil.After(end) {
				end = k.breakerUntil
			}
		case !now.Before(k.cooldownUntil) && k.breaker == BreakerOpen && now.Before(k.breakerUntil):
			start, end = k.breakerSince, k.breakerUntil
		default:
			continue
		}
		if _, ok := k.lim.rpmGate(k.rpm, now); !ok {
			continue
		}
		if _, ok := k.lim.tpmGate(k.tpm, now); !ok {
			continue
		}
		if k.quota.set() {
			k.lim.roll(&k.quota, now)
			if k.lim.quotaSpent(&k.quota) {
				continue
			}
		}
		total := end.Sub(start)
		if total <= 0 {
			continue
		}
		frac := float64(now.Sub(start)) / float64(total)
		if frac >= 0.5 && (best == nil || frac > bestFrac) {
			best, bestFrac = k, frac
		}
	}
	return best
}
