package keypool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Pool is a set of upstream keys with gates (concurrency cap, cooldown,
// circuit breaker) and a selection strategy. It is safe for concurrent use.
//
// Selection: among eligible keys, the one with the fewest requests in
// flight wins; ties go round robin in the configured key order, so load
// spreads evenly across equally idle keys.
//
// Keys are deliberately never ranked by failure count or error rate: a key
// that failed once would then be avoided forever while the others are
// worn out, and a long-healthy key that hit one 5xx would starve. Failures
// act only through gates (cooldown, breaker), which expire.
type Pool struct {
	name  string
	clock Clock

	mu       sync.Mutex
	settings Settings
	keys     []*Key
	byFP     map[string]*Key
	cursor   int           // round-robin position, an index into keys
	changed  chan struct{} // closed and replaced whenever a key may have become eligible
	waiting  int           // requests blocked in Acquire
}

// New returns a pool named name (used in errors) with the given settings
// and keys. clock may be nil for the system clock. It fails when a key has
// no fingerprint or two keys share one.
func New(name string, s Settings, keys []KeyConfig, clock Clock) (*Pool, error) {
	if clock == nil {
		clock = SystemClock{}
	}
	p := &Pool{name: name, clock: clock, changed: make(chan struct{}), byFP: map[string]*Key{}}
	if err := p.Reconcile(s, keys); err != nil {
		return nil, err
	}
	return p, nil
}

// Name returns the pool's name.
func (p *Pool) Name() string { return p.name }

// Reconcile applies a new configuration to the pool while keeping the live
// state (in-flight counts, cooldowns, breaker, counters) of every key whose
// fingerprint is still configured. Keys no longer configured are dropped;
// their outstanding leases still release correctly. New settings apply to
// subsequent acquisitions.
func (p *Pool) Reconcile(s Settings, keys []KeyConfig) error {
	seen := make(map[string]bool, len(keys))
	for i, kc := range keys {
		if kc.Fingerprint == "" {
			return fmt.Errorf("key %d: empty fingerprint", i)
		}
		if seen[kc.Fingerprint] {
			return fmt.Errorf("key %q: configured twice in pool %q", kc.ID, p.name)
		}
		seen[kc.Fingerprint] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settings = s.withDefaults()
	nk := make([]*Key, 0, len(keys))
	byFP := make(map[string]*Key, len(keys))
	for _, kc := range keys {
		k := p.byFP[kc.Fingerprint]
		if k == nil {
			k = &Key{fingerprint: kc.Fingerprint}
		}
		k.id = kc.ID
		if k.id == "" {
			k.id = kc.Fingerprint
		}
		k.maxConc = kc.MaxConcurrency
		k.weight = max(kc.Weight, 1)
		nk = append(nk, k)
		byFP[kc.Fingerprint] = k
	}
	p.keys, p.byFP = nk, byFP
	if p.cursor >= len(nk) {
		p.cursor = 0
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

// AcquireOptions tune one Acquire call.
type AcquireOptions struct {
	// Skip, when non-nil, excludes keys for this request (e.g. keys that
	// already failed it, or keys the caller cannot route). It is called
	// with the pool's lock held and must not call back into the pool.
	Skip func(k *Key) bool
	// Timeout bounds how long Acquire waits for an eligible key; 0 means
	// do not wait. Measured on the pool's clock.
	Timeout time.Duration
}

// ErrNoKeys is wrapped by the *UnavailableError returned when a pool has
// no key that could ever serve the request (none configured, or all
// skipped or disabled).
var ErrNoKeys = errors.New("no usable key")

// Acquire reserves a slot on the best eligible key and returns a Lease that
// must be released exactly once. When no key is eligible it waits, without
// polling, until one frees up or a cooldown ends, up to opts.Timeout or
// until ctx is done. It fails fast when waiting cannot help (every key is
// skipped or disabled, or the earliest cooldown ends after the timeout and
// no key is merely busy).
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
		k, wake, anyBusy := p.pickLocked(now, opts.Skip)
		if k != nil {
			l := p.leaseLocked(k, now)
			p.mu.Unlock()
			return l, nil
		}
		remaining := deadline.Sub(now)
		if remaining <= 0 || (!anyBusy && (wake.IsZero() || wake.After(deadline))) {
			err := p.unavailableLocked(now, opts.Skip, wake)
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

// pickLocked returns the best eligible key, or nil plus the earliest time a
// time-gated key becomes eligible and whether any key is only busy.
func (p *Pool) pickLocked(now time.Time, skip func(*Key) bool) (best *Key, wake time.Time, anyBusy bool) {
	n := len(p.keys)
	bestIdx := -1
	for i := 0; i < n; i++ {
		idx := (p.cursor + i) % n
		k := p.keys[idx]
		if skip != nil && skip(k) {
			continue
		}
		ok, reason, until := k.gate(now, &p.settings)
		if !ok {
			switch {
			case reason == "busy" || reason == "probe_in_flight":
				anyBusy = true
			case !until.IsZero() && (wake.IsZero() || until.Before(wake)):
				wake = until
			}
			continue
		}
		if best == nil || k.inFlight < best.inFlight {
			best, bestIdx = k, idx
			if k.inFlight == 0 {
				break // cannot do better than idle; first in round-robin order wins
			}
		}
	}
	if best != nil {
		p.cursor = (bestIdx + 1) % n
	}
	return best, wake, anyBusy
}

func (p *Pool) leaseLocked(k *Key, now time.Time) *Lease {
	k.inFlight++
	k.requests++
	k.lastUsed = now
	l := &Lease{pool: p, key: k, start: now}
	if k.breaker == BreakerOpen {
		// the open period has passed: this request is the half-open probe
		k.breaker = BreakerHalfOpen
	}
	if k.breaker == BreakerHalfOpen {
		k.probeInFlight = true
		l.probe = true
	}
	return l
}

// Lease is a reserved slot on one key. Release it exactly once with the
// attempt's outcome; further calls are ignored.
type Lease struct {
	pool     *Pool
	key      *Key
	start    time.Time
	probe    bool
	released bool // guarded by pool.mu
}

// Key returns the leased key.
func (l *Lease) Key() *Key { return l.key }

// Probe reports whether this lease is a circuit breaker's half-open probe.
func (l *Lease) Probe() bool { return l.probe }

// Release frees the slot and applies the outcome to the key's state:
// Success clears failure counters, transient cooldowns and the breaker and
// starts CooldownAfterSuccess; RateLimited cools the key for the upstream's
// Retry-After (capped by MaxHintCooldown) or an exponential backoff from
// RateLimitCooldown (capped by MaxCooldown); transient failures cool it by
// an ErrorCooldown backoff and may open the breaker; InvalidKey, NoCredit
// and Forbidden take it out of rotation for their configured time;
// ClientError and Canceled only free the slot.
func (l *Lease) Release(o Outcome) {
	p := l.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.released {
		return
	}
	l.released = true
	k := l.key
	k.inFlight--
	if l.probe {
		k.probeInFlight = false
	}
	now := p.clock.Now()
	s := &p.settings
	if o.Status != 0 {
		k.lastStatus = o.Status
	}
	if o.Message != "" {
		k.lastMessage = o.Message
	}
	switch o.Kind {
	case Success:
		k.successes++
		k.consecFailures, k.consec429, k.breakerTrips = 0, 0, 0
		k.breaker = BreakerClosed
		if k.cooldownReason != InvalidKey.String() && k.cooldownReason != NoCredit.String() && k.cooldownReason != Forbidden.String() {
			k.cooldownUntil = time.Time{}
		}
		if s.CooldownAfterSuccess > 0 {
			k.coolUntil(now.Add(s.CooldownAfterSuccess), "cooldown_after_success")
		}
	case RateLimited:
		k.failures++
		k.consec429++
		d := backoff(s.RateLimitCooldown, s.MaxCooldown, k.consec429)
		if o.HasRetryAfter {
			d = min(o.RetryAfter, s.MaxHintCooldown)
		}
		k.coolUntil(now.Add(d), RateLimited.String())
	case ServerError, NetworkError, Timeout:
		k.failures++
		k.consecFailures++
		if l.probe || k.breaker == BreakerHalfOpen || k.consecFailures >= s.FailureThreshold {
			// the breaker (re)opens and governs the wait from here on
			k.breakerTrips++
			k.breaker = BreakerOpen
			k.breakerUntil = now.Add(backoff(s.BreakerOpen, max(s.MaxCooldown, s.BreakerOpen), k.breakerTrips))
		} else {
			k.coolUntil(now.Add(backoff(s.ErrorCooldown, s.MaxCooldown, k.consecFailures)), o.Kind.String())
		}
		if o.HasRetryAfter {
			k.coolUntil(now.Add(min(o.RetryAfter, s.MaxHintCooldown)), o.Kind.String())
		}
	case InvalidKey:
		k.failures++
		k.coolUntil(now.Add(s.InvalidKeyCooldown), o.Kind.String())
	case NoCredit:
		k.failures++
		k.coolUntil(now.Add(s.NoCreditCooldown), o.Kind.String())
	case Forbidden:
		k.failures++
		k.coolUntil(now.Add(s.ForbiddenCooldown), o.Kind.String())
	case ClientError, Canceled:
		// Not the key's fault. A half-open probe that ended this way told
		// us nothing; the breaker stays half-open for the next request.
	}
	p.broadcastLocked()
}
