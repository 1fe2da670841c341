package caddymodule

// Acceptance tests for cluster mode (`state redis`): several Caddy processes
// sharing one Redis and one prefix share each pool's runtime state. Each
// instance is a child process (see cluster_harness_test.go); the mock
// upstream runs in the test process and sees what the cluster as a whole
// sends to each key.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// clusterBlock is an llm_gateway block with `state redis` on addr/prefix
// (lease "" means the default) and the given pool blocks. Its Redis
// timeout is 10 s, not the default 1 s: these tests are about what the
// instances share, and on a loaded machine (the race detector, parallel
// test binaries) a loopback round trip can pass 1 s, which puts an
// instance on local state by design and lets it overrun a shared cap.
// The outage tests stop Redis outright (refused at once).
func clusterBlock(addr, prefix, lease string, pools ...string) string {
	var b strings.Builder
	b.WriteString("\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n")
	b.WriteString("\t\tstate redis {\n\t\t\taddress " + addr + "\n\t\t\tprefix \"" + prefix + "\"\n\t\t\ttimeout 10s\n")
	if lease != "" {
		b.WriteString("\t\t\tlease " + lease + "\n")
	}
	b.WriteString("\t\t}\n")
	b.WriteString(strings.Join(pools, ""))
	b.WriteString("\t}\n")
	return b.String()
}

// ckey is one key line of a pool: `key <secret> <base> { id <id> ... }`.
func ckey(secret, base, id string, settings ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\t\t\tkey %s %s {\n\t\t\t\tid %s\n", secret, base, id)
	for _, s := range settings {
		b.WriteString("\t\t\t\t" + s + "\n")
	}
	b.WriteString("\t\t\t}\n")
	return b.String()
}

// cpool is a pool block; settings are pool-level lines, keys come from ckey.
func cpool(name string, settings []string, keys ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\t\tpool %s {\n", name)
	for _, s := range settings {
		b.WriteString("\t\t\t" + s + "\n")
	}
	b.WriteString(strings.Join(keys, ""))
	b.WriteString("\t\t}\n")
	return b.String()
}

// startCluster starts n instances serving the same site body.
func startCluster(t *testing.T, n int, site string) []*instance {
	t.Helper()
	return startInstances(t, n, site)
}

// result is what one request through a gateway instance got.
type result struct {
	inst  int // index of the instance it went through
	code  int
	via   string // X-Routed-Via
	body  string
	err   error
	start time.Time
	end   time.Time
}

func (r result) String() string {
	if r.err != nil {
		return fmt.Sprintf("instance %d: error %v", r.inst, r.err)
	}
	return fmt.Sprintf("instance %d: %d via %q %s", r.inst, r.code, r.via, clip(r.body, 160))
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// clusterClient is an HTTP client for many concurrent requests to a few
// loopback instances, with a timeout so a hung gateway fails the test.
func clusterClient(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// sendSeq numbers the requests of send.
var sendSeq atomic.Int64

// send posts a chat completion for model through inst (safe in goroutines).
// Every message gets a unique suffix, so that no two requests look like the
// same conversation: session affinity (which pins a conversation to the key
// that served it) stays out of the way of what the tests check.
func send(c *http.Client, inst *instance, idx int, model, msg string) result {
	r := result{inst: idx, start: time.Now()}
	msg = fmt.Sprintf("%s #%d", msg, sendSeq.Add(1))
	req, err := http.NewRequest(http.MethodPost, inst.URL("/v1/chat/completions"), bytesReader(chatBody(model, msg, false)))
	if err != nil {
		r.err = err
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	resp, err := c.Do(req)
	if err != nil {
		r.err, r.end = err, time.Now()
		return r
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.end = time.Now()
	r.code, r.via, r.body, r.err = resp.StatusCode, resp.Header.Get("X-Routed-Via"), string(b), err
	return r
}

// fire sends n requests, round-robin over insts, with at most conc in
// flight, and returns the results in request order.
func fire(c *http.Client, insts []*instance, n, conc int, model string) []result {
	out := make([]result, n)
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = send(c, insts[i%len(insts)], i%len(insts), model, fmt.Sprintf("request %d", i))
		}()
	}
	wg.Wait()
	return out
}

// requireAll200 fails the test unless every result is a 200.
func requireAll200(t *testing.T, rs []result) {
	t.Helper()
	var bad []string
	for i, r := range rs {
		if r.err != nil || r.code != http.StatusOK {
			bad = append(bad, fmt.Sprintf("#%d %s", i, r))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d of %d requests failed, e.g.:\n%s", len(bad), len(rs), strings.Join(bad[:min(len(bad), 5)], "\n"))
	}
}

// countVia counts the results routed through each pool/key.
func countVia(rs []result) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		if r.err == nil && r.code == http.StatusOK {
			m[r.via]++
		}
	}
	return m
}

// poll checks cond every 25 ms until it holds, failing the test if it does
// not within d (for conditions that cost an HTTP request).
func poll(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestClusterCapAcrossInstances: a key capped at one concurrent request has
// one in flight across the whole cluster. 200 concurrent requests spread
// over 2 (then 3) instances all succeed; the mock, which itself allows one
// request at a time on that key, never answers it 429 (an overlap would be
// refused by the mock before taking a slot, so RateLimited is the check
// that matters; MaxInFlight cannot exceed the mock's own cap); the second
// key (cap 4 on both sides) is not overrun either.
func TestClusterCapAcrossInstances(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d_instances", n), func(t *testing.T) {
			addr := testRedis(t)
			prefix := testPrefix(t, addr)
			m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
				"cap-1":  {MaxConcurrency: 1, Latency: 25 * time.Millisecond},
				"wide-1": {MaxConcurrency: 4, Latency: 25 * time.Millisecond},
			}})
			site := clusterBlock(addr, prefix, "",
				cpool("capx", []string{"acquire_timeout 60s", "max_retries 0"},
					ckey("cap-1", base, "cap", "max_concurrency 1"),
					ckey("wide-1", base, "wide", "max_concurrency 4")))
			insts := startCluster(t, n, site)
			c := clusterClient(t)

			rs := fire(c, insts, 200, 200, "mock-gpt")
			requireAll200(t, rs)

			capSt, wideSt := m.Stats("cap-1"), m.Stats("wide-1")
			t.Logf("cap-1 %+v", statsLine(capSt))
			t.Logf("wide-1 %+v", statsLine(wideSt))
			if capSt.MaxInFlight != 1 {
				t.Errorf("cap-1 had %d requests in flight at once across %d instances, want 1", capSt.MaxInFlight, n)
			}
			if capSt.RateLimited != 0 {
				t.Errorf("cap-1: the mock answered %d requests 429 (concurrency cap violated)", capSt.RateLimited)
			}
			if wideSt.MaxInFlight > 4 || wideSt.RateLimited != 0 {
				t.Errorf("wide-1: max in flight %d (cap 4), %d answered 429", wideSt.MaxInFlight, wideSt.RateLimited)
			}
			if capSt.OK < 5 {
				t.Errorf("cap-1 served only %d requests: the capped key was hardly used, the test proves little", capSt.OK)
			}
			if got := capSt.OK + wideSt.OK; got != 200 || capSt.Requests+wideSt.Requests != 200 {
				t.Errorf("mock served %d ok of %d requests, want 200 of 200", got, capSt.Requests+wideSt.Requests)
			}
			via := countVia(rs)
			if via["capx/cap"] != int(capSt.OK) || via["capx/wide"] != int(wideSt.OK) {
				t.Errorf("X-Routed-Via counts %v disagree with the mock (cap %d, wide %d)", via, capSt.OK, wideSt.OK)
			}
		})
	}
}

func statsLine(s mockupstream.KeyStats) string {
	return fmt.Sprintf("requests=%d ok=%d rate_limited=%d failed=%d canceled=%d in_flight=%d max_in_flight=%d",
		s.Requests, s.OK, s.RateLimited, s.Failed, s.Canceled, s.InFlight, s.MaxInFlight)
}

// TestClusterCooldownShared: a 429 with Retry-After: 2 seen by instance A
// keeps instance B off that key until the 2 s are over; afterwards B uses
// it again.
func TestClusterCooldownShared(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"cd-1": {Status: 429, RetryAfter: "2"},
	}})
	site := clusterBlock(addr, prefix, "",
		cpool("cd", []string{"strategy priority", "max_concurrency_per_key 4", "acquire_timeout 10s"},
			ckey("cd-1", base, "cd1", "priority 1"),
			ckey("cd-2", base, "cd2", "priority 2")))
	insts := startCluster(t, 2, site)
	a, b := insts[0], insts[1]
	c := clusterClient(t)

	// A: cd-1 answers 429 Retry-After: 2, the request is retried on cd-2
	r := send(c, a, 0, "mock-gpt", "first")
	if r.err != nil || r.code != 200 || r.via != "cd/cd2" {
		t.Fatalf("first request through A: %s; want 200 via cd/cd2", r)
	}
	if st := m.Stats("cd-1"); st.Requests != 1 || st.RateLimited != 1 {
		t.Fatalf("cd-1 after the first request: %s; want 1 request answered 429", statsLine(st))
	}
	cooldownStart, cooldownEnd := r.start.Add(2*time.Second), r.end.Add(2*time.Second)
	// from now on cd-1 would answer: any request reaching it shows
	m.SetKey("cd-1", mockupstream.KeyBehavior{})

	// B must stay off cd-1 until the Retry-After is over, then use it
	var during int
	var hit result
	for i := 0; ; i++ {
		r := send(c, b, 1, "mock-gpt", fmt.Sprintf("through B %d", i))
		if r.err != nil || r.code != 200 {
			t.Fatalf("request through B at +%v: %s", time.Since(cooldownStart.Add(-2*time.Second)).Round(time.Millisecond), r)
		}
		if r.via == "cd/cd1" {
			hit = r
			break
		}
		if r.via != "cd/cd2" {
			t.Fatalf("request through B routed via %q", r.via)
		}
		during++
		if time.Now().After(cooldownEnd.Add(4 * time.Second)) {
			t.Fatalf("B did not use cd-1 again within 4s after the Retry-After ended (%d requests went to cd-2)", during)
		}
		time.Sleep(40 * time.Millisecond)
	}
	// hit.start is when B sent the request that reached cd-1: the shared
	// cooldown must have been over by then (100 ms of slack for rounding)
	if early := cooldownStart.Sub(hit.start); early > 100*time.Millisecond {
		t.Fatalf("B used cd-1 %v before the Retry-After of the 429 seen by A ended (after %d requests on cd-2)", early.Round(time.Millisecond), during)
	}
	if during < 10 {
		t.Fatalf("only %d requests went through B during the cooldown; want >= 10 for the check to mean something", during)
	}
	if st := m.Stats("cd-1"); st.Requests != 2 || st.OK != 1 {
		t.Fatalf("cd-1: %s; want the 429 plus exactly one request after the cooldown", statsLine(st))
	}
	t.Logf("B kept off cd-1 for %d requests; first use %v after the cooldown's earliest end", during, hit.start.Sub(cooldownStart).Round(time.Millisecond))
	// and A sees the cooldown over as well
	if r := send(c, a, 0, "mock-gpt", "A again"); r.err != nil || r.code != 200 || r.via != "cd/cd1" {
		t.Fatalf("A after the cooldown: %s; want 200 via cd/cd1", r)
	}
}

// TestClusterQuota: a quota of 10 requests per hour is counted once for the
// cluster. 30 concurrent-ish requests over 2 instances: the mock sees
// exactly 10 on the quota key and the other 20 on the second key, all 200.
// A pool whose only key has a quota of 5 serves 5 requests across the
// cluster and answers 429 (its quota is a rate limit to wait out) after
// that, without calling the upstream.
func TestClusterQuota(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	m, base := mock(t, mockupstream.Config{})
	site := clusterBlock(addr, prefix, "",
		cpool("qa", []string{"models qa-*", "strategy priority", "max_concurrency_per_key 4", "acquire_timeout 10s"},
			ckey("qa-1", base, "qa1", "priority 1", "quota 10 requests per 1h"),
			ckey("qa-2", base, "qa2", "priority 2")),
		cpool("qb", []string{"models qb-*", "acquire_timeout 1s"},
			ckey("qb-1", base, "qb1", "quota 5 requests per 1h")))
	insts := startCluster(t, 2, site)
	c := clusterClient(t)

	rs := fire(c, insts, 30, 6, "qa-model")
	requireAll200(t, rs)
	q1, q2 := m.Stats("qa-1"), m.Stats("qa-2")
	if q1.Requests != 10 || q1.OK != 10 {
		t.Errorf("qa-1 (quota 10/h, shared by 2 instances): %s; want exactly 10", statsLine(q1))
	}
	if q2.OK != 20 {
		t.Errorf("qa-2: %s; want the other 20", statsLine(q2))
	}
	if via := countVia(rs); via["qa/qa1"] != 10 || via["qa/qa2"] != 20 {
		t.Errorf("X-Routed-Via counts %v, want qa/qa1=10 qa/qa2=20", via)
	}

	// the single-key pool: 5 successes in the cluster, then 429
	var codes []int
	for i := range 12 {
		r := send(c, insts[i%2], i%2, "qb-model", "quota")
		if r.err != nil {
			t.Fatalf("qb request %d: %v", i, r.err)
		}
		codes = append(codes, r.code)
		if i >= 5 && r.code != http.StatusTooManyRequests {
			t.Errorf("qb request %d through instance %d: %d %s; want 429 (quota spent)", i, i%2, r.code, clip(r.body, 300))
		}
	}
	ok := 0
	for _, code := range codes {
		if code == 200 {
			ok++
		}
	}
	if st := m.Stats("qb-1"); ok != 5 || st.Requests != 5 {
		t.Errorf("qb (quota 5/h): statuses %v, mock %s; want 5 x 200 and 5 upstream requests", codes, statsLine(st))
	}
}

// TestClusterSingleHalfOpenProbe: a key whose breaker opened (5xx through
// instance A) stays out of rotation on every instance while open; when the
// open period ends, concurrent requests through 3 instances let exactly one
// probe reach the key, and once it succeeded every instance uses the key
// again.
func TestClusterSingleHalfOpenProbe(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"br-1": {Status: 500},
	}})
	const open = 1500 * time.Millisecond
	site := clusterBlock(addr, prefix, "",
		cpool("br", []string{"strategy priority", "max_concurrency_per_key 8", "failure_threshold 2",
			"breaker_open 1500ms", "error_cooldown 50ms", "max_retries 1", "acquire_timeout 10s"},
			ckey("br-1", base, "br1", "priority 1"),
			ckey("br-2", base, "br2", "priority 2")))
	insts := startCluster(t, 3, site)
	c := clusterClient(t)

	// two failures through A open the breaker; each request is retried on br-2
	var opened time.Time
	for i := 0; m.Stats("br-1").Requests < 2; i++ {
		if i > 40 {
			t.Fatalf("br-1 got %d requests after 40 tries through A", m.Stats("br-1").Requests)
		}
		r := send(c, insts[0], 0, "mock-gpt", "fail")
		if r.err != nil || r.code != 200 {
			t.Fatalf("request through A while br-1 fails: %s", r)
		}
		opened = r.end
		time.Sleep(60 * time.Millisecond) // past error_cooldown
	}
	if st := m.Stats("br-1"); st.Requests != 2 || st.Failed != 2 {
		t.Fatalf("br-1: %s; want 2 failed requests", statsLine(st))
	}
	// healthy but slow from now on: a probe is in flight for 1 s
	m.SetKey("br-1", mockupstream.KeyBehavior{Latency: time.Second})

	// while open, no instance touches br-1
	for time.Since(opened) < open-300*time.Millisecond {
		rs := fire(c, insts, 3, 3, "mock-gpt")
		requireAll200(t, rs)
		if n := m.Stats("br-1").Requests; n != 2 {
			t.Fatalf("br-1 got a request %v after its breaker opened (open %v): %v", time.Since(opened).Round(time.Millisecond), open, rs)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// after the open period: continuous concurrent load through the 3
	// instances (3 workers each) until the probe (1 s at the mock) is over;
	// meanwhile exactly one request may reach br-1
	time.Sleep(time.Until(opened.Add(open + 100*time.Millisecond)))
	halfOpen := time.Now()
	var probeDone atomic.Bool
	var mu sync.Mutex
	var rs []result
	var wg sync.WaitGroup
	for w := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !probeDone.Load() {
				r := send(c, insts[w%3], w%3, "mock-gpt", "half-open")
				mu.Lock()
				rs = append(rs, r)
				mu.Unlock()
			}
		}()
	}
	var peak int64 // requests that reached br-1 while the probe was unfinished
	for {
		st := m.Stats("br-1") // Requests is read before OK
		if st.OK >= 1 {
			break
		}
		peak = max(peak, st.Requests-2)
		if time.Since(halfOpen) > 6*time.Second {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	probeDone.Store(true)
	wg.Wait()
	requireAll200(t, rs)
	st := m.Stats("br-1")
	t.Logf("%d requests during the half-open window; br-1 %s", len(rs), statsLine(st))
	if st.OK < 1 {
		t.Fatalf("no probe reached br-1 within 6s after its breaker's open period ended: %s", statsLine(st))
	}
	if peak != 1 {
		t.Fatalf("%d requests reached br-1 before the half-open probe completed, want exactly 1", peak)
	}
	// the probe succeeded: every instance uses br-1 (priority 1) again
	m.SetKey("br-1", mockupstream.KeyBehavior{})
	for i, in := range insts {
		var r result
		poll(t, 3*time.Second, fmt.Sprintf("instance %d routing to br-1 after the probe", i), func() bool {
			r = send(c, in, i, "mock-gpt", "closed")
			return r.err == nil && r.code == 200 && r.via == "br/br1"
		})
	}
}

// TestClusterInstanceKilledLeaseExpires: instance A holds the only slot of a
// cap-1 key for a slow request and is SIGKILLed mid-request; instance B,
// waiting for that key, gets it once A's lease (2 s) has expired, not before
// the kill and not much after the lease; the slot is free afterwards.
func TestClusterInstanceKilledLeaseExpires(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	const lease = 2 * time.Second
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"ls-1": {Latency: 20 * time.Second},
	}})
	site := clusterBlock(addr, prefix, "2s",
		cpool("ls", []string{"acquire_timeout 15s", "max_retries 0", "attempt_timeout 30s", "request_timeout 60s", "total_timeout 60s"},
			ckey("ls-1", base, "ls1", "max_concurrency 1")))
	insts := startCluster(t, 2, site)
	a, b := insts[0], insts[1]
	c := clusterClient(t)

	aDone := make(chan result, 1)
	go func() { aDone <- send(c, a, 0, "mock-gpt", "slow on A") }()
	eventually(t, 5*time.Second, "A's request reaching the mock", func() bool { return m.Stats("ls-1").InFlight == 1 })
	// the next requests are fast: only A's is slow
	m.SetKey("ls-1", mockupstream.KeyBehavior{})

	bDone := make(chan result, 1)
	go func() { bDone <- send(c, b, 1, "mock-gpt", "waiting on B") }()
	select {
	case r := <-bDone:
		t.Fatalf("B's request finished while A held the key's only slot: %s", r)
	case <-time.After(700 * time.Millisecond):
	}
	killed := time.Now()
	a.Kill()
	if r := <-aDone; r.err == nil && r.code == 200 {
		t.Fatalf("A's request succeeded although A was killed: %s", r)
	}

	var r result
	select {
	case r = <-bDone:
	case <-time.After(lease + 5*time.Second):
		t.Fatalf("B still waiting %v after A was killed (lease %v)", lease+5*time.Second, lease)
	}
	after := r.end.Sub(killed)
	if r.err != nil || r.code != 200 {
		t.Fatalf("B's request: %s (after %v)", r, after)
	}
	if after > lease+2*time.Second {
		t.Errorf("B got the slot %v after the kill; want within the lease (%v) plus margin", after.Round(time.Millisecond), lease)
	}
	t.Logf("B got the slot %v after A was killed (lease %v)", after.Round(time.Millisecond), lease)
	if st := m.Stats("ls-1"); st.MaxInFlight != 1 || st.OK != 1 {
		t.Errorf("ls-1: %s; want one request at a time and B's success", statsLine(st))
	}

	// no leak: the slot is free, several requests in a row are served at once
	for i := range 3 {
		r := send(c, b, 1, "mock-gpt", fmt.Sprintf("after %d", i))
		if r.err != nil || r.code != 200 || r.end.Sub(r.start) > time.Second {
			t.Fatalf("request %d through B after the lease expired: %s in %v", i, r, r.end.Sub(r.start))
		}
	}
	rs := fire(c, []*instance{b}, 6, 6, "mock-gpt")
	requireAll200(t, rs)
	if st := m.Stats("ls-1"); st.MaxInFlight != 1 {
		t.Errorf("ls-1 had %d in flight at once", st.MaxInFlight)
	}
}

// TestClusterRedisOutage: when Redis goes away the instances keep serving on
// local state (every request 200) and llm_gateway_state_backend_up reads 0;
// when it is back on the same address the gauge returns to 1 within a few
// seconds and the shared cap holds across instances again.
func TestClusterRedisOutage(t *testing.T) {
	rp := privateRedis(t)
	prefix := testPrefix(t, rp.Addr)
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		// no mock cap: an overlap on o-1 shows as MaxInFlight 2, not as a 429
		"o-1": {Latency: 20 * time.Millisecond},
		"o-2": {Latency: 20 * time.Millisecond},
	}})
	site := clusterBlock(rp.Addr, prefix, "2s",
		cpool("out", []string{"acquire_timeout 20s", "max_retries 1"},
			ckey("o-1", base, "o1", "max_concurrency 1"),
			ckey("o-2", base, "o2", "max_concurrency 4")))
	insts := startCluster(t, 2, site)
	c := clusterClient(t)
	const gauge = "llm_gateway_state_backend_up"

	for i, in := range insts {
		poll(t, 5*time.Second, fmt.Sprintf("instance %d: %s == 1 with Redis up", i, gauge), func() bool { return in.Metric(gauge) == 1 })
	}

	// light continuous load through both instances
	stop := make(chan struct{})
	var mu sync.Mutex
	var load []result
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				idx := (w + i) % 2
				r := send(c, insts[idx], idx, "mock-gpt", "load")
				mu.Lock()
				load = append(load, r)
				mu.Unlock()
				time.Sleep(30 * time.Millisecond)
			}
		}()
	}
	stopLoad := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}
	t.Cleanup(stopLoad)
	loadSoFar := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(load)
	}
	time.Sleep(300 * time.Millisecond)

	// outage
	rp.Stop()
	down := time.Now()
	for i, in := range insts {
		poll(t, 10*time.Second, fmt.Sprintf("instance %d: %s == 0 with Redis down", i, gauge), func() bool { return in.Metric(gauge) == 0 })
	}
	t.Logf("gauge 0 on both instances %v after Redis stopped", time.Since(down).Round(time.Millisecond))
	n0 := loadSoFar()
	time.Sleep(700 * time.Millisecond)
	if n := loadSoFar() - n0; n < 5 {
		t.Fatalf("only %d requests completed in 700 ms with Redis down", n)
	}

	// back on the same port
	rp.Start()
	up := time.Now()
	for i, in := range insts {
		poll(t, 10*time.Second, fmt.Sprintf("instance %d: %s back to 1 after Redis returned", i, gauge), func() bool { return in.Metric(gauge) == 1 })
	}
	t.Logf("gauge 1 on both instances %v after Redis returned", time.Since(up).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	stopLoad()
	mu.Lock()
	requireAll200(t, load)
	t.Logf("%d requests under load across the outage, all 200", len(load))
	mu.Unlock()

	// shared limits again: the cap-1 key has one in flight across both
	m.ResetStats()
	rs := fire(c, insts, 80, 80, "mock-gpt")
	requireAll200(t, rs)
	if st := m.Stats("o-1"); st.MaxInFlight != 1 || st.OK < 3 {
		t.Fatalf("o-1 after Redis returned: %s; want max 1 in flight across the instances (and some use)", statsLine(st))
	}
}

// TestClusterHarness checks the harness itself, without Redis or cluster
// mode: two instances with `state memory`-default config answer; Kill and
// Stop end them; a private Redis stops and restarts on the same port.
func TestClusterHarness(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	site := gatewayBlock(cpool("hh", nil, ckey("hh-1", base, "h1")))
	a := startInstance(t, site)
	b := startInstance(t, site)
	c := clusterClient(t)
	for i, in := range []*instance{a, b} {
		if r := send(c, in, i, "mock-gpt", "hello"); r.err != nil || r.code != 200 || r.via != "hh/h1" {
			t.Fatalf("instance %d: %s", i, r)
		}
	}
	if st := m.Stats("hh-1"); st.OK != 2 {
		t.Fatalf("mock: %s", statsLine(st))
	}
	if v := a.Metric("llm_gateway_requests_total"); v < 1 {
		t.Fatalf("llm_gateway_requests_total on a = %v", v)
	}
	a.Kill()
	if !a.Exited() {
		t.Fatal("a still running after Kill")
	}
	if r := send(c, a, 0, "mock-gpt", "dead"); r.err == nil {
		t.Fatalf("killed instance answered: %s", r)
	}
	b.Stop()
	if !b.Exited() {
		t.Fatal("b still running after Stop")
	}

	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Log("no redis-server: the private Redis part is skipped")
		return
	}
	rp := privateRedis(t)
	if err := redisPing(rp.Addr); err != nil {
		t.Fatal(err)
	}
	rc := redisClient(t, rp.Addr)
	if err := rc.Set(context.Background(), "llmgwtest:x", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if keys, err := rc.Keys(context.Background(), "llmgwtest:*").Result(); err != nil || len(keys) != 1 {
		t.Fatalf("keys %v %v", keys, err)
	}
	rp.Stop()
	if err := redisPing(rp.Addr); err == nil {
		t.Fatal("redis answers after Stop")
	}
	rp.Start()
	if err := redisPing(rp.Addr); err != nil {
		t.Fatalf("redis after restart: %v", err)
	}
}
