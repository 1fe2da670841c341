package caddymodule

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// blankLinesUpstream answers every request with a Chat Completions stream
// of one content chunk followed by blank lines, a few every 10 ms, until
// the request is cancelled: an upstream whose stream goes on without
// ever carrying anything.
func blankLinesUpstream(t *testing.T, unit string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"role":"assistant","content":"Par"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
			if _, err := io.WriteString(w, unit); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestAttackDec02cEndlessBlankLines: after its first content an upstream
// sends only blank lines, forever. Blank lines carry nothing (an SSE
// keep-alive is a comment line), so they do not re-arm request_timeout:
// the stream is cut once request_timeout passes without anything else,
// each client gets the content and then a failure in its dialect
// (passthrough and translated), the key's slot is freed and the stall is
// the key's. Before, every blank line re-armed the timeout and the
// stream, with the key's slot, was held for as long as the upstream went
// on (here: until the client gave up).
func TestAttackDec02cEndlessBlankLines(t *testing.T) {
	base := blankLinesUpstream(t, "\n\n\r\n")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tusage_file off\n"+
		"\t\tpool blank {\n\t\t\tmodels x-chat\n\t\t\taffinity off\n\t\t\trequest_timeout 400ms\n\t\t\tmax_retries 0\n"+
		"\t\t\tkey blank-up-0123456789 "+base+" {\n\t\t\t\tid bl1\n\t\t\t}\n\t\t}\n\t}\n")
	client := &http.Client{Timeout: 15 * time.Second}
	for _, c := range []string{"chat", "messages", "responses"} {
		poolFor(t, "blank").ClearCooldown("")
		path, body, hdr := sessionClientBody(c, "x-chat", true)
		req, _ := http.NewRequest(http.MethodPost, gw+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+gatewayKey)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		seq := recentSeq()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: the stream was never cut: %v after %d bytes", c, err, len(b))
		}
		if why := sessionClientFailed(c, resp.StatusCode, b, true); why != "" {
			t.Errorf("%s: %s: %d\n%.600s", c, why, resp.StatusCode, b)
		}
		if !strings.Contains(string(b), "Par") {
			t.Errorf("%s: the content before the blank lines did not arrive: %.300s", c, b)
		}
		rr := recentAfter(t, seq)
		if rr.Status < 400 && rr.StreamOutcome != streamInterrupted {
			t.Errorf("%s: logged %d %q %q, want the stream interrupted", c, rr.Status, rr.StreamOutcome, rr.Error)
		}
		if s := keyStatus(t, "blank", "bl1"); s.InFlight != 0 || s.State != "cooling" {
			t.Errorf("%s: key bl1 %s (in flight %d) after its upstream stalled, want cooling", c, s.State, s.InFlight)
		}
	}
}

// TestWholeAnswerBlankLinesKeepAlive: a busy DeepSeek API answers a
// non-streamed request with its 200 headers at once and then empty lines
// until the answer is ready ("Non-streaming requests: Continuously return
// empty lines", DeepSeek API docs, "Rate Limit"). In a whole answer the
// blank lines are that keep-alive: they re-arm request_timeout, and the
// answer that follows them, long after attempt_timeout and
// request_timeout, reaches each client whole, with the key untouched.
// Before, the stream rule (blank lines do not re-arm, see
// TestAttackDec02cEndlessBlankLines) applied to whole answers too and
// the attempt was cut at attempt_timeout.
func TestWholeAnswerBlankLinesKeepAlive(t *testing.T) {
	const answer = `{"id":"chatcmpl-ds","object":"chat.completion","created":1,"model":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Paris is the capital."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		// 100 empty lines 10 ms apart: about 1 s, far past the pool's
		// attempt_timeout and request_timeout, never 300 ms without one
		for range 100 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			if _, err := io.WriteString(w, "\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tusage_file off\n"+
		"\t\tpool dsblank {\n\t\t\tmodels x-chat\n\t\t\taffinity off\n\t\t\tattempt_timeout 300ms\n\t\t\trequest_timeout 300ms\n\t\t\tmax_retries 0\n"+
		"\t\t\tkey dsblank-up-0123456789 "+srv.URL+"/v1 {\n\t\t\t\tid dsb1\n\t\t\t}\n\t\t}\n\t}\n")
	for _, c := range []string{"chat", "messages", "responses"} {
		path, body, hdr := sessionClientBody(c, "x-chat", false)
		resp, b := post(t, gw+path, []byte(body), hdr...)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d, want 200: %.400s", c, resp.StatusCode, b)
		}
		if text := d2Text(c, b, false); text != "Paris is the capital." {
			t.Errorf("%s: answer text %q, want the upstream's: %.400s", c, text, b)
		}
		eventually(t, 2*time.Second, c+": key dsb1 ready, its slot free, after a whole answer", func() bool {
			s := keyStatus(t, "dsblank", "dsb1")
			return s.InFlight == 0 && s.State == "ready"
		})
	}
}
