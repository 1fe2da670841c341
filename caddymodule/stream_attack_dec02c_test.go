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
