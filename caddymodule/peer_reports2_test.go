package caddymodule

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/translate"
)

// More gateway defects from public bug reports of other LLM gateways, each
// test naming the report it reproduces (see also peer_reports_test.go).

// peerUpstream is an upstream speaking both dialects (/v1/messages and
// /v1/chat/completions) whose answer the requested model picks:
// "*-bad" answers 400 with a JSON error body even to a streamed request,
// "*-empty" answers 200 with an empty body (of the streamed or whole
// content type), anything else a normal answer ("ok"; a Chat stream
// carries a usage chunk only when stream_options.include_usage asks for
// it, as OpenAI's does). It records the bodies it was sent.
type peerUpstream struct {
	mu    sync.Mutex
	seen  []string
	url   string
	close func()
}

// Anthropic and OpenAI error bodies of the "*-bad" models.
const (
	peerAmError   = `{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content: Field required"},"request_id":"req_1"}`
	peerChatError = `{"error":{"message":"Invalid 'messages[0].content': expected a string.","type":"invalid_request_error","param":"messages[0].content","code":"invalid_type"}}`
)

func newPeerUpstream(t *testing.T) *peerUpstream {
	u := &peerUpstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.seen = append(u.seen, string(in))
		u.mu.Unlock()
		model := gjson.GetBytes(in, "model").Str
		stream := gjson.GetBytes(in, "stream").Bool()
		anthropic := strings.HasSuffix(r.URL.Path, "/messages")
		switch {
		case strings.HasSuffix(model, "-bad"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			if anthropic {
				_, _ = io.WriteString(w, peerAmError)
			} else {
				_, _ = io.WriteString(w, peerChatError)
			}
		case strings.HasSuffix(model, "-empty"):
			if stream {
				w.Header().Set("Content-Type", "text/event-stream")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			w.WriteHeader(200)
		case anthropic && stream:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n"+
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n"+
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"+
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n"+
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		case stream:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`+"\n\n"+
				`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
			if gjson.GetBytes(in, "stream_options.include_usage").Bool() {
				_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`+"\n\n")
			}
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
		case anthropic:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":2}}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`)
		}
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL + "/v1"
	return u
}

// last returns the last request body the upstream was sent.
func (u *peerUpstream) last() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		return ""
	}
	return u.seen[len(u.seen)-1]
}

// peerGateway starts a gateway with two pools on u: claude-* on an
// Anthropic key (id am), gpt-* on an OpenAI key (id oa); opts are pool
// directives given to both.
func peerGateway(t *testing.T, u *peerUpstream, opts string) string {
	return gateway(t, gatewayBlock(
		"\t\tpool am {\n\t\t\tmodels claude-*\n"+opts+"\t\t\tkey peer-am-key "+u.url+" {\n\t\t\t\tid am\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n",
		"\t\tpool oa {\n\t\t\tmodels gpt-*\n"+opts+"\t\t\tkey peer-oa-key "+u.url+" {\n\t\t\t\tid oa\n\t\t\t}\n\t\t}\n"))
}

// peerClient is one client dialect: its path, a request body builder
// and a check that a body is an error in that dialect.
type peerClient struct {
	name, path string
	body       func(model string, stream bool) string
	isError    func(b []byte) bool
}

var peerClients = []peerClient{
	{"Anthropic", "/v1/messages", func(m string, s bool) string {
		return `{"model":"` + m + `","max_tokens":50,"stream":` + boolJSON(s) + `,"messages":[{"role":"user","content":"hi"}]}`
	}, func(b []byte) bool {
		return gjson.GetBytes(b, "type").Str == "error" && gjson.GetBytes(b, "error.type").Str != "" && gjson.GetBytes(b, "error.message").Str != ""
	}},
	{"Chat", "/v1/chat/completions", func(m string, s bool) string {
		return `{"model":"` + m + `","stream":` + boolJSON(s) + `,"messages":[{"role":"user","content":"hi"}]}`
	}, func(b []byte) bool {
		return gjson.GetBytes(b, "error.message").Str != "" && gjson.GetBytes(b, "error.type").Str != ""
	}},
	{"Responses", "/v1/responses", func(m string, s bool) string {
		return `{"model":"` + m + `","stream":` + boolJSON(s) + `,"input":"hi"}`
	}, func(b []byte) bool {
		return gjson.GetBytes(b, "error.message").Str != "" && gjson.GetBytes(b, "error.type").Str != ""
	}},
}

func boolJSON(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// agentgateway/agentgateway#1340: a streamed request answered with a non-2xx JSON error reached the client with the status but 0 body bytes (the error body was fed to the stream decoder); it is the client's error in its dialect, byte for byte on passthrough, and the key is not blamed.
func TestPeerStreamedRequestKeepsUpstreamError(t *testing.T) {
	u := newPeerUpstream(t)
	gw := peerGateway(t, u, "")
	for _, c := range peerClients {
		for _, model := range []string{"claude-x-bad", "gpt-x-bad"} {
			resp, body := post(t, gw+c.path, []byte(c.body(model, true)))
			if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !c.isError(body) {
				t.Errorf("%s client, %s: %d %q %s", c.name, model, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if c.name == "Anthropic" && model == "claude-x-bad" && string(body) != peerAmError {
				t.Errorf("Anthropic passthrough error changed: %s", body)
			}
			if c.name == "Chat" && model == "gpt-x-bad" && string(body) != peerChatError {
				t.Errorf("Chat passthrough error changed: %s", body)
			}
		}
	}
	for _, k := range [][2]string{{"am", "am"}, {"oa", "oa"}} {
		if s := keyStatus(t, k[0], k[1]); s.State != "ready" || s.ConsecutiveFailures != 0 {
			t.Errorf("key %s after the client's bad requests: %+v", k[1], s)
		}
	}
}

// decolua/9router#3051 and preloop/preloop#109 (an upstream stream that produced nothing reached the caller as HTTP 200 with 0 bytes, recorded as success) and Wei-Shaw/sub2api#5323 (a whole answer came back 200 and empty): an empty answer is a failure, in the client's dialect.
func TestPeerEmptyAnswerIsAFailure(t *testing.T) {
	u := newPeerUpstream(t)
	// each empty answer cools the key that gave it (the upstream's failure,
	// not the client's); short, so that the next case finds it back
	gw := peerGateway(t, u, "\t\t\terror_cooldown 1ms\n\t\t\tfailure_threshold 100\n")
	for _, c := range peerClients {
		for _, model := range []string{"claude-x-empty", "gpt-x-empty"} {
			for _, stream := range []bool{true, false} {
				resp, body := post(t, gw+c.path, []byte(c.body(model, stream)))
				if resp.StatusCode < 500 || !c.isError(body) {
					t.Errorf("%s client, %s, stream %v: %d %s", c.name, model, stream, resp.StatusCode, body)
				}
			}
		}
	}
}

// nguyenphutrong/quotio#460 (a usage chunk sent to a Chat client that did not ask for one) and open-webui/open-webui#23927 (usage missing from streams whose client did not send stream_options): the gateway asks an OpenAI upstream for usage for its own accounting, and shows the usage chunk only to a client that asked, on passthrough and on a stream translated from another dialect alike (as OpenAI does).
func TestPeerUsageChunkOnlyWhenAsked(t *testing.T) {
	u := newPeerUpstream(t)
	gw := peerGateway(t, u, "")
	for _, model := range []string{"gpt-x", "claude-x"} {
		for _, asked := range []bool{false, true} {
			body := `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`
			if asked {
				body = strings.Replace(body, `"stream":true`, `"stream":true,"stream_options":{"include_usage":true}`, 1)
			}
			resp, out := post(t, gw+"/v1/chat/completions", []byte(body))
			text, usage := chatStreamTextUsage(out)
			if resp.StatusCode != 200 || text != "ok" || !strings.HasSuffix(string(out), "data: [DONE]\n\n") {
				t.Fatalf("%s asked %v: %d %s", model, asked, resp.StatusCode, out)
			}
			if asked != usage.Exists() || asked && (usage.Get("prompt_tokens").Int() != 9 || usage.Get("completion_tokens").Int() != 2) {
				t.Errorf("%s asked %v: usage %q\n%s", model, asked, usage.Raw, out)
			}
			if model == "gpt-x" && !gjson.Get(u.last(), "stream_options.include_usage").Bool() {
				t.Errorf("%s asked %v: upstream not asked for usage: %s", model, asked, u.last())
			}
		}
	}
}

// BerriAI/litellm#9812: with prompt caching, the tokens of cache_creation_input_tokens were charged twice (as prompt tokens and as cache writes): the reported usage {"input_tokens":3,"cache_creation_input_tokens":12304,"cache_read_input_tokens":0,"output_tokens":550} cost $0.091311 where Anthropic billed $0.05439. Each token is priced once, at its own rate, whatever the client's dialect.
func TestPeerCacheWritesPricedOnce(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	sonnet := Price{Input: 3, Output: 15, CacheRead: f(0.30), CacheWrite: f(3.75)} // USD per million tokens
	answer := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-3-7-sonnet","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":12304,"cache_read_input_tokens":0,"output_tokens":550}}`
	for _, to := range []translate.Dialect{translate.AnthropicMessages, translate.OpenAIChat, translate.OpenAIResponses} {
		_, u, err := translate.TranslateResponse(translate.AnthropicMessages, to, []byte(answer), "claude-3-7-sonnet")
		if err != nil {
			t.Fatal(err)
		}
		usd, est := costOf(sonnet, u, 0)
		// 3 x $3 + 12304 x $3.75 + 550 x $15, per million
		if usd != 0.054399 || est {
			t.Errorf("client %s: usage %v costs $%v (estimated %v), want $0.054399", to, u, usd, est)
		}
	}
}
