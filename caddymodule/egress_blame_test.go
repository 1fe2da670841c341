package caddymodule

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// slowAcceptUpstream returns the loopback address of a listener whose
// accept queue is full (backlog 0, filled, never accepted): a TCP connect
// to it hangs as a connect to a slow or overloaded upstream does.
func slowAcceptUpstream(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr // the queue is full: the next connect hangs
		}
		t.Cleanup(func() { c.Close() })
		if i > 16 {
			t.Fatal("the accept queue never filled")
		}
	}
}

// silentListener accepts connections and never sends a byte: a stalled
// HTTP proxy, or an upstream whose TLS handshake never completes.
func silentListener(t testing.TB) string { return holdingListener(t, nil) }

// stallingSocks is a SOCKS5 proxy (RFC 1928, no authentication) that
// answers the greeting at once and then never answers the CONNECT
// request: a socks5h proxy whose resolution of the upstream's name hangs.
func stallingSocks(t testing.TB) string {
	return holdingListener(t, func(c net.Conn) {
		var hello [3]byte // VER 5, NMETHODS 1, METHOD 0
		if _, err := io.ReadFull(c, hello[:]); err != nil {
			return
		}
		_, _ = c.Write([]byte{5, 0})  // no authentication required
		_, _ = io.Copy(io.Discard, c) // the CONNECT request: no reply
	})
}

// holdingListener accepts connections on a loopback port, runs serve (nil:
// nothing) on each in its own goroutine and holds them open until the
// test ends; it returns the address.
func holdingListener(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			if serve != nil {
				go serve(c)
			}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return l.Addr().String()
}

// TestEgressSlowUpstreamNotExitsFault: the egress connect_timeout bounds
// the proxy's own step (reaching it, its handshake, its answer). A proxy
// that answered but whose upstream is slow (slow TCP connect behind a
// CONNECT tunnel, a stalled TLS handshake with the upstream, a socks5h
// name resolution that hangs) is not cooled: the failure is the key's,
// booked as the same upstream failure without a proxy, and the client
// gets the same failure status. A proxy that never answers is still
// cooled at connect_timeout.
func TestEgressSlowUpstreamNotExitsFault(t *testing.T) {
	tiny := startTinyproxy(t, "", "")
	slow := slowAcceptUpstream(t)
	silent := silentListener(t)
	stalledHTTP := "http://" + silentListener(t)
	socksh := "socks5h://" + stallingSocks(t)
	exitBlock := func(u string) string {
		return "\t\t\tegress {\n\t\t\t\tproxy " + u + "\n\t\t\t\tstrategy failover\n\t\t\t\tcooldown 1m\n\t\t\t\tconnect_timeout 500ms\n\t\t\t}\n"
	}
	pool := func(name, base, egress string) string {
		return "\t\tpool " + name + " {\n\t\t\tkey mk-1 " + base + " {\n\t\t\t\tid k1\n\t\t\t}\n" +
			"\t\t\tmodels m-" + name + "\n\t\t\tconnect_timeout 1s\n\t\t\tattempt_timeout 2s\n\t\t\tmax_retries 0\n" + egress + "\t\t}\n"
	}
	slowBase := "http://" + slow + "/v1"
	tlsBase := "https://" + silent + "/v1"
	unresolved := "http://upstream.invalid:80/v1"
	gw := gateway(t, gatewayBlock(
		pool("directslow", slowBase, ""),
		pool("tunnelslow", slowBase, exitBlock(tiny.url("http", ""))),
		pool("directtls", tlsBase, ""),
		pool("tunneltls", tlsBase, exitBlock(tiny.url("http", ""))),
		pool("sockshdns", unresolved, exitBlock(socksh)),
		pool("stalledhttp", slowBase, exitBlock(stalledHTTP)),
	))
	ask := func(poolName string) int {
		t.Helper()
		resp, body := post(t, gw+"/v1/chat/completions", chatBody("m-"+poolName, "hi", false))
		if resp.StatusCode < 500 {
			t.Fatalf("pool %s: status %d, want a failure: %s", poolName, resp.StatusCode, body)
		}
		return resp.StatusCode
	}
	// the same upstream failure without a proxy, for reference
	directSlow, directTLS := ask("directslow"), ask("directtls")
	refSlow, refTLS := keyStatus(t, "directslow", "k1"), keyStatus(t, "directtls", "k1")
	if refSlow.Failures != 1 || refTLS.Failures != 1 {
		t.Fatalf("without a proxy the key is charged once: %+v %+v", refSlow, refTLS)
	}
	for _, c := range []struct {
		pool, exit string
		status     int
		ref        int64
	}{
		{"tunnelslow", tiny.url("http", ""), directSlow, refSlow.Failures},
		{"tunneltls", tiny.url("http", ""), directTLS, refTLS.Failures},
		{"sockshdns", socksh, directSlow, refSlow.Failures},
	} {
		if got := ask(c.pool); got != c.status {
			t.Fatalf("pool %s: status %d, without a proxy %d", c.pool, got, c.status)
		}
		v := exitView(t, c.exit)
		if v.State != "healthy" || v.Failures != 0 {
			t.Fatalf("pool %s: the exit was blamed for its upstream: %+v", c.pool, v)
		}
		if st := keyStatus(t, c.pool, "k1"); st.Failures != c.ref {
			t.Fatalf("pool %s: key %+v, want %d failure as without a proxy", c.pool, st, c.ref)
		}
	}
	// a proxy that accepts the connection but never answers is the exit's
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("m-stalledhttp", "hi", false))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "egress exits unreachable") {
		t.Fatalf("stalled proxy: %d %s", resp.StatusCode, body)
	}
	if v := exitView(t, stalledHTTP); v.State != "cooling" || v.Failures != 1 || !strings.Contains(v.LastError, "timeout") {
		t.Fatalf("stalled proxy: %+v", v)
	}
	if st := keyStatus(t, "stalledhttp", "k1"); st.Failures != 0 {
		t.Fatalf("key charged for its stalled exit: %+v", st)
	}
}
