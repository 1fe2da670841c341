package caddymodule

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
)

// stallUpstream is an OpenAI Chat upstream whose stream sends `chunks`
// content chunks, each after `gap` of SSE comment keep-alives (one every
// 20 ms, as OpenRouter's ": OPENROUTER PROCESSING"), and then either its
// finish and [DONE] or, with stall, keep-alives alone until the request
// is cancelled. served counts its requests.
func stallUpstream(t *testing.T, chunks int, gap time.Duration, stall bool, served *atomic.Int64) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, finish)
			fl.Flush()
		}
		pings := func(d time.Duration) bool {
			for end := time.Now().Add(d); d < 0 || time.Now().Before(end); {
				if _, err := io.WriteString(w, ": OPENROUTER PROCESSING\n\n"); err != nil {
					return false
				}
				fl.Flush()
				select {
				case <-r.Context().Done():
					return false
				case <-time.After(20 * time.Millisecond):
				}
			}
			return true
		}
		chunk(`{"role":"assistant","content":""}`, "null")
		for i := 0; i < chunks; i++ {
			chunk(fmt.Sprintf(`{"content":"w%d "}`, i), "null")
			if !pings(gap) {
				return
			}
		}
		if stall {
			pings(-1)
			return
		}
		chunk(`{}`, `"stop"`)
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// streamWithin posts a streamed request and reads the whole stream, or
// fails the test when it has not ended within d (the stream would be held
// for ever).
func streamWithin(t *testing.T, url string, body []byte, d time.Duration, hdr ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	if ctx.Err() != nil {
		t.Fatalf("the stream was still open after %v: %s", d, b.String())
	}
	return resp.StatusCode, b.String()
}

// TestStreamIdleTimeout: an upstream stream that, after some content,
// sends only SSE comment keep-alives held the client's stream and the
// key's only slot for ever (each comment re-armed request_timeout).
// stream_idle_timeout counts only data lines: such a stream ends after it
// with an error in the client's dialect (no [DONE], no message_stop,
// never a success), the key is not blamed and its slot is free again;
// a healthy stream whose data comes between keep-alives, each gap under
// the timeout, completes however long it lasts.
func TestStreamIdleTimeout(t *testing.T) {
	var stalls, healthy atomic.Int64
	stallBase := stallUpstream(t, 2, 0, true, &stalls)
	okBase := stallUpstream(t, 8, 200*time.Millisecond, false, &healthy)
	pools := "\t\tpool stall {\n\t\t\tmodels stall-*\n\t\t\tkey sk-stall " + stallBase + " {\n\t\t\t\tid st\n\t\t\t}\n" +
		"\t\t\tmax_concurrency_per_key 1\n\t\t\tmax_retries 0\n\t\t\tstream_idle_timeout 1s\n\t\t\trequest_timeout 30s\n\t\t}\n" +
		"\t\tpool ok {\n\t\t\tmodels ok-*\n\t\t\tkey sk-ok " + okBase + " {\n\t\t\t\tid ok\n\t\t\t}\n" +
		"\t\t\tstream_idle_timeout 1s\n\t\t}\n"
	gw := gateway(t, gatewayBlock(pools))

	// OpenAI client: the content, then the stall's error chunk, no [DONE]
	status, s := streamWithin(t, gw+"/v1/chat/completions", chatBody("stall-x", "hi", true), 20*time.Second)
	var errMsg string
	for _, line := range strings.Split(s, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && gjson.Get(d, "error").Exists() {
			errMsg = gjson.Get(d, "error.message").Str
		}
	}
	if status != 200 || !strings.Contains(s, `"w1 "`) || strings.Contains(s, "[DONE]") ||
		errMsg != "upstream stream stalled: it sent no data, only keep-alives, for too long; the answer is incomplete" {
		t.Fatalf("OpenAI client: %d, error %q:\n%s", status, errMsg, s)
	}
	// Anthropic client: an error event, no message_stop; the key's one
	// slot was freed by the first stream, or this would wait for it
	status, s = streamWithin(t, gw+"/v1/messages", []byte(`{"model":"stall-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`),
		20*time.Second, "Anthropic-Version", "2023-06-01")
	if status != 200 || !strings.Contains(s, "event: error") || strings.Contains(s, "message_stop") ||
		!strings.Contains(s, "upstream stream stalled") {
		t.Fatalf("Anthropic client: %d:\n%s", status, s)
	}
	if n := stalls.Load(); n != 2 {
		t.Fatalf("stalling upstream asked %d times, want 2 (a stream that began is never retried)", n)
	}
	eventually(t, 5*time.Second, "the stalled key's slot released", func() bool { return keyStatus(t, "stall", "st").InFlight == 0 })
	if ks := keyStatus(t, "stall", "st"); ks.State != keypool.StateReady || ks.ConsecutiveFailures != 0 || ks.Failures != 0 {
		t.Fatalf("stalled key blamed: %+v", ks)
	}

	// 8 gaps of 200 ms of keep-alives: 1.6 s in all, over the 1 s
	// timeout, but never 1 s without data
	status, s = streamWithin(t, gw+"/v1/chat/completions", chatBody("ok-x", "hi", true), 20*time.Second)
	if status != 200 || !strings.Contains(s, `"w7 "`) || !strings.Contains(s, "data: [DONE]") || strings.Contains(s, `"error"`) {
		t.Fatalf("healthy stream with keep-alives: %d:\n%s", status, s)
	}
}
