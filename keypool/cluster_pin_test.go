package keypool

import (
	"context"
	"testing"
	"time"
)

// TestClusterFollowedPinCountsOnlyPlacedRequests: an instance that learns
// a session's pin from the shared state (another instance pinned it)
// records the pin with no hit, since none of its requests went to that
// key yet; each request then placed on the key through the pin counts
// once (Sessions, as the admin API and console show it).
func TestClusterFollowedPinCountsOnlyPlacedRequests(t *testing.T) {
	ps, _, _ := cluster(t, 2, Settings{MaxConcurrencyPerKey: 10, AffinityTTL: time.Hour}, keys(4), time.Minute)
	ctx := context.Background()
	only3 := func(k *Key) bool { return k.ID() != "k3" }
	first, err := ps[0].Acquire(ctx, AcquireOptions{Session: "s1", Skip: only3})
	if err != nil || first.Key().ID() != "k3" {
		t.Fatalf("A's first request: %v", err)
	}
	first.Release(Outcome{Kind: Success})
	pin := func(p *Pool) SessionPin {
		t.Helper()
		s := p.Sessions(0)
		if len(s) != 1 || s[0].Session != "s1" {
			t.Fatalf("sessions %+v, want s1 alone", s)
		}
		return s[0]
	}
	if a := pin(ps[0]); a.KeyID != "k3" || a.Hits != 1 {
		t.Fatalf("A after one request: %+v, want k3 with 1 hit", a)
	}
	l, err := ps[1].Acquire(ctx, AcquireOptions{Session: "s1"})
	if err != nil || l.Key().ID() == "k3" {
		t.Fatalf("B's first request: %v (on k3 already: the test would not show the pin being learned)", err)
	}
	l.Release(Outcome{Kind: Success})
	if b := pin(ps[1]); b.KeyID != "k3" || b.Hits != 0 {
		t.Fatalf("B after learning the pin: %+v, want k3 with 0 hits (no request of B went to k3)", b)
	}
	for i := 1; i <= 3; i++ {
		l, err := ps[1].Acquire(ctx, AcquireOptions{Session: "s1"})
		if err != nil || l.Key().ID() != "k3" || !l.AffinityHit() {
			t.Fatalf("B's pinned request %d: %v", i, err)
		}
		l.Release(Outcome{Kind: Success})
		if b := pin(ps[1]); b.KeyID != "k3" || b.Hits != int64(i) {
			t.Fatalf("B after %d pinned requests: %+v, want %d hits", i, b, i)
		}
	}
}
