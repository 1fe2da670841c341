package caddymodule

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/mockupstream/testskip"
)

// testProxy is a real proxy process on 127.0.0.1 for the egress tests:
// Debian's tinyproxy (HTTP CONNECT and forwarding, optional Basic auth) or
// microsocks (SOCKS5, optional user/password). Its own log proves which
// requests went through it.
type testProxy struct {
	t          testing.TB
	kind       string // "http" or "socks5"
	port       int
	user, pass string
	dir        string
	logPath    string
	cmd        *exec.Cmd
	frontPort  int // a TLS front's port (startTLSFront), 0 for none
}

// needProxyBinary skips the test when a proxy binary is missing, and
// fails it under CI=true, where .ci/run installs them.
func needProxyBinary(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("egress tests need %s in CI (apt-get install tinyproxy microsocks)", name)
	}
	testskip.Skipf(t, "egress proxy tests", name+" not installed",
		"skipping egress proxy test: %s is not installed (apt-get install tinyproxy microsocks)", name)
	return ""
}

// startTinyproxy starts tinyproxy on a free loopback port, with Basic
// auth when user is set.
func startTinyproxy(t testing.TB, user, pass string) *testProxy {
	t.Helper()
	needProxyBinary(t, "tinyproxy")
	p := &testProxy{t: t, kind: "http", port: freePort(t), user: user, pass: pass, dir: t.TempDir()}
	p.logPath = filepath.Join(p.dir, "tinyproxy.log")
	p.start()
	t.Cleanup(p.stop)
	return p
}

// startMicrosocks starts microsocks on a free loopback port, with
// user/password authentication when user is set.
func startMicrosocks(t testing.TB, user, pass string) *testProxy {
	t.Helper()
	needProxyBinary(t, "microsocks")
	p := &testProxy{t: t, kind: "socks5", port: freePort(t), user: user, pass: pass, dir: t.TempDir()}
	p.logPath = filepath.Join(p.dir, "microsocks.log")
	p.start()
	t.Cleanup(p.stop)
	return p
}

// start (re)starts the proxy on its port and waits until it accepts
// connections. The log file is appended to across restarts.
func (p *testProxy) start() {
	t := p.t
	t.Helper()
	var cmd *exec.Cmd
	switch p.kind {
	case "http":
		conf := fmt.Sprintf("Port %d\nListen 127.0.0.1\nTimeout 60\nLogFile %q\nLogLevel Connect\nMaxClients 100\n", p.port, p.logPath)
		if p.user != "" {
			conf += fmt.Sprintf("BasicAuth %s %s\n", p.user, p.pass)
		}
		cf := filepath.Join(p.dir, "tinyproxy.conf")
		if err := os.WriteFile(cf, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command("tinyproxy", "-d", "-c", cf)
	case "socks5":
		args := []string{"-i", "127.0.0.1", "-p", strconv.Itoa(p.port)}
		if p.user != "" {
			args = append(args, "-u", p.user, "-P", p.pass)
		}
		cmd = exec.Command("microsocks", args...)
		f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	setPdeathsig(cmd) // the proxy dies with the test process, however it ends
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.kind, err)
	}
	p.cmd = cmd
	addr := "127.0.0.1:" + strconv.Itoa(p.port)
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			p.stop()
			t.Fatalf("%s proxy did not listen on %s", p.kind, addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop kills the proxy (its connections drop at once) and waits for it.
func (p *testProxy) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

// url is the proxy's URL with the given scheme, credentials as written
// (placeholders, say) when cred is not empty.
func (p *testProxy) url(scheme, cred string) string {
	if cred != "" {
		cred += "@"
	}
	return fmt.Sprintf("%s://%s127.0.0.1:%d", scheme, cred, p.port)
}

// count is the number of uses in the proxy's own log: requests tinyproxy
// received ("Request (file descriptor N): POST http://..." or a
// CONNECT), connections microsocks made ("client[N] ...: connected to").
func (p *testProxy) count() int {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return 0
	}
	needle := "connected to"
	if p.kind == "http" {
		needle = "Request (file descriptor"
	}
	return strings.Count(string(b), needle)
}

// logText is the proxy's log.
func (p *testProxy) logText() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// startTLSFront puts a TLS listener on a free loopback port in front of
// p (an https:// proxy made of tinyproxy), with the certificate of Go's
// httptest TLS servers; it returns the port and the pool that trusts it
// (the same pool trusts httptest TLS upstreams).
func startTLSFront(t testing.TB, p *testProxy) (int, *x509.CertPool) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	ts.StartTLS()
	certs := ts.TLS.Certificates
	roots := ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	ts.Close()
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: certs, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p.port))
				if err != nil {
					return
				}
				defer b.Close()
				go func() { _, _ = io.Copy(b, c); b.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(c, b)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port, roots
}
