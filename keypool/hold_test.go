package keypool

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestHoldBudget: a held key leaves rotation until the hold ends, shows
// state "budget" with its end, is not counted as a failure (no cooldown,
// breaker or failure count), and comes back by itself on the pool's clock.
func TestHoldBudget(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{Strategy: "priority"})
	l := mustAcquire(t, p) // k0, in flight while the hold is placed
	if l.Key().ID() != "k0" {
		t.Fatalf("first lease on %s, want k0", l.Key().ID())
	}
	if !p.Hold("k0", ReasonBudget, time.Hour) {
		t.Fatal("Hold did not find k0")
	}
	if p.Hold("nope", ReasonBudget, time.Hour) {
		t.Error("Hold found an unknown key")
	}
	l.Release(Outcome{Kind: Success, Status: 200}) // the request in flight finishes normally
	st := status(p, "k0")
	if st.State != StateBudget || st.Reason != ReasonBudget || st.SecondsLeft != 3600 || !st.Until.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("k0 %+v, want budget for 3600s", st)
	}
	if st.Failures != 0 || st.ConsecutiveFailures != 0 || st.Breaker != "closed" || st.Successes != 1 {
		t.Errorf("k0 counted as a failure: %+v", st)
	}
	for i := 0; i < 3; i++ {
		l := mustAcquire(t, p)
		if l.Key().ID() != "k1" {
			t.Fatalf("lease %d on %s while k0 is held, want k1", i, l.Key().ID())
		}
		l.Release(Outcome{Kind: Success, Status: 200})
	}
	// both held: unavailable, Retry-After is the hold's end, not "no keys"
	p.Hold("k1", ReasonBudget, 30*time.Minute)
	_, err := p.Acquire(context.Background(), AcquireOptions{})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.NoKeys || ue.RetryAfter != 30*time.Minute {
		t.Fatalf("acquire with every key held: %v (%+v)", err, ue)
	}
	// another reason's hold is kept when the budget hold is lifted
	p.Hold("k1", Reason("learned"), 10*time.Minute)
	p.Hold("k1", ReasonBudget, 0)
	if st := status(p, "k1"); st.State != StateLimited || st.Reason != "learned" || st.SecondsLeft != 600 {
		t.Errorf("k1 after lifting its budget hold: %+v, want limited (learned) for 600s", st)
	}
	clk.Advance(time.Hour)
	if st := status(p, "k0"); st.State != StateReady {
		t.Fatalf("k0 after the hour: %+v, want ready", st)
	}
	l = mustAcquire(t, p)
	if l.Key().ID() != "k0" {
		t.Errorf("after the hold ended the lease went to %s, want k0", l.Key().ID())
	}
	l.Release(Outcome{Kind: Success, Status: 200})
}

// TestHoldNoEarlyProbe: a held key is never taken as an early probe, even
// when its backoff cooldown is past half-way.
func TestHoldNoEarlyProbe(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{ErrorCooldown: 10 * time.Second})
	mustAcquire(t, p).Release(Outcome{Kind: ServerError, Status: 500})
	p.Hold("k0", ReasonBudget, time.Hour)
	clk.Advance(8 * time.Second)
	if l, err := p.Acquire(context.Background(), AcquireOptions{}); err == nil {
		l.Release(Outcome{Kind: Success, Status: 200})
		t.Fatal("a held key was leased as an early probe")
	}
}
