package caddymodule

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// cannedUpstream is an in-memory upstream that answers every request with
// bytes built once (per dialect: a path ending in /messages is
// Anthropic's; per workload: a request whose key starts with "sse" gets
// the 200-event stream, any other the 1 KB answer), with no mock behind
// it: the time and allocations of a request through it are the gateway's
// own, which BenchmarkGateway's mockupstream (it generates every answer
// anew) hides under its own.
type cannedUpstream struct {
	chatJSON, chatSSE, msgJSON, msgSSE []byte
}

func newCannedUpstream() *cannedUpstream {
	return &cannedUpstream{
		chatJSON: benchChatResponse(), chatSSE: benchChatStream(benchEvents),
		msgJSON: benchMessagesResponse(), msgSSE: benchMessagesStream(benchEvents),
	}
}

// RoundTrip implements http.RoundTripper.
func (u *cannedUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	key := req.Header.Get("X-Api-Key")
	if a := req.Header.Get("Authorization"); len(a) > 7 {
		key = a[7:]
	}
	sse := strings.HasPrefix(key, "sse")
	body, ctype := u.chatJSON, "application/json"
	switch {
	case strings.HasSuffix(req.URL.Path, "/messages") && sse:
		body, ctype = u.msgSSE, "text/event-stream; charset=utf-8"
	case strings.HasSuffix(req.URL.Path, "/messages"):
		body = u.msgJSON
	case sse:
		body, ctype = u.chatSSE, "text/event-stream; charset=utf-8"
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {ctype}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: -1, Request: req,
	}, nil
}

// BenchmarkGatewayHotPath measures what the gateway itself spends on one
// request through the handler (ServeHTTP to the last byte), per mode as
// BenchmarkGateway, with an upstream that costs next to nothing
// (cannedUpstream): ns/op, B/op and allocs/op are the gateway's, and
// ttfb-ns is its time from ServeHTTP's start to the client's first body
// byte (for a stream: the held preamble and the first content event).
//
//	go test -run '^$' -bench BenchmarkGatewayHotPath -benchmem ./caddymodule/
func BenchmarkGatewayHotPath(b *testing.B) {
	saved := upstreamClient.Transport
	upstreamClient.Transport = newCannedUpstream()
	b.Cleanup(func() { upstreamClient.Transport = saved })

	benchGatewayModes(b, false)
}
