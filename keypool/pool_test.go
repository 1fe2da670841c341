package keypool

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

func keys(n int) []KeyConfig {
	out := make([]KeyConfig, n)
	for i := range out {
		out[i] = KeyConfig{Fingerprint: fmt.Sprintf("fp%d", i), ID: fmt.Sprintf("k%d", i)}
	}
	return out
}

func newTestPool(t testing.TB, n int, s Settings) (*Pool, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	p, err := New("main", s, keys(n), clk)
	if err != nil {
		t.Fatal(err)
	}
	return p, clk
}

func mustAcquire(t *testing.T, p *Pool) *Lease {
	t.Helper()
	l, err := p.Acquire(context.Background(), AcquireOptions{})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return l
}

func status(p *Pool, id string) KeyStatus {
	for _, s := range p.Snapshot() {
		if s.ID == id {
			return s
		}
	}
	return KeyStatus{}
}

// waitFor spins (yielding, never sleeping) until cond holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 1_000_000; i++ {
		if cond() {
			return
		}
		runtime.Gosched()
	}
	t.Fatal("condition never became true")
}

func TestRoundRobinAmongIdleKeys(t *testing.T) {
	p, _ := newTestPool(t, 3, Settings{MaxConcurrencyPerKey: 2})
	var got []string
	for i := 0; i < 6; i++ {
		l := mustAcquire(t, p)
		got = append(got, l.Key().ID())
		l.Release(Outcome{Kind: Success})
	}
	want := []string{"k0", "k1", "k2", "k0", "k1", "k2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

func TestFewestInFlightFirst(t *testing.T) {
	p, _ := newTestPool(t, 3, Settings{MaxConcurrencyPerKey: 3})
	a, b, c := mustAcquire(t, p), mustAcquire(t, p), mustAcquire(t, p)
	if ids := a.Key().ID() + b.Key().ID() + c.Key().ID(); ids != "k0k1k2" {
		t.Fatalf("first round = %s", ids)
	}
	b.Release(Outcome{Kind: Success})
	// k1 now has 0 in flight, the others 1: k1 must win regardless of cursor.
	if d := mustAcquire(t, p); d.Key().ID() != "k1" {
		t.Fatalf("got %s, want k1 (fewest in flight)", d.Key().ID())
	}
}

func TestConcurrencyCapGate(t *testing.T) {
	p, _ := newTestPool(t, 2, Settings{})
	l1, l2 := mustAcquire(t, p), mustAcquire(t, p)
	_, err := p.Acquire(context.Background(), AcquireOptions{})
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want UnavailableError", err)
	}
	if ue.Keys[0].State != "busy" || ue.Keys[1].State != "busy" || ue.NoKeys {
		t.Fatalf("summary = %+v", ue.Keys)
	}
	if ue.RetryAfter != time.Second {
		t.Fatalf("RetryAfter = %v, want 1s", ue.RetryAfter)
	}
	l1.Release(Outcome{Kind: Success})
	l2.Release(Outcome{Kind: Success})
	if s := status(p, "k0"); s.InFlight != 0 || s.State != "ready" {
		t.Fatalf("k0 = %+v", s)
	}
}

func TestCooldownAfterSuccess(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{CooldownAfterSuccess: 300 * time.Millisecond})
	mustAcquire(t, p).Release(Outcome{Kind: Success})
	s := status(p, "k0")
	if s.State != "cooling" || s.Reason != "cooldown_after_success" || !s.Until.Equal(clk.Now().Add(300*time.Millisecond)) {
		t.Fatalf("after success: %+v", s)
	}
	clk.Advance(299 * time.Millisecond)
	if _, err := p.Acquire(context.Background(), AcquireOptions{}); err == nil {
		t.Fatal("acquired during cooldown")
	}
	clk.Advance(time.Millisecond)
	mustAcquire(t, p)
}

func TestRateLimitRetryAfterIsAuthoritative(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{MaxCooldown: time.Minute})
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: 5 * time.Minute, HasRetryAfter: true})
	s := status(p, "k0")
	if s.Reason != "rate_limited" || s.SecondsLeft != 300 || s.LastStatus != 429 {
		t.Fatalf("status = %+v", s)
	}
	// capped by MaxHintCooldown
	clk.Advance(5 * time.Minute)
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, RetryAfter: 100 * time.Hour, HasRetryAfter: true})
	if s := status(p, "k0"); s.SecondsLeft != 24*3600 {
		t.Fatalf("hint not capped: %d s", s.SecondsLeft)
	}
}

func TestRateLimitBackoffDoubles(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{RateLimitCooldown: 3 * time.Second, MaxCooldown: 10 * time.Second})
	for _, want := range []int{3, 6, 10, 10} {
		mustAcquire(t, p).Release(Outcome{Kind: RateLimited, Status: 429})
		if s := status(p, "k0"); s.SecondsLeft != want {
			t.Fatalf("cooldown = %ds, want %ds", s.SecondsLeft, want)
		}
		clk.Advance(time.Duration(want) * time.Second)
	}
	mustAcquire(t, p).Release(Outcome{Kind: Success})
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited})
	if s := status(p, "k0"); s.SecondsLeft != 3 {
		t.Fatalf("success did not reset the ladder: %ds", s.SecondsLeft)
	}
}

func TestBreakerOpensAndHalfOpenProbe(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 5, ErrorCooldown: time.Second, BreakerOpen: 30 * time.Second, FailureThreshold: 3})
	for i := 0; i < 3; i++ {
		mustAcquire(t, p).Release(Outcome{Kind: ServerError, Status: 500})
		clk.Advance(10 * time.Second) // past the error cooldown
	}
	s := status(p, "k0")
	if s.Breaker != "open" || s.State != "breaker_open" || s.ConsecutiveFailures != 3 {
		t.Fatalf("after 3 failures: %+v", s)
	}
	clk.Advance(30 * time.Second)
	probe := mustAcquire(t, p)
	if !probe.Probe() {
		t.Fatal("first request after open period is not the probe")
	}
	if _, err := p.Acquire(context.Background(), AcquireOptions{}); err == nil {
		t.Fatal("second request let through while the probe is in flight")
	}
	// failed probe: reopen with doubled time
	probe.Release(Outcome{Kind: ServerError, Status: 503})
	if s := status(p, "k0"); s.Breaker != "open" || s.SecondsLeft != 60 {
		t.Fatalf("after failed probe: %+v", s)
	}
	clk.Advance(60 * time.Second)
	probe = mustAcquire(t, p)
	probe.Release(Outcome{Kind: Success})
	if s := status(p, "k0"); s.Breaker != "closed" || s.State != "ready" || s.ConsecutiveFailures != 0 {
		t.Fatalf("after good probe: %+v", s)
	}
}

func TestDeadKeyReasons(t *testing.T) {
	p, _ := newTestPool(t, 4, Settings{})
	cases := []struct {
		kind OutcomeKind
		secs int
	}{{InvalidKey, 300}, {NoCredit, 86400}, {Forbidden, 86400}}
	for _, c := range cases {
		mustAcquire(t, p).Release(Outcome{Kind: c.kind})
	}
	for i, c := range cases {
		s := status(p, fmt.Sprintf("k%d", i))
		if s.Reason != c.kind.Reason() || s.SecondsLeft != 60 || !s.Provisional {
			t.Fatalf("k%d before its probe: %+v, want %s provisional for 60s", i, s, c.kind)
		}
		p.Confirm(fmt.Sprintf("fp%d", i), Outcome{Kind: c.kind})
		s = status(p, fmt.Sprintf("k%d", i))
		if s.Reason != c.kind.Reason() || s.SecondsLeft != c.secs || s.Provisional || s.Source != "fixed" {
			t.Fatalf("k%d: %+v, want %s for %ds", i, s, c.kind, c.secs)
		}
	}
	if l := mustAcquire(t, p); l.Key().ID() != "k3" {
		t.Fatalf("got %s, want the only live key k3", l.Key().ID())
	}
}

func TestClientErrorsDoNotPenalise(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{})
	mustAcquire(t, p).Release(Outcome{Kind: ClientError, Status: 400})
	mustAcquire(t, p).Release(Outcome{Kind: Canceled})
	if s := status(p, "k0"); s.State != "ready" || s.Failures != 0 {
		t.Fatalf("status = %+v", s)
	}
}

func TestWaiterWokenByRelease(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{})
	l := mustAcquire(t, p)
	got := make(chan error, 1)
	go func() {
		l2, err := p.Acquire(context.Background(), AcquireOptions{Timeout: time.Minute})
		if err == nil {
			l2.Release(Outcome{Kind: Success})
		}
		got <- err
	}()
	waitFor(t, func() bool { return clk.pending() == 1 })
	l.Release(Outcome{Kind: Success})
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestWaiterWokenByCooldownEnd(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{})
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, RetryAfter: 2 * time.Second, HasRetryAfter: true})
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, RetryAfter: time.Second, HasRetryAfter: true})
	got := make(chan *Lease, 1)
	go func() {
		l, err := p.Acquire(context.Background(), AcquireOptions{Timeout: 30 * time.Second})
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitFor(t, func() bool { return clk.pending() == 1 })
	clk.Advance(time.Second)
	if l := <-got; l == nil || l.Key().ID() != "k1" {
		t.Fatalf("woke with %v, want k1 (first to free)", l)
	}
}

func TestAcquireTimeoutSummary(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{})
	l := mustAcquire(t, p)
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: 90 * time.Second, HasRetryAfter: true})
	got := make(chan error, 1)
	go func() {
		_, err := p.Acquire(context.Background(), AcquireOptions{Timeout: 10 * time.Second})
		got <- err
	}()
	waitFor(t, func() bool { return clk.pending() == 1 })
	clk.Advance(10 * time.Second)
	err := <-got
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v", err)
	}
	if ue.RetryAfter != 80*time.Second {
		t.Fatalf("RetryAfter = %v, want 80s", ue.RetryAfter)
	}
	want := `pool "main": no key available: k0 busy; k1 cooling (rate_limited, 80s left)`
	if err.Error() != want {
		t.Fatalf("message = %q\nwant      %q", err.Error(), want)
	}
	l.Release(Outcome{Kind: Success})
}

func TestAcquireCanceled(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{})
	mustAcquire(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := p.Acquire(ctx, AcquireOptions{Timeout: time.Minute})
		got <- err
	}()
	waitFor(t, func() bool { return clk.pending() == 1 })
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestFailFastWhenWaitingCannotHelp(t *testing.T) {
	p, _ := newTestPool(t, 2, Settings{})
	// every key skipped: no point waiting
	_, err := p.Acquire(context.Background(), AcquireOptions{Timeout: time.Hour, Skip: func(*Key) bool { return true }})
	if !errors.Is(err, ErrNoKeys) {
		t.Fatalf("err = %v, want ErrNoKeys", err)
	}
	// every key out for 5 minutes, timeout 30s: fail at once with Retry-After
	mustAcquire(t, p).Release(Outcome{Kind: InvalidKey, Status: 401})
	mustAcquire(t, p).Release(Outcome{Kind: InvalidKey, Status: 401})
	p.Confirm("fp0", Outcome{Kind: InvalidKey, Status: 401})
	p.Confirm("fp1", Outcome{Kind: InvalidKey, Status: 401})
	_, err = p.Acquire(context.Background(), AcquireOptions{Timeout: 30 * time.Second})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.RetryAfter != 5*time.Minute || errors.Is(err, ErrNoKeys) {
		t.Fatalf("err = %v", err)
	}
}

func TestReconcileKeepsState(t *testing.T) {
	p, _ := newTestPool(t, 3, Settings{})
	held := mustAcquire(t, p) // k0 in flight
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, RetryAfter: time.Minute, HasRetryAfter: true})
	removed := mustAcquire(t, p) // k2, will be removed
	if err := p.Reconcile(Settings{MaxConcurrencyPerKey: 2}, keys(2)); err != nil {
		t.Fatal(err)
	}
	if s := status(p, "k0"); s.InFlight != 1 || s.Cap != 2 {
		t.Fatalf("k0 = %+v", s)
	}
	if s := status(p, "k1"); s.State != "cooling" || s.SecondsLeft != 60 {
		t.Fatalf("k1 lost its cooldown: %+v", s)
	}
	if p.Len() != 2 {
		t.Fatalf("len = %d", p.Len())
	}
	removed.Release(Outcome{Kind: Success}) // must not panic or resurrect k2
	held.Release(Outcome{Kind: Success})
	if len(p.Snapshot()) != 2 {
		t.Fatal("removed key came back")
	}
	if err := p.Reconcile(Settings{}, append(keys(1), keys(1)...)); err == nil {
		t.Fatal("duplicate fingerprint accepted")
	}
}

func TestDisableAndClear(t *testing.T) {
	p, _ := newTestPool(t, 2, Settings{})
	if !p.SetDisabled("k0", true) {
		t.Fatal("k0 not found")
	}
	mustAcquire(t, p).Release(Outcome{Kind: InvalidKey})
	if ok, why := p.Ready(); ok || why != "no key ready (1 disabled, 1 invalid_key)" {
		t.Fatalf("ready = %v %q", ok, why)
	}
	if n := p.ClearCooldown(""); n != 2 {
		t.Fatalf("cleared %d", n)
	}
	if l := mustAcquire(t, p); l.Key().ID() != "k1" {
		t.Fatalf("got %s", l.Key().ID())
	}
	p.SetDisabled("fp0", false)
	if ok, _ := p.Ready(); !ok {
		t.Fatal("not ready after enable")
	}
}

func TestDoubleReleaseIgnored(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{})
	l := mustAcquire(t, p)
	l.Release(Outcome{Kind: Success})
	l.Release(Outcome{Kind: Success})
	if s := status(p, "k0"); s.InFlight != 0 {
		t.Fatalf("in flight = %d", s.InFlight)
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			p, err := New("bench", Settings{MaxConcurrencyPerKey: 1 << 20}, keys(n), SystemClock{})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := p.Acquire(ctx, AcquireOptions{})
				if err != nil {
					b.Fatal(err)
				}
				l.Release(Outcome{Kind: Success})
			}
		})
		b.Run(fmt.Sprintf("keys=%d/parallel", n), func(b *testing.B) {
			p, _ := New("bench", Settings{MaxConcurrencyPerKey: 1 << 20}, keys(n), SystemClock{})
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l, err := p.Acquire(ctx, AcquireOptions{})
					if err != nil {
						b.Error(err)
						return
					}
					l.Release(Outcome{Kind: Success})
				}
			})
		})
	}
}
