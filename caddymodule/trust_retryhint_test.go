package caddymodule

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestTrustRequestErrorSaysNoRetry: an upstream error keypool counts as
// the request's own although its status is a 5xx (context_length_exceeded
// or string_above_max_length on a 500 or 503, with a Retry-After; the
// same as an error object with status 200; an in-band error event before
// the first content whose numeric code is 503) is relayed in the client's
// dialect with the upstream's status, X-Should-Retry: false and no
// Retry-After (the official SDKs read x-should-retry before the status),
// the pool's other key is not asked and no key is blamed; from every
// client dialect, streamed or not.
func TestTrustRequestErrorSaysNoRetry(t *testing.T) {
	u, gw := trustGateway(t)
	const msg = "This model's maximum context length is 8192 tokens. However, your messages resulted in 250000 tokens."
	errBody := map[string]string{
		"chat":      `{"error":{"message":"` + msg + `","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		"anthropic": `{"type":"error","error":{"type":"context_length_exceeded","message":"` + msg + `"}}`,
		"responses": `{"error":{"message":"` + msg + `","type":"invalid_request_error","param":"input","code":"string_above_max_length"}}`,
	}
	type upCase struct {
		name   string
		status int // what the client gets
		a      func(up string) trustAnswer
	}
	cases := []upCase{
		{"500 with Retry-After", 500, func(up string) trustAnswer {
			return trustAnswer{status: 500, hdr: []string{"Retry-After", "7"}, body: errBody[up]}
		}},
		{"503 with Retry-After", 503, func(up string) trustAnswer {
			return trustAnswer{status: 503, hdr: []string{"Retry-After", "7"}, body: errBody[up]}
		}},
		{"200 error object, code 503", 503, func(up string) trustAnswer {
			return trustAnswer{hdr: []string{"Retry-After", "7"},
				body: `{"error":{"message":"` + msg + `","type":"context_length_exceeded","code":503}}`}
		}},
	}
	for _, c := range cases {
		for _, p := range trustPools {
			u.set(trustKey(p.pool, "a"), c.a(p.up))
			u.set(trustKey(p.pool, "b"), trustAnswer{body: `{}`})
			for _, client := range d2Clients {
				for _, stream := range []bool{false, true} {
					askedB := u.count(trustKey(p.pool, "b"))
					before := trustFailures(t, p.pool)
					path, body, hdr := d2Client(client, p.model, stream)
					resp, b := post(t, gw+path, body, hdr...)
					name := fmt.Sprintf("%s, %s upstream, %s client, stream %v", c.name, p.up, client, stream)
					if resp.StatusCode != c.status || sessionClientFailed(client, resp.StatusCode, b, stream) != "" || !strings.Contains(string(b), "maximum context length") {
						t.Errorf("%s: %d %.400s", name, resp.StatusCode, b)
					}
					if got := resp.Header.Get("X-Should-Retry"); got != "false" {
						t.Errorf("%s: X-Should-Retry %q, want false", name, got)
					}
					if got := resp.Header.Get("Retry-After"); got != "" {
						t.Errorf("%s: Retry-After %q for the request's own failure", name, got)
					}
					if n := u.count(trustKey(p.pool, "b")) - askedB; n != 0 {
						t.Errorf("%s: the other key was asked %d times", name, n)
					}
					trustUnblamed(t, name, p.pool, before)
				}
			}
		}
	}
	// an in-band error event before the first content, its code the
	// status 503 and its type the request's
	inBand := map[string]string{
		"chat": d2ChatRole + `data: {"error":{"message":"` + msg + `","type":"context_length_exceeded","code":503}}` + "\n\n",
		"responses": d2RsCreated + "event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"code\":\"503\",\"message\":\"" + msg +
			"\",\"param\":null,\"error\":{\"type\":\"context_length_exceeded\",\"code\":503,\"message\":\"" + msg + "\"}}\n\n",
	}
	for _, p := range trustPools {
		if inBand[p.up] == "" {
			continue // an Anthropic error event has no code
		}
		u.set(trustKey(p.pool, "a"), trustAnswer{sse: true, body: inBand[p.up]})
		for _, client := range d2Clients {
			askedB := u.count(trustKey(p.pool, "b"))
			before := trustFailures(t, p.pool)
			path, body, hdr := d2Client(client, p.model, true)
			resp, b := post(t, gw+path, body, hdr...)
			name := fmt.Sprintf("in-band, %s upstream, %s client", p.up, client)
			if resp.StatusCode != 503 || sessionClientFailed(client, resp.StatusCode, b, true) != "" || !strings.Contains(string(b), "maximum context length") {
				t.Errorf("%s: %d %.400s", name, resp.StatusCode, b)
			}
			if got := resp.Header.Get("X-Should-Retry"); got != "false" {
				t.Errorf("%s: X-Should-Retry %q, want false", name, got)
			}
			if n := u.count(trustKey(p.pool, "b")) - askedB; n != 0 {
				t.Errorf("%s: the other key was asked %d times", name, n)
			}
			trustUnblamed(t, name, p.pool, before)
		}
	}
}

// heldProbes serves next, but holds each of the gateway's own probe
// requests (a one-token "ping", diagnose.go's probeBody) until release is
// closed, telling probed about each as it arrives.
type heldProbes struct {
	next    http.Handler
	probed  chan struct{}
	release chan struct{}
}

func (h *heldProbes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if r.Method == http.MethodPost && (bytes.Contains(b, []byte(`"content":"ping"`)) || bytes.Contains(b, []byte(`"input":"ping"`))) {
		h.probed <- struct{}{}
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	h.next.ServeHTTP(w, r)
}

// TestTrustProvisionalVerdictIsAWait: a key-level 403 that one client's
// request met (the request may have caused it) puts the key on a
// provisional verdict until the gateway's own probe answers. Another
// client turned away meanwhile, in each client dialect, gets the pool's
// 503 in its dialect with a wait until the probe's answer is due
// (Retry-After at most the verifier's bound, not the provisional
// cooldown's 60 s) and no x-should-retry: false (which would make its SDK
// give up at once although the key may be back within seconds); once the
// probe is answered 200 the key serves again.
func TestTrustProvisionalVerdictIsAWait(t *testing.T) {
	m := mockupstream.New(mockupstream.Config{})
	h := &heldProbes{next: m, probed: make(chan struct{}, 4)}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	gw := gateway(t, gatewayBlock(poolBlock("pv", srv.URL+"/v1", 1, "\t\t\tacquire_timeout 200ms\n")))
	bound := int(verifierLimit() / time.Second)
	for _, client := range d2Clients {
		h.release = make(chan struct{})
		m.SetDefault(mockupstream.KeyBehavior{Status: http.StatusForbidden})
		path, body, hdr := d2Client(client, "mock-gpt", false)
		resp, b := post(t, gw+path, body, hdr...)
		if resp.StatusCode != http.StatusForbidden || sessionClientFailed(client, resp.StatusCode, b, false) != "" {
			close(h.release)
			t.Fatalf("%s: the request that met the 403: %d %.300s", client, resp.StatusCode, b)
		}
		<-h.probed // the verifier's probe is out, held
		if st := keyStatus(t, "pv", "k1"); !st.Provisional || st.VerdictDue.IsZero() || st.Reason != "forbidden" {
			close(h.release)
			t.Fatalf("%s: while the probe runs: %+v", client, st)
		}
		resp, b = post(t, gw+path, body, hdr...)
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusServiceUnavailable || sessionClientFailed(client, resp.StatusCode, b, false) != "" ||
			resp.Header.Get("X-Should-Retry") == "false" || ra < 1 || ra > bound {
			close(h.release)
			t.Fatalf("%s: another client during the probe: %d, Retry-After %q, X-Should-Retry %q (want a wait of 1-%d s and no \"false\"): %.300s",
				client, resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("X-Should-Retry"), bound, b)
		}
		// the probe is answered 200: the 403 was the request's own
		m.SetDefault(mockupstream.KeyBehavior{})
		close(h.release)
		deadline := time.Now().Add(10 * time.Second)
		for keyStatus(t, "pv", "k1").State != keypool.StateReady {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the key is not back after a refuting probe: %+v", client, keyStatus(t, "pv", "k1"))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if resp, b = post(t, gw+path, body, hdr...); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: after the probe: %d %.300s", client, resp.StatusCode, b)
		}
	}
}
