package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// gatewayKey is the client key the generated gateway configs accept.
const gatewayKey = "sk-bench-gateway-0123456789"

// Proxy kinds of a target.
const (
	proxyNone    = "none"
	proxyReverse = "reverse_proxy"
	proxyGateway = "llm_gateway"
)

// Dialects a client or an upstream key speaks.
const (
	dialectOpenAI    = "openai"
	dialectAnthropic = "anthropic"
)

// target is one thing put between the load generator and the mock.
type target struct {
	Name string // short name used in flags and tables
	Desc string
	// Label names the target in the headline table, as issue 15's table
	// does ("llm_gateway passthrough"); Desc when empty.
	Label    string
	Proxy    string // proxyNone, proxyReverse or proxyGateway
	Keys     int    // upstream keys per pool (gateway only)
	Client   string // dialect the client speaks
	Upstream string // dialect of the upstream keys
	// State is where the gateway keeps its pools' runtime state: ""
	// (memory, the default) or stateRedis; StateAddr and StatePrefix are
	// the Redis server and key prefix, set once the harness's
	// redis-server runs.
	State       string
	StateAddr   string
	StatePrefix string
	// Bin is the Caddy binary serving the target ("": the -caddy one).
	Bin string
}

// allTargets are the targets of a full run, in order; the first is the
// baseline for added latency, the second the floor for throughput ratios.
// gw-redis runs only when redis-server is in PATH.
func allTargets(manyKeys int) []target {
	return []target{
		{Name: "direct", Label: "no proxy", Desc: "(a) no proxy: client -> mock", Proxy: proxyNone, Client: dialectOpenAI, Upstream: dialectOpenAI},
		{Name: "reverse_proxy", Label: "Caddy reverse_proxy", Desc: "(b) Caddy reverse_proxy -> mock", Proxy: proxyReverse, Client: dialectOpenAI, Upstream: dialectOpenAI},
		{Name: "gw-pass", Label: "llm_gateway passthrough", Desc: "(c) llm_gateway passthrough, OpenAI in and out, 1 key", Proxy: proxyGateway, Keys: 1, Client: dialectOpenAI, Upstream: dialectOpenAI},
		{Name: "gw-redis", Label: "llm_gateway passthrough, state redis", Desc: "(c') as (c), with `state redis` (the harness's own redis-server on loopback, no persistence)", Proxy: proxyGateway, Keys: 1, Client: dialectOpenAI, Upstream: dialectOpenAI, State: stateRedis},
		{Name: "gw-keys", Label: fmt.Sprintf("llm_gateway passthrough, %d keys", manyKeys), Desc: fmt.Sprintf("(d) llm_gateway passthrough, %d keys", manyKeys), Proxy: proxyGateway, Keys: manyKeys, Client: dialectOpenAI, Upstream: dialectOpenAI},
		{Name: "gw-a2o", Label: "llm_gateway Anthropic in, OpenAI up", Desc: "(e) llm_gateway translating, Anthropic in -> OpenAI up", Proxy: proxyGateway, Keys: 1, Client: dialectAnthropic, Upstream: dialectOpenAI},
		{Name: "gw-o2a", Label: "llm_gateway OpenAI in, Anthropic up", Desc: "(f) llm_gateway translating, OpenAI in -> Anthropic up", Proxy: proxyGateway, Keys: 1, Client: dialectOpenAI, Upstream: dialectAnthropic},
	}
}

// request returns the URL, headers and body a client of this target sends
// for workload w.
func (t target) request(base string, w workload, reqSize int) (string, http.Header, []byte) {
	h := http.Header{"Content-Type": {"application/json"}}
	key := gatewayKey
	if t.Proxy != proxyGateway {
		// straight to the mock (or through a plain proxy): the mock picks
		// the workload from the key's prefix
		key = workloadKeyPrefix[w.Model] + "-1"
	}
	if t.Client == dialectAnthropic {
		h.Set("X-Api-Key", key)
		h.Set("Anthropic-Version", "2023-06-01")
		return base + "/v1/messages", h, messagesRequest(w.Model, w.Stream, reqSize)
	}
	h.Set("Authorization", "Bearer "+key)
	return base + "/v1/chat/completions", h, chatRequest(w.Model, w.Stream, reqSize)
}

// caddyfile renders the Caddy config of a proxied target listening on port
// and forwarding to the mock at mockAddr.
func (t target) caddyfile(port int, mockAddr string, gatewayLog bool, adminPort int) string {
	var b strings.Builder
	if adminPort > 0 {
		// the admin endpoint serves /debug/pprof for -profile
		fmt.Fprintf(&b, "{\n\tadmin 127.0.0.1:%d\n", adminPort)
	} else {
		b.WriteString("{\n\tadmin off\n")
	}
	b.WriteString("\tpersist_config off\n\tgrace_period 1s\n")
	if !gatewayLog {
		// no per-request log lines: reverse_proxy runs without an access log,
		// and the gateway is measured likewise
		b.WriteString("\tlog {\n\t\tlevel WARN\n\t}\n")
	}
	b.WriteString("}\n")
	fmt.Fprintf(&b, "http://127.0.0.1:%d {\n\tbind 127.0.0.1\n", port)
	switch t.Proxy {
	case proxyReverse:
		// the same idle-connection budget as the gateway's upstream transport
		fmt.Fprintf(&b, "\treverse_proxy %s {\n\t\ttransport http {\n\t\t\tkeepalive_idle_conns 1024\n\t\t\tkeepalive_idle_conns_per_host 256\n\t\t}\n\t}\n", mockAddr)
	case proxyGateway:
		fmt.Fprintf(&b, "\tllm_gateway {\n\t\tapi_key %s\n", gatewayKey)
		if t.State == stateRedis {
			fmt.Fprintf(&b, "\t\tstate redis {\n\t\t\taddress %s\n\t\t\tprefix %s\n\t\t}\n", t.StateAddr, t.StatePrefix)
		}
		for _, model := range []string{modelJSON, modelSSE, modelPaced, modelSlow} {
			prefix := workloadKeyPrefix[model]
			fmt.Fprintf(&b, "\t\tpool %s {\n\t\t\tmodels %s\n", prefix, model)
			for i := 1; i <= t.Keys; i++ {
				fmt.Fprintf(&b, "\t\t\tkey %s-%d http://%s/v1 {\n\t\t\t\tid %s-%d\n", prefix, i, mockAddr, prefix, i)
				if t.Upstream == dialectAnthropic {
					b.WriteString("\t\t\t\tdialect anthropic\n")
				}
				b.WriteString("\t\t\t}\n")
			}
			b.WriteString("\t\t\tmax_concurrency_per_key 100000\n\t\t}\n")
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// proc is a child process of the harness.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
}

// Pid returns the child's process id.
func (p *proc) Pid() int { return p.cmd.Process.Pid }

// startProc starts a child that is killed if the harness dies
// (Pdeathsig), with its output appended to logPath.
func startProc(name string, args, env []string, logPath string) (*proc, io.Reader, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, err
	}
	p := &proc{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, stdout, nil
}

// stop ends the child: SIGTERM, then SIGKILL after 5 s.
func (p *proc) stop() {
	_ = p.stdin.Close()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// startMock starts the mock upstream as `<this binary> -mode=mock` and
// returns it with its address.
func startMock(dir string, c mockConfig) (*proc, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	args := append([]string{"-mode=mock", "-mock-addr=127.0.0.1:0"}, c.args()...)
	p, stdout, err := startProc(self, args, nil, filepath.Join(dir, "mock.log"))
	if err != nil {
		return nil, "", err
	}
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l, ok := <-line:
		addr, found := strings.CutPrefix(l, "listening ")
		if !ok || !found {
			p.stop()
			return nil, "", fmt.Errorf("mock did not start (see %s)", filepath.Join(dir, "mock.log"))
		}
		return p, addr, nil
	case <-time.After(15 * time.Second):
		p.stop()
		return nil, "", errors.New("mock did not start within 15 s")
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startCaddy runs caddyBin with the target's generated Caddyfile and waits
// until it answers. Caddy's config and data directories live in dir.
func startCaddy(ctx context.Context, caddyBin, dir string, t target, mockAddr string, gatewayLog bool, adminPort int) (*proc, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cfPath := filepath.Join(dir, t.Name+".Caddyfile")
	if err := os.WriteFile(cfPath, []byte(t.caddyfile(port, mockAddr, gatewayLog, adminPort)), 0o644); err != nil {
		return nil, "", err
	}
	env := []string{
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "xdg-config"),
		"XDG_DATA_HOME=" + filepath.Join(dir, "xdg-data"),
		"HOME=" + dir,
	}
	p, stdout, err := startProc(caddyBin, []string{"run", "--config", cfPath, "--adapter", "caddyfile"}, env,
		filepath.Join(dir, t.Name+".log"))
	if err != nil {
		return nil, "", err
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	probe := base + "/healthz"
	if t.Proxy != proxyGateway {
		probe = base + "/"
	}
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return nil, "", fmt.Errorf("caddy exited at start (see %s)", filepath.Join(dir, t.Name+".log"))
		case <-ctx.Done():
			p.stop()
			return nil, "", ctx.Err()
		default:
		}
		if resp, err := client.Get(probe); err == nil {
			resp.Body.Close()
			client.CloseIdleConnections()
			return p, base, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stop()
	return nil, "", fmt.Errorf("caddy did not answer within 30 s (see %s)", filepath.Join(dir, t.Name+".log"))
}

// ensureCaddy builds caddyBin with ./xcaddy.sh when it is missing or older
// than the module's sources (mode "auto"), always ("always") or never
// ("never"), and returns its version line.
func ensureCaddy(caddyBin, mode string) (string, error) {
	need := mode == "always"
	if mode == "auto" {
		need = caddyStale(caddyBin)
	}
	if need {
		fmt.Fprintln(os.Stderr, "bench: building ./caddy with ./xcaddy.sh build (about a minute)")
		cmd := exec.Command("./xcaddy.sh", "build")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			if _, statErr := os.Stat(caddyBin); statErr != nil {
				return "", fmt.Errorf("building caddy: %v", err)
			}
			fmt.Fprintf(os.Stderr, "bench: build failed (%v); using the existing %s\n", err, caddyBin)
		}
	}
	out, err := exec.Command(caddyBin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %v", caddyBin, err)
	}
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	return v, nil
}

// caddyStale reports whether caddyBin is missing or older than a source file
// of the packages built into it (or go.mod / go.sum).
func caddyStale(caddyBin string) bool {
	st, err := os.Stat(caddyBin)
	if err != nil {
		return true
	}
	newer := false
	for _, pattern := range []string{"go.mod", "go.sum", "*.go", "caddymodule/*.go", "keypool/*.go", "translate/*.go", "mockupstream/*.go", "mockupstream/caddymock/*.go"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			if fi, err := os.Stat(f); err == nil && fi.ModTime().After(st.ModTime()) {
				newer = true
			}
		}
	}
	return newer
}
