package keypool

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The simulator drives a pool on a fake clock, single-threaded, as a
// discrete-event simulation: requests arrive at a fixed rate, each lease
// is released after a simulated duration with an outcome drawn from its
// key's failure pattern. It checks the gates independently of the pool:
// its own in-flight counts against each key's cap, its own log of lease
// times against each key's rpm, and the cooldown each key reported after
// its last release against the next lease.

type simBehavior func(r *rand.Rand, model string) Outcome

type simKey struct {
	cfg      KeyConfig
	behavior simBehavior
	dur      time.Duration // mean attempt duration
}

type simEvent struct {
	at    time.Time
	lease *Lease
	out   Outcome
	dur   time.Duration
}

type simQueue []simEvent

func (q simQueue) Len() int           { return len(q) }
func (q simQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q simQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)        { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type simStat struct {
	cfg       KeyConfig
	cap       int
	inFlight  int
	leases    int
	times     []time.Time // lease times, for the rpm check
	rpmFrom   int
	coolUntil time.Time // cooldown or open breaker reported after the last release
	benched   map[string]time.Time
}

type sim struct {
	t           testing.TB
	p           *Pool
	clk         *fakeClock
	rng         *rand.Rand
	keys        map[string]*simKey
	stats       map[string]*simStat
	q           simQueue
	served      int
	failed      int // Acquire found no key
	probes      int
	earlyProbes int
	hits        int
	outage      bool // every attempt fails with 503
	// onLease, when set, runs before each lease is booked (state as at pick time).
	beforeAcquire func(opts *AcquireOptions)
	afterAcquire  func(l *Lease, opts *AcquireOptions)
}

func newSim(t testing.TB, s Settings, ks []simKey, seed uint64) *sim {
	clk := newFakeClock()
	cfgs := make([]KeyConfig, len(ks))
	sm := &sim{t: t, clk: clk, rng: rand.New(rand.NewPCG(seed, 7)), keys: map[string]*simKey{}, stats: map[string]*simStat{}}
	st := s.withDefaults()
	for i := range ks {
		cfgs[i] = ks[i].cfg
		sm.keys[ks[i].cfg.Fingerprint] = &ks[i]
		c := ks[i].cfg.MaxConcurrency
		if c == 0 {
			c = st.MaxConcurrencyPerKey
		}
		sm.stats[ks[i].cfg.Fingerprint] = &simStat{cfg: ks[i].cfg, cap: c, benched: map[string]time.Time{}}
	}
	p, err := New("sim", s, cfgs, clk)
	if err != nil {
		t.Fatal(err)
	}
	p.rng = rand.New(rand.NewPCG(seed, 11))
	sm.p = p
	return sm
}

// advance moves the clock to at, releasing every lease due by then.
func (s *sim) advance(at time.Time) {
	for len(s.q) > 0 && !s.q[0].at.After(at) {
		e := heap.Pop(&s.q).(simEvent)
		if d := e.at.Sub(s.clk.Now()); d > 0 {
			s.clk.Advance(d)
		}
		s.release(e)
	}
	if d := at.Sub(s.clk.Now()); d > 0 {
		s.clk.Advance(d)
	}
}

func (s *sim) release(e simEvent) {
	fp := e.lease.Key().Fingerprint()
	st := s.stats[fp]
	st.inFlight--
	e.lease.Release(e.out)
	// read back what the pool now says about the key
	p := s.p
	p.mu.Lock()
	k := p.byFP[fp]
	now := p.clock.Now()
	ok, reason, until := k.gate(now, &p.settings, p.pace)
	if b, bu := k.benched(e.lease.model, now); b {
		st.benched[e.lease.model] = bu
	}
	p.mu.Unlock()
	st.coolUntil = time.Time{}
	switch {
	case ok, reason == reasonBusy, reason == reasonProbe, reason == reasonDisabled,
		reason == reasonRPM, reason == reasonTPM, reason == reasonQuota, reason == reasonPace:
	default: // a cooldown or an open breaker
		st.coolUntil = until
	}
}

// request runs one Acquire at the current time and schedules its release.
func (s *sim) request(opts AcquireOptions) *Lease {
	if s.beforeAcquire != nil {
		s.beforeAcquire(&opts)
	}
	l, err := s.p.Acquire(context.Background(), opts)
	if err != nil {
		s.failed++
		return nil
	}
	now := s.clk.Now()
	fp := l.Key().Fingerprint()
	st := s.stats[fp]
	st.inFlight++
	st.leases++
	s.served++
	if l.Probe() {
		s.probes++
	}
	if l.AffinityHit() {
		s.hits++
	}
	if st.inFlight > st.cap {
		s.t.Fatalf("%s: %d in flight, cap %d", st.cfg.ID, st.inFlight, st.cap)
	}
	if rpm := st.cfg.RPM; rpm > 0 {
		st.times = append(st.times, now)
		for st.rpmFrom < len(st.times) && !st.times[st.rpmFrom].After(now.Add(-time.Minute)) {
			st.rpmFrom++
		}
		if n := len(st.times) - st.rpmFrom; n > rpm {
			s.t.Fatalf("%s: %d requests in the last 60s, rpm %d", st.cfg.ID, n, rpm)
		}
	}
	if now.Before(st.coolUntil) {
		if !l.Probe() {
			s.t.Fatalf("%s leased at %v while cooling until %v", st.cfg.ID, now, st.coolUntil)
		}
		// an early probe: only past half-way through a computed cooldown
		s.p.mu.Lock()
		k := l.Key()
		start, end := k.cooldownStart, k.cooldownUntil
		if !now.Before(k.cooldownUntil) || k.breaker == BreakerOpen && k.breakerUntil.After(end) {
			if !now.Before(k.cooldownUntil) {
				start = k.breakerSince
			}
			end = k.breakerUntil
		}
		heuristic := k.cooldownHeuristic || !now.Before(k.cooldownUntil)
		s.p.mu.Unlock()
		if !heuristic || now.Sub(start) < end.Sub(now) {
			s.t.Fatalf("%s probed at %v, cooling %v..%v (computed: %v)", st.cfg.ID, now, start, end, heuristic)
		}
		s.earlyProbes++
	}
	if until, ok := st.benched[opts.Model]; ok && now.Before(until) {
		s.t.Fatalf("%s leased for %s while benched for it until %v", st.cfg.ID, opts.Model, until)
	}
	if s.afterAcquire != nil {
		s.afterAcquire(l, &opts)
	}
	if s.served%1000 == 0 {
		checkIndex(s.t, s.p)
	}
	sk := s.keys[fp]
	out := Outcome{Kind: Success, Status: 200}
	if sk.behavior != nil {
		out = sk.behavior(s.rng, opts.Model)
	}
	if s.outage && out.Kind == Success {
		out = Outcome{Kind: ServerError, Status: 503}
	}
	d := sk.dur
	if d == 0 {
		d = 2 * time.Second
	}
	d = time.Duration(float64(d) * (0.5 + s.rng.Float64()))
	if out.Kind == Success && out.TTFB == 0 {
		out.TTFB = d / 4
	}
	heap.Push(&s.q, simEvent{at: now.Add(d), lease: l, out: out, dur: d})
	return l
}

// drain releases everything still in flight.
func (s *sim) drain() {
	for len(s.q) > 0 {
		s.advance(s.q[0].at)
	}
}

func simSize(full int) int {
	if raceEnabled || testing.Short() {
		return full / 10
	}
	return full
}

// Behaviours.

func healthy(r *rand.Rand, _ string) Outcome {
	return Outcome{Kind: Success, Status: 200, Tokens: 200 + r.Int64N(1800)}
}

func flaky(pct float64, o Outcome) simBehavior {
	return func(r *rand.Rand, m string) Outcome {
		if r.Float64() < pct {
			return o
		}
		return healthy(r, m)
	}
}

func TestSimulatorMixed(t *testing.T) {
	n := simSize(100_000)
	var ks []simKey
	for i := 0; i < 50; i++ {
		kc := KeyConfig{Fingerprint: fmt.Sprintf("fp%02d", i), ID: fmt.Sprintf("k%02d", i), MaxConcurrency: 1 + i%4, Host: fmt.Sprintf("h%d", i%5)}
		var b simBehavior = healthy
		switch {
		case i < 10:
			kc.RPM = 20 + 5*i // rpm-bound keys
		case i < 15:
			b = flaky(0.05, Outcome{Kind: RateLimited, Status: 429, RetryAfter: 20 * time.Second, HasRetryAfter: true, Source: "retry-after"})
		case i < 20:
			b = flaky(0.05, Outcome{Kind: RateLimited, Status: 429})
		case i < 25:
			b = flaky(0.10, Outcome{Kind: ServerError, Status: 503})
		case i < 27:
			b = flaky(0.5, Outcome{Kind: NetworkError, HostDown: true, Message: "connection refused"})
		case i == 27:
			b = flaky(1, Outcome{Kind: InvalidKey, Status: 401})
		case i == 28:
			b = flaky(0.01, Outcome{Kind: QuotaExhausted, Status: 429})
		case i < 32:
			b = func(r *rand.Rand, m string) Outcome {
				if m == "gpt-x" {
					return Outcome{Kind: ModelNotFound, Status: 404}
				}
				return healthy(r, m)
			}
		case i < 36:
			kc.TPM = 40_000
		}
		ks = append(ks, simKey{cfg: kc, behavior: b})
	}
	s := newSim(t, Settings{MaxConcurrencyPerKey: 2}, ks, 1)
	models := []string{"gpt-a", "gpt-a", "gpt-a", "gpt-x"}
	gap := 30 * time.Millisecond
	for i := 0; i < n; i++ {
		s.outage = i >= n/2 && i < n/2+n/50 // an upstream outage: 2% of the run
		s.advance(s.clk.Now().Add(gap))
		s.request(AcquireOptions{Model: models[i%len(models)], Tokens: 500})
	}
	s.drain()
	t.Logf("mixed: %d requests, %d served, %d found no key, %d probes (%d early, on cooling keys)", n, s.served, s.failed, s.probes, s.earlyProbes)
	if s.served < n/2 {
		t.Fatalf("only %d of %d served", s.served, n)
	}
	if s.earlyProbes == 0 {
		t.Fatal("the outage produced no early probe")
	}
	// no verifier: the 401 key's verdict stays provisional, so it is
	// tried again (as a probe) once per ProvisionalCooldown, never more
	if st := s.stats["fp27"]; st.leases > 1+int(time.Duration(n)*gap/DefaultProvisionalCooldown)+1 {
		t.Fatalf("invalid key leased %d times", st.leases)
	}
}

func TestSimulatorRoundRobinFairness(t *testing.T) {
	n := 100_000 // far fewer requests leave too much noise for a 10% bound
	if raceEnabled {
		n = 50_000
	}
	var ks []simKey
	for i := 0; i < 50; i++ {
		ks = append(ks, simKey{cfg: KeyConfig{Fingerprint: fmt.Sprintf("fp%02d", i), ID: fmt.Sprintf("k%02d", i)}, behavior: healthy})
	}
	s := newSim(t, Settings{MaxConcurrencyPerKey: 4}, ks, 2)
	for i := 0; i < n; i++ {
		s.advance(s.clk.Now().Add(20 * time.Millisecond)) // ~100 in flight on 200 slots
		s.request(AcquireOptions{})
	}
	s.drain()
	lo, hi := n, 0
	for _, st := range s.stats {
		lo, hi = min(lo, st.leases), max(hi, st.leases)
	}
	t.Logf("round_robin: %d served, busiest %d, quietest %d (+%.2f%%)", s.served, hi, lo, 100*float64(hi-lo)/float64(lo))
	if s.failed > 0 || float64(hi) > 1.10*float64(lo) {
		t.Fatalf("unfair: busiest %d, quietest %d, %d failed", hi, lo, s.failed)
	}
}

func TestSimulatorPriority(t *testing.T) {
	n := simSize(100_000)
	var ks []simKey
	for i := 0; i < 50; i++ {
		kc := KeyConfig{Fingerprint: fmt.Sprintf("fp%02d", i), ID: fmt.Sprintf("k%02d", i), Priority: 1 + i/10}
		b := healthy
		if i == 0 {
			kc.Priority, kc.MaxConcurrency = 0, 8
			b = flaky(0.02, Outcome{Kind: ServerError, Status: 500})
		}
		ks = append(ks, simKey{cfg: kc, behavior: b})
	}
	s := newSim(t, Settings{Strategy: "priority", MaxConcurrencyPerKey: 2}, ks, 3)
	mainReady := false
	s.beforeAcquire = func(*AcquireOptions) {
		s.p.mu.Lock()
		s.p.drainTimedLocked(s.clk.Now())
		mainReady = s.p.keys[0].ready
		s.p.mu.Unlock()
	}
	backupWhileMainReady, tierViolations := 0, 0
	s.afterAcquire = func(l *Lease, _ *AcquireOptions) {
		k := l.Key()
		if k.priority > 0 && mainReady {
			backupWhileMainReady++
		}
		// every key of a better tier must have been unavailable
		s.p.mu.Lock()
		for _, o := range s.p.keys {
			if o.priority < k.priority && o.ready && o != k {
				tierViolations++
			}
		}
		s.p.mu.Unlock()
	}
	for i := 0; i < n; i++ {
		s.advance(s.clk.Now().Add(300 * time.Millisecond)) // ~7 in flight against the main key's cap of 8
		s.request(AcquireOptions{})
	}
	s.drain()
	main := s.stats["fp00"].leases
	t.Logf("priority: main %d of %d served; backups %d", main, s.served, s.served-main)
	if backupWhileMainReady > 0 || tierViolations > 0 {
		t.Fatalf("%d backup leases while the main key was eligible, %d tier violations", backupWhileMainReady, tierViolations)
	}
	if main < s.served/2 || main == s.served {
		t.Fatalf("main served %d of %d: scenario does not exercise failover", main, s.served)
	}
}

func TestSimulatorPace(t *testing.T) {
	n := simSize(100_000)
	period := 24 * time.Hour
	var ks []simKey
	total := int64(0)
	for i := 0; i < 50; i++ {
		budget := int64(1000 + 40*i) // 1000 .. 2960 requests per day
		if raceEnabled || testing.Short() {
			budget /= 10
		}
		total += budget
		ks = append(ks, simKey{cfg: KeyConfig{Fingerprint: fmt.Sprintf("fp%02d", i), ID: fmt.Sprintf("k%02d", i), MaxConcurrency: 4,
			Quota: Quota{Requests: budget, Period: period}}, behavior: healthy})
	}
	s := newSim(t, Settings{Strategy: "pace"}, ks, 4)
	// start at a period boundary; demand 20% above the total budget
	s.clk.Advance(nextUTCMidnight(s.clk.Now()).Sub(s.clk.Now()))
	start := s.clk.Now()
	gap := time.Duration(float64(period) / (1.2 * float64(total)))
	worst := 0.0
	check := func() {
		el := float64(s.clk.Now().Sub(start)) / float64(period)
		for _, st := range s.stats {
			d := float64(st.leases)/float64(st.cfg.Quota.Requests) - el
			worst = max(worst, d, -d)
			if d > 0.10 || d < -0.10 {
				t.Fatalf("%s at %.3f of the period: used %d of %d (%.3f off its line)", st.cfg.ID, el, st.leases, st.cfg.Quota.Requests, d)
			}
		}
	}
	for i := 0; i < n && s.clk.Now().Sub(start) < period-gap; i++ {
		s.advance(s.clk.Now().Add(gap))
		s.request(AcquireOptions{})
		if i%1000 == 999 {
			check()
		}
	}
	check()
	t.Logf("pace: %d requests, %d served, %d refused (demand above budget); worst distance from the line %.4f of budget", n, s.served, s.failed, worst)
}

func TestSimulatorAffinity(t *testing.T) {
	n := simSize(100_000)
	var ks []simKey
	for i := 0; i < 50; i++ {
		b := healthy
		if i%10 == 0 {
			b = flaky(0.002, Outcome{Kind: ServerError, Status: 500})
		}
		ks = append(ks, simKey{cfg: KeyConfig{Fingerprint: fmt.Sprintf("fp%02d", i), ID: fmt.Sprintf("k%02d", i)}, behavior: b, dur: time.Second})
	}
	s := newSim(t, Settings{MaxConcurrencyPerKey: 8}, ks, 5)
	const sessions = 500
	perSession := make([]map[string]int, sessions)
	for i := range perSession {
		perSession[i] = map[string]int{}
	}
	for i := 0; i < n; i++ {
		s.advance(s.clk.Now().Add(20 * time.Millisecond))
		sess := s.rng.IntN(sessions)
		if l := s.request(AcquireOptions{Session: fmt.Sprintf("sess-%d", sess)}); l != nil {
			perSession[sess][l.Key().ID()]++
		}
	}
	s.drain()
	onMain, all := 0, 0
	for _, m := range perSession {
		best := 0
		for _, c := range m {
			best = max(best, c)
			all += c
		}
		onMain += best
	}
	share := float64(onMain) / float64(all)
	t.Logf("affinity: %d served, %.2f%% of each session's requests on its main key, %d affinity hits", s.served, 100*share, s.hits)
	if share <= 0.95 {
		t.Fatalf("only %.2f%% of session requests on the session's main key", 100*share)
	}
}

func TestSimulatorPaceTokens(t *testing.T) {
	n := simSize(100_000)
	period := 720 * time.Hour
	anchor := nextUTCMidnight(newFakeClock().Now()) // the periods start when the run does
	var ks []simKey
	total := int64(0)
	for i := 0; i < 50; i++ {
		budget := int64(1_000_000 + 40_000*i) // 1M .. 2.96M tokens per 30 days
		if raceEnabled || testing.Short() {
			budget /= 10
		}
		total += budget
		ks = append(ks, simKey{cfg: KeyConfig{Fingerprint: fmt.Sprintf("fp%02d", i), ID: fmt.Sprintf("k%02d", i), MaxConcurrency: 4,
			Quota: Quota{Tokens: budget, Period: period, Anchor: anchor}}, behavior: healthy})
	}
	s := newSim(t, Settings{Strategy: "pace"}, ks, 6)
	s.clk.Advance(nextUTCMidnight(s.clk.Now()).Sub(s.clk.Now()))
	start := periodStart(&ks[0].cfg.Quota, periodOf(&ks[0].cfg.Quota, s.clk.Now()))
	// healthy() averages 1100 tokens; demand 20% above the total budget
	gap := time.Duration(float64(period) / (1.2 * float64(total) / 1100))
	worst := 0.0
	check := func() {
		s.p.mu.Lock()
		defer s.p.mu.Unlock()
		el := float64(s.clk.Now().Sub(start)) / float64(period)
		for _, k := range s.p.keys {
			k.lim.roll(&k.quota, s.clk.Now())
			d := float64(k.lim.qTok)/float64(k.quota.Tokens) - el
			worst = max(worst, d, -d)
			if d > 0.10 || d < -0.10 {
				t.Fatalf("%s at %.3f of the period: used %d of %d tokens (%.3f off its line)", k.id, el, k.lim.qTok, k.quota.Tokens, d)
			}
		}
	}
	for i := 0; i < n && s.clk.Now().Sub(start) < period-time.Hour; i++ {
		s.advance(s.clk.Now().Add(gap))
		s.request(AcquireOptions{})
		if i%1000 == 999 {
			check()
		}
	}
	check()
	t.Logf("pace (tokens): %d served, %d refused; worst distance from the line %.4f of budget", s.served, s.failed, worst)
}
