package caddymodule

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/llmgateway/llm_gateway/translate"
)

// TestAttackDec02bUsageTokensSaturate: the tokens a request books against
// its key (input plus output) saturate at math.MaxInt64: an upstream that
// reports the largest counts must not wrap the sum negative, which the
// key's tpm bucket and token quota would read as no usage at all.
func TestAttackDec02bUsageTokensSaturate(t *testing.T) {
	big, one := int64(math.MaxInt64), int64(1)
	if got := (translate.Usage{InputTokens: &big, OutputTokens: &one}).Tokens(); got != math.MaxInt64 {
		t.Fatalf("Usage.Tokens(MaxInt64 + 1) = %d, want %d", got, int64(math.MaxInt64))
	}
	if got := (translate.Usage{InputTokens: &big, OutputTokens: &big}).Tokens(); got != math.MaxInt64 {
		t.Fatalf("Usage.Tokens(MaxInt64 + MaxInt64) = %d, want %d", got, int64(math.MaxInt64))
	}
	neg, ten := int64(-50), int64(10)
	if got := (translate.Usage{InputTokens: &neg, OutputTokens: &ten}).Tokens(); got != 10 {
		t.Fatalf("Usage.Tokens(-50 + 10) = %d, want 10 (a negative figure is no usage)", got)
	}
}

// TestAttackDec02bEndlessPreambleThroughGateway: an upstream of each
// dialect that sends 4 MiB of comments (Chat, Responses) or pings
// (Anthropic) before any content and then holds the stream open, to a
// client of its own dialect (passthrough, which holds the preamble): the
// client gets a failure in its dialect at once (the preamble past
// translate.MaxHeldPreambleEvents), not after the attempt timeout, and the
// request log names the cause.
func TestAttackDec02bEndlessPreambleThroughGateway(t *testing.T) {
	h, gw := sessionHostileGateway(t)
	anStart := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
	rsCreated := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"x\",\"output\":[]}}\n\n"
	comments := strings.Repeat(": keep-alive\n\n", (4<<20)/14)
	pings := strings.Repeat("event: ping\ndata: {\"type\": \"ping\"}\n\n", (4<<20)/36)
	for _, c := range []struct{ client, model, body string }{
		{"chat", "x-chat", comments},
		{"messages", "x-anth", anStart + pings},
		{"responses", "x-resp", rsCreated + comments},
	} {
		h.set(c.body, true, 8*time.Second)
		poolFor(t, map[string]string{"x-chat": "hc", "x-anth": "ha", "x-resp": "hr"}[c.model]).ClearCooldown("")
		path, body, hdr := sessionClientBody(c.client, c.model, true)
		seq := recentSeq()
		t0 := time.Now()
		resp, b := post(t, gw+path, []byte(body), hdr...)
		if took := time.Since(t0); took > 4*time.Second {
			t.Errorf("%s: held %v by an endless preamble", c.client, took)
		}
		if why := sessionClientFailed(c.client, resp.StatusCode, b, true); why != "" {
			t.Errorf("%s: %s: %d\n%.300s", c.client, why, resp.StatusCode, b)
		}
		if len(b) > 64<<10 {
			t.Errorf("%s: %d bytes relayed; the held preamble reached the client", c.client, len(b))
		}
		rr := recentAfter(t, seq)
		if rr.Status < 400 || !strings.Contains(rr.Error, "preamble") {
			t.Errorf("%s: logged %d %q, want a failure naming the preamble", c.client, rr.Status, rr.Error)
		}
	}
}

// TestAttackDec02bHugeEventMidStream: after content, an upstream sends one
// data line larger than translate.MaxSSEEventSize (64 MiB): a passthrough
// and a translated client get the content and then a failure in their
// dialect (never a clean end), and the request log records one.
func TestAttackDec02bHugeEventMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 2 x 65 MiB")
	}
	h, gw := sessionHostileGateway(t)
	chatText := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"content":"Par"},"finish_reason":null}]}` + "\n\n"
	huge := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("p", translate.MaxSSEEventSize+(1<<20)) + `"},"finish_reason":null}]}` + "\n\ndata: [DONE]\n\n"
	h.set(chatText+huge, true, 0)
	// a passthrough client and a translated one (each costs 65 MiB)
	for _, client := range []string{"chat", "messages"} {
		poolFor(t, "hc").ClearCooldown("")
		path, body, hdr := sessionClientBody(client, "x-chat", true)
		seq := recentSeq()
		resp, b := post(t, gw+path, []byte(body), hdr...)
		if why := sessionClientFailed(client, resp.StatusCode, b, true); why != "" {
			t.Errorf("%s client: %s: %d\n%.600s", client, why, resp.StatusCode, b)
		}
		if !strings.Contains(string(b), "Par") {
			t.Errorf("%s client: the content before the huge event did not arrive", client)
		}
		if rr := recentAfter(t, seq); rr.Status < 400 && (rr.StreamOutcome == streamComplete || rr.StreamOutcome == "") {
			t.Errorf("%s client: logged as a success: %d %q", client, rr.Status, rr.StreamOutcome)
		}
	}
}

// TestAttackDec02bProxyHugeConnectAnswer: an HTTP proxy whose answer to
// CONNECT (or to the liveness OPTIONS) is a header without end: the dialer
// reads at most maxProxyAnswer of it and fails as the exit's, instead of
// reading the whole header into memory until the connect timeout; the
// error never shows the proxy URL's credentials.
func TestAttackDec02bProxyHugeConnectAnswer(t *testing.T) {
	const sent = 32 << 20
	var mu sync.Mutex
	wrote := 0
	addr := holdingListener(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		chunk := []byte(strings.Repeat("a", 64<<10))
		if _, err := c.Write([]byte("HTTP/1.1 200 Connection established\r\nX-Pad: ")); err != nil {
			return
		}
		for n := 0; n < sent; n += len(chunk) {
			k, err := c.Write(chunk)
			mu.Lock()
			wrote += k
			mu.Unlock()
			if err != nil {
				return
			}
		}
		c.Close()
	})
	u, err := url.Parse("http://puser:proxy-secret-0123456789@" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	conn, err := connectDialer(u)(context.Background(), "tcp", "127.0.0.1:9")
	if err == nil {
		conn.Close()
		t.Fatal("a CONNECT answer with a 32 MiB header opened a tunnel")
	}
	var ee *exitError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "too large") {
		t.Errorf("error %v (%T), want the exit's, naming the answer too large", err, err)
	}
	if strings.Contains(err.Error(), "proxy-secret") || strings.Contains(err.Error(), "puser") {
		t.Errorf("error shows the proxy's credentials: %v", err)
	}
	if took := time.Since(t0); took > 3*time.Second {
		t.Errorf("took %v", took)
	}
	time.Sleep(50 * time.Millisecond) // the proxy's last write returns
	mu.Lock()
	defer mu.Unlock()
	if wrote > 16<<20 {
		t.Errorf("the dialer read %d MiB of the proxy's answer header, want it to stop after %d KiB", wrote>>20, maxProxyAnswer>>10)
	}
	e := exitFor(t, "http://"+addr)
	if got := e.answers(time.Second); got != proxyAnswered && got != proxySilent {
		t.Errorf("probe %d", got)
	}
}

// TestAttackDec02bConsoleInjection: HTML and script in a client's model
// name, user agent and session id reach the admin JSON the console reads
// only escaped (no raw '<'), and the console page inserts text with DOM
// APIs only: it has no HTML sink (innerHTML, outerHTML,
// insertAdjacentHTML, document.write, eval, new Function) and its
// element builder sets attributes only from a fixed list.
func TestAttackDec02bConsoleInjection(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	gw, admin := adminGateway(t, gatewayBlock(poolBlock("con-inj", base, 1, "")), "")
	evil := `<img src=x onerror=alert(1)>"</script><script>alert(2)</script>`
	for _, model := range []string{evil, "mock-gpt"} {
		resp, _ := post(t, gw+"/v1/chat/completions", chatBody(model, "hi", false),
			"User-Agent", evil, "X-Session-Id", evil)
		if resp.StatusCode == 0 {
			t.Fatal("no answer")
		}
	}
	for _, path := range []string{"/llm_gateway/requests", "/llm_gateway/pools", "/llm_gateway/sessions", "/llm_gateway/spend", "/llm_gateway/models"} {
		code, b := adminDo(t, http.MethodGet, admin+path)
		if code != 200 {
			t.Errorf("GET %s: %d", path, code)
			continue
		}
		if bytes.Contains(b, []byte("<img")) || bytes.Contains(b, []byte("<script")) || bytes.Contains(b, []byte("</script")) {
			t.Errorf("GET %s holds raw markup from a client:\n%.400s", path, b)
		}
	}
	if _, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/requests"); !bytes.Contains(b, []byte(`\u003cimg src=x onerror=alert(1)\u003e`)) {
		t.Errorf("the hostile model name is not in the request log (escaped), so nothing was checked:\n%.600s", b)
	}
	html := string(statusPage)
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "srcdoc", "javascript:"} {
		if strings.Contains(html, sink) {
			t.Errorf("statuspage.html uses %s", sink)
		}
	}
}

// TestAttackDec02bProxyEchoesCredentials: a proxy whose CONNECT answer's
// reason phrase echoes what it was sent (the Proxy-Authorization value,
// or the password itself): the dial error, which reaches logs and the
// admin API, names the status by its code and standard text only.
func TestAttackDec02bProxyEchoesCredentials(t *testing.T) {
	for _, status := range []int{407, 502} {
		addr := holdingListener(t, func(c net.Conn) {
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err != nil {
				return
			}
			fmt.Fprintf(c, "HTTP/1.1 %d %s proxy-secret-0123456789\r\nContent-Length: 0\r\n\r\n", status, req.Header.Get("Proxy-Authorization"))
		})
		u, _ := url.Parse("http://puser:proxy-secret-0123456789@" + addr)
		conn, err := connectDialer(u)(context.Background(), "tcp", "127.0.0.1:9")
		if err == nil {
			conn.Close()
			t.Fatalf("%d: a tunnel", status)
		}
		if msg := err.Error(); strings.Contains(msg, "proxy-secret") || strings.Contains(msg, "cHVzZXI6") || !strings.Contains(msg, strconv.Itoa(status)+" "+http.StatusText(status)) {
			t.Errorf("%d: error %q shows what the proxy echoed, want only %d %s", status, msg, status, http.StatusText(status))
		}
	}
}
