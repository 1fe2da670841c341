package keypool

import (
	"context"
	"testing"
	"time"
)

func TestUsageRoundTrip(t *testing.T) {
	clk := newFakeClock()
	q, err := ParseQuota("3 requests per 24h")
	if err != nil {
		t.Fatal(err)
	}
	kc := []KeyConfig{{Fingerprint: "a", ID: "a", Quota: q, Priority: 1}, {Fingerprint: "b", ID: "b", Priority: 2}}
	p, _ := New("u", Settings{MaxConcurrencyPerKey: 5, Strategy: "priority"}, kc, clk)
	for range 2 {
		l, err := p.Acquire(context.Background(), AcquireOptions{})
		if err != nil || l.Key().ID() != "a" {
			t.Fatalf("acquire: %v", err)
		}
		l.Release(Outcome{Kind: Success})
	}
	saved := p.Usage()
	if saved[0].Requests != 2 || !saved[0].HasQuota || saved[0].QuotaRequests != 2 {
		t.Fatalf("usage %+v", saved[0])
	}

	// a new process: a fresh pool, restored
	p2, _ := New("u", Settings{MaxConcurrencyPerKey: 5, Strategy: "priority"}, kc, clk)
	p2.RestoreUsage(saved)
	if got := p2.Usage(); got[0].Requests != 2 || got[0].QuotaRequests != 2 || got[0].Successes != 2 {
		t.Fatalf("restored %+v", got[0])
	}
	// one request left in a's quota, then b
	ids := ""
	for range 2 {
		l, err := p2.Acquire(context.Background(), AcquireOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids += l.Key().ID()
		l.Release(Outcome{Kind: Success})
	}
	if ids != "ab" {
		t.Fatalf("after restore: %s, want ab (quota of a spent)", ids)
	}
	// a period that has ended is not restored
	clk.Advance(25 * time.Hour)
	p3, _ := New("u", Settings{MaxConcurrencyPerKey: 5}, kc, clk)
	p3.RestoreUsage(saved)
	if got := p3.Usage(); got[0].QuotaRequests != 0 || got[0].Requests != 2 {
		t.Fatalf("stale quota restored: %+v", got[0])
	}
}
