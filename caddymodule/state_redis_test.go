package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

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
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	out := make([]*redisInstance, n)
	for i := range out {
		b := newRedisBackend(&redis.Options{Addr: addr}, prefix, "", addr, lease, time.Second, zap.NewNop())
		b.instance = "inst" + string(rune('a'+i))
		t.Cleanup(func() { _ = b.Destruct() })
		p, err := keypool.New("main", s, kc, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.attach(p, poll)
		out[i] = &redisInstance{b: b, p: p}
	}
	waitSubscribed(t, out[0].b, n)
	return out
}

// waitSubscribed waits until n subscribers listen on b's event channel
// (each instance's subscription is set up in its own goroutine).
func waitSubscribed(t testing.TB, b *redisBackend, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := b.client.PubSubNumSub(context.Background(), b.channel).Result()
		if err == nil && got[b.channel] >= int64(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers on %s, want %d: %v", got[b.channel], b.channel, n, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRedisScriptErrorDropsRelease: a release Redis rejects with an error
// the release itself causes (here WRONGTYPE: something else wrote a
// string where the key's hash lives) does not take the instance off
// shared state and is not queued for replay: replayed, it would fail at
// every re-sync (and did, keeping the instance on local state for good).
// It is logged once, without the key's secret, and counted as rejected.
// A re-sync after a real outage then finds nothing to replay and the
// instance shares again.
func TestRedisScriptErrorDropsRelease(t *testing.T) {
	c := redisCluster(t, 1, keypool.Settings{MaxConcurrencyPerKey: 10}, testKeys(1), time.Minute, time.Second)
	core, logs := observer.New(zap.WarnLevel)
	c[0].b.logger = zap.New(core)
	ctx := context.Background()
	rejected := func() float64 {
		return testutil.ToFloat64(stateMetrics().requests.WithLabelValues("release", "rejected"))
	}
	before := rejected()
	var leases []*keypool.Lease
	for range 2 {
		l, err := c[0].p.Acquire(ctx, keypool.AcquireOptions{})
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	h, _, _ := c[0].b.keyNames("main", "fp0")
	if err := c[0].b.client.Del(ctx, h).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c[0].b.client.Set(ctx, h, "not a hash", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		l.Release(keypool.Outcome{Kind: keypool.ServerError, Status: 500})
	}
	b := c[0].b
	if !b.up.Load() {
		t.Fatalf("a rejected release took the instance off shared state: %v", b.lastErr.Load())
	}
	b.mu.Lock()
	pending := len(b.pending)
	b.mu.Unlock()
	if pending != 0 {
		t.Fatalf("%d rejected releases queued for replay", pending)
	}
	if n := rejected() - before; n != 2 {
		t.Errorf("%v releases counted as rejected, want 2", n)
	}
	if n := logs.FilterMessageSnippet("rejected a key's release").Len(); n != 1 {
		t.Errorf("%d warnings for the rejected releases, want 1 (once a minute per key and error)", n)
	}
	for _, e := range logs.All() {
		if !strings.Contains(fmt.Sprint(e.ContextMap()), "WRONGTYPE") && strings.Contains(e.Message, "rejected") {
			t.Errorf("the warning does not name Redis's error: %v", e.ContextMap())
		}
	}
	// an outage: the re-sync replays nothing and the instance shares again
	_ = b.client.Del(ctx, h).Err()
	b.down(errors.New("test outage"))
	deadline := time.Now().Add(10 * time.Second)
	for !b.up.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("the instance did not share again after the outage: %v", b.lastErr.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := rejected() - before; n != 2 {
		t.Errorf("%v releases rejected after the re-sync, want the 2 of before (none replayed)", n)
	}
}

// TestScriptRejected: only an error reply the call itself causes is a
// rejection; a network error, a timeout or a reply about the server's
// state (even wrapped in Redis 6's script error) keeps today's outage
// handling.
func TestScriptRejected(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{redisReply("WRONGTYPE Operation against a key holding the wrong kind of value script: abc, on @user_script:5."), true},
		{redisReply("ERR user_script:7: Script attempted to access nonexistent global variable 'x' script: abc, on @user_script:7."), true},
		{redisReply("ERR Error running script (call to f_abc): @user_script:5: WRONGTYPE Operation against a key holding the wrong kind of value"), true},
		{redisReply("ERR Error running script (call to f_abc): @user_script:9: user_script:9: attempt to compare nil with number"), true},
		{redisReply("my own error reply"), false},
		{fmt.Errorf("failed to authenticate: %w", redisReply("ERR invalid password")), false},
		{redisReply("ERR max requests limit exceeded. Limit: 10000, Usage: 10000."), false},
		{redisReply("READONLY You can't write against a read only replica."), false},
		{redisReply("OOM command not allowed when used memory > 'maxmemory'."), false},
		{redisReply("ERR Error running script (call to f_abc): @user_script:5: @user_script: 5: -OOM command not allowed when used memory > 'maxmemory'."), false},
		{redisReply("NOPERM this user has no permissions to run the 'evalsha' command"), false},
		{redisReply("LOADING Redis is loading the dataset in memory"), false},
		{redisReply("BUSY Redis is busy running a script."), false},
		{redisReply("ERR max number of clients reached"), false},
		{context.DeadlineExceeded, false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, false},
		{fmt.Errorf("wrapped: %w", redisReply("WRONGTYPE x")), true},
	}
	for _, c := range cases {
		if got := scriptRejected(c.err); got != c.want {
			t.Errorf("scriptRejected(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// redisReply is an error reply as go-redis returns it.
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}

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

	// breaker opened by C: exactly one half-open probe cluster-wide. C is
	// the instance whose success on the key cleared it above: the clear
	// event that success sent reaches A and B by pub/sub, and one that
	// came late (a loaded machine) would reset the count of failures
	// there between the two below, so that no breaker opened
	for i := 0; i < 2; i++ {
		l, err := c[2].p.Acquire(ctx, keypool.AcquireOptions{Skip: only("k0"), Timeout: time.Second})
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
	b := newRedisBackend(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)}, "x:", "", "test", time.Minute, 200*time.Millisecond, zap.NewNop())
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

func TestAdminShowsClusterState(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"mk-1": {Latency: 700 * time.Millisecond}}})
	state := "\t\tstate redis {\n\t\t\taddress " + addr + "\n\t\t\tprefix " + prefix + "\n\t\t\tlease 30s\n\t\t}\n"
	block := "\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n" + state + poolBlock("adm-cluster", base, 1, "") + "\t}\n"
	gw, admin := adminGateway(t, block, "")

	done := make(chan int, 1)
	go func() {
		resp, _ := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "slow one", false))
		done <- resp.StatusCode
	}()
	eventually(t, 3*time.Second, "the request to be in flight upstream", func() bool { return m.Stats("mk-1").InFlight == 1 })
	pools := adminPools(t, admin)
	var pv *poolView
	for i := range pools {
		if pools[i].Name == "adm-cluster" {
			pv = &pools[i]
		}
	}
	if pv == nil || pv.State.Backend != "redis" || !pv.State.Up || pv.State.Redis != addr+"/0" {
		t.Fatalf("pool state view: %+v", pv)
	}
	k := findKeyView(t, pools, "adm-cluster", "k1")
	if k.Cluster == nil || k.Cluster.InFlight != 1 || k.Cluster.Breaker != "closed" || k.InFlight != 1 {
		t.Fatalf("key view while a request runs: %+v cluster %+v", k, k.Cluster)
	}
	if code := <-done; code != 200 {
		t.Fatalf("request: %d", code)
	}
	k = findKeyView(t, adminPools(t, admin), "adm-cluster", "k1")
	if k.Cluster == nil || k.Cluster.InFlight != 0 || k.Cluster.TTFBMillis <= 0 {
		t.Fatalf("key view after: %+v", k.Cluster)
	}
	if s := fmt.Sprint(pools); strings.Contains(s, "mk-1") {
		t.Fatal("admin output holds a secret")
	}
}

func TestStateCaddyfile(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"state redis {\n address 10.0.0.1:6380\n prefix gw1:\n salt {env.S}\n lease 90s\n poll 500ms\n timeout 2s\n db 2\n tls\n password {env.REDIS_PW}\n}",
			`{"backend":"redis","address":"10.0.0.1:6380","password":"{env.REDIS_PW}","db":2,"tls":true,"prefix":"gw1:","salt":"{env.S}","lease":90000000000,"poll":500000000,"timeout":2000000000}`},
		{"state memory", `{"backend":"memory"}`},
		{"state redis {\n url rediss://u:p@h:6379/1\n}", `{"backend":"redis","url":"rediss://u:p@h:6379/1"}`},
	} {
		d := caddyfile.NewTestDispenser("llm_gateway {\n" + c.in + "\n}")
		var h Handler
		if err := h.UnmarshalCaddyfile(d); err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		got, _ := json.Marshal(h.State)
		if string(got) != c.want {
			t.Fatalf("%q:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"state etcd", "want 'memory' or 'redis'"},
		{"state", "wrong argument count"},
		{"state memory {\n prefix x\n}", "takes no options"},
		{"state redis {\n adress x\n}", "unknown option 'adress'"},
		{"state redis {\n lease soon\n}", "bad duration"},
		{"state redis {\n db -1\n}", "database number"},
	} {
		d := caddyfile.NewTestDispenser("llm_gateway {\n" + c.in + "\n}")
		var h Handler
		err := h.UnmarshalCaddyfile(d)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%q: error %v, want it to say %q", c.in, err, c.want)
		}
	}
}

// BenchmarkStateAcquireRelease measures one Acquire+Release of a pool of
// 10 keys with memory state and with Redis state, 16 goroutines at once,
// and reports the Redis round trips per operation.
func BenchmarkStateAcquireRelease(b *testing.B) {
	addr := os.Getenv("LLMGW_TEST_REDIS")
	for _, mode := range []string{"memory", "redis"} {
		b.Run(mode, func(b *testing.B) {
			p, err := keypool.New("bench", keypool.Settings{MaxConcurrencyPerKey: 100}, testKeys(10), nil)
			if err != nil {
				b.Fatal(err)
			}
			if mode == "redis" {
				if addr == "" {
					b.Skip("LLMGW_TEST_REDIS not set")
				}
				rb := newRedisBackend(&redis.Options{Addr: addr}, "llmgwbench:"+strconv.FormatInt(time.Now().UnixNano(), 36)+":", "", addr, time.Minute, time.Second, zap.NewNop())
				defer rb.Destruct()
				rb.attach(p, time.Second)
			}
			ok := func() float64 {
				return testutil.ToFloat64(stateMetrics().requests.WithLabelValues("acquire", "ok")) +
					testutil.ToFloat64(stateMetrics().requests.WithLabelValues("release", "ok"))
			}
			before := ok()
			b.SetParallelism(8) // x GOMAXPROCS(2) = 16 goroutines
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l, err := p.Acquire(context.Background(), keypool.AcquireOptions{Timeout: time.Second})
					if err != nil {
						b.Error(err)
						return
					}
					l.Release(keypool.Outcome{Kind: keypool.Success})
				}
			})
			b.ReportMetric((ok()-before)/float64(b.N), "roundtrips/op")
		})
	}
}

// A config load that Caddy rejects after the gateway switched a live pool
// to another state backend gives the running config its backend back.
func TestRejectedReloadKeepsStateBackend(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	_, base := mock(t, mockupstream.Config{})
	port := freePort(t)
	site := func(state, extra string) string {
		return fmt.Sprintf("{\n\tadmin off\n\tpersist_config off\n}\nhttp://127.0.0.1:%d {\n\troute /v1/* {\n\t\tllm_gateway {\n\t\t\tapi_key %s\n%s%s\t\t}\n\t}\n%s}\n",
			port, gatewayKey, state, poolBlock("rj", base, 1, ""), extra)
	}
	redisState := "\t\t\tstate redis {\n\t\t\t\taddress " + addr + "\n\t\t\t\tprefix " + prefix + "\n\t\t\t}\n"
	loadCaddyfile(t, site(redisState, ""))
	t.Cleanup(func() { _ = caddy.Stop() })
	if _, ok := poolFor(t, "rj").Backend().(*redisBackend); !ok {
		t.Fatal("pool rj is not on the redis backend")
	}
	// same pool on memory state, then a handler that fails to provision
	broken := "\troute /o/* {\n\t\tllm_gateway {\n\t\t\tapi_key x\n\t\t\tpool broken {\n\t\t\t\tkey k ftp://x\n\t\t\t}\n\t\t}\n\t}\n"
	err := loadCaddyfileErr(site("\t\t\tstate memory\n", broken))
	if err == nil || !strings.Contains(err.Error(), `pool "broken"`) {
		t.Fatalf("the broken config: %v", err)
	}
	t.Logf("rejected: %v", err)
	rb, ok := poolFor(t, "rj").Backend().(*redisBackend)
	if !ok || rb.ctx.Err() != nil {
		t.Fatalf("after a rejected config the running pool's state backend is %T (closed: %v)", poolFor(t, "rj").Backend(), ok && rb.ctx.Err() != nil)
	}
	resp, body := post(t, fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port), chatBody("mock-gpt", "still shared", false))
	if resp.StatusCode != 200 {
		t.Fatalf("after the rejected config: %d %s", resp.StatusCode, body)
	}
	if n := testutil.ToFloat64(stateMetrics().requests.WithLabelValues("acquire", "ok")); n < 1 {
		t.Fatalf("no acquire went to Redis: %v", n)
	}
}

// A reload that changes a Redis setting moves the pool to a new backend;
// the leases out keep being renewed by it.
func TestRedisBackendTakesOverLeases(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	b1 := newRedisBackend(&redis.Options{Addr: addr}, prefix, "", addr, time.Minute, time.Second, zap.NewNop())
	b2 := newRedisBackend(&redis.Options{Addr: addr}, prefix, "", addr, time.Minute, 2*time.Second, zap.NewNop())
	t.Cleanup(func() { _ = b1.Destruct(); _ = b2.Destruct() })
	p, _ := keypool.New("main", keypool.Settings{MaxConcurrencyPerKey: 1}, testKeys(1), nil)
	b1.attach(p, time.Second)
	l, err := p.Acquire(context.Background(), keypool.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b2.attach(p, time.Second)
	_ = b1.Destruct()
	b2.mu.Lock()
	n := len(b2.live)
	b2.mu.Unlock()
	if n != 1 {
		t.Fatalf("new backend renews %d leases, want the 1 still out", n)
	}
	l.Release(keypool.Outcome{Kind: keypool.Success})
	snap, err := p.SharedSnapshot(context.Background())
	if err != nil || snap[0].InFlight != 0 {
		t.Fatalf("after release through the new backend: %+v %v", snap, err)
	}
}

func TestRedisStateConfigDriftIsLogged(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	core, logs := observer.New(zap.WarnLevel)
	var pools []*keypool.Pool
	for i, capacity := range []int{1, 2} {
		b := newRedisBackend(&redis.Options{Addr: addr}, prefix, "", addr, time.Minute, time.Second, zap.New(core))
		b.instance = "drift" + strconv.Itoa(i)
		t.Cleanup(func() { _ = b.Destruct() })
		p, _ := keypool.New("main", keypool.Settings{MaxConcurrencyPerKey: capacity}, testKeys(1), nil)
		b.attach(p, time.Second)
		pools = append(pools, p)
	}
	for _, p := range pools {
		l, err := p.Acquire(context.Background(), keypool.AcquireOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.Release(keypool.Outcome{Kind: keypool.Success})
	}
	if n := logs.FilterMessageSnippet("configure different limits").Len(); n != 1 {
		t.Fatalf("config drift warnings: %d, want 1", n)
	}
}

func TestStateProvisionErrors(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	for _, c := range []struct{ state, want string }{
		{"state redis {\n address 127.0.0.1:1\n url redis://127.0.0.1:1\n }", "either url or address"},
		{"state redis {\n address localhost\n }", `address "localhost": want host:port`},
		{"state redis {\n password {env.LLMGW_DEFINITELY_UNSET}\n }", "state: password: placeholder is empty or unknown"},
		{"state redis {\n url {env.LLMGW_DEFINITELY_UNSET}\n }", "state: url: placeholder is empty or unknown"},
		{"state redis {\n url http://127.0.0.1:1\n }", "not a valid redis:// or rediss:// URL"},
	} {
		cf := "{\n\tadmin off\n\tpersist_config off\n}\nhttp://127.0.0.1:1 {\n\tllm_gateway {\n\t\tapi_key " + gatewayKey +
			"\n\t\t" + c.state + "\n\t\tpool p {\n\t\t\tkey sk-x " + base + "\n\t\t}\n\t}\n}\n"
		err := loadCaddyfileErr(cf)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%q: err = %v, want it to say %q", c.state, err, c.want)
		}
	}
}
