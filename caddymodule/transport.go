package caddymodule

import (
	"net"
	"net/http"
	"time"
)

// upstreamTransport is shared by every handler instance in the process, so
// a config reload never closes connections under streams that are still
// running on the old instance. Requests carry their own deadlines.
var upstreamTransport = &http.Transport{
	Proxy: http.ProxyFromEnvironment,
	DialContext: (&net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
	}).DialContext,
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

// upstreamClient never follows redirects: a 3xx from an LLM API is an
// answer to relay, not a hop to take with the key attached.
var upstreamClient = &http.Client{
	Transport: upstreamTransport,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}
