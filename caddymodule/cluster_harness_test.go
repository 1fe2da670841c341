package caddymodule

// Test harness for cluster mode: several Caddy instances sharing one Redis.
//
// Caddy is a process-wide singleton, so each instance runs as a child
// process: the test binary re-executes itself with LLMGW_TEST_CHILD_CADDY set
// to a Caddyfile path, and the init below turns that child into
// `caddy run --config <path> --adapter caddyfile` before the testing package
// (or TestMain) sees the command line. The modules linked into the test
// binary (llm_gateway, llm_mock_upstream, metrics, the Caddyfile adapter)
// are the ones the child has.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/logging"
	_ "github.com/caddyserver/caddy/v2/modules/metrics"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/llmgateway/llm_gateway/mockupstream/testskip"
)

// Environment of a child instance.
const (
	envChildCaddy = "LLMGW_TEST_CHILD_CADDY" // path of the Caddyfile to run
	envChildPPID  = "LLMGW_TEST_CHILD_PPID"  // pid of the test process that started it
	envTestRedis  = "LLMGW_TEST_REDIS"       // host:port of a Redis for the cluster tests
)

func init() {
	path := os.Getenv(envChildCaddy)
	if path == "" {
		return
	}
	runChildCaddy(path)
}

// runChildCaddy runs Caddy in this process and never returns.
func runChildCaddy(path string) {
	if _, err := caddy.GetModule("http.handlers.llm_gateway"); err != nil {
		fmt.Fprintf(os.Stderr, "child caddy: llm_gateway is not registered: %v\n", err)
		os.Exit(3)
	}
	// Never outlive the test process (a crashed or timed-out test binary
	// must not leave gateways behind): exit once we are re-parented.
	if ppid, err := strconv.Atoi(os.Getenv(envChildPPID)); err == nil && ppid > 0 {
		go func() {
			for {
				if os.Getppid() != ppid {
					fmt.Fprintln(os.Stderr, "child caddy: test process gone, exiting")
					os.Exit(4)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
	os.Args = []string{"caddy", "run", "--config", path, "--adapter", "caddyfile"}
	caddycmd.Main()
	os.Exit(0) // Main does not return; this is for the reader
}

// setPdeathsig asks the kernel (Linux) to SIGKILL the child when the test
// process dies; elsewhere it does nothing.
func setPdeathsig(cmd *exec.Cmd) {
	attr := &syscall.SysProcAttr{}
	if f := reflect.ValueOf(attr).Elem().FieldByName("Pdeathsig"); f.IsValid() && f.CanSet() {
		f.Set(reflect.ValueOf(syscall.SIGKILL).Convert(f.Type()))
	}
	cmd.SysProcAttr = attr
}

// instance is one Caddy child process serving a gateway site.
type instance struct {
	t     testing.TB
	name  string
	Base  string // gateway base URL, e.g. http://127.0.0.1:41234 (without /v1)
	Admin string // admin endpoint base URL (serves /metrics)

	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{} // closed when the process has exited
	err  error         // the Wait result, valid after done

	stopOnce sync.Once
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a child's
// stdout and stderr copiers and the reads of the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var instanceSeq struct {
	sync.Mutex
	n int
}

// childCaddyfile wraps a site body (the llm_gateway block and anything else
// the site needs) into a whole Caddyfile on the given loopback ports.
func childCaddyfile(port, adminPort int, siteBody string) string {
	return fmt.Sprintf(`{
	admin 127.0.0.1:%d
	persist_config off
	grace_period 1s
	log {
		level WARN
	}
}

http://127.0.0.1:%d {
	bind 127.0.0.1
%s
}
`, adminPort, port, siteBody)
}

// startInstance starts a Caddy child process serving siteBody (written as
// inside a site block, e.g. gatewayBlock(...)) on a fresh loopback port, with
// its admin endpoint on another, and waits until GET /healthz answers. The
// process is killed when the test ends; its output is logged if the test
// failed, and a data race or panic reported by the child fails the test.
func startInstance(t testing.TB, siteBody string) *instance {
	t.Helper()
	in, err := launchInstance(t, siteBody)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// startInstances starts n instances serving siteBody, concurrently.
func startInstances(t testing.TB, n int, siteBody string) []*instance {
	t.Helper()
	insts := make([]*instance, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			insts[i], errs[i] = launchInstance(t, siteBody)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return insts
}

// launchInstance is startInstance without t.Fatal (safe in goroutines).
func launchInstance(t testing.TB, siteBody string) (*instance, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("test executable: %v", err)
	}
	instanceSeq.Lock()
	instanceSeq.n++
	name := fmt.Sprintf("caddy-%d", instanceSeq.n)
	instanceSeq.Unlock()

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a port taken between freePort and bind: retry
		dir := t.TempDir()
		port, aport := freePort(t), freePort(t)
		cf := childCaddyfile(port, aport, siteBody)
		path := filepath.Join(dir, "Caddyfile")
		if err := os.WriteFile(path, []byte(cf), 0o600); err != nil {
			return nil, err
		}
		in := &instance{
			t:     t,
			name:  name,
			Base:  fmt.Sprintf("http://127.0.0.1:%d", port),
			Admin: fmt.Sprintf("http://127.0.0.1:%d", aport),
			log:   &syncBuffer{},
			done:  make(chan struct{}),
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(),
			envChildCaddy+"="+path,
			envChildPPID+"="+strconv.Itoa(os.Getpid()),
			"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
			"XDG_DATA_HOME="+filepath.Join(dir, "data"),
			"HOME="+dir,
		)
		cmd.Dir = dir
		cmd.Stdout = in.log
		cmd.Stderr = in.log
		setPdeathsig(cmd)
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting %s: %v", name, err)
		}
		in.cmd = cmd
		go func() {
			in.err = cmd.Wait()
			close(in.done)
		}()
		t.Cleanup(func() {
			in.Kill()
			in.report(cf)
		})
		err := in.waitReady(30 * time.Second)
		if err == nil {
			return in, nil
		}
		lastErr = err
		if !in.Exited() || !strings.Contains(in.log.String(), "address already in use") {
			break
		}
	}
	return nil, fmt.Errorf("%s did not come up: %v", name, lastErr)
}

// waitReady polls GET /healthz until it answers 200, the child exits, or
// within elapses.
func (in *instance) waitReady(within time.Duration) error {
	deadline := time.Now().Add(within)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-in.done:
			return fmt.Errorf("exited (%v) before answering:\n%s", in.err, tail(in.log.String(), 4000))
		default:
		}
		resp, err := client.Get(in.Base + "/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no 200 from /healthz within %v (last error %v):\n%s", within, err, tail(in.log.String(), 4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// report logs the child's output when the test failed, and fails the test
// when the child reported a data race or a panic.
func (in *instance) report(caddyfile string) {
	out := in.log.String()
	bad := ""
	switch {
	case strings.Contains(out, "WARNING: DATA RACE"):
		bad = "data race"
	case strings.Contains(out, "panic:") || strings.Contains(out, "fatal error:"):
		bad = "panic"
	}
	if bad != "" {
		in.t.Errorf("%s (%s) reported a %s:\n%s", in.name, in.Base, bad, tail(out, 20000))
		return
	}
	if in.t.Failed() {
		in.t.Logf("%s (%s, admin %s) Caddyfile:\n%s\noutput:\n%s", in.name, in.Base, in.Admin, caddyfile, tail(out, 8000))
	}
}

// URL returns the gateway base URL joined with path.
func (in *instance) URL(path string) string { return in.Base + path }

// Kill ends the process abruptly (SIGKILL) and waits for it: no cleanup runs
// in the child, leases it holds stay in the shared store.
func (in *instance) Kill() {
	in.stopOnce.Do(func() {
		_ = in.cmd.Process.Signal(syscall.SIGKILL)
		<-in.done
	})
}

// Stop ends the process gracefully (SIGINT, Caddy's graceful shutdown) and
// waits for it, killing it if it has not exited within 10 s.
func (in *instance) Stop() {
	in.stopOnce.Do(func() {
		_ = in.cmd.Process.Signal(os.Interrupt)
		select {
		case <-in.done:
		case <-time.After(10 * time.Second):
			in.t.Errorf("%s did not exit within 10s of SIGINT; killing it", in.name)
			_ = in.cmd.Process.Signal(syscall.SIGKILL)
			<-in.done
		}
	})
}

// Exited reports whether the process has ended.
func (in *instance) Exited() bool {
	select {
	case <-in.done:
		return true
	default:
		return false
	}
}

// Output returns what the child wrote so far.
func (in *instance) Output() string { return in.log.String() }

// Metric returns the value of the llm_gateway_* (or any) metric family name
// from the instance's admin /metrics, the first sample whose labels include
// all of want ("k=v"), or -1 when it is absent or the endpoint does not
// answer.
func (in *instance) Metric(name string, want ...string) float64 {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(in.Admin + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return -1
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return -1
	}
	return metricValue(fams, name, want...)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}

// ---- Redis ----

// redisAvailable decides what to do when the tests need a Redis that is not
// there: skip, or fail when running in CI (CI=true), where the cluster tests
// must run.
func redisUnavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("cluster tests need Redis in CI: %s (set %s=host:port or install redis-server)", why, envTestRedis)
	}
	testskip.Skipf(t, "cluster tests", "no redis-server and "+envTestRedis+" unset", "skipping cluster test: %s (set %s=host:port or install redis-server)", why, envTestRedis)
}

// testRedis returns the address of a Redis for the test: $LLMGW_TEST_REDIS if
// set (it must answer PING), else a private redis-server on a free port that
// is stopped when the test ends; if there is neither, the test is skipped
// (failed under CI=true).
func testRedis(t testing.TB) string {
	t.Helper()
	if addr := os.Getenv(envTestRedis); addr != "" {
		if err := redisPing(addr); err != nil {
			t.Fatalf("%s=%s does not answer PING: %v", envTestRedis, addr, err)
		}
		return addr
	}
	return privateRedis(t).Addr
}

// redisProc is a redis-server child process owned by one test.
type redisProc struct {
	t    testing.TB
	Port int
	Addr string // 127.0.0.1:<port>
	bin  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
}

// privateRedis starts a redis-server of the test's own on a free loopback
// port (no persistence), stopped when the test ends. It skips the test (or
// fails it under CI=true) when redis-server is not installed.
func privateRedis(t testing.TB) *redisProc {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		redisUnavailable(t, "redis-server is not in PATH")
	}
	r := &redisProc{t: t, bin: bin, log: &syncBuffer{}}
	for attempt := 0; ; attempt++ {
		r.Port = freePort(t)
		r.Addr = fmt.Sprintf("127.0.0.1:%d", r.Port)
		err := r.start()
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatalf("redis-server: %v\n%s", err, r.log.String())
		}
	}
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			t.Logf("redis-server %s output:\n%s", r.Addr, tail(r.log.String(), 4000))
		}
	})
	return r
}

func (r *redisProc) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return errors.New("already running")
	}
	cmd := exec.Command(r.bin, "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no")
	cmd.Stdout = r.log
	cmd.Stderr = r.log
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := redisPing(r.Addr); err == nil {
			break
		} else if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("no PONG on %s within 10s: %v", r.Addr, err)
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server on %s exited at start", r.Addr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	r.cmd, r.done = cmd, done
	return nil
}

// Start starts the server again on the same port (after Stop).
func (r *redisProc) Start() {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := r.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("restarting redis-server on %s: %v\n%s", r.Addr, err, tail(r.log.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL: an outage, not a shutdown) and waits for
// it; the port is free again afterwards.
func (r *redisProc) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
	r.cmd, r.done = nil, nil
}

// redisClient returns a go-redis client for addr with short timeouts,
// closed when the test ends.
func redisClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second,
		WriteTimeout: 2 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// redisPing reports whether the Redis at addr answers PING.
func redisPing(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	return c.Ping(context.Background()).Err()
}

// testPrefix returns a Redis key prefix of the test's own, so that tests
// sharing a Redis never see each other's state; the keys under it are
// deleted when the test ends (when Redis is reachable).
func testPrefix(t testing.TB, redisAddr string) string {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := regexp.MustCompile(`[^A-Za-z0-9_/-]`).ReplaceAllString(t.Name(), "_")
	p := "llmgwtest:" + name + ":" + hex.EncodeToString(rnd[:]) + ":"
	c := redisClient(t, redisAddr)
	t.Cleanup(func() {
		ctx := context.Background()
		var keys []string
		iter := c.Scan(ctx, 0, p+"*", 1000).Iterator() // the prefix holds no glob characters
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		for i := 0; i < len(keys); i += 100 {
			_ = c.Del(ctx, keys[i:min(i+100, len(keys))]...).Err()
		}
	})
	return p
}
