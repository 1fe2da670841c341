package caddymodule

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestAttackDec02bProxyAnswerBodyHeld: a proxy's answer to CONNECT with a
// body shorter than its Content-Length, the connection then held open,
// ends the dial at once: a refusal (407) as the exit's failure, a 200 as
// the tunnel (a 2xx answer to CONNECT has no body: RFC 9110, 9.3.6). The
// dialer read such a body to its end with no deadline left, and waited
// for the proxy for good.
func TestAttackDec02bProxyAnswerBodyHeld(t *testing.T) {
	for _, c := range []struct {
		answer string
		tunnel bool
	}{
		{"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 100\r\n\r\npartial", false},
		{"HTTP/1.1 200 Connection established\r\nContent-Length: 100\r\n\r\n", true},
	} {
		name, _, _ := strings.Cut(c.answer, "\r\n")
		addr := holdingListener(t, func(conn net.Conn) {
			if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
				return
			}
			_, _ = io.WriteString(conn, c.answer)
		})
		u, err := url.Parse("http://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			conn net.Conn
			err  error
		}
		done := make(chan result, 1)
		go func() {
			conn, err := connectDialer(u)(context.Background(), "tcp", "127.0.0.1:9")
			done <- result{conn, err}
		}()
		select {
		case r := <-done:
			if r.conn != nil {
				r.conn.Close()
			}
			var ee *exitError
			switch {
			case c.tunnel && r.err != nil:
				t.Errorf("%s: %v, want the tunnel", name, r.err)
			case !c.tunnel && (!errors.As(r.err, &ee) || !strings.Contains(r.err.Error(), "refused CONNECT: 407 Proxy Authentication Required")):
				t.Errorf("%s: %v (%T), want the exit's refusal", name, r.err, r.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the dial still waits for the answer's body", name)
		}
	}
}
