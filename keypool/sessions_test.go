package keypool

import (
	"context"
	"testing"
	"time"
)

// TestSessionsAndUnpin lists the affinity pins (key, last use, expiry,
// hits, most recent first), leaves out expired ones, and unpins one so
// that its next request is placed afresh.
func TestSessionsAndUnpin(t *testing.T) {
	p, clk := newPoolWith(t, Settings{MaxConcurrencyPerKey: 4, AffinityTTL: time.Minute, AffinityMaxEntries: 10}, keys(3))
	for i := 0; i < 3; i++ {
		acquire(t, p, AcquireOptions{Session: "a"}).Release(Outcome{Kind: Success})
	}
	clk.Advance(10 * time.Second)
	lb := acquire(t, p, AcquireOptions{Session: "b"})
	lb.Release(Outcome{Kind: Success})
	got := p.Sessions(0)
	if len(got) != 2 || got[0].Session != "b" || got[1].Session != "a" {
		t.Fatalf("sessions = %+v, want b then a", got)
	}
	if got[0].KeyID != lb.Key().ID() || got[0].Hits != 1 || got[0].ExpiresIn != 60 || !got[0].LastUsed.Equal(clk.Now()) {
		t.Fatalf("b = %+v", got[0])
	}
	if got[1].Hits != 3 || got[1].ExpiresIn != 50 {
		t.Fatalf("a = %+v, want 3 hits, 50 s left", got[1])
	}
	if one := p.Sessions(1); len(one) != 1 || one[0].Session != "b" {
		t.Fatalf("Sessions(1) = %+v", one)
	}
	if !p.Unpin("a") || p.Unpin("a") || p.Unpin("nope") {
		t.Fatal("Unpin: want true once, then false")
	}
	if l := acquire(t, p, AcquireOptions{Session: "a"}); l.AffinityHit() {
		t.Fatal("unpinned session followed its old pin")
	} else {
		l.Release(Outcome{Kind: Success})
	}
	clk.Advance(time.Minute)
	if s := p.Sessions(0); len(s) != 0 {
		t.Fatalf("expired pins listed: %+v", s)
	}
}

// TestSessionHitsRestartOnRepin counts a session's hits per key: when its
// key is out and the session is pinned to another, the count starts again.
func TestSessionHitsRestartOnRepin(t *testing.T) {
	p, _ := newPoolWith(t, Settings{MaxConcurrencyPerKey: 4, AffinityTTL: time.Minute, AffinityMaxEntries: 10}, keys(3))
	var first string
	for i := 0; i < 2; i++ {
		l := acquire(t, p, AcquireOptions{Session: "a"})
		first = l.Key().ID()
		l.Release(Outcome{Kind: Success})
	}
	if !p.Hold(first, ReasonBudget, time.Hour) {
		t.Fatal("Hold matched no key")
	}
	l := acquire(t, p, AcquireOptions{Session: "a"})
	l.Release(Outcome{Kind: Success})
	got := p.Sessions(0)
	if len(got) != 1 || got[0].KeyID == first || got[0].KeyID != l.Key().ID() || got[0].Hits != 1 {
		t.Fatalf("sessions = %+v, want a on a key other than %s with 1 hit", got, first)
	}
}

// TestWaitingCountsBlockedAcquires counts requests blocked for a key.
func TestWaitingCountsBlockedAcquires(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 1})
	l := mustAcquire(t, p)
	done := make(chan struct{}, 2)
	for i := 0; i < 2; i++ {
		go func() {
			if l2, err := p.Acquire(context.Background(), AcquireOptions{Timeout: time.Minute}); err == nil {
				l2.Release(Outcome{Kind: Success})
			}
			done <- struct{}{}
		}()
	}
	waitFor(t, func() bool { return p.Waiting() == 2 })
	l.Release(Outcome{Kind: Success})
	<-done
	<-done
	if n := p.Waiting(); n != 0 {
		t.Fatalf("Waiting = %d after both served", n)
	}
}
