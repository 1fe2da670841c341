package keypool

import (
	"context"
	"testing"
	"time"
)

// clearPair returns instances A and C of pool "main" (one key, breaker
// threshold 2) sharing a MemoryBackend, each on its own clock: C's clock
// lags A's by an hour.
func clearPair(t *testing.T) (a, c *Pool, b *MemoryBackend, clkA *fakeClock) {
	t.Helper()
	clkA, clkC := newFakeClock(), newFakeClock()
	clkA.Advance(time.Hour)
	b = NewMemoryBackend(clkA)
	s := Settings{MaxConcurrencyPerKey: 4, FailureThreshold: 2, ErrorCooldown: time.Second, MaxCooldown: time.Second, BreakerOpen: 30 * time.Second}
	var err error
	if a, err = New("main", s, keys(1), clkA); err != nil {
		t.Fatal(err)
	}
	if c, err = New("main", s, keys(1), clkC); err != nil {
		t.Fatal(err)
	}
	a.SetBackend(b, SharedOptions{Instance: "A", LeaseTTL: time.Hour})
	c.SetBackend(b, SharedOptions{Instance: "C", LeaseTTL: time.Hour})
	b.Attach(a)
	b.Attach(c)
	return a, c, b, clkA
}

// TestClusterClearOrderIgnoresClocks: whether instance C's success on a
// key undoes instance A's failure of it is decided by the order in which
// the backend applied the two releases (SharedEvent.Order), never by the
// two instances' clocks: C's clock lags A's by an hour, and its success,
// released after A's failure, still resets A's count and closes A's
// breaker (when the Clear carried C's time, A ignored every Clear of C's
// for as long as C lagged).
func TestClusterClearOrderIgnoresClocks(t *testing.T) {
	a, c, _, clk := clearPair(t)
	lc := mustAcquire(t, c)
	mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
	clk.Advance(2 * time.Second)
	mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
	if st := status(a, "k0"); st.Breaker != "open" || st.ConsecutiveFailures != 2 {
		t.Fatalf("A's breaker after two failures in a row: %+v", st)
	}
	lc.Release(Outcome{Kind: Success, Status: 200})
	if st := status(a, "k0"); st.Breaker != "closed" || st.ConsecutiveFailures != 0 {
		t.Fatalf("a success released after A's failures, by an instance whose clock lags, left: %+v", st)
	}
}

// TestClusterLateClearIgnored: instance C's success on a key is
// announced to instance A as a Clear event, which may reach A after A
// released failures of the key that the backend applied after the
// success (pub/sub delivery late on a loaded machine). A keeps its count
// of consecutive failures, so its breaker opens at the threshold, not one
// failure late; so it does when the Clear arrives while A's failure is
// on its way to the backend (its place in the order unknown yet); a Clear
// numbered after A's latest failure still closes the breaker; a Clear
// without a number (an older instance's) is applied as before.
func TestClusterLateClearIgnored(t *testing.T) {
	a, c, b, clk := clearPair(t)
	lc := mustAcquire(t, c)
	mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
	served := b.order // C's success, applied by the backend before A's next failure
	b.order++
	clk.Advance(2 * time.Second)
	mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
	if st := status(a, "k0"); st.Breaker != "open" || st.ConsecutiveFailures != 2 {
		t.Fatalf("A's breaker after two failures in a row: %+v", st)
	}
	a.Notify(SharedEvent{Instance: "C", Fingerprint: "fp0", Clear: true, Order: served + 1})
	if st := status(a, "k0"); st.Breaker != "open" || st.ConsecutiveFailures != 2 {
		t.Fatalf("a Clear applied before A's failure undid it: %+v", st)
	}
	// a success after A's latest failure: the Clear applies
	lc.Release(Outcome{Kind: Success, Status: 200})
	if st := status(a, "k0"); st.Breaker != "closed" || st.ConsecutiveFailures != 0 {
		t.Fatalf("a Clear after A's failures left: %+v", st)
	}
	// a Clear that arrives while A's failure is on its way to the backend
	hb := &hookBackend{Backend: b}
	a.SetBackend(hb, SharedOptions{Instance: "A", LeaseTTL: time.Hour})
	hb.before = func() { a.Notify(SharedEvent{Instance: "C", Fingerprint: "fp0", Clear: true, Order: b.order + 1}) }
	clk.Advance(2 * time.Second)
	mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
	hb.before = nil
	if st := status(a, "k0"); st.ConsecutiveFailures != 1 {
		t.Fatalf("a Clear that crossed A's failure on its way undid it: %+v", st)
	}
	// a Clear without a number is applied as before
	a.Notify(SharedEvent{Instance: "C", Fingerprint: "fp0", Clear: true})
	if st := status(a, "k0"); st.ConsecutiveFailures != 0 {
		t.Fatalf("a Clear without a number was not applied: %+v", st)
	}
	// the request's own failure (ClientError) is no failure of the key: a
	// Clear numbered after the key's latest failure applies, although it
	// is older than the client error
	clk.Advance(2 * time.Second)
	mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
	after := b.order + 1
	b.order++
	clk.Advance(2 * time.Second)
	mustAcquire(t, a).Release(Outcome{Kind: ClientError, Status: 400})
	if st := status(a, "k0"); st.ConsecutiveFailures != 1 {
		t.Fatalf("after a failure and a client error: %+v", st)
	}
	a.Notify(SharedEvent{Instance: "C", Fingerprint: "fp0", Clear: true, Order: after})
	if st := status(a, "k0"); st.ConsecutiveFailures != 0 || st.State != StateReady {
		t.Fatalf("after a client error and a Clear: %+v", st)
	}
}

// hookBackend calls before, when set, at the start of each Release.
type hookBackend struct {
	Backend
	before func()
}

func (h *hookBackend) Release(ctx context.Context, rel *SharedRelease) error {
	if h.before != nil {
		h.before()
	}
	return h.Backend.Release(ctx, rel)
}

// TestClusterClearNotSuppressedByVerdict: a key-level 403 that a
// client's request met (Forbidden, a provisional verdict: the key may
// only be refused that model or feature) after a success elsewhere does
// not make that success's Clear stale: the Clear still resets the key's
// earlier transient failures, and the verdict's own cooldown stands (a
// Clear never lifts a dead-key cooldown). The same for a model-level 403
// (ModelNotFound) and a client error.
func TestClusterClearNotSuppressedByVerdict(t *testing.T) {
	for _, o := range []Outcome{{Kind: Forbidden, Status: 403}, {Kind: ModelNotFound, Status: 403}, {Kind: ClientError, Status: 400}} {
		clk := newFakeClock()
		s := Settings{MaxConcurrencyPerKey: 4, FailureThreshold: 3, ErrorCooldown: time.Second, MaxCooldown: time.Second}
		a, err := New("main", s, keys(1), clk)
		if err != nil {
			t.Fatal(err)
		}
		b := NewMemoryBackend(clk)
		a.SetBackend(b, SharedOptions{Instance: "A", LeaseTTL: time.Hour})
		mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
		b.order++
		served := b.order // the key serves on another instance
		clk.Advance(2 * time.Second)
		mustAcquire(t, a).Release(o)
		a.Notify(SharedEvent{Instance: "C", Fingerprint: "fp0", Clear: true, Order: served})
		st := status(a, "k0")
		if st.ConsecutiveFailures != 0 {
			t.Errorf("%v after a 5xx: a Clear of a later success left %d consecutive failures: %+v", o.Kind, st.ConsecutiveFailures, st)
		}
		if o.Kind == Forbidden && (!st.Provisional || st.Reason != "forbidden") {
			t.Errorf("the Clear lifted the 403's provisional verdict: %+v", st)
		}
	}
}

// TestClusterClearOlderThanConfirmedTimeout: a timeout awaiting the
// answer that the gateway's probe confirms (Confirm with a Timeout) is the
// key's failure from the confirmation on, like a released one: a Clear
// of a success elsewhere before it does not undo it.
func TestClusterClearOlderThanConfirmedTimeout(t *testing.T) {
	clk := newFakeClock()
	a, err := New("main", Settings{MaxConcurrencyPerKey: 4, FailureThreshold: 3}, keys(1), clk)
	if err != nil {
		t.Fatal(err)
	}
	b := NewMemoryBackend(clk)
	a.SetBackend(b, SharedOptions{Instance: "A", LeaseTTL: time.Hour})
	calls := recordingVerifier(a)
	mustAcquire(t, a).Release(unanswered)
	<-calls
	b.order++
	served := b.order // the key serves on another instance
	a.Confirm("fp0", Outcome{Kind: Timeout})
	waitVerified(t, a, 0)
	if st := status(a, "k0"); st.ConsecutiveFailures != 1 {
		t.Fatalf("after the confirmed timeout: %+v", st)
	}
	a.Notify(SharedEvent{Instance: "C", Fingerprint: "fp0", Clear: true, Order: served})
	if st := status(a, "k0"); st.ConsecutiveFailures != 1 || st.State != StateCooling {
		t.Fatalf("a Clear older than the confirmed timeout undid it: %+v", st)
	}
}
