package caddymodule

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
)

// offsetClock is the wall clock shifted by d: an instance whose clock
// lags (d < 0) reports its successes as older than they are.
type offsetClock struct{ d time.Duration }

func (c offsetClock) Now() time.Time { return time.Now().Add(c.d) }

func (c offsetClock) NewTimer(d time.Duration) keypool.Timer {
	return keypool.SystemClock{}.NewTimer(d)
}

// TestParseStateEventClearOrder: a clear event's eighth field is its
// release's number (SharedEvent.Order, Redis's TIME in Unix nanoseconds);
// an event of seven fields (an older instance) or an empty one has none.
func TestParseStateEventClearOrder(t *testing.T) {
	const n = 1764662400123456000
	_, ev, ok := parseStateEvent("main|abc|fp1|c|0||0|" + strconv.FormatInt(n, 10))
	if !ok || !ev.Clear || ev.Order != n {
		t.Fatalf("%+v %v", ev, ok)
	}
	for _, s := range []string{"main|abc|fp1|c|0||0", "main|abc|fp1|c|0||0|", "main|abc|fp1|-|0||0|123"} {
		if _, ev, ok := parseStateEvent(s); !ok || ev.Order != 0 {
			t.Errorf("%q: %+v %v", s, ev, ok)
		}
	}
}

// TestRedisClearOrderIgnoresClocks: through Redis, instance C's success
// on a key, released after instance A's failure of it, resets A's count
// of consecutive failures although C's clock lags an hour (the clear
// carries the number Redis gave the release, not C's time: A ignored it
// while it carried C's time, for as long as C lagged). A success released
// before A's failure does not: B's success, then A's failure, then C's
// success; B's clear is read before A's failure is released, so A's
// count after B's event and its own failure is 1, and C's clear brings
// it to 0.
func TestRedisClearOrderIgnoresClocks(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	s := keypool.Settings{MaxConcurrencyPerKey: 10, ErrorCooldown: 10 * time.Millisecond, FailureThreshold: 3, BreakerOpen: 300 * time.Millisecond}
	inst := map[string]*keypool.Pool{}
	var first *redisBackend
	for _, name := range []string{"a", "b", "c"} {
		b := newRedisBackend(&redis.Options{Addr: addr}, prefix, "", addr, time.Minute, time.Second, zap.NewNop())
		b.instance = "inst" + name
		t.Cleanup(func() { _ = b.Destruct() })
		if first == nil {
			first = b
		}
		var clk keypool.Clock
		if name == "c" {
			clk = offsetClock{-time.Hour}
		}
		p, err := keypool.New("main", s, testKeys(1), clk)
		if err != nil {
			t.Fatal(err)
		}
		b.attach(p, time.Second)
		inst[name] = p
	}
	waitSubscribed(t, first, 3)
	ctx := context.Background()
	acquire := func(name string) *keypool.Lease {
		t.Helper()
		l, err := inst[name].Acquire(ctx, keypool.AcquireOptions{Timeout: 2 * time.Second})
		if err != nil {
			t.Fatalf("instance %s: %v", name, err)
		}
		return l
	}
	consec := func(name string) int {
		for _, st := range inst[name].Snapshot() {
			return st.ConsecutiveFailures
		}
		return -1
	}
	ttfb := func(name string) time.Duration {
		for _, st := range inst[name].Snapshot() {
			return st.TTFB
		}
		return -1
	}

	lc := acquire("c")
	acquire("b").Release(keypool.Outcome{Kind: keypool.Success, Status: 200, TTFB: 777 * time.Millisecond})
	eventually(t, 5*time.Second, "B's clear read by A", func() bool { return ttfb("a") == 777*time.Millisecond })
	acquire("a").Release(keypool.Outcome{Kind: keypool.ServerError, Status: 500})
	if n := consec("a"); n != 1 {
		t.Fatalf("A's consecutive failures after its failure: %d, want 1", n)
	}
	lc.Release(keypool.Outcome{Kind: keypool.Success, Status: 200}) // C's clock lags an hour
	eventually(t, 5*time.Second, "C's clear read by A", func() bool { return consec("a") == 0 })
}
