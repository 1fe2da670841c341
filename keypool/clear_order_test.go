package keypool

import (
	"testing"
	"time"
)

// TestClusterLateClearIgnored: instance C's success on a key is
// announced to instance A as a Clear event, which may reach A after A
// recorded failures of the key that came after the success (pub/sub
// delivery late on a loaded machine; here C's clock is behind A's, so C's
// success is older than A's failure when its event arrives). A keeps its
// count of consecutive failures, so its breaker opens at the threshold,
// not one failure late; a Clear of a success after A's latest failure
// still closes the breaker and resets the count; a Clear without a time
// (an older instance's) is applied as before.
func TestClusterLateClearIgnored(t *testing.T) {
	clkA, clkC := newFakeClock(), newFakeClock()
	clkA.Advance(time.Hour) // A's clock ahead: C's success at C's now is older than A's failures
	b := NewMemoryBackend(clkA)
	s := Settings{MaxConcurrencyPerKey: 4, FailureThreshold: 2, ErrorCooldown: time.Second, MaxCooldown: time.Second, BreakerOpen: 30 * time.Second}
	a, err := New("main", s, keys(1), clkA)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New("main", s, keys(1), clkC)
	if err != nil {
		t.Fatal(err)
	}
	a.SetBackend(b, SharedOptions{Instance: "A", LeaseTTL: time.Hour})
	c.SetBackend(b, SharedOptions{Instance: "C", LeaseTTL: time.Hour})
	b.Attach(a)
	b.Attach(c)

	lc1, lc2 := mustAcquire(t, c), mustAcquire(t, c)
	mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
	if st := status(a, "k0"); st.ConsecutiveFailures != 1 {
		t.Fatalf("A after its first failure: %+v", st)
	}
	// C's success, at C's now (before A's failure), reaches A late
	lc1.Release(Outcome{Kind: Success, Status: 200})
	if st := status(a, "k0"); st.ConsecutiveFailures != 1 || st.State != StateCooling {
		t.Fatalf("a Clear older than A's failure undid it: %+v", st)
	}
	// A's second failure opens its breaker (threshold 2)
	clkA.Advance(2 * time.Second)
	mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
	if st := status(a, "k0"); st.Breaker != "open" || st.ConsecutiveFailures != 2 {
		t.Fatalf("A's breaker after two failures in a row: %+v", st)
	}
	// a success after A's latest failure: the Clear applies
	clkC.Advance(2 * time.Hour)
	lc2.Release(Outcome{Kind: Success, Status: 200})
	if st := status(a, "k0"); st.Breaker != "closed" || st.ConsecutiveFailures != 0 {
		t.Fatalf("a Clear newer than A's failures left: %+v", st)
	}
	// a Clear without a time is applied as before
	clkA.Advance(2 * time.Second)
	mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
	a.Notify(SharedEvent{Instance: "C", Fingerprint: "fp0", Clear: true})
	if st := status(a, "k0"); st.ConsecutiveFailures != 0 {
		t.Fatalf("a Clear without a time was not applied: %+v", st)
	}
	// the request's own failure (ClientError) is no failure of the key: a
	// Clear from after the key's latest failure applies, although it is
	// older than the client error
	clkA.Advance(2 * time.Second)
	mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
	failed := clkA.Now()
	clkA.Advance(2 * time.Second)
	mustAcquire(t, a).Release(Outcome{Kind: ClientError, Status: 400})
	if st := status(a, "k0"); st.ConsecutiveFailures != 1 {
		t.Fatalf("after a failure and a client error: %+v", st)
	}
	a.Notify(SharedEvent{Instance: "C", Fingerprint: "fp0", Clear: true, At: failed.Add(time.Second)})
	if st := status(a, "k0"); st.ConsecutiveFailures != 0 || st.State != StateReady {
		t.Fatalf("after a client error and a Clear: %+v", st)
	}
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
		a.SetBackend(NewMemoryBackend(clk), SharedOptions{Instance: "A", LeaseTTL: time.Hour})
		mustAcquire(t, a).Release(Outcome{Kind: ServerError, Status: 500})
		clk.Advance(time.Second)
		served := clk.Now() // the key serves on another instance
		clk.Advance(time.Second)
		mustAcquire(t, a).Release(o)
		a.Notify(SharedEvent{Instance: "C", Fingerprint: "fp0", Clear: true, At: served})
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
	a.SetBackend(NewMemoryBackend(clk), SharedOptions{Instance: "A", LeaseTTL: time.Hour})
	calls := recordingVerifier(a)
	mustAcquire(t, a).Release(unanswered)
	<-calls
	served := clk.Now() // the key serves on another instance
	clk.Advance(time.Second)
	a.Confirm("fp0", Outcome{Kind: Timeout})
	waitVerified(t, a, 0)
	if st := status(a, "k0"); st.ConsecutiveFailures != 1 {
		t.Fatalf("after the confirmed timeout: %+v", st)
	}
	a.Notify(SharedEvent{Instance: "C", Fingerprint: "fp0", Clear: true, At: served})
	if st := status(a, "k0"); st.ConsecutiveFailures != 1 || st.State != StateCooling {
		t.Fatalf("a Clear older than the confirmed timeout undid it: %+v", st)
	}
}
