package caddymodule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
)

// stateRedisAddr returns the Redis the state tests use: LLMGW_TEST_REDIS
// (set by .ci/run). Without it the tests skip, except under CI=true.
func stateRedisAddr(t *testing.T) string {
	t.Helper()
	if a := os.Getenv("LLMGW_TEST_REDIS"); a != "" {
		return a
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("LLMGW_TEST_REDIS is not set: .ci/run starts a redis-server for these tests")
	}
	t.Skip("LLMGW_TEST_REDIS is not set (host:port of a scratch redis-server); skipping the Redis state tests")
	return ""
}

func randomPrefix(t *testing.T) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "llmgwtest:" + hex.EncodeToString(b) + ":"
}

// redisInstance is one simulated gateway instance: its own backend (own
// instance id, connection, subscription) and its own pool "main".
type redisInstance struct {
	b *redisBackend
	p *keypool.Pool
}

// redisCluster returns n instances sharing one Redis and a fresh prefix,
// each with a pool "main" over kc.
func redisCluster(t *testing.T, n int, s keypool.Settings, kc []keypool.KeyConfig, lease, poll time.Duration) []*redisInstance {
	t.Helper()
	addr, prefix := stateRedisAddr(t), randomPrefix(t)
	out := make([]*redisInstance, n)
	for i := range out {
		b := newRedisBackend(&redis.Options{Addr: addr}, prefix, addr, lease, time.Second, zap.NewNop())
		b.instance = "inst" + string(rune('a'+i))
		t.Cleanup(func() { _ = b.Destruct() })
		p, err := keypool.New("main", s, kc, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.attach(p, poll)
		out[i] = &redisInstance{b: b, p: p}
	}
	time.Sleep(50 * time.Millisecond) // let the subscriptions settle
	return out
}

func testKeys(n int) []keypool.KeyConfig {
	out := make([]keypool.KeyConfig, n)
	for i := range out {
		out[i] = keypool.KeyConfig{Fingerprint: "fp" + string(rune('0'+i)), ID: "k" + string(rune('0'+i))}
	}
	return out
}

func TestRedisStateCapAndEventWake(t *testing.T) {
	c := redisCluster(t, 2, keypool.Settings{MaxConcurrencyPerKey: 1}, testKeys(1), time.Minute, 30*time.Second)
	ctx := context.Background()
	la, err := c[0].p.Acquire(ctx, keypool.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c[1].p.Acquire(ctx, keypool.AcquireOptions{}); err == nil {
		t.Fatal("instance B leased a key capped at 1 that A holds")
	}
	got := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		l, err := c[1].p.Acquire(ctx, keypool.AcquireOptions{Timeout: 20 * time.Second})
		if err != nil {
			got <- -1
			return
		}
		d := time.Since(start)
		l.Release(keypool.Outcome{Kind: keypool.Success})
		got <- d
	}()
	time.Sleep(100 * time.Millisecond)
	la.Release(keypool.Outcome{Kind: keypool.Success})
	// the poll bound is 30 s: only the release event can wake B this soon
	if d := <-got; d < 0 || d > 5*time.Second {
		t.Fatalf("B waited %v for the slot A released", d)
	}
}

func TestRedisStateCooldownQuotaProbe(t *testing.T) {
	kc := testKeys(2)
	kc[1].Quota = keypool.Quota{Requests: 5, Period: time.Hour}
	s := keypool.Settings{MaxConcurrencyPerKey: 10, ErrorCooldown: 10 * time.Millisecond, BreakerOpen: 300 * time.Millisecond, FailureThreshold: 2}
	c := redisCluster(t, 3, s, kc, time.Minute, time.Second)
	ctx := context.Background()
	only := func(id string) func(k *keypool.Key) bool {
		return func(k *keypool.Key) bool { return k.ID() != id }
	}

	// a 429 seen by A stops B and C
	l, err := c[0].p.Acquire(ctx, keypool.AcquireOptions{Skip: only("k0")})
	if err != nil {
		t.Fatal(err)
	}
	l.Release(keypool.Outcome{Kind: keypool.RateLimited, Status: 429, RetryAfter: 600 * time.Millisecond, HasRetryAfter: true})
	for _, in := range c[1:] {
		if _, err := in.p.Acquire(ctx, keypool.AcquireOptions{Skip: only("k0")}); err == nil {
			t.Fatal("another instance leased the key A saw answer 429")
		}
	}
	time.Sleep(700 * time.Millisecond)
	l, err = c[2].p.Acquire(ctx, keypool.AcquireOptions{Skip: only("k0")})
	if err != nil {
		t.Fatalf("after the Retry-After: %v", err)
	}
	l.Release(keypool.Outcome{Kind: keypool.Success})

	// a quota of 5 is counted once across 3 instances
	granted := 0
	for i := 0; i < 15; i++ {
		l, err := c[i%3].p.Acquire(ctx, keypool.AcquireOptions{Skip: only("k1")})
		if err == nil {
			granted++
			l.Release(keypool.Outcome{Kind: keypool.Success})
		}
	}
	if granted != 5 {
		t.Fatalf("granted %d on a quota of 5", granted)
	}

	// breaker opened by A: exactly one half-open probe cluster-wide
	for i := 0; i < 2; i++ {
		l, err := c[0].p.Acquire(ctx, keypool.AcquireOptions{Skip: only("k0"), Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		l.Release(keypool.Outcome{Kind: keypool.ServerError, Status: 500})
	}
	time.Sleep(400 * time.Millisecond)
	var leases []*keypool.Lease
	for i := 0; i < 9; i++ {
		if l, err := c[i%3].p.Acquire(ctx, keypool.AcquireOptions{Skip: only("k0")}); err == nil {
			leases = append(leases, l)
		}
	}
	if len(leases) != 1 || !leases[0].Probe() {
		t.Fatalf("%d leases after the open period, want one probe", len(leases))
	}
	leases[0].Release(keypool.Outcome{Kind: keypool.Success})
	snap, err := c[1].p.SharedSnapshot(ctx)
	if err != nil || len(snap) != 2 || snap[0].Breaker != "closed" || snap[1].QuotaRequests != 5 {
		t.Fatalf("shared snapshot: %+v %v", snap, err)
	}
}

func TestRedisStateCrashedInstanceLeaseExpires(t *testing.T) {
	c := redisCluster(t, 2, keypool.Settings{MaxConcurrencyPerKey: 1}, testKeys(1), 600*time.Millisecond, 100*time.Millisecond)
	ctx := context.Background()
	if _, err := c[0].p.Acquire(ctx, keypool.AcquireOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // A is alive: its lease is renewed
	if _, err := c[1].p.Acquire(ctx, keypool.AcquireOptions{}); err == nil {
		t.Fatal("a live instance's renewed lease expired")
	}
	_ = c[0].b.Destruct() // A dies without releasing
	start := time.Now()
	l, err := c[1].p.Acquire(ctx, keypool.AcquireOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("slot never came back: %v", err)
	}
	l.Release(keypool.Outcome{Kind: keypool.Success})
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("slot came back after %v, lease is 600ms", d)
	}
}

func TestRedisStateDegradedWhenUnreachable(t *testing.T) {
	port := freePort(t) // nothing listens there
	b := newRedisBackend(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)}, "x:", "test", time.Minute, 200*time.Millisecond, zap.NewNop())
	t.Cleanup(func() { _ = b.Destruct() })
	if b.up.Load() {
		t.Fatal("backend reports up with nothing listening")
	}
	if v := testutil.ToFloat64(stateMetrics().up); v != 0 {
		t.Fatalf("llm_gateway_state_backend_up = %v while unreachable", v)
	}
	p, _ := keypool.New("main", keypool.Settings{MaxConcurrencyPerKey: 1}, testKeys(1), nil)
	b.attach(p, time.Second)
	skippedAcq := testutil.ToFloat64(stateMetrics().requests.WithLabelValues("acquire", "skipped"))
	skippedRel := testutil.ToFloat64(stateMetrics().requests.WithLabelValues("release", "skipped"))
	l, err := p.Acquire(context.Background(), keypool.AcquireOptions{})
	if err != nil {
		t.Fatalf("degraded acquire: %v", err)
	}
	var ue *keypool.UnavailableError
	if _, err := p.Acquire(context.Background(), keypool.AcquireOptions{}); !errors.As(err, &ue) {
		t.Fatalf("local cap not enforced while degraded: %v", err)
	}
	l.Release(keypool.Outcome{Kind: keypool.Success})
	// the first acquire and the release were not even tried (the second
	// acquire was refused by the local cap)
	if d := testutil.ToFloat64(stateMetrics().requests.WithLabelValues("acquire", "skipped")) - skippedAcq; d != 1 {
		t.Fatalf("acquires skipped while down = %v, want 1", d)
	}
	if d := testutil.ToFloat64(stateMetrics().requests.WithLabelValues("release", "skipped")) - skippedRel; d != 1 {
		t.Fatalf("releases skipped while down = %v, want 1", d)
	}
	t.Cleanup(func() { stateMetrics().up.Set(1) })
}

func TestParseStateEvent(t *testing.T) {
	pool, ev, ok := parseStateEvent("main|abc|fp1|c|1500|rate_limited|2000000")
	if !ok || pool != "main" || ev.Instance != "abc" || ev.Fingerprint != "fp1" || !ev.Clear || ev.Reset ||
		ev.Wait != 1500*time.Millisecond || ev.Reason != "rate_limited" || ev.EMA != 2*time.Millisecond {
		t.Fatalf("%q %+v %v", pool, ev, ok)
	}
	if _, _, ok := parseStateEvent("a|b|c"); ok {
		t.Fatal("short event accepted")
	}
}
