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

// TestParseStateEventClearTime: a clear event's eighth field is when the
// key served (SharedEvent.At, Unix nanoseconds); an event of seven fields
// (an older instance) or an empty one has none.
func TestParseStateEventClearTime(t *testing.T) {
	at := time.Date(2026, 12, 2, 8, 0, 0, 123456789, time.UTC)
	_, ev, ok := parseStateEvent("main|abc|fp1|c|0||0|" + strconv.FormatInt(at.UnixNano(), 10))
	if !ok || !ev.Clear || !ev.At.Equal(at) {
		t.Fatalf("%+v %v", ev, ok)
	}
	for _, s := range []string{"main|abc|fp1|c|0||0", "main|abc|fp1|c|0||0|", "main|abc|fp1|-|0||0|123"} {
		if _, ev, ok := parseStateEvent(s); !ok || !ev.At.IsZero() {
			t.Errorf("%q: %+v %v", s, ev, ok)
		}
	}
}

// TestRedisLateClearIgnored: through Redis, instance C's success on a key
// that happened before instance A's failure of it (C's clock lags an hour,
// so its success is the older one whenever its clear event arrives) does
// not reset A's count of consecutive failures; a later success of another
// instance (D, on time) does. The event that follows C's clear on the
// channel (B's release, which carries a latency) tells when A has read it.
func TestRedisLateClearIgnored(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	s := keypool.Settings{MaxConcurrencyPerKey: 10, ErrorCooldown: 10 * time.Millisecond, FailureThreshold: 3, BreakerOpen: 300 * time.Millisecond}
	inst := map[string]*keypool.Pool{}
	for _, name := range []string{"a", "b", "c", "d"} {
		b := newRedisBackend(&redis.Options{Addr: addr}, prefix, "", addr, time.Minute, time.Second, zap.NewNop())
		b.instance = "inst" + name
		t.Cleanup(func() { _ = b.Destruct() })
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
	time.Sleep(50 * time.Millisecond) // let the subscriptions settle
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
	acquire("a").Release(keypool.Outcome{Kind: keypool.ServerError, Status: 500})
	lc.Release(keypool.Outcome{Kind: keypool.Success, Status: 200}) // C's clear, an hour old
	acquire("b").Release(keypool.Outcome{Kind: keypool.ClientError, Status: 400, TTFB: 777 * time.Millisecond})
	eventually(t, 5*time.Second, "B's event read by A", func() bool { return ttfb("a") == 777*time.Millisecond })
	if n := consec("a"); n != 1 {
		t.Fatalf("A's consecutive failures after a clear older than its failure: %d, want 1", n)
	}
	acquire("d").Release(keypool.Outcome{Kind: keypool.Success, Status: 200})
	eventually(t, 5*time.Second, "D's clear read by A", func() bool { return consec("a") == 0 })
}
