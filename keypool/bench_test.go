package keypool

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// benchKeys returns n keys set up so that every strategy has something to
// work with: weights 1-3, two priorities, a large daily quota (so pace
// ranks without gating).
func benchKeys(n int) []KeyConfig {
	out := keys(n)
	for i := range out {
		out[i].Weight = 1 + i%3
		out[i].Priority = i % 2
		out[i].Quota = Quota{Requests: 1 << 40, Period: 24 * time.Hour}
	}
	return out
}

// BenchmarkStrategies measures Acquire+Release per strategy and pool size,
// single-threaded and parallel. A background load of one lease on every
// other key keeps in-flight counts uneven, as in a busy pool.
func BenchmarkStrategies(b *testing.B) {
	for _, name := range Strategies() {
		for _, n := range []int{10, 1000, 10000} {
			setup := func(b *testing.B) *Pool {
				p, err := New("bench", Settings{Strategy: name, MaxConcurrencyPerKey: 1 << 20}, benchKeys(n), SystemClock{})
				if err != nil {
					b.Fatal(err)
				}
				p.mu.Lock()
				for i, k := range p.keys {
					if i%2 == 1 {
						p.leaseLocked(k, p.clock.Now(), &AcquireOptions{}, false) // held for the whole run
					}
				}
				p.mu.Unlock()
				return p
			}
			b.Run(fmt.Sprintf("%s/keys=%d", name, n), func(b *testing.B) {
				p := setup(b)
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					l, err := p.Acquire(ctx, AcquireOptions{})
					if err != nil {
						b.Fatal(err)
					}
					l.Release(Outcome{Kind: Success, Tokens: 100, TTFB: time.Millisecond})
				}
			})
			b.Run(fmt.Sprintf("%s/keys=%d/parallel", name, n), func(b *testing.B) {
				p := setup(b)
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						l, err := p.Acquire(ctx, AcquireOptions{})
						if err != nil {
							b.Error(err)
							return
						}
						l.Release(Outcome{Kind: Success, Tokens: 100, TTFB: time.Millisecond})
					}
				})
			})
		}
	}
}

// BenchmarkMostlyCooling: 10 000 keys of which 9 990 are cooling; a
// request must not pay for the cooling keys.
func BenchmarkMostlyCooling(b *testing.B) {
	p, err := New("bench", Settings{MaxConcurrencyPerKey: 1 << 20}, keys(10000), SystemClock{})
	if err != nil {
		b.Fatal(err)
	}
	p.mu.Lock()
	now := p.clock.Now()
	for i, k := range p.keys {
		if i%1000 != 0 {
			k.coolUntil(now, now.Add(time.Hour), RateLimited.String(), "retry-after", 429, false)
			p.refreshLocked(k, now)
		}
	}
	p.mu.Unlock()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l, err := p.Acquire(ctx, AcquireOptions{})
		if err != nil {
			b.Fatal(err)
		}
		l.Release(Outcome{Kind: Success})
	}
}

// BenchmarkAffinity: Acquire+Release with a session on 10 000 keys.
func BenchmarkAffinity(b *testing.B) {
	p, err := New("bench", Settings{MaxConcurrencyPerKey: 1 << 20}, keys(10000), SystemClock{})
	if err != nil {
		b.Fatal(err)
	}
	sessions := make([]string, 1000)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("session-%d", i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l, err := p.Acquire(ctx, AcquireOptions{Session: sessions[i%len(sessions)]})
		if err != nil {
			b.Fatal(err)
		}
		l.Release(Outcome{Kind: Success})
		i++
	}
}
