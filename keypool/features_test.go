package keypool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"
)

func newPoolWith(t testing.TB, s Settings, kcs []KeyConfig) (*Pool, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	p, err := New("main", s, kcs, clk)
	if err != nil {
		t.Fatal(err)
	}
	p.rng = rand.New(rand.NewPCG(1, 2))
	return p, clk
}

func acquire(t *testing.T, p *Pool, opts AcquireOptions) *Lease {
	t.Helper()
	l, err := p.Acquire(context.Background(), opts)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return l
}

func TestRateLimitLadderResetsAfterWindow(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{RateLimitCooldown: 2 * time.Second, RateLimitWindow: time.Hour})
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, Status: 429})
	clk.Advance(2 * time.Second)
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, Status: 429})
	if s := status(p, "k0"); s.SecondsLeft != 4 || s.Source != "backoff" || s.CooldownStatus != 429 {
		t.Fatalf("second 429: %+v", s)
	}
	clk.Advance(2 * time.Hour)
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, Status: 429})
	if s := status(p, "k0"); s.SecondsLeft != 2 {
		t.Fatalf("ladder did not restart after the window: %ds", s.SecondsLeft)
	}
}

func TestCooldownsOnlyLengthen(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 2})
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: time.Minute, HasRetryAfter: true, Source: "body"})
	b.Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: time.Second, HasRetryAfter: true})
	s := status(p, "k0")
	if s.SecondsLeft != 60 || s.Source != "body" || s.Reason != "rate_limited" {
		t.Fatalf("shorter hint shortened the cooldown: %+v", s)
	}
}

func TestQuotaExhaustedUntilMidnightThenProbe(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{MaxConcurrencyPerKey: 2})
	l := mustAcquire(t, p)
	other := mustAcquire(t, p) // in flight on k1
	o := ClassifyResponse(429, nil, []byte(`{"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota"}}`), clk.Now())
	l.Release(o)
	// one client request only benches the key provisionally
	s := status(p, "k0")
	if s.Reason != "quota_exhausted" || s.Source != "provisional" || !s.Provisional || s.SecondsLeft != 60 {
		t.Fatalf("quota before the probe: %+v", s)
	}
	// the probe answers a bare 429 quota: the reset the client's answer named (UTC midnight) applies
	p.Confirm("fp0", Outcome{Kind: QuotaExhausted, Status: 429})
	s = status(p, "k0")
	if s.Reason != "quota_exhausted" || s.Source != "utc-midnight" || s.Provisional || s.SecondsLeft != 12*3600 {
		t.Fatalf("quota after the probe: %+v", s)
	}
	other.Release(Outcome{Kind: Success})
	// a success elsewhere or in flight does not clear a dead-key cooldown
	if s := status(p, "k0"); s.State != "cooling" {
		t.Fatalf("cleared: %+v", s)
	}
	clk.Advance(12 * time.Hour)
	for {
		l := mustAcquire(t, p)
		if l.Key().ID() == "k0" {
			if !l.Probe() || l.ProbeTimeout() != DefaultProbeTimeout {
				t.Fatal("first request after a quota cooldown is not a probe")
			}
			if _, err := p.Acquire(context.Background(), AcquireOptions{Skip: func(k *Key) bool { return k.ID() == "k1" }}); err == nil {
				t.Fatal("second request let through while the probe is in flight")
			}
			l.Release(Outcome{Kind: Success})
			break
		}
		l.Release(Outcome{Kind: Success})
	}
	if l := acquire(t, p, AcquireOptions{Skip: func(k *Key) bool { return k.ID() == "k1" }}); l.Probe() {
		t.Fatal("still probing after a good probe")
	}
}

func TestInvalidKeyProbe(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{})
	mustAcquire(t, p).Release(ClassifyResponse(401, nil, nil, clk.Now()))
	p.Confirm("fp0", Outcome{Kind: InvalidKey, Status: 401})
	if s := status(p, "k0"); s.Reason != "invalid_key" || s.SecondsLeft != 300 || s.Provisional {
		t.Fatalf("after the confirming probe: %+v", s)
	}
	clk.Advance(DefaultInvalidKeyCooldown)
	l := mustAcquire(t, p)
	if !l.Probe() {
		t.Fatal("not a probe")
	}
	l.Release(Outcome{Kind: InvalidKey, Status: 401})
	// a client request again: provisional until confirmed
	if s := status(p, "k0"); s.Reason != "invalid_key" || s.SecondsLeft != 60 || !s.Provisional {
		t.Fatalf("after a failed probe: %+v", s)
	}
	p.Confirm("fp0", Outcome{Kind: InvalidKey, Status: 401})
	if s := status(p, "k0"); s.Reason != "invalid_key" || s.SecondsLeft != 300 || s.Provisional {
		t.Fatalf("after the second confirming probe: %+v", s)
	}
}

func TestModelBench(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{MaxConcurrencyPerKey: 4})
	onK0 := AcquireOptions{Model: "gpt-x", Skip: func(k *Key) bool { return k.ID() != "k0" }}
	for i := 0; i < 2; i++ {
		acquire(t, p, onK0).Release(ClassifyResponse(404, nil, []byte(`{"error":{"code":"model_not_found","message":"The model gpt-x does not exist"}}`), clk.Now()))
		clk.Advance(5 * time.Minute)
	}
	if s := status(p, "k0"); s.State != "ready" || s.Failures != 0 || len(s.BenchedModels) != 0 {
		t.Fatalf("model 404 penalised the key: %+v", s)
	}
	acquire(t, p, onK0).Release(Outcome{Kind: ModelNotFound, Status: 404})
	s := status(p, "k0")
	if s.State != "ready" || !s.BenchedModels["gpt-x"].Equal(clk.Now().Add(10*time.Minute)) {
		t.Fatalf("after 3 within 15 min: %+v", s)
	}
	// other models still use k0; gpt-x does not
	if l := acquire(t, p, AcquireOptions{Model: "gpt-y", Skip: onK0.Skip}); l.Key().ID() != "k0" {
		t.Fatal("k0 benched for every model")
	}
	for i := 0; i < 4; i++ {
		if l := acquire(t, p, AcquireOptions{Model: "gpt-x"}); l.Key().ID() != "k1" {
			t.Fatal("k0 used for a benched model")
		}
	}
	_, err := p.Acquire(context.Background(), onK0)
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Keys[0].State != "benched" || ue.Keys[0].Reason != "model_not_found" || ue.RetryAfter != 10*time.Minute {
		t.Fatalf("err = %v", err)
	}
	clk.Advance(10 * time.Minute)
	acquire(t, p, onK0)
}

func TestModelBenchWindow(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{})
	for i := 0; i < 5; i++ {
		acquire(t, p, AcquireOptions{Model: "m"}).Release(Outcome{Kind: ModelNotFound, Status: 404})
		clk.Advance(8 * time.Minute) // never 3 within 15 minutes
	}
	if s := status(p, "k0"); len(s.BenchedModels) != 0 {
		t.Fatalf("benched outside the window: %+v", s)
	}
	// a success resets the count
	acquire(t, p, AcquireOptions{Model: "m"}).Release(Outcome{Kind: ModelNotFound})
	acquire(t, p, AcquireOptions{Model: "m"}).Release(Outcome{Kind: Success})
	acquire(t, p, AcquireOptions{Model: "m"}).Release(Outcome{Kind: ModelNotFound})
	if s := status(p, "k0"); len(s.BenchedModels) != 0 {
		t.Fatalf("success did not reset the count: %+v", s)
	}
}

func TestEarlyProbeWhenAllCooling(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{ErrorCooldown: 20 * time.Second, MaxCooldown: time.Hour})
	mustAcquire(t, p).Release(Outcome{Kind: ServerError, Status: 500})
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: time.Hour, HasRetryAfter: true})
	clk.Advance(9 * time.Second)
	if _, err := p.Acquire(context.Background(), AcquireOptions{}); err == nil {
		t.Fatal("probe before half-way")
	}
	clk.Advance(time.Second)
	l := mustAcquire(t, p)
	if l.Key().ID() != "k0" || !l.Probe() {
		t.Fatalf("got %s probe=%v, want an early probe of k0 (k1's wait was named by the upstream)", l.Key().ID(), l.Probe())
	}
	if _, err := p.Acquire(context.Background(), AcquireOptions{}); err == nil {
		t.Fatal("two early probes at once")
	}
	until := status(p, "k0").Until
	l.Release(Outcome{Kind: ServerError, Status: 503})
	s := status(p, "k0")
	if !s.Until.Equal(until) || !s.NextProbe.Equal(clk.Now().Add(30*time.Second)) {
		t.Fatalf("failed probe: until %v (was %v), next probe %v", s.Until, until, s.NextProbe)
	}
	clk.Advance(10 * time.Second) // the cooldown still ends at +20s
	if s := status(p, "k0"); s.State != "ready" {
		t.Fatalf("cooldown lengthened by the probe: %+v", s)
	}
	mustAcquire(t, p).Release(Outcome{Kind: ServerError, Status: 500}) // second failure: 40 s
	clk.Advance(20 * time.Second)
	l = mustAcquire(t, p)
	if !l.Probe() {
		t.Fatal("no early probe at half-way of the second cooldown")
	}
	l.Release(Outcome{Kind: Success})
	if s := status(p, "k0"); s.State != "ready" || s.ConsecutiveFailures != 0 {
		t.Fatalf("good probe did not clear: %+v", s)
	}
}

func TestProbeBackoffDoubles(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{ErrorCooldown: time.Hour, MaxCooldown: time.Hour, FailureThreshold: 100})
	mustAcquire(t, p).Release(Outcome{Kind: ServerError})
	clk.Advance(30 * time.Minute)
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute}
	for _, w := range want {
		l := mustAcquire(t, p)
		if !l.Probe() {
			t.Fatal("no probe")
		}
		l.Release(Outcome{Kind: Timeout})
		if s := status(p, "k0"); !s.NextProbe.Equal(clk.Now().Add(w)) {
			t.Fatalf("next probe %v, want +%v", s.NextProbe.Sub(clk.Now()), w)
		}
		clk.Advance(w)
	}
}

func TestPriorityStrategy(t *testing.T) {
	kcs := keys(4)
	kcs[0].Priority, kcs[1].Priority, kcs[2].Priority, kcs[3].Priority = 1, 0, 1, 2
	p, _ := newPoolWith(t, Settings{Strategy: "priority"}, kcs)
	var got []string
	var held []*Lease
	for i := 0; i < 4; i++ {
		l := mustAcquire(t, p)
		got = append(got, l.Key().ID())
		held = append(held, l)
	}
	if fmt.Sprint(got) != "[k1 k0 k2 k3]" {
		t.Fatalf("order %v", got)
	}
	held[0].Release(Outcome{Kind: Success})
	if l := mustAcquire(t, p); l.Key().ID() != "k1" {
		t.Fatal("main key not preferred once free")
	}
}

func TestPriorityAffinityYieldsToBetterTier(t *testing.T) {
	kcs := keys(2)
	kcs[1].Priority = 1
	p, _ := newPoolWith(t, Settings{Strategy: "priority"}, kcs)
	main := acquire(t, p, AcquireOptions{Session: "other"})
	l := acquire(t, p, AcquireOptions{Session: "s"})
	if l.Key().ID() != "k1" {
		t.Fatal("setup")
	}
	l.Release(Outcome{Kind: Success})
	main.Release(Outcome{Kind: Success})
	if l := acquire(t, p, AcquireOptions{Session: "s"}); l.Key().ID() != "k0" || l.AffinityHit() {
		t.Fatal("session kept on the backup while the main key is eligible")
	}
}

func TestWeightedSmooth(t *testing.T) {
	kcs := keys(3)
	kcs[0].Weight, kcs[1].Weight, kcs[2].Weight = 5, 1, 1
	p, _ := newPoolWith(t, Settings{Strategy: "weighted", MaxConcurrencyPerKey: 100}, kcs)
	var seq strings.Builder
	count := map[string]int{}
	for i := 0; i < 700; i++ {
		l := mustAcquire(t, p)
		id := l.Key().ID()
		count[id]++
		if i < 7 {
			seq.WriteString(id[1:])
		}
		l.Release(Outcome{Kind: Success})
	}
	if count["k0"] != 500 || count["k1"] != 100 || count["k2"] != 100 {
		t.Fatalf("shares %v", count)
	}
	if s := seq.String(); strings.Contains(s, "00000") {
		t.Fatalf("not smooth: %s", s)
	}
}

func TestWeightedReturningKeyGetsNoBurst(t *testing.T) {
	p, clk := newPoolWith(t, Settings{Strategy: "weighted", MaxConcurrencyPerKey: 100}, keys(2))
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, RetryAfter: time.Minute, HasRetryAfter: true})
	for i := 0; i < 50; i++ {
		mustAcquire(t, p).Release(Outcome{Kind: Success})
	}
	clk.Advance(time.Minute)
	count := map[string]int{}
	for i := 0; i < 10; i++ {
		l := mustAcquire(t, p)
		count[l.Key().ID()]++
		l.Release(Outcome{Kind: Success})
	}
	if count["k0"] < 4 || count["k0"] > 6 {
		t.Fatalf("returning key burst: %v", count)
	}
}

func TestLeastUsed(t *testing.T) {
	p, clk := newPoolWith(t, Settings{Strategy: "least_used", LeastUsedBy: "tokens", MaxConcurrencyPerKey: 10}, keys(3))
	tokens := map[string]int64{"k0": 1000, "k1": 10, "k2": 100}
	count := map[string]int{}
	for i := 0; i < 300; i++ {
		l := mustAcquire(t, p)
		count[l.Key().ID()]++
		l.Release(Outcome{Kind: Success, Tokens: tokens[l.Key().ID()]})
	}
	if !(count["k1"] > count["k2"] && count["k2"] > count["k0"]) {
		t.Fatalf("counts %v", count)
	}
	clk.Advance(time.Minute) // a new window: counts reset
	l := mustAcquire(t, p)
	if l.Key().ID() != "k0" {
		t.Fatalf("after the window, got %s (want k0, leased longest ago among equals)", l.Key().ID())
	}
}

func TestLowestLatencyExplores(t *testing.T) {
	p, _ := newPoolWith(t, Settings{Strategy: "lowest_latency", LatencyExplore: 0.1, MaxConcurrencyPerKey: 10}, keys(3))
	ttfb := map[string]time.Duration{"k0": 300 * time.Millisecond, "k1": 100 * time.Millisecond, "k2": 900 * time.Millisecond}
	count := map[string]int{}
	for i := 0; i < 1000; i++ {
		l := mustAcquire(t, p)
		count[l.Key().ID()]++
		l.ReportTTFB(ttfb[l.Key().ID()])
		l.Release(Outcome{Kind: Success})
	}
	if count["k1"] < 900 || count["k2"] == 0 || count["k0"] == 0 {
		t.Fatalf("counts %v", count)
	}
	if s := status(p, "k1"); s.TTFB != 100*time.Millisecond || s.TTFBMillis != 100 {
		t.Fatalf("ttfb %+v", s)
	}
	// the fast key turns slow: exploration finds k0 again
	ttfb["k1"] = 2 * time.Second
	count = map[string]int{}
	for i := 0; i < 1000; i++ {
		l := mustAcquire(t, p)
		count[l.Key().ID()]++
		l.Release(Outcome{Kind: Success, TTFB: ttfb[l.Key().ID()]})
	}
	if count["k0"] < 800 {
		t.Fatalf("did not move to the now-fastest key: %v", count)
	}
}

func TestRandomSpreads(t *testing.T) {
	p, _ := newPoolWith(t, Settings{Strategy: "random", MaxConcurrencyPerKey: 10}, keys(4))
	count := map[string]int{}
	for i := 0; i < 4000; i++ {
		l := mustAcquire(t, p)
		count[l.Key().ID()]++
		l.Release(Outcome{Kind: Success})
	}
	for id, c := range count {
		if c < 800 || c > 1200 {
			t.Fatalf("%s got %d of 4000", id, c)
		}
	}
}

func TestPaceGateAndReset(t *testing.T) {
	kcs := keys(1)
	kcs[0].Quota = Quota{Requests: 100, Period: 24 * time.Hour}
	p, clk := newPoolWith(t, Settings{Strategy: "pace", MaxConcurrencyPerKey: 100}, kcs)
	start := nextUTCMidnight(clk.Now())
	clk.Advance(start.Sub(clk.Now()))
	n := 0
	for ; n < 10; n++ {
		if _, err := p.Acquire(context.Background(), AcquireOptions{}); err != nil {
			break
		}
	}
	if n != 1 {
		t.Fatalf("%d leased at the period start, want 1 (one ahead of the line)", n)
	}
	_, err := p.Acquire(context.Background(), AcquireOptions{})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Keys[0].State != "limited" || ue.Keys[0].Reason != "pace" {
		t.Fatalf("err %v", err)
	}
	// the line allows request 2 once 1% of the day (864 s) has gone by
	if ue.RetryAfter < 863*time.Second || ue.RetryAfter > 865*time.Second {
		t.Fatalf("retry after %v", ue.RetryAfter)
	}
	clk.Advance(12 * time.Hour)
	n = 0
	for ; n < 100; n++ {
		if _, err := p.Acquire(context.Background(), AcquireOptions{}); err != nil {
			break
		}
	}
	if n != 50 {
		t.Fatalf("%d leased at half-day, want 50 (total 51 = 50%% + one ahead)", n)
	}
	clk.Advance(12 * time.Hour)
	if s := status(p, "k0"); s.QuotaRequests != 0 || !s.QuotaResetAt.Equal(start.Add(48*time.Hour)) {
		t.Fatalf("no reset: %+v", s)
	}
}

func TestQuotaGate(t *testing.T) {
	kcs := keys(1)
	kcs[0].Quota = Quota{Requests: 3, Tokens: 1000, Period: time.Hour}
	p, clk := newPoolWith(t, Settings{MaxConcurrencyPerKey: 10}, kcs)
	mustAcquire(t, p).Release(Outcome{Kind: Success, Tokens: 1000})
	_, err := p.Acquire(context.Background(), AcquireOptions{})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Keys[0].Reason != "quota" {
		t.Fatalf("token quota not enforced: %v", err)
	}
	clk.Advance(time.Hour)
	for i := 0; i < 3; i++ {
		mustAcquire(t, p)
	}
	if _, err := p.Acquire(context.Background(), AcquireOptions{}); err == nil {
		t.Fatal("request quota not enforced")
	}
}

func TestRPMSlidingWindow(t *testing.T) {
	kcs := keys(1)
	kcs[0].RPM = 3
	p, clk := newPoolWith(t, Settings{MaxConcurrencyPerKey: 10}, kcs)
	for i := 0; i < 3; i++ {
		mustAcquire(t, p).Release(Outcome{Kind: Success})
		clk.Advance(10 * time.Second)
	}
	_, err := p.Acquire(context.Background(), AcquireOptions{})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Keys[0].Reason != "rpm" || ue.RetryAfter != 30*time.Second {
		t.Fatalf("err %v", err)
	}
	// a waiter is woken when the oldest lease leaves the window
	got := make(chan *Lease, 1)
	go func() {
		l, _ := p.Acquire(context.Background(), AcquireOptions{Timeout: time.Minute})
		got <- l
	}()
	waitFor(t, func() bool { return clk.pending() == 1 })
	clk.Advance(30 * time.Second)
	if l := <-got; l == nil {
		t.Fatal("waiter not served")
	}
}

func TestTPMBucket(t *testing.T) {
	kcs := keys(2)
	kcs[0].TPM = 1000
	p, clk := newPoolWith(t, Settings{MaxConcurrencyPerKey: 10}, kcs)
	onK0 := AcquireOptions{Skip: func(k *Key) bool { return k.ID() != "k0" }, Tokens: 400}
	a := acquire(t, p, onK0)
	b := acquire(t, p, onK0)
	c := acquire(t, p, onK0) // 1200 reserved: bucket over
	if _, err := p.Acquire(context.Background(), onK0); err == nil {
		t.Fatal("tpm not enforced on reservations")
	}
	a.Release(Outcome{Kind: Success, Tokens: 100})
	b.Release(Outcome{Kind: Success, Tokens: 100})
	c.Release(Outcome{Kind: Success, Tokens: 100}) // 300 used
	acquire(t, p, onK0).Release(Outcome{Kind: Success, Tokens: 800})
	_, err := p.Acquire(context.Background(), onK0)
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Keys[0].Reason != "tpm" {
		t.Fatalf("err %v", err)
	}
	clk.Advance(ue.RetryAfter)
	acquire(t, p, onK0)
}

func TestAffinity(t *testing.T) {
	p, clk := newPoolWith(t, Settings{MaxConcurrencyPerKey: 1, AffinityTTL: time.Minute, AffinityMaxEntries: 2}, keys(3))
	l := acquire(t, p, AcquireOptions{Session: "a"})
	if l.AffinityHit() {
		t.Fatal("hit on first use")
	}
	first := l.Key().ID()
	l.Release(Outcome{Kind: Success})
	for i := 0; i < 5; i++ {
		mustAcquire(t, p).Release(Outcome{Kind: Success}) // move the cursor
		l := acquire(t, p, AcquireOptions{Session: "a"})
		if !l.AffinityHit() || l.Key().ID() != first {
			t.Fatalf("session moved to %s", l.Key().ID())
		}
		l.Release(Outcome{Kind: Success})
	}
	// pinned key busy: the session moves and is re-pinned
	hold := acquire(t, p, AcquireOptions{Skip: func(k *Key) bool { return k.ID() != first }})
	l = acquire(t, p, AcquireOptions{Session: "a"})
	moved := l.Key().ID()
	if moved == first || l.AffinityHit() {
		t.Fatal("did not move")
	}
	l.Release(Outcome{Kind: Success})
	hold.Release(Outcome{Kind: Success})
	if l := acquire(t, p, AcquireOptions{Session: "a"}); l.Key().ID() != moved || !l.AffinityHit() {
		t.Fatal("not re-pinned")
	} else {
		l.Release(Outcome{Kind: Success})
	}
	// TTL
	clk.Advance(time.Minute)
	if l := acquire(t, p, AcquireOptions{Session: "a"}); l.AffinityHit() {
		t.Fatal("expired pin used")
	} else {
		l.Release(Outcome{Kind: Success})
	}
	// LRU bound
	for _, s := range []string{"b", "c", "d"} {
		acquire(t, p, AcquireOptions{Session: s}).Release(Outcome{Kind: Success})
	}
	p.mu.Lock()
	n := p.aff.len()
	p.mu.Unlock()
	if n != 2 {
		t.Fatalf("table holds %d entries, bound 2", n)
	}
	// off
	if err := p.Reconcile(Settings{AffinityTTL: -1}, keys(3)); err != nil {
		t.Fatal(err)
	}
	acquire(t, p, AcquireOptions{Session: "d"}).Release(Outcome{Kind: Success})
	if l := acquire(t, p, AcquireOptions{Session: "d"}); l.AffinityHit() {
		t.Fatal("affinity off still hits")
	}
}

func TestReconcileSwitchesStrategyKeepingState(t *testing.T) {
	p, _ := newTestPool(t, 3, Settings{})
	held := mustAcquire(t, p)
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, RetryAfter: time.Minute, HasRetryAfter: true})
	kcs := keys(3)
	kcs[2].Priority = -1
	if err := p.Reconcile(Settings{Strategy: "priority"}, kcs); err != nil {
		t.Fatal(err)
	}
	if l := mustAcquire(t, p); l.Key().ID() != "k2" {
		t.Fatalf("got %s", l.Key().ID())
	}
	if _, err := p.Acquire(context.Background(), AcquireOptions{}); err == nil {
		t.Fatal("in-flight or cooldown state lost in the switch")
	}
	held.Release(Outcome{Kind: Success})
	if err := p.Reconcile(Settings{Strategy: "fastest"}, kcs); err == nil || !strings.Contains(err.Error(), "round_robin") {
		t.Fatalf("unknown strategy: %v", err)
	}
}

func TestHostDownOutcomeCoolsKey(t *testing.T) {
	kcs := keys(3)
	kcs[0].Host, kcs[1].Host, kcs[2].Host = "a", "a", "b"
	p, clk := newPoolWith(t, Settings{}, kcs)
	l := mustAcquire(t, p)
	o := Classify(0, nil, &net.DNSError{Err: "no such host", Name: "api.invalid"}, nil, clk.Now())
	if !o.HostDown {
		t.Fatal("no HostDown")
	}
	down := map[string]bool{l.Key().Host(): true}
	l.Release(o)
	// the caller's skip: keys sharing the host
	l = acquire(t, p, AcquireOptions{Skip: func(k *Key) bool { return down[k.Host()] }})
	if l.Key().ID() != "k2" {
		t.Fatalf("got %s on a down host", l.Key().ID())
	}
	if s := status(p, "k0"); s.State != "cooling" || s.Reason != "network_error" {
		t.Fatalf("k0 %+v", s)
	}
}

func TestSpendsRetry(t *testing.T) {
	for k := Success; k <= ModelNotFound; k++ {
		want := k == ServerError || k == NetworkError || k == Timeout
		if k.SpendsRetry() != want {
			t.Errorf("%s.SpendsRetry() = %v", k, !want)
		}
		if k.String() == "unknown" {
			t.Errorf("%d has no name", k)
		}
	}
	if !InvalidKey.Dead() || !QuotaExhausted.Dead() || RateLimited.Dead() {
		t.Fatal("Dead")
	}
}

func TestParseQuota(t *testing.T) {
	cases := map[string]Quota{
		"1000 requests per 24h":                {Requests: 1000, Period: 24 * time.Hour},
		"5000000 tokens per 720h":              {Tokens: 5_000_000, Period: 720 * time.Hour},
		"1000 requests, 2000000 tokens per 1d": {Requests: 1000, Tokens: 2_000_000, Period: 24 * time.Hour},
		"100 requests and 5 tokens/30d":        {Requests: 100, Tokens: 5, Period: 30 * 24 * time.Hour},
	}
	for in, want := range cases {
		got, err := ParseQuota(in)
		if err != nil || got != want {
			t.Errorf("ParseQuota(%q) = %+v, %v", in, got, err)
		}
		if again, err := ParseQuota(got.String()); err != nil || again != got {
			t.Errorf("round trip of %q: %+v %v", got.String(), again, err)
		}
	}
	for _, in := range []string{"", "1000 per 24h", "x requests per 24h", "10 requests per", "10 requests per soon", "10 apples per 1h"} {
		if _, err := ParseQuota(in); err == nil {
			t.Errorf("ParseQuota(%q) accepted", in)
		}
	}
}
