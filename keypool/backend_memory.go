package keypool

import (
	"context"
	"sync"
	"time"
)

// MemoryBackend is a Backend kept in one process's memory: the reference
// implementation of the shared-state rules (the Redis backend's scripts
// follow it line for line), and a way to run several Pools as a cluster
// in one process, e.g. in tests with a fake clock. Pools attached with
// Attach receive the events others cause. The zero value is not usable;
// call NewMemoryBackend.
type MemoryBackend struct {
	clock Clock

	mu     sync.Mutex
	keys   map[string]*sharedKey // by pool + "\x00" + fingerprint
	rr     map[string]uint64     // round-robin cursor by pool
	aff    map[string]sharedPin  // by pool + "\x00" + session
	pools  map[string][]*Pool
	calls  int64
	order  int64 // the number of the latest release (SharedRelease.Order)
	failed bool
}

type sharedPin struct {
	fp  string
	exp time.Time
}

// sharedKey is one key's shared state, as the Redis backend keeps it in
// one hash plus a lease set and an rpm log.
type sharedKey struct {
	leases       map[string]time.Time // lease id -> expiry
	coolUntil    time.Time
	coolReason   string
	coolHeur     bool // computed by a pool (a backoff): an early probe may pass it
	breaker      BreakerState
	breakerUntil time.Time
	trips        int
	probeLease   string
	probeExp     time.Time
	probePending bool
	rpmLog       []time.Time
	tpmLevel     float64
	tpmAt        time.Time
	qPeriod      int64
	qReq, qTok   int64
	ema          float64
	learned      []learnedShared // latest learned limits per model (learned_shared.go)
}

// NewMemoryBackend returns an empty MemoryBackend on clock (nil: the
// system clock).
func NewMemoryBackend(clock Clock) *MemoryBackend {
	if clock == nil {
		clock = SystemClock{}
	}
	return &MemoryBackend{clock: clock, keys: map[string]*sharedKey{}, rr: map[string]uint64{},
		aff: map[string]sharedPin{}, pools: map[string][]*Pool{}}
}

// Calls returns the round trips served so far (Acquire, Release, Sync,
// Clear and Snapshot calls).
func (m *MemoryBackend) Calls() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Attach delivers the events of p's pool name to p.
func (m *MemoryBackend) Attach(p *Pool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pools[p.Name()] = append(m.pools[p.Name()], p)
}

// SetFailing makes every call fail (true) or succeed again (false), to
// simulate an outage of the store.
func (m *MemoryBackend) SetFailing(f bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failed = f
}

// errBackendDown is MemoryBackend's error while failing.
type errBackendDown struct{}

func (errBackendDown) Error() string { return "shared state unreachable" }

func (m *MemoryBackend) key(pool, fp string) *sharedKey {
	id := pool + "\x00" + fp
	s := m.keys[id]
	if s == nil {
		s = &sharedKey{leases: map[string]time.Time{}}
		m.keys[id] = s
	}
	return s
}

// Acquire implements Backend.
func (m *MemoryBackend) Acquire(_ context.Context, req *SharedAcquire) (SharedGrant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.failed {
		return SharedGrant{Index: -1}, errBackendDown{}
	}
	now := m.clock.Now()
	g := SharedGrant{Index: -1}
	type elig struct {
		i, load int
		probe   bool
	}
	var ok []elig
	for i := range req.Candidates {
		c := &req.Candidates[i]
		s := m.key(req.Pool, c.Fingerprint)
		for id, exp := range s.leases {
			if !now.Before(exp) {
				delete(s.leases, id)
			}
		}
		refuse := func(reason string, wait time.Duration) {
			g.Refused = append(g.Refused, SharedRefusal{Index: i, Reason: reason, Wait: wait})
		}
		if now.Before(s.coolUntil) && !(c.Early && s.coolHeur) {
			refuse(s.coolReason, s.coolUntil.Sub(now))
			continue
		}
		if !c.Early && s.breaker == BreakerOpen && now.Before(s.breakerUntil) {
			refuse(reasonBreaker, s.breakerUntil.Sub(now))
			continue
		}
		probe := c.Probe || c.Early || s.breaker != BreakerClosed || s.probePending
		if probe && s.probeLease != "" && now.Before(s.probeExp) {
			refuse(reasonProbe, 0)
			continue
		}
		if len(s.leases) >= max(c.MaxConcurrency, 1) {
			refuse(reasonBusy, 0)
			continue
		}
		if c.RPM > 0 {
			cut := now.Add(-time.Minute)
			for len(s.rpmLog) > 0 && !s.rpmLog[0].After(cut) {
				s.rpmLog = s.rpmLog[1:]
			}
			if len(s.rpmLog) >= c.RPM {
				refuse(reasonRPM, s.rpmLog[len(s.rpmLog)-c.RPM].Add(time.Minute).Sub(now))
				continue
			}
		}
		if c.TPM > 0 {
			s.tpmDrain(c.TPM, now)
			if s.tpmLevel >= float64(c.TPM) {
				refuse(reasonTPM, time.Duration((s.tpmLevel-float64(c.TPM))/float64(c.TPM)*float64(time.Minute))+time.Millisecond)
				continue
			}
		}
		if c.QuotaRequests > 0 || c.QuotaTokens > 0 {
			if s.qPeriod < c.QuotaPeriod { // periods only move forward
				s.qPeriod, s.qReq, s.qTok = c.QuotaPeriod, 0, 0
			}
			if c.QuotaRequests > 0 && s.qReq >= c.QuotaRequests || c.QuotaTokens > 0 && s.qTok >= c.QuotaTokens {
				refuse(reasonQuota, c.QuotaLeft)
				continue
			}
		}
		ok = append(ok, elig{i: i, load: len(s.leases), probe: probe})
	}
	if len(ok) == 0 {
		return g, nil
	}
	pick := ok[0]
	if req.RoundRobin {
		least := ok[:0:0]
		for _, e := range ok {
			switch {
			case len(least) == 0 || e.load < least[0].load:
				least = append(least[:0], e)
			case e.load == least[0].load:
				least = append(least, e)
			}
		}
		cur := m.rr[req.Pool]
		m.rr[req.Pool] = cur + 1
		pick = least[cur%uint64(len(least))]
	}
	if req.Session != "" {
		pin := m.aff[req.Pool+"\x00"+req.Session]
		if pin.fp != "" && now.Before(pin.exp) {
			found := false
			for _, e := range ok {
				if req.Candidates[e.i].Fingerprint == pin.fp {
					pick, found = e, true
				}
			}
			if !found {
				g.Pinned = pin.fp
			}
		}
	}
	c := &req.Candidates[pick.i]
	s := m.key(req.Pool, c.Fingerprint)
	s.leases[req.LeaseID] = now.Add(req.LeaseTTL)
	if c.RPM > 0 {
		s.rpmLog = append(s.rpmLog, now)
	}
	if c.TPM > 0 && c.Tokens > 0 {
		s.tpmLevel += float64(c.Tokens)
	}
	if c.QuotaRequests > 0 || c.QuotaTokens > 0 {
		s.qReq++
	}
	if pick.probe {
		s.probeLease, s.probeExp = req.LeaseID, now.Add(req.LeaseTTL)
		g.Probe = true
		if s.breaker == BreakerOpen && !now.Before(s.breakerUntil) {
			s.breaker = BreakerHalfOpen // the open period is over: this is its probe
		}
		g.HalfOpen = s.breaker == BreakerHalfOpen
		g.BreakerTrips = s.trips
	}
	if req.Session != "" && g.Pinned == "" {
		m.aff[req.Pool+"\x00"+req.Session] = sharedPin{fp: c.Fingerprint, exp: now.Add(req.AffinityTTL)}
	}
	g.Index = pick.i
	return g, nil
}

func (s *sharedKey) tpmDrain(tpm int64, now time.Time) {
	if s.tpmLevel > 0 && now.After(s.tpmAt) {
		s.tpmLevel = max(0, s.tpmLevel-float64(tpm)*float64(now.Sub(s.tpmAt))/float64(time.Minute))
	}
	s.tpmAt = now
}

// Release implements Backend.
func (m *MemoryBackend) Release(_ context.Context, rel *SharedRelease) error {
	m.mu.Lock()
	m.calls++
	if m.failed {
		m.mu.Unlock()
		return errBackendDown{}
	}
	now := m.clock.Now()
	s := m.key(rel.Pool, rel.Fingerprint)
	delete(s.leases, rel.LeaseID)
	if s.probeLease == rel.LeaseID {
		s.probeLease = ""
	}
	if rel.TPM > 0 && rel.TokenDelta != 0 {
		s.tpmDrain(rel.TPM, now)
		s.tpmLevel = max(0, s.tpmLevel+float64(rel.TokenDelta))
	}
	if rel.QuotaTokens > 0 && s.qPeriod == rel.QuotaPeriod {
		s.qTok = addTokens(s.qTok, rel.QuotaTokens)
	}
	m.order++
	rel.Order = m.order
	ev := SharedEvent{Instance: rel.Instance, Fingerprint: rel.Fingerprint, Clear: rel.Clear}
	if rel.Clear {
		ev.Order = rel.Order
		if !deadReason(s.coolReason) {
			s.coolUntil, s.coolReason, s.coolHeur = time.Time{}, "", false
		}
		s.breaker, s.trips, s.probePending = BreakerClosed, 0, false
	}
	s.apply(now, &rel.SharedEffects)
	if rel.TTFB > 0 {
		if s.ema == 0 {
			s.ema = float64(rel.TTFB)
		} else {
			s.ema = rel.LatencyAlpha*float64(rel.TTFB) + (1-rel.LatencyAlpha)*s.ema
		}
		ev.EMA = time.Duration(s.ema)
	}
	if rel.Learned != nil {
		s.storeLearned(rel.Learned, now)
		ev.Learned = rel.Learned
	}
	ev.Wait, ev.Reason = s.shut(now)
	m.mu.Unlock()
	m.publish(rel.Pool, ev)
	return nil
}

// apply lengthens the cooldown, opens the breaker and marks a pending
// probe as a release or sync asks.
func (s *sharedKey) apply(now time.Time, e *SharedEffects) {
	if e.Cooldown > 0 && now.Add(e.Cooldown).After(s.coolUntil) {
		s.coolUntil, s.coolReason, s.coolHeur = now.Add(e.Cooldown), e.Reason, e.Heuristic
	}
	if e.BreakerOpen > 0 {
		s.breaker, s.breakerUntil, s.trips = BreakerOpen, now.Add(e.BreakerOpen), e.BreakerTrips
	}
	if e.ProbePending {
		s.probePending = true
	}
}

// shut returns how long the key stays shut from now, and why.
func (s *sharedKey) shut(now time.Time) (time.Duration, string) {
	var wait time.Duration
	var reason string
	if now.Before(s.coolUntil) {
		wait, reason = s.coolUntil.Sub(now), s.coolReason
	}
	if s.breaker == BreakerOpen && s.breakerUntil.Sub(now) > wait {
		wait, reason = s.breakerUntil.Sub(now), reasonBreaker
	}
	return wait, reason
}

// deadReason reports whether a cooldown reason is a dead-key class that a
// success does not clear.
func deadReason(r string) bool {
	switch r {
	case InvalidKey.String(), NoCredit.String(), Forbidden.String(), QuotaExhausted.String():
		return true
	}
	return false
}

func (m *MemoryBackend) publish(pool string, ev SharedEvent) {
	m.mu.Lock()
	ps := append([]*Pool(nil), m.pools[pool]...)
	m.mu.Unlock()
	for _, p := range ps {
		p.Notify(ev)
	}
}

// Sync implements Backend.
func (m *MemoryBackend) Sync(_ context.Context, pool string, keys []SharedSync) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.failed {
		return errBackendDown{}
	}
	now := m.clock.Now()
	for _, k := range keys {
		s := m.key(pool, k.Fingerprint)
		for _, id := range k.Leases {
			s.leases[id] = now.Add(k.LeaseTTL)
		}
		s.apply(now, &k.SharedEffects)
		if k.QuotaRequests > 0 || k.QuotaTokens > 0 {
			if s.qPeriod < k.QuotaPeriod {
				s.qPeriod, s.qReq, s.qTok = k.QuotaPeriod, 0, 0
			}
			if s.qPeriod == k.QuotaPeriod {
				s.qReq += k.QuotaRequests
				s.qTok = addTokens(s.qTok, max(k.QuotaTokens, 0))
			}
		}
	}
	return nil
}

// Clear implements Backend.
func (m *MemoryBackend) Clear(_ context.Context, pool, fp, instance string) error {
	m.mu.Lock()
	m.calls++
	if m.failed {
		m.mu.Unlock()
		return errBackendDown{}
	}
	s := m.key(pool, fp)
	s.coolUntil, s.coolReason, s.coolHeur = time.Time{}, "", false
	s.breaker, s.trips, s.probePending = BreakerClosed, 0, false
	m.mu.Unlock()
	m.publish(pool, SharedEvent{Instance: instance, Fingerprint: fp, Reset: true})
	return nil
}

// Snapshot implements Backend.
func (m *MemoryBackend) Snapshot(_ context.Context, pool string, fps []string) ([]SharedKeyState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.failed {
		return nil, errBackendDown{}
	}
	now := m.clock.Now()
	out := make([]SharedKeyState, len(fps))
	for i, fp := range fps {
		s := m.key(pool, fp)
		st := SharedKeyState{Fingerprint: fp, Breaker: s.breaker.String(), QuotaPeriod: s.qPeriod,
			QuotaRequests: s.qReq, QuotaTokens: s.qTok, LatencyEMA: time.Duration(s.ema), TPMLevel: int64(s.tpmLevel)}
		for _, exp := range s.leases {
			if now.Before(exp) {
				st.InFlight++
			}
		}
		if now.Before(s.coolUntil) {
			st.CooldownLeft, st.CooldownReason = s.coolUntil.Sub(now), s.coolReason
		}
		if s.breaker == BreakerOpen && now.Before(s.breakerUntil) {
			st.BreakerLeft = s.breakerUntil.Sub(now)
		}
		st.ProbeInFlight = s.probeLease != "" && now.Before(s.probeExp)
		st.Learned = s.learnedAt(now)
		for _, t := range s.rpmLog {
			if now.Sub(t) < time.Minute {
				st.RPMUsed++
			}
		}
		out[i] = st
	}
	return out, nil
}

// Interface guard.
var _ Backend = (*MemoryBackend)(nil)
