package keypool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// checkIndex verifies, under the pool's lock, that the ready index and the
// timed heap agree with every key's gates: a ready key has all gates open
// and sits in the strategy's index with an up-to-date sort key; a key
// that is not ready is either waiting for an event (busy, disabled, probe
// in flight) or filed in the timed heap no later than its gate opens.
func checkIndex(t testing.TB, p *Pool) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	for _, k := range p.keys {
		ok, reason, until := k.gate(now, &p.settings, p.pace)
		switch {
		case k.ready && !ok:
			t.Fatalf("%s indexed as ready but gated: %s until %v", k.id, reason, until)
		case !k.ready && ok:
			if p.timed.pos[k.idx] < 0 || k.wakeAt.After(now) {
				t.Fatalf("%s eligible but neither indexed nor due in the timed heap (pos %d, wake %v, now %v, in flight %d)", k.id, p.timed.pos[k.idx], k.wakeAt, now, k.inFlight)
			}
		case !k.ready && !until.IsZero():
			if p.timed.pos[k.idx] < 0 {
				t.Fatalf("%s gated (%s) until %v but not in the timed heap", k.id, reason, until)
			}
			if k.wakeAt.After(until.Add(time.Microsecond)) { // float rounding in the tpm bucket
				t.Fatalf("%s wakes at %v, after its gate opens at %v", k.id, k.wakeAt, until)
			}
		}
		if k.ready {
			checkInStrategy(t, p, k)
		}
		if k.inFlight < 0 {
			t.Fatalf("%s in flight %d", k.id, k.inFlight)
		}
	}
}

func checkHeapEntry(t testing.TB, h *keyHeap, k *Key) {
	t.Helper()
	i := h.pos[k.idx]
	if i < 0 || h.es[i].k != k {
		t.Fatalf("%s ready but not in the strategy heap", k.id)
	}
	if h.es[i].p != h.prio(k) {
		t.Fatalf("%s has a stale sort key %+v, want %+v", k.id, h.es[i].p, h.prio(k))
	}
}

func checkRR(t testing.TB, r *rrIndex, k *Key) {
	t.Helper()
	if k.level != k.inFlight || !r.levels[k.level].has(k.slot) {
		t.Fatalf("%s filed at level %d, in flight %d", k.id, k.level, k.inFlight)
	}
}

func checkInStrategy(t testing.TB, p *Pool, k *Key) {
	t.Helper()
	switch s := p.strat.(type) {
	case *roundRobin:
		checkRR(t, &s.rr, k)
	case *priorityStrategy:
		checkRR(t, s.tiers[s.tierOf[k]], k)
	case *weighted:
		checkHeapEntry(t, &s.h, k)
	case *leastUsed:
		if s.h.pos[k.idx] < 0 {
			t.Fatalf("%s ready but not in the least_used heap", k.id)
		}
	case *lowestLatency:
		checkHeapEntry(t, &s.h, k)
		if !s.set.bits.has(k.slot) {
			t.Fatalf("%s not in the ready set", k.id)
		}
	case *pace:
		if s.isFree[k] {
			checkRR(t, &s.free, k)
		} else if s.byKey[k].h.pos[k.idx] < 0 {
			t.Fatalf("%s ready but not in its pace group", k.id)
		}
	case *random:
		if !s.set.bits.has(k.slot) {
			t.Fatalf("%s not in the ready set", k.id)
		}
	}
}

// TestIndexInvariants drives every strategy through random outcomes,
// limits and clock jumps on one goroutine, checking the index after every
// step.
func TestIndexInvariants(t *testing.T) {
	for _, name := range Strategies() {
		t.Run(name, func(t *testing.T) {
			kcs := keys(12)
			for i := range kcs {
				kcs[i].MaxConcurrency = 1 + i%3
				kcs[i].Priority = i % 3
				kcs[i].Weight = 1 + i%4
				if i%4 == 1 {
					kcs[i].RPM = 5
				}
				if i%4 == 2 {
					kcs[i].TPM = 3000
				}
				if i%3 == 0 {
					kcs[i].Quota = Quota{Requests: 200, Period: time.Hour}
				}
			}
			p, clk := newPoolWith(t, Settings{Strategy: name, ErrorCooldown: time.Second, BreakerOpen: 2 * time.Second}, kcs)
			r := rand.New(rand.NewPCG(9, 9))
			kinds := []OutcomeKind{Success, Success, Success, Success, RateLimited, ServerError, NetworkError, Timeout, InvalidKey, ClientError, Canceled, ModelNotFound, QuotaExhausted}
			var held []*Lease
			for step := 0; step < 3000; step++ {
				switch x := r.IntN(10); {
				case x < 5:
					l, err := p.Acquire(context.Background(), AcquireOptions{Model: "m", Session: fmt.Sprint(r.IntN(20)), Tokens: 100})
					if err == nil {
						held = append(held, l)
					}
				case x < 8 && len(held) > 0:
					i := r.IntN(len(held))
					o := Outcome{Kind: kinds[r.IntN(len(kinds))], Tokens: r.Int64N(500), TTFB: time.Duration(r.IntN(1000)) * time.Millisecond}
					if o.Kind == RateLimited && r.IntN(2) == 0 {
						o.RetryAfter, o.HasRetryAfter = time.Duration(r.IntN(5000))*time.Millisecond, true
					}
					held[i].Release(o)
					held = append(held[:i], held[i+1:]...)
				case x == 8:
					clk.Advance(time.Duration(r.IntN(3000)) * time.Millisecond)
				default:
					if r.IntN(20) == 0 {
						p.ClearCooldown("")
					} else if r.IntN(20) == 0 {
						p.SetDisabled(fmt.Sprintf("k%d", r.IntN(12)), r.IntN(2) == 0)
					}
				}
				checkIndex(t, p)
			}
		})
	}
}

// TestConcurrentAcquireRelease hammers one pool from many goroutines with
// waiting acquires and random outcomes (run it with -race), then checks
// that every slot came back and the index is consistent.
func TestConcurrentAcquireRelease(t *testing.T) {
	for _, name := range Strategies() {
		t.Run(name, func(t *testing.T) {
			kcs := keys(8)
			for i := range kcs {
				kcs[i].Quota = Quota{Requests: 1 << 30, Period: time.Hour}
			}
			p, err := New("c", Settings{Strategy: name, MaxConcurrencyPerKey: 2}, kcs, SystemClock{})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 1))
					for i := 0; i < 300; i++ {
						l, err := p.Acquire(context.Background(), AcquireOptions{Timeout: 50 * time.Millisecond, Session: fmt.Sprint(r.IntN(10))})
						if err != nil {
							continue
						}
						o := Outcome{Kind: Success, Tokens: 10}
						if r.IntN(50) == 0 {
							o = Outcome{Kind: RateLimited, RetryAfter: time.Millisecond, HasRetryAfter: true}
						}
						l.Release(o)
					}
				}(g)
			}
			wg.Wait()
			checkIndex(t, p)
			for _, s := range p.Snapshot() {
				if s.InFlight != 0 {
					t.Fatalf("%s: %d still in flight", s.ID, s.InFlight)
				}
			}
		})
	}
}
