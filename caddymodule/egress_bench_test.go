package caddymodule

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// BenchmarkEgressOrder: ranking a plan's exits for one request (no
// socket), per strategy, over four healthy exits, into a buffer on the
// stack as egressDo does.
//
//	go test -run '^$' -bench 'BenchmarkEgressOrder' -benchmem -count 5 ./caddymodule/
func BenchmarkEgressOrder(b *testing.B) {
	exits := make([]*egressExit, 4)
	for i := range exits {
		exits[i] = &egressExit{name: "http://127.0.0.1:" + strconv.Itoa(9000+i)}
	}
	for _, s := range []string{"rotate", "sticky", "failover"} {
		b.Run(s, func(b *testing.B) {
			pl := &egressPlan{exits: exits, strategy: s}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var buf [8]*egressExit
				if got := pl.orderInto(buf[:0], "session-1234", nil); len(got) != len(exits) {
					b.Fatalf("%d exits", len(got))
				}
			}
		})
	}
}

// BenchmarkExitGone: judging whether a live HTTP proxy is gone after a
// connection through it dropped (the failure path's wait, egressExit.gone),
// against an in-process listener that answers every request at once.
//
//	go test -run '^$' -bench 'BenchmarkExitGone' -benchmem -count 5 -benchtime 20x ./caddymodule/
func BenchmarkExitGone(b *testing.B) {
	addr := holdingListener(b, func(c net.Conn) {
		buf := make([]byte, 512)
		if _, err := c.Read(buf); err == nil {
			_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
		}
		c.Close()
	})
	e, err := newEgressExit("http://"+addr, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = egressRegistry.Delete(e.regKey) })
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if e.gone(time.Second) {
			b.Fatal("a live proxy judged gone")
		}
	}
}

// BenchmarkEgressUpstreamDrop: one request whose upstream takes it and
// drops the connection, through a live tinyproxy: the client's 502 comes
// once the gateway has judged that the proxy is not to blame.
//
//	go test -run '^$' -bench 'BenchmarkEgressUpstreamDrop' -benchmem -count 5 -benchtime 20x ./caddymodule/
func BenchmarkEgressUpstreamDrop(b *testing.B) {
	tiny := startTinyproxy(b, "", "")
	up := holdingListener(b, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			c.Close()
		}
	})
	gw := gateway(b, gatewayBlock(poolBlock("drop", "http://"+up+"/v1", 1,
		"\t\t\tmodels m-drop\n\t\t\tmax_retries 0\n\t\t\terror_cooldown 1ms\n\t\t\tmax_cooldown 1ms\n\t\t\tfailure_threshold 1000000\n"+egressBlock("failover", "1m", tiny.url("http", "")))))
	body := chatBody("m-drop", "hi", false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if resp, _ := post(b, gw+"/v1/chat/completions", body); resp.StatusCode < 500 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkConnectAnsweredWhileAsked: a CONNECT through an HTTP proxy
// that answers it 20ms after the exit's connect_timeout (100ms), while
// the gateway is asking the proxy a request of its own, which it answers
// slowly (300ms): the tunnel's time to be up.
//
//	go test -run '^$' -bench 'BenchmarkConnectAnsweredWhileAsked' -benchmem -count 5 -benchtime 20x ./caddymodule/
func BenchmarkConnectAnsweredWhileAsked(b *testing.B) {
	const pt = 100 * time.Millisecond
	addr := holdingListener(b, func(c net.Conn) {
		t0 := time.Now()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		if req.Method == http.MethodConnect {
			time.Sleep(pt + 20*time.Millisecond - time.Since(t0))
			_, _ = c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
			return
		}
		time.Sleep(300 * time.Millisecond)
		_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
	})
	u, err := parseProxyURL("http://" + addr)
	if err != nil {
		b.Fatal(err)
	}
	dial := connectDialer(u)
	ctx := context.WithValue(context.Background(), egressTryKey{}, &egressTry{connectTimeout: pt})
	ctx = context.WithValue(ctx, connectTimeoutKey{}, 5*time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := dial(ctx, "tcp", "upstream.test:443")
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
