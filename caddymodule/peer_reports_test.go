package caddymodule

import (
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// Gateway defects from public bug reports of other LLM gateways, each
// test naming the report it reproduces (translation-only cases are in
// translate/peer_reports*_test.go).

// writeGzipUnlessRefused writes body gzip-compressed, as a compressing
// upstream does, unless the request's Accept-Encoding names codings
// without gzip: a request naming none accepts any (RFC 9110 12.5.3).
func writeGzipUnlessRefused(w http.ResponseWriter, r *http.Request, body string) {
	if ae := r.Header.Get("Accept-Encoding"); ae != "" && !strings.Contains(ae, "gzip") {
		_, _ = w.Write([]byte(body))
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	zw := gzip.NewWriter(w)
	_, _ = zw.Write([]byte(body))
	_ = zw.Close()
}

// gzipAnthropicUpstream is an Anthropic-dialect upstream that compresses
// its answers with gzip whenever the request accepts it (as it does when
// it names no Accept-Encoding at all); it records each request's
// Accept-Encoding.
func gzipAnthropicUpstream(t *testing.T) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	const stream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_gz\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":30,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"compressed hello\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	const whole = `{"id":"msg_gz","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"compressed hello"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_read_input_tokens":30,"output_tokens":7}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		in, _ := io.ReadAll(r.Body)
		body := whole
		if gjson.GetBytes(in, "stream").Bool() {
			body = stream
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		writeGzipUnlessRefused(w, r, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

// yuki-uix/agent-cost-lab#12: a gzip-compressing upstream left every request's usage empty (here: failed as a 502) while the client expected an answer, and an unreachable upstream was answered 200.
func TestPeerGzipUpstreamKeepsUsage(t *testing.T) {
	root, seen := gzipAnthropicUpstream(t)
	dir := t.TempDir()
	appLog := filepath.Join(dir, "app.log")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/v1"
	l.Close() // nothing listens there
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool gz {\n\t\t\tmodels claude-*\n\t\t\tkey gz-key "+root+" {\n\t\t\t\tid gz\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n"+
		"\t\tpool gone {\n\t\t\tmodels gone-*\n\t\t\tkey gone-key "+dead+" {\n\t\t\t\tid gone\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n\t}\n",
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")

	// Claude Code (Anthropic client, passthrough), streamed and whole; then a Chat client (translated)
	amStream := `{"model":"claude-x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	resp, body := post(t, gw+"/v1/messages", []byte(amStream), "Accept-Encoding", "gzip, deflate, br")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || !strings.Contains(string(body), `"text":"compressed hello"`) || !strings.Contains(string(body), "message_stop") {
		t.Fatalf("Anthropic stream: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Encoding"), body)
	}
	amWhole := `{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	resp, body = post(t, gw+"/v1/messages", []byte(amWhole), "Accept-Encoding", "gzip")
	if resp.StatusCode != 200 || gjson.GetBytes(body, "content.0.text").Str != "compressed hello" || gjson.GetBytes(body, "usage.output_tokens").Int() != 7 {
		t.Fatalf("Anthropic answer: %d %s", resp.StatusCode, body)
	}
	chat := `{"model":"claude-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	resp, body = post(t, gw+"/v1/chat/completions", []byte(chat), "Accept-Encoding", "gzip")
	text, usage := chatStreamTextUsage(body)
	if resp.StatusCode != 200 || text != "compressed hello" || usage.Get("prompt_tokens").Int() != 42 ||
		usage.Get("prompt_tokens_details.cached_tokens").Int() != 30 || usage.Get("completion_tokens").Int() != 7 {
		t.Fatalf("Chat stream: %d %q usage %s", resp.StatusCode, text, usage.Raw)
	}
	// the gateway relays bodies as they come and asks for them uncompressed
	if s := seen(); len(s) != 3 || s[0] != "identity" || s[1] != "identity" || s[2] != "identity" {
		t.Errorf("upstream requests' Accept-Encoding %q", s)
	}

	// every request's log line has the usage the compressed answer held
	es := requestEntries(t, appLog, 3)
	for i, e := range es[:3] {
		if num(e["input_tokens"]) != 42 || num(e["output_tokens"]) != 7 || num(e["status"]) != 200 {
			t.Errorf("request %d logged %v in / %v out, status %v", i, e["input_tokens"], e["output_tokens"], e["status"])
		}
	}

	// an upstream nobody answers is a failure in the client's dialect, never a 200
	resp, body = post(t, gw+"/v1/messages", []byte(strings.Replace(amStream, "claude-x", "gone-x", 1)))
	if resp.StatusCode < 500 || gjson.GetBytes(body, "type").Str != "error" || gjson.GetBytes(body, "error.type").Str == "" {
		t.Fatalf("unreachable upstream, Anthropic client: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, gw+"/v1/chat/completions", []byte(strings.Replace(chat, "claude-x", "gone-x", 1)))
	if resp.StatusCode < 500 || gjson.GetBytes(body, "error.message").Str == "" {
		t.Fatalf("unreachable upstream, Chat client: %d %s", resp.StatusCode, body)
	}
}

// The gateway's own upstream requests (the models list of discovery, as
// the diagnose probe and the balance check) ask for an uncompressed body
// too: a compressing upstream's models list, gzipped as it would be for a
// request naming no Accept-Encoding, was unreadable and its models never
// learned.
func TestGzipUpstreamModelsList(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		body := `{"object":"list","data":[{"id":"gz-model","object":"model","owned_by":"x"}]}`
		w.Header().Set("Content-Type", "application/json")
		writeGzipUnlessRefused(w, r, body)
	}))
	t.Cleanup(srv.Close)
	gw := gateway(t, gatewayBlock("\t\tpool learned {\n\t\t\tmodels auto\n"+discKey("gz-secret", srv.URL+"/v1", "g1")+"\t\t}\n"))
	eventually(t, 5*time.Second, "gz-model learned", func() bool {
		ids, _ := listModels(t, gw, "/v1/models", false)
		return slices.Contains(ids, "gz-model")
	})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[0] != "GET /v1/models identity" {
		t.Fatalf("upstream saw %q", seen)
	}
}

// chatStreamTextUsage reads a whole Chat Completions stream: the text of
// its content deltas and its last usage object (absent when no chunk
// carried one).
func chatStreamTextUsage(stream []byte) (text string, usage gjson.Result) {
	for _, line := range strings.Split(string(stream), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
			text += gjson.Get(d, "choices.0.delta.content").Str
			if u := gjson.Get(d, "usage"); u.IsObject() {
				usage = u
			}
		}
	}
	return text, usage
}
