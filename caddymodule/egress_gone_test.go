package caddymodule

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// exitFor builds the exit of a proxy URL for a unit test, released when
// the test ends.
func exitFor(t *testing.T, raw string) *egressExit {
	t.Helper()
	e, err := newEgressExit(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = egressRegistry.Delete(e.regKey) })
	return e
}

// droppingListener accepts connections and closes each at once without a
// byte; after `live` connections it closes its listener too (a proxy
// going away: it dropped ours, and its listener closes last), or never
// when live is 0 (a live but rude server).
func droppingListener(t *testing.T, live int) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for n := 1; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
			if n == live {
				l.Close()
				return
			}
		}
	}()
	return l.Addr().String()
}

// TestExitGoneAsksTheProxy: after a connection through an exit dropped,
// a proxy that answers a request of its own is live (tinyproxy over http
// and behind TLS, microsocks with and without authentication), one whose
// port refuses connections is gone, one that takes the connection and
// drops it before its listener closes is gone, and one that drops every
// connection but keeps listening, or never answers, is live (as before:
// it still accepts connections a recheck later).
func TestExitGoneAsksTheProxy(t *testing.T) {
	tiny := startTinyproxy(t, "", "")
	tinyAuth := startTinyproxy(t, "tpuser", "tp-pass-0123456789")
	port, roots := startTLSFront(t, tinyAuth)
	egressRootCAs = roots
	t.Cleanup(func() { egressRootCAs = nil })
	socks, socksAuth := startMicrosocks(t, "", ""), startMicrosocks(t, "suser", "socks-pass-0123456789")
	refused := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cases := []struct {
		name, url string
		probe     proxyProbe
		gone      bool
	}{
		{"http", tiny.url("http", ""), proxyAnswered, false},
		{"https with auth", "https://tpuser:tp-pass-0123456789@127.0.0.1:" + strconv.Itoa(port), proxyAnswered, false},
		{"socks5", socks.url("socks5", ""), proxyAnswered, false},
		{"socks5h with auth", socksAuth.url("socks5h", "suser:socks-pass-0123456789"), proxyAnswered, false},
		{"refused", "http://" + refused, proxyRefused, true},
		{"going away", "socks5://" + droppingListener(t, 1), proxySilent, true},
		{"drops but listens", "http://" + droppingListener(t, 0), proxySilent, false},
		{"never answers", "http://" + silentListener(t), proxySilent, false},
	}
	for _, c := range cases {
		e := exitFor(t, c.url)
		if got := e.answers(time.Second); got != c.probe {
			t.Errorf("%s: probe %d, want %d", c.name, got, c.probe)
		}
	}
	for _, c := range cases {
		if c.name == "going away" { // its listener is closed by now: judge a fresh one
			c.url = "socks5://" + droppingListener(t, 1)
		}
		if got := exitFor(t, c.url).gone(time.Second); got != c.gone {
			t.Errorf("%s: gone %v, want %v", c.name, got, c.gone)
		}
	}
	if strings.Contains(tinyAuth.logText(), "tp-pass") {
		t.Fatal("the proxy's log shows its password")
	}
}

// TestEgressUpstreamDropAsksProxyOnce: an upstream that drops the
// connection through a live proxy is the key's failure, as without a
// proxy; the proxy is asked once whether it is alive (its own log shows
// one OPTIONS), not once by the exit and again by the attempt.
func TestEgressUpstreamDropAsksProxyOnce(t *testing.T) {
	tiny := startTinyproxy(t, "", "")
	// an upstream that takes the request and drops the connection
	up := holdingListener(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			c.Close()
		}
	})
	gw := gateway(t, gatewayBlock(poolBlock("drop", "http://"+up+"/v1", 1,
		"\t\t\tmodels m-drop\n\t\t\tmax_retries 0\n"+egressBlock("failover", "1m", tiny.url("http", "")))))
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("m-drop", "hi", false))
	if resp.StatusCode < 500 {
		t.Fatalf("status %d, want a failure: %s", resp.StatusCode, body)
	}
	// the proxy logs the request it was asked as it reads it (on a loaded
	// machine it may read it after the gateway gave up waiting)
	eventually(t, 10*time.Second, "the proxy asked", func() bool { return strings.Contains(tiny.logText(), "OPTIONS") })
	if n := strings.Count(tiny.logText(), "OPTIONS"); n != 1 {
		t.Fatalf("the proxy was asked %d times, want once:\n%s", n, tiny.logText())
	}
	if v := exitView(t, tiny.url("http", "")); v.State != "healthy" || v.Failures != 0 {
		t.Fatalf("the live exit was blamed for its upstream: %+v", v)
	}
	if st := keyStatus(t, "drop", "k1"); st.Failures != 1 {
		t.Fatalf("key %+v, want 1 failure (the upstream's)", st)
	}
}

// stallingConnectProxy is an HTTP proxy that answers CONNECT only once
// released (then tunnels nothing) and never answers any other request; it
// reports when the gateway asks it a request of its own, and when that
// connection is closed.
type stallingConnectProxy struct {
	addr    string
	release chan struct{}
	asked   chan struct{} // closed at the first other request
	closed  chan struct{} // closed when that request's connection ends
	once    sync.Once
}

func newStallingConnectProxy(t *testing.T) *stallingConnectProxy {
	p := &stallingConnectProxy{release: make(chan struct{}), asked: make(chan struct{}), closed: make(chan struct{})}
	p.addr = holdingListener(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if req.Method == http.MethodConnect {
			<-p.release
			_, _ = c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
			return
		}
		first := false
		p.once.Do(func() { first = true; close(p.asked) })
		if first {
			_, _ = br.ReadByte() // until the asker closes
			close(p.closed)
		}
	})
	return p
}

// TestConnectTakenWhileProxyAsked: a proxy that answers CONNECT after
// the exit's connect_timeout, while the gateway is asking it whether it
// is alive, has its answer taken at once: the tunnel is up before the
// gateway's own request to the proxy ends.
func TestConnectTakenWhileProxyAsked(t *testing.T) {
	p := newStallingConnectProxy(t)
	t.Cleanup(func() {
		select {
		case <-p.release:
		default:
			close(p.release)
		}
	})
	u, err := parseProxyURL("http://" + p.addr)
	if err != nil {
		t.Fatal(err)
	}
	dial := connectDialer(u)
	ctx := context.WithValue(context.Background(), egressTryKey{}, &egressTry{connectTimeout: 500 * time.Millisecond})
	ctx = context.WithValue(ctx, connectTimeoutKey{}, 20*time.Second)
	type result struct {
		c   net.Conn
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := dial(ctx, "tcp", "upstream.test:443")
		got <- result{c, err}
	}()
	select {
	case <-p.asked: // connect_timeout passed without an answer: the proxy is asked
	case <-time.After(20 * time.Second):
		t.Fatal("the proxy was never asked")
	}
	close(p.release)
	var r result
	select {
	case r = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the dial never ended")
	}
	select {
	case <-p.closed:
		t.Fatal("the dial waited for the gateway's own request to the proxy to end")
	default:
	}
	if r.err != nil {
		t.Fatalf("dial: %v", r.err)
	}
	r.c.Close()
	<-p.closed // the request to the proxy ends on its own (within connect_timeout)
}
