package caddymodule

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/llmgateway/llm_gateway/translate"
)

// heldUpstream is an OpenAI-dialect upstream that holds every request
// until release is closed (or the request is cancelled), then answers a
// chat.completion. arrived counts the requests that reached it.
type heldUpstream struct {
	base    string
	arrived atomic.Int64
	release chan struct{}
	once    sync.Once
}

// open lets the held requests (and every later one) through.
func (u *heldUpstream) open() { u.once.Do(func() { close(u.release) }) }

func newHeldUpstream(t *testing.T) *heldUpstream {
	t.Helper()
	u := &heldUpstream{release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		u.arrived.Add(1)
		select {
		case <-u.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-held","object":"chat.completion","created":1700000000,"model":"m",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"released"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(func() { u.open(); srv.Close() })
	u.base = srv.URL + "/v1"
	return u
}

// countingReader counts the bytes read from it: 0 after a request means
// the server answered without reading the body.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// expectClient sends "Expect: 100-continue" and waits up to 10 s for the
// server's go-ahead, so that a body the gateway does not read is never
// sent (Go's server sends 100 Continue on the handler's first read).
var expectClient = &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 10 * time.Second}}

// sendUnread posts body with Expect: 100-continue (chunked when chunked is
// true) and returns the answer and how many body bytes the client sent.
func sendUnread(t *testing.T, url string, body []byte, chunked bool, hdr ...string) (*http.Response, []byte, int64) {
	t.Helper()
	cr := &countingReader{r: bytes.NewReader(body)}
	req, err := http.NewRequest(http.MethodPost, url, cr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	if chunked {
		req.ContentLength = -1
	}
	req.Header.Set("Expect", "100-continue")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := expectClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b, cr.n.Load()
}

// paddedChat is a Chat Completions body of about size bytes.
func paddedChat(model string, size int) []byte {
	return chatBody(model, strings.Repeat("x", max(0, size-80)), false)
}

// retryAfterSeconds parses Retry-After, -1 when absent or not a number.
func retryAfterSeconds(h http.Header) int {
	n, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil {
		return -1
	}
	return n
}

// TestGatewayKeyAdmissionBeforeBody: a scoped key at its concurrency limit
// gets 429 with Retry-After and x-should-retry: true, and its body is
// never read (nor sent, with Expect: 100-continue).
func TestGatewayKeyAdmissionBeforeBody(t *testing.T) {
	up := newHeldUpstream(t)
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+" {\n\t\t\tid team\n\t\t\tmax_concurrency 1\n\t\t}\n"+
		"\t\tpool admit {\n\t\t\tkey held-key-0000 "+up.base+"\n\t\t\tmax_concurrency_per_key 4\n\t\t}\n\t}\n")
	done := make(chan int, 1)
	go func() {
		resp, _ := post(t, gw+"/v1/chat/completions", chatBody("m", "first", false))
		done <- resp.StatusCode
	}()
	eventually(t, 5*time.Second, "first request upstream", func() bool { return up.arrived.Load() == 1 })

	resp, body, sent := sendUnread(t, gw+"/v1/chat/completions", paddedChat("m", 256<<10), false)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if sent != 0 {
		t.Errorf("the client sent %d body bytes of a refused request, want 0", sent)
	}
	if ra := retryAfterSeconds(resp.Header); ra != 1 {
		t.Errorf("Retry-After %q, want 1", resp.Header.Get("Retry-After"))
	}
	if v := resp.Header.Get("X-Should-Retry"); v != "true" {
		t.Errorf("x-should-retry %q, want true", v)
	}
	if typ := gjson.GetBytes(body, "error.code").String(); typ != "rate_limit_exceeded" {
		t.Errorf("error %s", body)
	}
	up.open()
	if st := <-done; st != 200 {
		t.Fatalf("held request: %d", st)
	}
}

// TestMaxInFlight: beyond max_in_flight a request gets 503 with
// Retry-After (1-3 s) and x-should-retry: true in its dialect, its body
// unread; the slot is free again once the held request ends.
func TestMaxInFlight(t *testing.T) {
	up := newHeldUpstream(t)
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tmax_in_flight 1\n"+
		"\t\tpool inflight {\n\t\t\tkey held-key-0000 "+up.base+"\n\t\t\tmax_concurrency_per_key 4\n\t\t}\n\t}\n")
	done := make(chan int, 1)
	go func() {
		resp, _ := post(t, gw+"/v1/chat/completions", chatBody("m", "first", false))
		done <- resp.StatusCode
	}()
	eventually(t, 5*time.Second, "first request upstream", func() bool { return up.arrived.Load() == 1 })
	if n := admission.inFlight.Load(); n != 1 {
		t.Fatalf("in flight %d, want 1", n)
	}

	anth := []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"` + strings.Repeat("y", 300<<10) + `"}]}`)
	resp, body, sent := sendUnread(t, gw+"/v1/messages", anth, false, "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if sent != 0 {
		t.Errorf("client sent %d body bytes, want 0", sent)
	}
	if ra := retryAfterSeconds(resp.Header); ra < 1 || ra > 3 {
		t.Errorf("Retry-After %q, want 1..3", resp.Header.Get("Retry-After"))
	}
	if resp.Header.Get("X-Should-Retry") != "true" {
		t.Errorf("x-should-retry %q", resp.Header.Get("X-Should-Retry"))
	}
	if gjson.GetBytes(body, "type").String() != "error" || gjson.GetBytes(body, "error.type").String() != "overloaded_error" ||
		!strings.Contains(gjson.GetBytes(body, "error.message").String(), "max_in_flight (1 requests)") {
		t.Errorf("not an Anthropic overloaded error naming the limit: %s", body)
	}
	// count_tokens takes a slot too
	resp, _, _ = sendUnread(t, gw+"/v1/messages/count_tokens", anth, false, "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("count_tokens: %d", resp.StatusCode)
	}

	up.open()
	if st := <-done; st != 200 {
		t.Fatalf("held request: %d", st)
	}
	eventually(t, 2*time.Second, "in-flight back to 0", func() bool { return admission.inFlight.Load() == 0 })
	resp, body = post(t, gw+"/v1/chat/completions", chatBody("m", "again", false))
	if resp.StatusCode != 200 {
		t.Fatalf("after release: %d %s", resp.StatusCode, body)
	}
}

// TestMaxBufferedBytes: bodies are booked by Content-Length before they
// are read (a chunked body as it grows); one that does not fit gets 503
// with Retry-After and is not read; a smaller one still fits; a body over
// max_request_body gets 413 unread; the books are back at 0 afterwards.
func TestMaxBufferedBytes(t *testing.T) {
	up := newHeldUpstream(t)
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tmax_request_body 1MiB\n\t\tmax_buffered_bytes 1MiB\n"+
		"\t\tpool buffered {\n\t\t\tmodels held\n\t\t\tkey held-key-0000 "+up.base+"\n\t\t\tmax_concurrency_per_key 8\n\t\t}\n"+
		"\t\tpool quick {\n\t\t\tmodels mock-*\n\t\t\tkey mk-quick "+mockBase(t)+"\n\t\t}\n\t}\n")
	held := paddedChat("held", 700<<10)
	done := make(chan int, 1)
	go func() {
		resp, _ := post(t, gw+"/v1/chat/completions", held)
		done <- resp.StatusCode
	}()
	eventually(t, 5*time.Second, "held request upstream", func() bool { return up.arrived.Load() == 1 })
	if n := admission.buffered.Load(); n != int64(len(held)) {
		t.Fatalf("buffered %d, want the held body's %d", n, len(held))
	}

	resp, body, sent := sendUnread(t, gw+"/v1/chat/completions", paddedChat("mock-a", 400<<10), false)
	if resp.StatusCode != http.StatusServiceUnavailable || sent != 0 {
		t.Fatalf("over max_buffered_bytes: %d, %d bytes sent: %s", resp.StatusCode, sent, body)
	}
	if ra := retryAfterSeconds(resp.Header); ra < 1 || ra > 3 || resp.Header.Get("X-Should-Retry") != "true" {
		t.Errorf("Retry-After %q, x-should-retry %q", resp.Header.Get("Retry-After"), resp.Header.Get("X-Should-Retry"))
	}
	if msg := gjson.GetBytes(body, "error.message").String(); !strings.Contains(msg, "max_buffered_bytes") || gjson.GetBytes(body, "error.code").String() != "server_is_overloaded" {
		t.Errorf("not an OpenAI overloaded error naming the limit: %s", body)
	}
	// chunked: refused once its growing reservation no longer fits
	resp, body, _ = sendUnread(t, gw+"/v1/chat/completions", paddedChat("mock-a", 400<<10), true)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("chunked over max_buffered_bytes: %d %s", resp.StatusCode, body)
	}
	// what still fits is served, with and without Content-Length
	for _, chunked := range []bool{false, true} {
		resp, body, _ = sendUnread(t, gw+"/v1/chat/completions", paddedChat("mock-a", 200<<10), chunked)
		if resp.StatusCode != 200 {
			t.Fatalf("fitting body (chunked %v): %d %s", chunked, resp.StatusCode, body)
		}
	}
	// over max_request_body: 413 before reading, not retryable
	resp, body, sent = sendUnread(t, gw+"/v1/chat/completions", paddedChat("mock-a", 2<<20), false)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || sent != 0 || resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("too large: %d, %d bytes sent, x-should-retry %q: %s", resp.StatusCode, sent, resp.Header.Get("X-Should-Retry"), body)
	}
	up.open()
	if st := <-done; st != 200 {
		t.Fatalf("held request: %d", st)
	}
	// chunked over max_request_body, now that there is room: 413
	resp, _, _ = sendUnread(t, gw+"/v1/chat/completions", paddedChat("mock-a", 1100<<10), true)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked too large: %d", resp.StatusCode)
	}
	eventually(t, 2*time.Second, "buffered back to 0", func() bool { return admission.buffered.Load() == 0 })
}

// mockBase starts a mock upstream and returns its base URL.
func mockBase(t *testing.T) string {
	_, base := mock(t, mockupstream.Config{})
	return base
}

// TestHugeModelNameBounded: an 8 MiB model name gives an error body and a
// log line under 8 KB each, the name cut with the ellipsis marker.
func TestHugeModelNameBounded(t *testing.T) {
	dir := t.TempDir()
	appLog := filepath.Join(dir, "app.log")
	_, base := mock(t, mockupstream.Config{})
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tmax_request_body 16MiB\n"+
		"\t\tpool named {\n\t\t\tmodels gpt-*\n\t\t\tkey mk-1 "+base+"\n\t\t}\n\t}\n",
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")
	model := strings.Repeat(`m"\é`, 8<<20/5)
	for _, c := range []struct{ path, ver string }{{"/v1/chat/completions", ""}, {"/v1/messages", "2023-06-01"}} {
		body := []byte(`{"model":` + strconv.Quote(model) + `,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
		resp, out := post(t, gw+c.path, body, "Anthropic-Version", c.ver)
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: status %d", c.path, resp.StatusCode)
		}
		if len(out) >= 8<<10 {
			t.Errorf("%s: error body of %d bytes, want < 8 KB", c.path, len(out))
		}
		if msg := gjson.GetBytes(out, "error.message").String(); !strings.Contains(msg, "…") {
			t.Errorf("%s: message not cut with an ellipsis: %.300s", c.path, msg)
		}
		if resp.Header.Get("X-Should-Retry") != "false" {
			t.Errorf("%s: x-should-retry %q", c.path, resp.Header.Get("X-Should-Retry"))
		}
	}
	b, err := os.ReadFile(appLog)
	if err != nil {
		t.Fatal(err)
	}
	var entries int
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, `"msg":"llm request"`) {
			continue
		}
		entries++
		if len(line) >= 8<<10 {
			t.Errorf("log line of %d bytes, want < 8 KB", len(line))
		}
		cm := gjson.Get(line, "client_model").String()
		if !strings.HasPrefix(cm, `m"\é`) || !strings.HasSuffix(cm, "…") || len(cm) > maxClientString+len("…") {
			t.Errorf("client_model not cut to %d bytes + …: %d bytes", maxClientString, len(cm))
		}
	}
	if entries != 2 {
		t.Fatalf("%d llm request entries, want 2", entries)
	}
}

// TestRelayedUpstreamErrorBounded: an upstream 400 whose message is 60 KB
// reaches the client cut to 4 KiB, with x-should-retry: false.
func TestRelayedUpstreamErrorBounded(t *testing.T) {
	huge := strings.Repeat("Unrecognized request argument supplied: field ", 1400)
	up := rawUpstream(t, 400, "application/json", `{"error":{"message":`+strconv.Quote(huge)+`,"type":"invalid_request_error","param":null,"code":null}}`)
	gw := gateway(t, gatewayBlock("\t\tpool relay {\n\t\t\tkey up-key-00000 "+up+"\n\t\t}\n"))
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("m", "hi", false))
	if resp.StatusCode != 400 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	msg := gjson.GetBytes(body, "error.message").String()
	if len(body) >= 8<<10 || len(msg) > maxErrorMessage+32 || !strings.HasPrefix(msg, "Unrecognized request argument") || !strings.Contains(msg, "… (") {
		t.Errorf("relayed body %d bytes, message %d bytes: %.200s", len(body), len(msg), msg)
	}
	if gjson.GetBytes(body, "error.type").String() != "invalid_request_error" {
		t.Errorf("relayed error lost its type: %.300s", body)
	}
	if resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("relayed 400: x-should-retry %q, want false", resp.Header.Get("X-Should-Retry"))
	}
}

// TestShouldRetryHeaders: every error the gateway produces says whether
// retrying can help, and Retry-After when it can.
func TestShouldRetryHeaders(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	failing := rawUpstream(t, 500, "application/json", `{"error":{"message":"boom","type":"server_error"}}`)
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tapi_key sk-scoped-key-0123456789 {\n\t\t\tmodels mock-*\n\t\t}\n"+
		"\t\tapi_key sk-limited-key-0123456789 {\n\t\t\trpm 1\n\t\t}\n"+
		"\t\tmax_request_body 4KB\n"+
		"\t\tpool ok {\n\t\t\tmodels mock-*\n\t\t\tkey mk-1 "+base+"\n\t\t}\n"+
		"\t\tpool broken {\n\t\t\tmodels broken-*\n\t\t\tkey bk-1 "+failing+"\n\t\t\tkey bk-2 "+failing+"\n\t\t\tmax_retries 1\n\t\t}\n\t}\n")
	scoped := []string{"Authorization", "Bearer sk-scoped-key-0123456789"}
	limited := []string{"Authorization", "Bearer sk-limited-key-0123456789"}
	cases := []struct {
		name   string
		method string
		path   string
		body   []byte
		hdr    []string
		status int
		retry  string
	}{
		{"bad JSON", "POST", "/v1/chat/completions", []byte(`{"model":`), nil, 400, "false"},
		{"wrong key", "POST", "/v1/chat/completions", chatBody("mock-a", "hi", false), []string{"Authorization", "Bearer sk-wrong-0000000000"}, 401, "false"},
		{"out of scope", "POST", "/v1/chat/completions", chatBody("broken-a", "hi", false), scoped, 403, "false"},
		{"unknown model", "POST", "/v1/chat/completions", chatBody("nothing", "hi", false), nil, 404, "false"},
		{"unknown endpoint", "POST", "/v1/nothing", nil, nil, 404, "false"},
		{"method", "GET", "/v1/chat/completions", nil, nil, 405, "false"},
		{"too large", "POST", "/v1/chat/completions", paddedChat("mock-a", 8<<10), nil, 413, "false"},
		{"scoped rpm: first", "POST", "/v1/chat/completions", chatBody("mock-a", "hi", false), limited, 200, ""},
		{"scoped rpm: over", "POST", "/v1/chat/completions", chatBody("mock-a", "hi", false), limited, 429, "true"},
		{"all attempts failed", "POST", "/v1/chat/completions", chatBody("broken-a", "hi", false), nil, 502, "true"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, gw+c.path, bytes.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+gatewayKey)
		for i := 0; i+1 < len(c.hdr); i += 2 {
			req.Header.Set(c.hdr[i], c.hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.status, body)
			continue
		}
		if got := resp.Header.Get("X-Should-Retry"); got != c.retry {
			t.Errorf("%s: x-should-retry %q, want %q", c.name, got, c.retry)
		}
		ra := retryAfterSeconds(resp.Header)
		if c.retry == "true" && ra < 1 {
			t.Errorf("%s: retryable without Retry-After", c.name)
		}
		if c.retry != "true" && resp.Header.Get("Retry-After") != "" {
			t.Errorf("%s: Retry-After %q on an answer that should not be retried", c.name, resp.Header.Get("Retry-After"))
		}
	}
}

// countingProxy forwards to the gateway and counts the requests that
// reached it (the server side's count, whatever the client's retries).
func countingProxy(t *testing.T, gw string) (string, *atomic.Int64) {
	u, err := url.Parse(gw)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// TestSDKRetries: with the official SDKs' default retries, a wrong gateway
// key costs exactly one request (x-should-retry: false), and a 429 "no key
// available" (the only key busy) is retried (x-should-retry: true,
// Retry-After honoured).
func TestSDKRetries(t *testing.T) {
	up := newHeldUpstream(t)
	gw := gateway(t, gatewayBlock("\t\tpool busy {\n\t\t\tkey held-key-0000 "+up.base+"\n\t\t\tmax_concurrency_per_key 1\n\t\t\tacquire_timeout 20ms\n\t\t}\n"))
	front, count := countingProxy(t, gw)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("wrong key, OpenAI SDK", func(t *testing.T) {
		count.Store(0)
		c := openai.NewClient(option.WithBaseURL(front+"/v1"), option.WithAPIKey("sk-wrong-gateway-key-000"))
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
			t.Fatalf("err = %v", err)
		}
		if n := count.Load(); n != 1 {
			t.Fatalf("%d requests reached the gateway, want 1", n)
		}
	})
	t.Run("wrong key, Anthropic SDK", func(t *testing.T) {
		count.Store(0)
		c := anthropic.NewClient(aopt.WithBaseURL(front), aopt.WithAPIKey("sk-wrong-gateway-key-000"))
		_, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "m", MaxTokens: 5,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
			t.Fatalf("err = %v", err)
		}
		if n := count.Load(); n != 1 {
			t.Fatalf("%d requests reached the gateway, want 1", n)
		}
	})
	t.Run("no key available, OpenAI SDK", func(t *testing.T) {
		// the only key is busy with a held request
		done := make(chan struct{})
		go func() {
			defer close(done)
			post(t, gw+"/v1/chat/completions", chatBody("m", "hold", false))
		}()
		eventually(t, 5*time.Second, "held request upstream", func() bool { return up.arrived.Load() == 1 })
		count.Store(0)
		c := openai.NewClient(option.WithBaseURL(front+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(1))
		start := time.Now()
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Type != "rate_limit_error" {
			t.Fatalf("err = %v", err)
		}
		if n := count.Load(); n != 2 {
			t.Fatalf("%d requests reached the gateway, want 2 (one retry)", n)
		}
		if el := time.Since(start); el < time.Second {
			t.Errorf("retried after %v, before the Retry-After of at least 1 s", el)
		}
		up.open()
		<-done
	})
}

// TestLimitsConfig: the Caddyfile directives and their JSON fields, the
// defaults chosen at provision, and the checks.
func TestLimitsConfig(t *testing.T) {
	h := new(Handler)
	cf := "llm_gateway {\n\tmax_request_body 2MiB\n\tmax_in_flight 64\n\tmax_buffered_bytes 256MiB\n}\n"
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(cf)); err != nil {
		t.Fatal(err)
	}
	if h.MaxInFlight != 64 || h.MaxBufferedBytes != 256<<20 || h.MaxRequestBody != 2<<20 {
		t.Fatalf("parsed %d %d %d", h.MaxInFlight, h.MaxBufferedBytes, h.MaxRequestBody)
	}
	for _, bad := range []string{"max_in_flight 0", "max_in_flight x", "max_buffered_bytes lots", "max_buffered_bytes 0"} {
		if err := new(Handler).UnmarshalCaddyfile(caddyfile.NewTestDispenser("llm_gateway {\n\t" + bad + "\n}\n")); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if n := defaultMaxInFlight(); n < DefaultInFlightPerCPU || n%DefaultInFlightPerCPU != 0 {
		t.Errorf("default max_in_flight %d", n)
	}
	l, src := memoryLimit()
	want := int64(DefaultBufferedBytesFallback)
	if l > 0 {
		want = l / 4
	}
	if got := defaultMaxBufferedBytes(DefaultMaxRequestBody); got != max(want, 2*DefaultMaxRequestBody) {
		t.Errorf("default max_buffered_bytes %d, want a quarter of %d (%s)", got, l, src)
	}
	if got := defaultMaxBufferedBytes(1 << 40); got != 2<<40 {
		t.Errorf("default max_buffered_bytes with a 1 TiB max_request_body: %d", got)
	}
	_, base := mock(t, mockupstream.Config{})
	err := loadCaddyfileErr("{\n\tadmin off\n\tpersist_config off\n}\nhttp://127.0.0.1:" + strconv.Itoa(freePort(t)) + " {\n\tllm_gateway {\n\t\tapi_key " + gatewayKey +
		"\n\t\tmax_request_body 8MiB\n\t\tmax_buffered_bytes 4MiB\n" + poolBlock("cfgcheck", base, 1, "") + "\t}\n}\n")
	if err == nil || !strings.Contains(err.Error(), "max_buffered_bytes") {
		t.Fatalf("max_buffered_bytes below max_request_body: err = %v", err)
	}
}

// TestClipAndBound: the helpers' values.
func TestClipAndBound(t *testing.T) {
	if got := clipMessage("héllo", 2); got != "h… (5 more bytes)" {
		t.Errorf("clipMessage on a rune boundary: %q", got)
	}
	if got := clipMessage("short", 10); got != "short" {
		t.Errorf("clipMessage of a short string: %q", got)
	}
	long := strings.Repeat(`"`, 20000)
	for _, d := range []translate.Dialect{translate.OpenAIChat, translate.AnthropicMessages} {
		b := boundErrorBody(translate.ErrorBody(d, translate.ErrInvalidRequest, long))
		if len(b) > maxErrorBody || !gjson.ValidBytes(b) || !strings.HasSuffix(gjson.GetBytes(b, "error.message").String(), "more bytes)") {
			t.Errorf("%v: bounded body %d bytes: %.120s", d, len(b), b)
		}
	}
	if b := []byte(`{"detail":"` + strings.Repeat("x", 9000) + `"}`); !bytes.Equal(boundErrorBody(b), b) {
		t.Error("a body without a message was changed")
	}
	for status, want := range map[int]string{400: "false", 401: "false", 403: "false", 404: "false", 405: "false", 413: "false",
		422: "false", 408: "true", 409: "true", 429: "true", 500: "true", 501: "false", 502: "true", 503: "true", 504: "true", 529: "true"} {
		h := http.Header{}
		setRetryHeaders(h, status, true)
		if h.Get("X-Should-Retry") != want || (want == "true") != (h.Get("Retry-After") == "1") {
			t.Errorf("%d: x-should-retry %q, Retry-After %q", status, h.Get("X-Should-Retry"), h.Get("Retry-After"))
		}
	}
	h := http.Header{"X-Should-Retry": {"false"}}
	setRetryHeaders(h, 503, false)
	if h.Get("X-Should-Retry") != "false" || h.Get("Retry-After") != "" {
		t.Errorf("a set header was overridden: %v", h)
	}
}
