package caddymodule

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"
)

// upstreamTransport is shared by every handler instance in the process, so
// a config reload never closes connections under streams that are still
// running on the old instance. Requests carry their own deadlines.
var upstreamTransport = &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           dialWithTimeout,
	ForceAttemptHTTP2:     true,
	MaxIdleConns:          1024,
	MaxIdleConnsPerHost:   256,
	IdleConnTimeout:       90 * time.Second,
	TLSHandshakeTimeout:   10 * time.Second,
	ExpectContinueTimeout: time.Second,
	// the gateway relays bodies as they come; compression would only add
	// latency on loopback and break byte-for-byte streaming
	DisableCompression: true,
}

// connectTimeoutKey carries a pool's connect_timeout in a request context.
type connectTimeoutKey struct{}

var dialer = &net.Dialer{Timeout: DefaultConnectTimeout, KeepAlive: 30 * time.Second}

// dialWithTimeout dials with the connect_timeout carried by the request's
// context (see connectTimeoutKey), else DefaultConnectTimeout. The TLS
// handshake is bounded by TLSHandshakeTimeout.
func dialWithTimeout(ctx context.Context, network, addr string) (net.Conn, error) {
	if d, ok := ctx.Value(connectTimeoutKey{}).(time.Duration); ok && d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	return dialer.DialContext(ctx, network, addr)
}

// upstreamClient never follows redirects: a 3xx from an LLM API is an
// answer to relay, not a hop to take with the key attached.
var upstreamClient = &http.Client{
	Transport: upstreamTransport,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// newUpstreamRequest is http.NewRequestWithContext for a request the
// gateway sends to an upstream (a client's call, a models list, a
// diagnose probe, a balance check), with Accept-Encoding: identity:
// upstreamTransport does not decompress (DisableCompression), and a
// request that names no Accept-Encoding accepts any coding (RFC 9110,
// section 12.5.3), so an upstream that compresses would answer with a
// body no reader of the gateway can read.
func newUpstreamRequest(ctx context.Context, method, url string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err == nil {
		req.Header.Set("Accept-Encoding", "identity")
	}
	return req, err
}
