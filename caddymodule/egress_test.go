package caddymodule

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

// mockPerRequest starts a mock upstream that closes each connection after
// its answer, so that every request opens a new tunnel and each proxy's
// log counts requests, not kept-alive connections.
func mockPerRequest(t testing.TB) (*mockupstream.Server, string) {
	t.Helper()
	m := mockupstream.New(mockupstream.Config{})
	srv := httptest.NewUnstartedServer(m)
	srv.Config.SetKeepAlivesEnabled(false)
	srv.Start()
	t.Cleanup(srv.Close)
	return m, srv.URL + "/v1"
}

// egressPool is a pool of n mock keys (k1..kn) with an egress block.
func egressPool(base string, n int, egress string) string {
	return poolBlock("main", base, n, egress)
}

// egressBlock is a pool's egress block over the given proxy URLs.
func egressBlock(strategy, cooldown string, urls ...string) string {
	var b strings.Builder
	b.WriteString("\t\t\tegress {\n")
	for _, u := range urls {
		fmt.Fprintf(&b, "\t\t\t\tproxy %s\n", u)
	}
	fmt.Fprintf(&b, "\t\t\t\tstrategy %s\n\t\t\t\tcooldown %s\n\t\t\t\tconnect_timeout 2s\n\t\t\t}\n", strategy, cooldown)
	return b.String()
}

// exitView returns the admin view of the exit named name.
func exitView(t testing.TB, name string) egressView {
	t.Helper()
	for _, v := range egressViews() {
		if v.Exit == name {
			return v
		}
	}
	t.Fatalf("exit %q not listed; have %+v", name, egressViews())
	return egressView{}
}

// chatOK sends a chat completion and fails the test unless it is a 200;
// it returns X-Routed-Via.
func chatOK(t testing.TB, gw string, hdr ...string) string {
	t.Helper()
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false), hdr...)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := gjson.GetBytes(body, "choices.0.message.content").String(); got != mockupstream.Text("hi") {
		t.Fatalf("content %q", got)
	}
	return resp.Header.Get("X-Routed-Via")
}

// TestEgressRotateAlternates: two exits in rotate take turns, request by
// request, as each tinyproxy's own log shows; X-Routed-Via names the exit.
func TestEgressRotateAlternates(t *testing.T) {
	a, b := startTinyproxy(t, "", ""), startTinyproxy(t, "", "")
	_, base := mockPerRequest(t)
	gw := gateway(t, gatewayBlock(egressPool(base, 1, egressBlock("rotate", "30s", a.url("http", ""), b.url("http", "")))))
	var via []string
	for i := 0; i < 10; i++ {
		via = append(via, chatOK(t, gw))
		if got := a.count() + b.count(); got != i+1 {
			t.Fatalf("after %d requests the proxies logged %d", i+1, got)
		}
	}
	if a.count() != 5 || b.count() != 5 {
		t.Fatalf("rotate: proxy A logged %d requests, B %d; want 5 and 5", a.count(), b.count())
	}
	for i := 1; i < len(via); i++ {
		if via[i] == via[i-1] {
			t.Fatalf("requests %d and %d both went %q: %q", i-1, i, via[i], via)
		}
		if !strings.HasPrefix(via[i], "main/k1 via http://127.0.0.1:") {
			t.Fatalf("X-Routed-Via %q", via[i])
		}
	}
	if va, vb := exitView(t, a.url("http", "")), exitView(t, b.url("http", "")); va.Requests != 5 || vb.Requests != 5 || va.State != "healthy" {
		t.Fatalf("admin views: %+v %+v", va, vb)
	}
}

// TestEgressStickyKeepsSession: a session stays on one exit across 20
// requests (the other proxy's log stays empty); requests without a
// session rotate.
func TestEgressStickyKeepsSession(t *testing.T) {
	a, b := startTinyproxy(t, "", ""), startTinyproxy(t, "", "")
	_, base := mockPerRequest(t)
	gw := gateway(t, gatewayBlock(egressPool(base, 1, egressBlock("sticky", "30s", a.url("http", ""), b.url("http", "")))))
	first := chatOK(t, gw, "X-Session-Id", "conversation-1")
	for i := 1; i < 20; i++ {
		if via := chatOK(t, gw, "X-Session-Id", "conversation-1"); via != first {
			t.Fatalf("request %d went %q, the session's first went %q", i, via, first)
		}
	}
	if !(a.count() == 20 && b.count() == 0 || a.count() == 0 && b.count() == 20) {
		t.Fatalf("sticky: proxy A logged %d, B %d; want 20 on one and 0 on the other", a.count(), b.count())
	}
	// sessions spread over the exits: some session lands on the other one
	other := false
	for i := 0; i < 20 && !other; i++ {
		other = chatOK(t, gw, "X-Session-Id", fmt.Sprintf("conversation-x%d", i)) != first
	}
	if !other {
		t.Fatal("20 other sessions all went through the same exit")
	}
}

// TestEgressFailoverAndExitDown: failover uses the second exit only while
// the first is down. The first exit is stopped mid-run: no request fails,
// the exit shows cooling, the key shows no failure, and traffic returns to
// the exit after its cooldown once it is back.
func TestEgressFailoverAndExitDown(t *testing.T) {
	a, b := startTinyproxy(t, "", ""), startMicrosocks(t, "", "")
	_, base := mockPerRequest(t)
	gw := gateway(t, gatewayBlock(egressPool(base, 1, egressBlock("failover", "1s", a.url("http", ""), b.url("socks5", "")))))
	for i := 0; i < 5; i++ {
		chatOK(t, gw)
	}
	if a.count() != 5 || b.count() != 0 {
		t.Fatalf("failover with both up: A logged %d, B %d; want 5 and 0", a.count(), b.count())
	}
	a.stop()
	for i := 0; i < 5; i++ {
		if via := chatOK(t, gw); !strings.HasSuffix(via, " via "+b.url("socks5", "")) {
			t.Fatalf("with A down, request %d went %q", i, via)
		}
	}
	if b.count() < 1 {
		t.Fatalf("microsocks logged no connection: %s", b.logText())
	}
	va := exitView(t, a.url("http", ""))
	if va.State != "cooling" || va.Failures != 1 || va.CooldownSeconds < 1 {
		t.Fatalf("exit A: %+v; want cooling after 1 failure", va)
	}
	if st := keyStatus(t, "main", "k1"); st.Failures != 0 || st.State != keypool.StateReady {
		t.Fatalf("key k1 after its exit went down: %+v", st)
	}
	a.start()
	before := a.count()
	time.Sleep(1100 * time.Millisecond) // the exit's cooldown
	for i := 0; i < 3; i++ {
		if via := chatOK(t, gw); !strings.HasSuffix(via, " via "+a.url("http", "")) {
			t.Fatalf("after A's cooldown, request %d went %q", i, via)
		}
	}
	if got := a.count() - before; got != 3 {
		t.Fatalf("A logged %d requests after it came back, want 3", got)
	}
	if va := exitView(t, a.url("http", "")); va.State != "healthy" {
		t.Fatalf("exit A after its cooldown: %+v", va)
	}
}

// TestEgressRotateExitStoppedMidRun: under rotate, one of two exits stops
// between requests: all 20 requests succeed and the key is not charged.
func TestEgressRotateExitStoppedMidRun(t *testing.T) {
	a, b := startMicrosocks(t, "", ""), startTinyproxy(t, "", "")
	_, base := mock(t, mockupstream.Config{})
	gw := gateway(t, gatewayBlock(egressPool(base, 2, "\t\t\taffinity off\n"+egressBlock("rotate", "1m", a.url("socks5h", ""), b.url("http", "")))))
	for i := 0; i < 20; i++ {
		if i == 6 {
			a.stop()
		}
		chatOK(t, gw)
	}
	if va := exitView(t, a.url("socks5h", "")); va.State != "cooling" || va.Failures != 1 {
		t.Fatalf("stopped exit: %+v", va)
	}
	for _, id := range []string{"k1", "k2"} {
		if st := keyStatus(t, "main", id); st.Failures != 0 {
			t.Fatalf("key %s charged for an exit: %+v", id, st)
		}
	}
}

// TestEgressExclusiveExit: a key's exclusive exit carries all of that
// key's traffic and nothing else; the other key uses the pool's list.
func TestEgressExclusiveExit(t *testing.T) {
	socks := startMicrosocks(t, "", "")
	http1 := startTinyproxy(t, "", "")
	m, base := mockPerRequest(t)
	pool := fmt.Sprintf("\t\tpool main {\n\t\t\tkey mk-1 %s {\n\t\t\t\tid k1\n\t\t\t\tegress %s\n\t\t\t}\n"+
		"\t\t\tkey mk-2 %s {\n\t\t\t\tid k2\n\t\t\t}\n\t\t\taffinity off\n%s\t\t}\n", base, socks.url("socks5", ""), base, egressBlock("rotate", "30s", http1.url("http", "")))
	gw := gateway(t, gatewayBlock(pool))
	viaSocks, viaHTTP := 0, 0
	for i := 0; i < 12; i++ {
		switch via := chatOK(t, gw); via {
		case "main/k1 via " + socks.url("socks5", ""):
			viaSocks++
		case "main/k2 via " + http1.url("http", ""):
			viaHTTP++
		default:
			t.Fatalf("X-Routed-Via %q", via)
		}
	}
	k1, k2 := m.Stats("mk-1").Requests, m.Stats("mk-2").Requests
	if int(k1) != viaSocks || int(k2) != viaHTTP || k1 == 0 || k2 == 0 {
		t.Fatalf("mock saw k1 %d, k2 %d; routed via socks %d, via http %d", k1, k2, viaSocks, viaHTTP)
	}
	if http1.count() != viaHTTP {
		t.Fatalf("the pool's proxy logged %d requests, k2 sent %d: k1's traffic leaked into it", http1.count(), viaHTTP)
	}
	if c := socks.count(); c < 1 || c > viaSocks {
		t.Fatalf("the exclusive exit logged %d connections for %d requests of k1", c, viaSocks)
	}
	if v := exitView(t, socks.url("socks5", "")); v.Requests != int64(viaSocks) {
		t.Fatalf("exclusive exit view %+v, want %d requests", v, viaSocks)
	}
}

// TestEgressAllExitsDown: with every exit down the client gets 503 in its
// dialect saying the exits are unreachable, the key is not charged, and
// when every exit is cooling the soonest-recovering one is tried once.
func TestEgressAllExitsDown(t *testing.T) {
	a, b := startTinyproxy(t, "", ""), startMicrosocks(t, "", "")
	_, base := mock(t, mockupstream.Config{})
	gw := gateway(t, gatewayBlock(egressPool(base, 2, egressBlock("rotate", "1m", a.url("http", ""), b.url("socks5", "")))))
	a.stop()
	b.stop()
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
	if resp.StatusCode != 503 || !strings.Contains(gjson.GetBytes(body, "error.message").String(), "egress exits unreachable") {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Fatalf("no Retry-After: %v", resp.Header)
	}
	failures := func() int64 {
		return exitView(t, a.url("http", "")).Failures + exitView(t, b.url("socks5", "")).Failures
	}
	if f := failures(); f != 2 {
		t.Fatalf("first request: %d exit failures, want 2 (each exit once)", f)
	}
	// both cooling now: the soonest-recovering one is tried once
	req, _ := http.NewRequest(http.MethodPost, gw+"/v1/messages", strings.NewReader(`{"model":"mock-gpt","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", gatewayKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ab map[string]any
	_ = json.NewDecoder(r2.Body).Decode(&ab)
	r2.Body.Close()
	if r2.StatusCode != 503 || ab["type"] != "error" || !strings.Contains(fmt.Sprint(ab["error"]), "egress exits unreachable") {
		t.Fatalf("anthropic: %d %v", r2.StatusCode, ab)
	}
	if f := failures(); f != 3 {
		t.Fatalf("second request: %d exit failures in all, want 3 (the soonest-recovering exit tried once)", f)
	}
	for _, id := range []string{"k1", "k2"} {
		if st := keyStatus(t, "main", id); st.Failures != 0 || st.State != keypool.StateReady {
			t.Fatalf("key %s: %+v", id, st)
		}
	}
}

// TestEgressDirectFallbackEntry: "direct" listed as an exit serves when
// the proxies are down.
func TestEgressDirectFallbackEntry(t *testing.T) {
	a := startTinyproxy(t, "", "")
	_, base := mock(t, mockupstream.Config{})
	gw := gateway(t, gatewayBlock(egressPool(base, 1, egressBlock("failover", "1m", a.url("http", ""), "direct"))))
	a.stop()
	if via := chatOK(t, gw); via != "main/k1 via direct" {
		t.Fatalf("X-Routed-Via %q", via)
	}
	if st := keyStatus(t, "main", "k1"); st.Failures != 0 {
		t.Fatalf("key: %+v", st)
	}
}

// TestEgressStreamingEachKind: a stream through each kind of exit is
// relayed event by event: the first event is read before the mock sends
// its last.
func TestEgressStreamingEachKind(t *testing.T) {
	cases := []struct {
		name  string
		start func(t *testing.T) *testProxy
		url   func(p *testProxy) string
		tls   bool
	}{
		{"http CONNECT to a plain-http upstream", func(t *testing.T) *testProxy { return startTinyproxy(t, "", "") }, func(p *testProxy) string { return p.url("http", "") }, false},
		{"http CONNECT with Basic auth", func(t *testing.T) *testProxy { return startTinyproxy(t, "tpuser", "tp-pass-0123456789") },
			func(p *testProxy) string { return p.url("http", "tpuser:tp-pass-0123456789") }, true},
		{"socks5 with auth", func(t *testing.T) *testProxy { return startMicrosocks(t, "suser", "socks-pass-0123456789") },
			func(p *testProxy) string { return p.url("socks5", "suser:socks-pass-0123456789") }, false},
		{"https proxy (TLS to the proxy) with Basic auth, CONNECT to a TLS upstream", func(t *testing.T) *testProxy {
			p := startTinyproxy(t, "tpuser", "tp-pass-0123456789")
			port, _ := startTLSFront(t, p)
			p.frontPort = port
			return p
		}, func(p *testProxy) string {
			return fmt.Sprintf("https://tpuser:tp-pass-0123456789@127.0.0.1:%d", p.frontPort)
		}, true},
		{"socks5h over TLS", func(t *testing.T) *testProxy { return startMicrosocks(t, "", "") }, func(p *testProxy) string { return p.url("socks5h", "") }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.start(t)
			m := mockupstream.New(mockupstream.Config{Default: mockupstream.KeyBehavior{TokensPerSecond: 40}})
			var srv *httptest.Server
			if tc.tls {
				srv = httptest.NewTLSServer(m)
				pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
				egressRootCAs = pool
				t.Cleanup(func() { egressRootCAs = nil })
			} else {
				srv = httptest.NewServer(m)
			}
			t.Cleanup(srv.Close)
			gw := gateway(t, gatewayBlock(egressPool(srv.URL+"/v1", 1, egressBlock("rotate", "30s", tc.url(p)))))
			req, _ := http.NewRequest(http.MethodPost, gw+"/v1/chat/completions", strings.NewReader(string(chatBody("mock-gpt", "one two three four five six seven eight", true))))
			req.Header.Set("Authorization", "Bearer "+gatewayKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("X-Routed-Via"), " via "+p.kind) {
				t.Fatalf("status %d, X-Routed-Via %q", resp.StatusCode, resp.Header.Get("X-Routed-Via"))
			}
			firstAt, text, done := readChatStream(resp.Body)
			if !done || text != mockupstream.Text("one two three four five six seven eight") {
				t.Fatalf("stream: done %v, text %q", done, text)
			}
			last := m.Stats("mk-1").LastEventSentAt
			if !firstAt.Before(last) {
				t.Fatalf("first event read at %v, not before the mock sent its last at %v: buffered", firstAt, last)
			}
			if p.count() < 1 {
				t.Fatalf("the proxy logged nothing: %s", p.logText())
			}
			if p.kind == "http" && !strings.Contains(p.logText(), "CONNECT 127.0.0.1:") {
				t.Fatalf("tinyproxy saw no CONNECT: %s", p.logText())
			}
		})
	}
}

// TestEgressKeptAcrossReload: a reload that keeps an exit keeps its
// transport, health and counters (like pool state); one that drops it
// releases it.
func TestEgressKeptAcrossReload(t *testing.T) {
	a := startTinyproxy(t, "", "")
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	_, base := mockPerRequest(t)
	gateway(t, gatewayBlock(egressPool(base, 1, egressBlock("failover", "1m", dead, a.url("http", "")))))
	before := egressRegistryExit(t, a.url("http", ""))
	gw := gateway(t, gatewayBlock(egressPool(base, 1, egressBlock("failover", "1m", dead, a.url("http", "")))))
	chatOK(t, gw)
	chatOK(t, gw)
	gw = gateway(t, gatewayBlock(egressPool(base, 1, "\t\t\tmax_retries 2\n"+egressBlock("failover", "1m", dead, a.url("http", "")))))
	if after := egressRegistryExit(t, a.url("http", "")); after != before {
		t.Fatal("the reload built a new exit: its connections and counters were lost")
	}
	if v := exitView(t, a.url("http", "")); v.Requests != 2 {
		t.Fatalf("after the reload: %+v, want the 2 requests counted before it", v)
	}
	if v := exitView(t, dead); v.State != "cooling" || v.Failures != 1 {
		t.Fatalf("the dead exit's cooldown did not survive the reload: %+v", v)
	}
	chatOK(t, gw) // the cooling exit is not tried again
	if v := exitView(t, dead); v.Failures != 1 {
		t.Fatalf("dead exit: %+v", v)
	}
	gateway(t, gatewayBlock(egressPool(base, 1, "")))
	for _, v := range egressViews() {
		if v.Exit == a.url("http", "") || v.Exit == dead {
			t.Fatalf("exit %s still held after a reload that dropped it", v.Exit)
		}
	}
}

// egressRegistryExit returns the live exit named name.
func egressRegistryExit(t testing.TB, name string) *egressExit {
	t.Helper()
	var found *egressExit
	egressRegistry.Range(func(_, v any) bool {
		if e := v.(*egressExit); e.name == name {
			found = e
		}
		return found == nil
	})
	if found == nil {
		t.Fatalf("exit %s not in the registry", name)
	}
	return found
}

// TestEgressStalledProxyTimesOut: a proxy that accepts connections but
// never answers the handshake is cut at connect_timeout, cooled, and the
// request goes on through the next exit without charging the key.
func TestEgressStalledProxyTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	stalled := "socks5://" + l.Addr().String()
	b := startTinyproxy(t, "", "")
	_, base := mockPerRequest(t)
	block := "\t\t\tegress {\n\t\t\t\tproxy " + stalled + "\n\t\t\t\tproxy " + b.url("http", "") +
		"\n\t\t\t\tstrategy failover\n\t\t\t\tconnect_timeout 1s\n\t\t\t}\n"
	// connect_timeout bounds each exit's own step: 1s leaves the working
	// proxy room to answer on a loaded machine
	gw := gateway(t, gatewayBlock(egressPool(base, 1, block)))
	start := time.Now()
	if via := chatOK(t, gw); via != "main/k1 via "+b.url("http", "") {
		t.Fatalf("X-Routed-Via %q", via)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("answered in %v: the stalled exit was not waited for", d)
	}
	v := exitView(t, stalled)
	if v.State != "cooling" || v.Failures != 1 || !strings.Contains(v.LastError, "timeout") {
		t.Fatalf("stalled exit: %+v", v)
	}
	if st := keyStatus(t, "main", "k1"); st.Failures != 0 {
		t.Fatalf("key: %+v", st)
	}
}

// TestEgressExitLostMidStream: a proxy that dies while a stream comes
// through it cuts that stream (the client gets its dialect's error), but
// the key is not charged: the exit cools instead, and the next request
// goes through the other exit.
func TestEgressExitLostMidStream(t *testing.T) {
	a, b := startMicrosocks(t, "", ""), startTinyproxy(t, "", "")
	m, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{TokensPerSecond: 20}})
	gw := gateway(t, gatewayBlock(egressPool(base, 1, egressBlock("failover", "1m", a.url("socks5", ""), b.url("http", "")))))
	req, _ := http.NewRequest(http.MethodPost, gw+"/v1/chat/completions", strings.NewReader(string(chatBody("mock-gpt", "one two three four five six seven eight nine ten", true))))
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: ") {
	}
	a.stop() // mid-stream
	rest := ""
	for sc.Scan() {
		rest += sc.Text() + "\n"
	}
	resp.Body.Close()
	if strings.Contains(rest, "[DONE]") || m.Stats("mk-1").OK != 0 {
		t.Fatalf("the stream was not cut: %s", rest)
	}
	if v := exitView(t, a.url("socks5", "")); v.State != "cooling" || v.Failures != 1 {
		t.Fatalf("lost exit: %+v", v)
	}
	if st := keyStatus(t, "main", "k1"); st.Failures != 0 || st.State != keypool.StateReady {
		t.Fatalf("key charged for its exit: %+v", st)
	}
	if via := chatOK(t, gw); via != "main/k1 via "+b.url("http", "") {
		t.Fatalf("next request went %q", via)
	}
}

// TestEgressExitLostReadingWholeAnswer: a proxy that dies while a
// non-streamed answer comes through it (headers and part of the body
// read) costs neither the client nor the key: nothing has reached the
// client yet, so the request moves to the next exit and the client gets
// the whole answer from there. It used to end as a 499 with an empty
// response, as if the client had gone away.
func TestEgressExitLostReadingWholeAnswer(t *testing.T) {
	a, b := startMicrosocks(t, "", ""), startTinyproxy(t, "", "")
	var calls atomic.Int32
	release := make(chan struct{})
	answer := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"mock-gpt","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/models") {
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"mock-gpt","object":"model"}]}`)
			return
		}
		if calls.Add(1) == 1 {
			_, _ = io.WriteString(w, answer[:40])
			w.(http.Flusher).Flush()
			select { // held until the exit is gone
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(release) })
	gw := gateway(t, gatewayBlock(egressPool(up.URL+"/v1", 1, egressBlock("failover", "1m", a.url("socks5", ""), b.url("http", "")))))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped) // a.stop happens before the test's cleanup stops it again
		for calls.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // the first bytes are through
		a.stop()
	}()
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
	<-stopped
	if resp.StatusCode != 200 || gjson.GetBytes(body, "choices.0.message.content").Str != "whole" ||
		resp.Header.Get("X-Routed-Via") != "main/k1 via "+b.url("http", "") {
		t.Fatalf("%d via %q: %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), body)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d upstream calls, want 2", n)
	}
	if st := keyStatus(t, "main", "k1"); st.Failures != 0 || st.State != keypool.StateReady {
		t.Fatalf("key charged for its exit: %+v", st)
	}
}
