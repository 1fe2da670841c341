package keypool

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// cluster returns n pools named "main" over the same keys, sharing one
// MemoryBackend on one fake clock: n gateway instances in one process.
func cluster(t *testing.T, n int, s Settings, kc []KeyConfig, lease time.Duration) ([]*Pool, *MemoryBackend, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	b := NewMemoryBackend(clk)
	ps := make([]*Pool, n)
	for i := range ps {
		p, err := New("main", s, kc, clk)
		if err != nil {
			t.Fatal(err)
		}
		p.SetBackend(b, SharedOptions{Instance: fmt.Sprintf("inst%d", i), LeaseTTL: lease, Poll: time.Second})
		b.Attach(p)
		ps[i] = p
	}
	return ps, b, clk
}

func tryAcquire(p *Pool) (*Lease, error) {
	return p.Acquire(context.Background(), AcquireOptions{})
}

func TestClusterCapSharedAndReleaseWakes(t *testing.T) {
	ps, b, clk := cluster(t, 2, Settings{MaxConcurrencyPerKey: 1}, keys(1), time.Minute)
	a := mustAcquire(t, ps[0])
	if _, err := tryAcquire(ps[1]); err == nil {
		t.Fatal("instance B leased a key capped at 1 that A holds")
	}
	if s := status(ps[1], "k0"); s.State != "busy" {
		t.Fatalf("B's view of the key: %+v", s)
	}
	got := make(chan error, 1)
	go func() {
		l, err := ps[1].Acquire(context.Background(), AcquireOptions{Timeout: time.Minute})
		if err == nil {
			l.Release(Outcome{Kind: Success})
		}
		got <- err
	}()
	waitFor(t, func() bool { return clk.pending() == 1 }) // B waits, without polling
	calls := b.Calls()
	a.Release(Outcome{Kind: Success})
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// A's release, B's acquire and B's release: one round trip each
	if d := b.Calls() - calls; d != 3 {
		t.Fatalf("round trips for release+acquire+release = %d, want 3", d)
	}
}

func TestClusterCooldownSeenByOthers(t *testing.T) {
	ps, _, clk := cluster(t, 2, Settings{MaxConcurrencyPerKey: 5}, keys(2), time.Minute)
	var l *Lease
	for l == nil || l.Key().ID() != "k0" {
		if l != nil {
			l.Release(Outcome{Kind: Success})
		}
		l = mustAcquire(t, ps[0])
	}
	l.Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: 30 * time.Second, HasRetryAfter: true})
	s := status(ps[1], "k0")
	if s.State != "cooling" || s.Reason != "rate_limited" || s.SecondsLeft != 30 {
		t.Fatalf("B's view after A's 429: %+v", s)
	}
	for i := 0; i < 10; i++ {
		l := mustAcquire(t, ps[1])
		if l.Key().ID() == "k0" {
			t.Fatal("B used the key A saw cooling")
		}
		l.Release(Outcome{Kind: Success})
	}
	clk.Advance(30 * time.Second)
	seen := false
	for i := 0; i < 4 && !seen; i++ {
		l := mustAcquire(t, ps[1])
		seen = l.Key().ID() == "k0"
		l.Release(Outcome{Kind: Success})
	}
	if !seen {
		t.Fatal("the key was not used again after the cooldown")
	}
}

func TestClusterQuotaCountedOnce(t *testing.T) {
	kc := keys(1)
	kc[0].Quota = Quota{Requests: 7, Period: time.Hour}
	ps, _, _ := cluster(t, 3, Settings{MaxConcurrencyPerKey: 100}, kc, time.Minute)
	granted := 0
	for i := 0; i < 30; i++ {
		l, err := tryAcquire(ps[i%3])
		if err != nil {
			continue
		}
		granted++
		l.Release(Outcome{Kind: Success})
	}
	if granted != 7 {
		t.Fatalf("granted %d requests cluster-wide on a quota of 7", granted)
	}
}

func TestClusterSingleHalfOpenProbe(t *testing.T) {
	s := Settings{MaxConcurrencyPerKey: 5, ErrorCooldown: time.Second, BreakerOpen: 30 * time.Second, FailureThreshold: 3}
	ps, _, clk := cluster(t, 3, s, keys(1), time.Minute)
	for i := 0; i < 3; i++ {
		mustAcquire(t, ps[0]).Release(Outcome{Kind: ServerError, Status: 500})
		clk.Advance(2 * time.Second)
	}
	if st := status(ps[2], "k0"); st.State != "breaker_open" {
		t.Fatalf("C's view after A opened the breaker: %+v", st)
	}
	clk.Advance(30 * time.Second)
	var probes []*Lease
	for i := 0; i < 9; i++ {
		if l, err := tryAcquire(ps[i%3]); err == nil {
			probes = append(probes, l)
		}
	}
	if len(probes) != 1 || !probes[0].Probe() {
		t.Fatalf("%d leases after the open period, want exactly one probe", len(probes))
	}
	probes[0].Release(Outcome{Kind: Success})
	for i := 0; i < 3; i++ {
		l, err := tryAcquire(ps[i])
		if err != nil || l.Probe() {
			t.Fatalf("instance %d after a good probe: %v probe=%v", i, err, l != nil && l.Probe())
		}
		l.Release(Outcome{Kind: Success})
	}
}

func TestClusterCrashedInstanceLeaseExpires(t *testing.T) {
	ps, _, clk := cluster(t, 2, Settings{MaxConcurrencyPerKey: 1}, keys(1), 10*time.Second)
	mustAcquire(t, ps[0]) // A crashes holding it: never released
	if _, err := tryAcquire(ps[1]); err == nil {
		t.Fatal("B leased a held key")
	}
	clk.Advance(9 * time.Second)
	if _, err := tryAcquire(ps[1]); err == nil {
		t.Fatal("B leased the key before the lease expired")
	}
	clk.Advance(2 * time.Second) // past the lease (and B's poll)
	l, err := tryAcquire(ps[1])
	if err != nil {
		t.Fatalf("slot did not come back after the lease: %v", err)
	}
	l.Release(Outcome{Kind: Success})
}

func TestClusterDegradedThenResync(t *testing.T) {
	ps, b, clk := cluster(t, 2, Settings{MaxConcurrencyPerKey: 1}, keys(1), time.Minute)
	b.SetFailing(true)
	la := mustAcquire(t, ps[0]) // each serves on local state
	lb := mustAcquire(t, ps[1])
	if _, err := tryAcquire(ps[0]); err == nil {
		t.Fatal("local cap not enforced while degraded")
	}
	lb.Release(Outcome{Kind: Success})
	b.SetFailing(false)
	if err := ps[0].Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second) // past B's mirrored busy gate, if any
	if _, err := tryAcquire(ps[1]); err == nil {
		t.Fatal("after resync, B leased the key A still holds")
	}
	la.Release(Outcome{Kind: Success})
	l, err := tryAcquire(ps[1])
	if err != nil {
		t.Fatalf("after A's release: %v", err)
	}
	l.Release(Outcome{Kind: Success})
}

func TestClusterRoundRobinSpreads(t *testing.T) {
	ps, _, _ := cluster(t, 2, Settings{MaxConcurrencyPerKey: 100}, keys(4), time.Minute)
	counts := map[string]int{}
	var held []*Lease
	for i := 0; i < 40; i++ {
		l := mustAcquire(t, ps[i%2])
		counts[l.Key().ID()]++
		held = append(held, l)
	}
	for id, n := range counts {
		if n != 10 {
			t.Fatalf("key %s got %d of 40 concurrent leases (want 10 each): %v", id, n, counts)
		}
	}
	for _, l := range held {
		l.Release(Outcome{Kind: Success})
	}
}

func TestClusterClearReachesOthers(t *testing.T) {
	ps, _, _ := cluster(t, 2, Settings{MaxConcurrencyPerKey: 1}, keys(1), time.Minute)
	mustAcquire(t, ps[0]).Release(Outcome{Kind: InvalidKey, Status: 401})
	if _, err := tryAcquire(ps[1]); err == nil {
		t.Fatal("B leased a key A found invalid")
	}
	if n := ps[0].ClearCooldown("k0"); n != 1 {
		t.Fatalf("cleared %d", n)
	}
	l, err := tryAcquire(ps[1])
	if err != nil {
		t.Fatalf("B after A's clear: %v", err)
	}
	l.Release(Outcome{Kind: Success})
}

func TestClusterAffinityFollowsSession(t *testing.T) {
	ps, _, _ := cluster(t, 2, Settings{MaxConcurrencyPerKey: 10, AffinityTTL: time.Hour}, keys(4), time.Minute)
	ctx := context.Background()
	// A pins the session to k3, a key B's strategy does not offer first
	only3 := func(k *Key) bool { return k.ID() != "k3" }
	first, err := ps[0].Acquire(ctx, AcquireOptions{Session: "s1", Skip: only3})
	if err != nil || first.Key().ID() != "k3" {
		t.Fatalf("A's first request: %v", err)
	}
	first.Release(Outcome{Kind: Success})
	// B has never seen the session: its first request goes where B's
	// strategy puts it and learns the shared pin; the next ones follow it
	l, err := ps[1].Acquire(ctx, AcquireOptions{Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Key().ID() == "k3" {
		t.Fatal("B's first request already on k3: the test would not show the pin being learned")
	}
	l.Release(Outcome{Kind: Success})
	for i := 0; i < 5; i++ {
		l, err := ps[1].Acquire(ctx, AcquireOptions{Session: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		if l.Key().ID() != "k3" || !l.AffinityHit() {
			t.Fatalf("request %d went to %s (affinity hit %v), the session is pinned to k3", i, l.Key().ID(), l.AffinityHit())
		}
		l.Release(Outcome{Kind: Success})
	}
}

func TestClusterUnavailableSummaryNamesSharedReason(t *testing.T) {
	ps, _, _ := cluster(t, 2, Settings{MaxConcurrencyPerKey: 1}, keys(1), time.Minute)
	mustAcquire(t, ps[0]).Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: 20 * time.Second, HasRetryAfter: true})
	_, err := tryAcquire(ps[1])
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.RetryAfter != 20*time.Second {
		t.Fatalf("B's error: %v", err)
	}
}

func TestClusterEarlyProbeKeepsSharedBreakerOpen(t *testing.T) {
	s := Settings{MaxConcurrencyPerKey: 5, ErrorCooldown: time.Second, BreakerOpen: time.Minute, FailureThreshold: 2}
	ps, b, clk := cluster(t, 2, s, keys(1), time.Hour)
	for i := 0; i < 2; i++ {
		mustAcquire(t, ps[0]).Release(Outcome{Kind: ServerError, Status: 500})
		clk.Advance(2 * time.Second)
	}
	clk.Advance(35 * time.Second) // past half of the open period: A may probe early
	l, err := tryAcquire(ps[0])
	if err != nil || !l.Probe() {
		t.Fatalf("early probe: %v", err)
	}
	l.Release(Outcome{Kind: ServerError, Status: 500})
	st, _ := b.Snapshot(context.Background(), "main", []string{"fp0"})
	if st[0].Breaker != "open" || st[0].BreakerLeft <= 0 {
		t.Fatalf("a failed early probe changed the shared breaker: %+v", st[0])
	}
	if _, err := tryAcquire(ps[1]); err == nil {
		t.Fatal("B leased the key during the open period")
	}
}

func TestClusterInterruptedProbeThenFailureReopens(t *testing.T) {
	s := Settings{MaxConcurrencyPerKey: 5, ErrorCooldown: time.Second, BreakerOpen: 10 * time.Second, FailureThreshold: 2}
	ps, b, clk := cluster(t, 3, s, keys(1), time.Hour)
	for i := 0; i < 2; i++ {
		mustAcquire(t, ps[0]).Release(Outcome{Kind: ServerError, Status: 500})
		clk.Advance(2 * time.Second)
	}
	clk.Advance(10 * time.Second)
	l := mustAcquire(t, ps[1])
	if !l.Probe() {
		t.Fatal("B's lease after the open period is not the probe")
	}
	l.Release(Outcome{Kind: Canceled}) // told nothing: the breaker stays half-open
	l = mustAcquire(t, ps[2])
	if !l.Probe() {
		t.Fatal("C's lease is not the probe")
	}
	l.Release(Outcome{Kind: ServerError, Status: 503})
	st, _ := b.Snapshot(context.Background(), "main", []string{"fp0"})
	if st[0].Breaker != "open" || st[0].BreakerLeft < 15*time.Second {
		t.Fatalf("a failed half-open probe did not reopen the shared breaker (doubled): %+v", st[0])
	}
}

// TestClusterProvisionalVerdictShared: a provisional verdict one instance
// made (a 403 a client's request met, its probe running) reaches the
// others until the probe's answer is due, not for the whole provisional
// cooldown: another instance tells its client to come back then (not in
// 60 s), and a request there waits for the answer within its timeout: it
// gets the key when the probe refutes the verdict, and the pool is dead
// when the probe confirms it.
func TestClusterProvisionalVerdictShared(t *testing.T) {
	for _, confirm := range []OutcomeKind{Success, Forbidden} {
		ps, _, clk := cluster(t, 2, Settings{}, keys(1), time.Minute)
		proceed := make(chan struct{})
		ps[0].SetVerifier(func(k *Key, o Outcome) {
			<-proceed
			ps[0].Confirm(k.Fingerprint(), Outcome{Kind: confirm, Status: 403})
		}, 10*time.Second)
		mustAcquire(t, ps[0]).Release(Outcome{Kind: Forbidden, Status: 403})
		if st := status(ps[0], "k0"); !st.Provisional || st.SecondsLeft != 60 || st.VerdictDue.IsZero() {
			close(proceed)
			t.Fatalf("A's view: %+v", st)
		}
		_, err := tryAcquire(ps[1])
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.RetryAfter != 10*time.Second || ue.KeysDead() {
			close(proceed)
			t.Fatalf("confirm %v: B during the probe: %v (RetryAfter %v); want a wait of 10s until the probe's answer", confirm, err, ue.RetryAfter)
		}
		type result struct {
			l   *Lease
			err error
		}
		done := make(chan result, 1)
		go func() {
			l, err := ps[1].Acquire(context.Background(), AcquireOptions{Timeout: 30 * time.Second})
			done <- result{l, err}
		}()
		waitFor(t, func() bool { return clk.pending() == 1 || len(done) == 1 })
		select {
		case r := <-done:
			close(proceed)
			t.Fatalf("confirm %v: B's request returned during the probe (%v); want it to wait", confirm, r.err)
		default:
		}
		close(proceed)
		r := <-done
		switch confirm {
		case Success:
			if r.err != nil || r.l == nil {
				t.Fatalf("B after a refuting probe: %v", r.err)
			}
			r.l.Release(Outcome{Kind: Success})
		default:
			if !errors.As(r.err, &ue) || !ue.KeysDead() {
				t.Fatalf("B after a confirming probe: %v; want the pool dead", r.err)
			}
		}
	}
}

// TestClusterResetNotUndoneByOlderRelease: an operator resets a key on
// instance A (say after topping up its credit) while a request B sent
// before the reset is still out; that request's 402 arrives after the
// reset. It is counted, but neither B nor the cluster cools the key for
// it: a failure older than the reset does not undo it. A request sent
// after the reset still cools the key for its 402.
func TestClusterResetNotUndoneByOlderRelease(t *testing.T) {
	ps, _, _ := cluster(t, 2, Settings{MaxConcurrencyPerKey: 2}, keys(1), time.Minute)
	old := mustAcquire(t, ps[1])
	if n := ps[0].ClearCooldown("k0"); n != 1 {
		t.Fatalf("ClearCooldown cleared %d keys", n)
	}
	old.Release(Outcome{Kind: NoCredit, Status: 402})
	for i, p := range ps {
		if st := status(p, "k0"); st.State != StateReady {
			t.Fatalf("instance %d after the older 402: %+v; want ready", i, st)
		}
		l, err := tryAcquire(p)
		if err != nil {
			t.Fatalf("instance %d after the older 402: %v", i, err)
		}
		l.Release(Outcome{Kind: Success})
	}
	if st := status(ps[1], "k0"); st.Failures != 1 {
		t.Errorf("B's failures %d, want the older 402 counted", st.Failures)
	}
	// a request sent after the reset cools the key for its 402
	mustAcquire(t, ps[1]).Release(Outcome{Kind: NoCredit, Status: 402})
	for i, p := range ps {
		if _, err := tryAcquire(p); err == nil {
			t.Fatalf("instance %d leased the key after a newer 402", i)
		}
	}
	// the same on one instance: a lease taken before the operator's reset
	p, _ := newTestPool(t, 1, Settings{})
	l := mustAcquire(t, p)
	p.ClearCooldown("")
	l.Release(Outcome{Kind: ServerError, Status: 500})
	if st := status(p, "k0"); st.State != StateReady || st.ConsecutiveFailures != 0 {
		t.Fatalf("one instance after an older 500: %+v; want ready", st)
	}
}
