package caddymodule

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
)

// A third set of gateway behaviours from public bug reports of other LLM
// gateways, each test naming the report it reproduces (see also
// peer_reports_test.go and peer_reports2_test.go).

// rsEvent is one OpenAI Responses stream event: its type, sequence
// number and the rest of its members (starting with a comma).
func rsEvent(typ string, seq int, rest string) string {
	return "event: " + typ + "\ndata: {\"type\":\"" + typ + "\",\"sequence_number\":" + fmt.Sprint(seq) + rest + "}\n\n"
}

const rsInProgress = `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"up","output":[],"usage":null}`

// rsHello is a whole Responses stream answering "hello".
var rsHello = rsEvent("response.created", 0, rsInProgress) +
	rsEvent("response.output_item.added", 1, `,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`) +
	rsEvent("response.output_text.delta", 2, `,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hello"`) +
	rsEvent("response.completed", 3, `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"up","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hello","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}`)

// QuantumNous/new-api#7399 (an upstream answering 200 and then an
// overloaded error in its stream was relayed as is, booked as a success,
// and not retried) and QuantumNous/new-api#3142 (a Responses stream that
// fails with response.failed before any content had already committed
// 200 to the client): a Responses upstream whose stream fails before its
// first content is the key's failure and the request moves to the next
// key; the client, whatever its dialect, gets that key's answer.
func TestPeerResponsesFailedBeforeContentMovesOn(t *testing.T) {
	u, gw := trustGateway(t)
	failed := rsEvent("response.created", 0, rsInProgress) + rsEvent("response.in_progress", 1, rsInProgress) +
		rsEvent("response.failed", 2, `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"failed","error":{"code":"server_is_overloaded","message":"Our servers are currently overloaded. Please try again later."},"model":"up","output":[],"usage":null}`)
	u.set(trustKey("tr", "a"), trustAnswer{sse: true, body: failed})
	u.set(trustKey("tr", "b"), trustAnswer{sse: true, body: rsHello})
	resp, body := post(t, gw+"/v1/messages", []byte(`{"model":"x-resp","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`), "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"text":"hello"`) || strings.Contains(string(body), "event: error") ||
		!strings.Contains(string(body), `"stop_reason":"end_turn"`) {
		t.Fatalf("Anthropic client: %d %s", resp.StatusCode, body)
	}
	if a, b := u.count(trustKey("tr", "a")), u.count(trustKey("tr", "b")); a != 1 || b != 1 {
		t.Errorf("attempts: key a %d, key b %d; want 1 and 1", a, b)
	}
	if st := keyStatus(t, "tr", "tra"); st.ConsecutiveFailures != 1 {
		t.Errorf("key a after its failed stream: %+v", st)
	}
	if st := keyStatus(t, "tr", "trb"); st.ConsecutiveFailures != 0 || st.State != "ready" {
		t.Errorf("key b after its answer: %+v", st)
	}
	// Chat and Responses clients: key a cools, key b answers
	resp, body = post(t, gw+"/v1/chat/completions", []byte(`{"model":"x-resp","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if text, _ := chatStreamTextUsage(body); resp.StatusCode != 200 || text != "hello" || !strings.Contains(string(body), `"finish_reason":"stop"`) {
		t.Errorf("Chat client: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, gw+"/v1/responses", []byte(`{"model":"x-resp","stream":true,"input":"hi"}`))
	if resp.StatusCode != 200 || string(body) != rsHello {
		t.Errorf("Responses client: %d %s", resp.StatusCode, body)
	}
}

// headerUpstream answers any request with a small whole answer in the
// dialect of its path and records the headers of each request, by path.
type headerUpstream struct {
	mu   sync.Mutex
	seen map[string]http.Header
}

func (u *headerUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	u.seen[r.URL.Path] = r.Header.Clone()
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if strings.HasSuffix(r.URL.Path, "/messages") {
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`)
		return
	}
	_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
}

func (u *headerUpstream) header(path string) http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[path]
}

// BerriAI/litellm#9016 (the client's anthropic-beta was not forwarded to
// Anthropic) and router-for-me/CLIProxyAPI#2228 (Claude Code's
// fingerprint headers, anthropic-beta, anthropic-dangerous-direct-browser-access
// and x-app, were forwarded to a third-party upstream, which then failed
// the request): an Anthropic key gets the client's anthropic-beta values,
// an OpenAI key none of them, and neither gets the fingerprint headers or
// the client's credentials.
func TestPeerClientHeadersForwarded(t *testing.T) {
	u := &headerUpstream{seen: map[string]http.Header{}}
	srv := httptest.NewServer(u)
	t.Cleanup(srv.Close)
	gw := gateway(t, gatewayBlock(
		"\t\tpool am {\n\t\t\tmodels claude-*\n\t\t\tkey hdr-am-key-5c8e1a9f "+srv.URL+" {\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n",
		"\t\tpool oa {\n\t\t\tmodels gpt-*\n\t\t\tkey hdr-oa-key-5c8e1a9f "+srv.URL+"/v1\n\t\t}\n"))
	hdr := []string{"Anthropic-Version", "2023-06-01", "Anthropic-Beta", "claude-code-20250219,interleaved-thinking-2025-05-14",
		"Anthropic-Dangerous-Direct-Browser-Access", "true", "X-App", "cli", "User-Agent", "claude-cli/2.1.0 (external, cli)"}
	for _, model := range []string{"claude-x", "gpt-x"} {
		resp, body := post(t, gw+"/v1/messages", []byte(`{"model":"`+model+`","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`), hdr...)
		if resp.StatusCode != 200 || gjson.GetBytes(body, "content.0.text").Str != "ok" {
			t.Fatalf("%s: %d %s", model, resp.StatusCode, body)
		}
	}
	am, oa := u.header("/v1/messages"), u.header("/v1/chat/completions")
	if am == nil || oa == nil {
		t.Fatalf("upstream paths seen: %v", u.seen)
	}
	if got := strings.Join(am.Values("Anthropic-Beta"), ","); got != "claude-code-20250219,interleaved-thinking-2025-05-14" {
		t.Errorf("Anthropic key: anthropic-beta %q", got)
	}
	if am.Get("X-Api-Key") != "hdr-am-key-5c8e1a9f" || am.Get("Anthropic-Version") == "" || am.Get("Authorization") != "" {
		t.Errorf("Anthropic key auth headers: %v", am)
	}
	if oa.Get("Anthropic-Beta") != "" || oa.Get("Anthropic-Version") != "" || oa.Get("Authorization") != "Bearer hdr-oa-key-5c8e1a9f" || oa.Get("X-Api-Key") != "" {
		t.Errorf("OpenAI key headers: %v", oa)
	}
	for name, h := range map[string]http.Header{"Anthropic": am, "OpenAI": oa} {
		for _, k := range []string{"Anthropic-Dangerous-Direct-Browser-Access", "X-App"} {
			if v := h.Get(k); v != "" {
				t.Errorf("%s key got the client's %s: %q", name, k, v)
			}
		}
		for k, vs := range h {
			if strings.Contains(strings.Join(vs, " "), gatewayKey) {
				t.Errorf("%s key got the gateway key in %s", name, k)
			}
		}
	}
}

// Wei-Shaw/sub2api#657 (count_tokens on an upstream without the endpoint
// answered 200 with input_tokens 0, so Claude Code never compacted) and
// BerriAI/litellm#13252 (Claude Code's POST
// /v1/messages/count_tokens?beta=true answered 404): on a pool whose keys
// cannot count, count_tokens?beta=true answers a local estimate, never 0,
// marked as an estimate, and it grows with the request.
func TestPeerCountTokensEstimateNeverZero(t *testing.T) {
	u := &headerUpstream{seen: map[string]http.Header{}}
	srv := httptest.NewServer(u)
	t.Cleanup(srv.Close)
	gw := gateway(t, gatewayBlock("\t\tpool oa {\n\t\t\tmodels claude-*\n\t\t\tkey ct-oa-key-5c8e1a9f "+srv.URL+"/v1\n\t\t}\n"))
	count := func(text string) int64 {
		resp, body := post(t, gw+"/v1/messages/count_tokens?beta=true", []byte(`{"model":"claude-x","messages":[{"role":"user","content":"`+text+`"}]}`),
			"Anthropic-Version", "2023-06-01", "Anthropic-Beta", "token-counting-2024-11-01")
		n := gjson.GetBytes(body, "input_tokens").Int()
		if resp.StatusCode != 200 || n < 1 || !gjson.GetBytes(body, "estimated").Bool() || resp.Header.Get("X-Token-Count-Estimate") != "true" {
			t.Fatalf("count_tokens %q: %d %s", text, resp.StatusCode, body)
		}
		return n
	}
	if short, long := count("hi"), count(strings.Repeat("many words here ", 200)); long <= short || long < 500 {
		t.Errorf("estimates: short %d, long %d", short, long)
	}
	if len(u.seen) != 0 {
		t.Errorf("an OpenAI Chat key was asked to count: %v", u.seen)
	}
}
