package caddymodule

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

// recentSeq is the number of requests in the request log so far.
func recentSeq() uint64 {
	recent.mu.Lock()
	defer recent.mu.Unlock()
	return recent.seq
}

// recentAfter waits for the request log (GET /llm_gateway/requests) to
// hold a request newer than seq (recentSeq before the request: a request
// is logged as it ends, which may be just after its client has the
// answer) and returns the newest.
func recentAfter(t *testing.T, seq uint64) recentRequest {
	t.Helper()
	var r recentRequest
	eventually(t, 2*time.Second, "the request in the request log", func() bool {
		recent.mu.Lock()
		defer recent.mu.Unlock()
		if l := recent.listLocked(func(*recentRequest) bool { return true }, 0, 1); len(l) == 1 && l[0].Seq > seq {
			r = l[0]
			return true
		}
		return false
	})
	return r
}

// attemptOutcomes lists a logged request's attempts as "key:outcome".
func attemptOutcomes(r recentRequest) string {
	var s []string
	for _, a := range r.Attempts {
		s = append(s, a.Key+":"+a.Outcome)
	}
	return strings.Join(s, " ")
}

// TestAttackErrorBodyWith200: an upstream (or a relay in front of it)
// that answers 2xx with an error object, or with JSON that is no answer at
// all, never reaches the client as a success, whether the key speaks the
// client's dialect (passthrough) or not, streamed request or not. An
// error object is judged by its structured type as the same error with its
// HTTP status would be: a server or rate-limit error is the key's (it
// cools, the next key answers), an error the request caused
// (invalid_request_error, context_length_exceeded) is relayed to the
// client in its dialect with that status and changes no key. A body that
// is neither an answer nor an error is the key's (server_error).
func TestAttackErrorBodyWith200(t *testing.T) {
	m, gw := streamPair(t)
	js := func(b string) mockupstream.KeyBehavior {
		return mockupstream.KeyBehavior{ReplayBody: []byte(b), ReplayStatus: 200, ReplayContentType: "application/json"}
	}
	const (
		moveOn = iota // the second key answers, the first is blamed
		relay         // the client gets the error, no key is touched
	)
	chat := func(model string, stream bool) (string, string, []string) {
		return "/v1/chat/completions", string(chatBody(model, "hello there", stream)), nil
	}
	msgs := func(model string, stream bool) (string, string, []string) {
		return "/v1/messages", fmt.Sprintf(`{"model":%q,"max_tokens":100,"messages":[{"role":"user","content":"hello there"}],"stream":%v}`, model, stream),
			[]string{"Anthropic-Version", "2023-06-01"}
	}
	emb := func(model string, _ bool) (string, string, []string) {
		return "/v1/embeddings", `{"model":"` + model + `","input":"hello there"}`, nil
	}
	cases := []struct {
		name   string
		key    string // the first key of its pool (oa-1: OpenAI Chat, an-1: Anthropic)
		bad    string
		client func(string, bool) (string, string, []string)
		stream bool
		want   int
		reason keypool.Reason // the first key's, for moveOn
		status int            // the client's, for relay
		msg    string         // the client's error message, for relay
	}{
		{"chat error object", "oa-1", `{"error":{"message":"upstream says no","type":"server_error","param":null,"code":null}}`, chat, false, moveOn, "server_error", 0, ""},
		{"chat error string", "oa-1", `{"error":"upstream says no"}`, chat, false, moveOn, "server_error", 0, ""},
		{"chat rate limit", "oa-1", `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, chat, false, moveOn, "rate_limited", 0, ""},
		{"chat code and message", "oa-1", `{"code":500,"message":"upstream says no","data":null}`, chat, false, moveOn, "server_error", 0, ""},
		{"chat empty object", "oa-1", `{}`, chat, false, moveOn, "server_error", 0, ""},
		{"chat finish_reason error", "oa-1", `{"id":"c","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Par"},"finish_reason":"error"}]}`, chat, false, moveOn, "server_error", 0, ""},
		{"chat finish_reason error, anthropic client", "oa-1", `{"id":"c","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Par"},"finish_reason":"error"}]}`, msgs, false, moveOn, "server_error", 0, ""},
		{"chat choices not an array", "oa-1", `{"id":"c","object":"chat.completion","created":1,"model":"gpt-x","choices":null}`, chat, false, moveOn, "server_error", 0, ""},
		{"chat context length", "oa-1", `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, chat, false, relay, "", 400, "This model's maximum context length is 8192 tokens."},
		{"chat stream answered with an error object", "oa-1", `{"error":{"message":"upstream says no","type":"server_error"}}`, chat, true, moveOn, "server_error", 0, ""},
		{"chat key, anthropic client", "oa-1", `{"error":{"message":"upstream says no","type":"server_error"}}`, msgs, false, moveOn, "server_error", 0, ""},
		{"chat key, anthropic client, context length", "oa-1", `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`, msgs, false, relay, "", 400, "too long"},
		{"embeddings error object", "oa-1", `{"error":{"message":"upstream says no","type":"server_error"}}`, emb, false, moveOn, "server_error", 0, ""},
		{"embeddings empty object", "oa-1", `{}`, emb, false, moveOn, "server_error", 0, ""},
		{"embeddings code and message", "oa-1", `{"code":500,"message":"upstream says no","data":null}`, emb, false, moveOn, "server_error", 0, ""},
		{"embeddings invalid input", "oa-1", `{"error":{"message":"'$.input' is invalid.","type":"invalid_request_error","param":null,"code":null}}`, emb, false, relay, "", 400, "'$.input' is invalid."},
		{"anthropic error event", "an-1", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, msgs, false, moveOn, "server_error", 0, ""},
		{"anthropic empty object", "an-1", `{}`, msgs, false, moveOn, "server_error", 0, ""},
		{"anthropic stream answered with an error", "an-1", `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, msgs, true, moveOn, "server_error", 0, ""},
		{"anthropic key, chat client, prompt too long", "an-1", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000 maximum"}}`, chat, false, relay, "", 400, "prompt is too long: 250000 tokens > 200000 maximum"},
		{"anthropic invalid request", "an-1", `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be positive"}}`, msgs, false, relay, "", 400, "max_tokens: must be positive"},
	}
	for _, c := range cases {
		pool, model, ids := "oa", "gpt-x", [2]string{"o1", "o2"}
		if c.key == "an-1" {
			pool, model, ids = "an", "claude-x", [2]string{"a1", "a2"}
		}
		poolFor(t, pool).ClearCooldown("")
		m.SetKey(c.key, js(c.bad))
		before := keyStatus(t, pool, ids[1]).Requests
		path, body, hdr := c.client(model, c.stream)
		seq := recentSeq()
		resp, b := post(t, gw+path, []byte(body), hdr...)
		rr := recentAfter(t, seq)
		first := keyStatus(t, pool, ids[0])
		second := keyStatus(t, pool, ids[1]).Requests - before
		switch c.want {
		case moveOn:
			answer := "there"
			if path == "/v1/embeddings" {
				answer = `"embedding"`
			}
			ok := resp.StatusCode == 200 && resp.Header.Get("X-Routed-Via") == pool+"/"+ids[1] && bytes.Contains(b, []byte(answer))
			if c.stream {
				ok = ok && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
			}
			if !ok {
				t.Errorf("%s: %d via %q, want the second key's answer:\n%.400s", c.name, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
			}
			if first.Reason != c.reason || first.State != keypool.StateCooling {
				t.Errorf("%s: first key %s %s %q, want cooling %s", c.name, first.State, first.Reason, first.LastMessage, c.reason)
			}
			if got := attemptOutcomes(rr); got != ids[0]+":"+string(c.reason)+" "+ids[1]+":success" {
				t.Errorf("%s: request log attempts %q", c.name, got)
			}
		case relay:
			anth := strings.HasPrefix(path, "/v1/messages")
			if resp.StatusCode != c.status || gjson.GetBytes(b, "error.message").Str != c.msg || (gjson.GetBytes(b, "type").Str == "error") != anth ||
				gjson.GetBytes(b, "error.type").Str != "invalid_request_error" {
				t.Errorf("%s: %d %s, want %d %q in the client's dialect", c.name, resp.StatusCode, b, c.status, c.msg)
			}
			if first.State != keypool.StateReady || first.Reason != "" || first.ConsecutiveFailures != 0 || second != 0 {
				t.Errorf("%s: a request's own error changed keys: first %+v, second asked %d times", c.name, first, second)
			}
			if rr.Status != c.status || attemptOutcomes(rr) != ids[0]+":client_error" {
				t.Errorf("%s: request log %d %q", c.name, rr.Status, attemptOutcomes(rr))
			}
		}
		m.SetKey(c.key, mockupstream.KeyBehavior{})
	}
}

// TestAttackEventStreamThatIsAnErrorObject: an upstream (or a relay) that
// answers a streamed request with status 200 and Content-Type
// text/event-stream but, instead of events, a JSON error object (it had
// set the stream's headers before it knew) is judged by that error as
// with its HTTP status, not as an empty stream: an error the request
// caused (context_length_exceeded) reaches the client in its dialect and
// changes no key (it used to cool every key of the pool in turn as a
// network error and answer 502), a server error cools the key and the
// next key answers.
func TestAttackEventStreamThatIsAnErrorObject(t *testing.T) {
	m, _ := mock(t, mockupstream.Config{})
	_, base := interpose(t, m, func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool {
		var answer string
		switch {
		case key == "oa-2":
			return false
		case bytes.Contains(body, []byte("too long")):
			answer = " \n" + `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
		case bytes.Contains(body, []byte("overloaded")):
			answer = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
		default:
			return false
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, answer)
		return true
	})
	gw := gateway(t, gatewayBlock("\t\tpool oa {\n\t\t\tmodels gpt-*\n\t\t\tstrategy priority\n\t\t\taffinity off\n"+
		"\t\t\tkey oa-1 "+base+" {\n\t\t\t\tid o1\n\t\t\t\tpriority 1\n\t\t\t}\n"+
		"\t\t\tkey oa-2 "+base+" {\n\t\t\t\tid o2\n\t\t\t\tpriority 2\n\t\t\t}\n\t\t}\n"))
	// the request's own error, in each client dialect
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", string(chatBody("gpt-x", "too long", true))},
		{"/v1/messages", `{"model":"gpt-x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"too long"}]}`},
		{"/v1/responses", `{"model":"gpt-x","stream":true,"store":false,"input":"too long"}`},
	} {
		before := m.Stats("oa-2").Requests
		seq := recentSeq()
		resp, b := post(t, gw+c.path, []byte(c.body), "Anthropic-Version", "2023-06-01")
		rr := recentAfter(t, seq)
		if resp.StatusCode != 400 || gjson.GetBytes(b, "error.message").Str != "This model's maximum context length is 8192 tokens." ||
			(gjson.GetBytes(b, "type").Str == "error") != (c.path == "/v1/messages") {
			t.Errorf("%s: %d %s", c.path, resp.StatusCode, b)
		}
		keyUntouched(t, "oa", "o1")
		keyUntouched(t, "oa", "o2")
		if n := m.Stats("oa-2").Requests - before; n != 0 || rr.Status != 400 || attemptOutcomes(rr) != "o1:client_error" {
			t.Errorf("%s: second key asked %d times; request log %d %q", c.path, n, rr.Status, attemptOutcomes(rr))
		}
	}
	// the key's own error: the next key answers
	seq := recentSeq()
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", "overloaded", true))
	rr := recentAfter(t, seq)
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "oa/o2" || !bytes.Contains(b, []byte("data: [DONE]")) {
		t.Fatalf("overloaded: %d via %q %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
	}
	if s := keyStatus(t, "oa", "o1"); s.State != keypool.StateCooling || s.Reason != "server_error" || attemptOutcomes(rr) != "o1:server_error o2:success" {
		t.Fatalf("overloaded: key %s %s, request log %q", s.State, s.Reason, attemptOutcomes(rr))
	}
}

// TestAttackStreamErrorWithNumericCode: SGLang, vLLM and llama.cpp answer a
// streamed request whose prompt and max_tokens exceed the context window
// with status 200 and an in-band error whose code is the HTTP status
// ({"error":{"object":"error","message":"Requested token count exceeds
// the model's maximum context length ...","type":"BadRequestError",
// "param":null,"code":400}}, then [DONE]); OpenRouter's error objects
// carry the status as a number too. The numeric code is the status: the
// request's own error reaches the client in its dialect and changes no
// key (it used to count as a 500, cooling every key of the pool in turn,
// and the client got a 502), while a numeric 5xx or 429 is still the key's.
func TestAttackStreamErrorWithNumericCode(t *testing.T) {
	m, gw := streamPair(t)
	const ctxErr = `{"error": {"object": "error", "message": "Requested token count exceeds the model's maximum context length of 196608 tokens.", "type": "BadRequestError", "param": null, "code": 400}}`
	cases := []struct {
		name, bad string
		status    int // the client's
		reason    keypool.Reason
	}{
		{"sglang context length before content", "data: " + ctxErr + "\n\ndata: [DONE]\n\n", 400, ""},
		{"llama.cpp context size before content", "data: {\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size, try increasing it\",\"type\":\"exceed_context_size_error\"}}\n\n", 400, ""},
		{"context length after content", chatRole + chatText + "data: " + ctxErr + "\n\ndata: [DONE]\n\n", 200, ""},
		{"numeric 502 before content", "data: {\"error\":{\"code\":502,\"message\":\"Provider returned error\"}}\n\n", 200, "server_error"},
		{"numeric 429 before content", "data: {\"error\":{\"code\":429,\"message\":\"Rate limit exceeded\"}}\n\n", 200, "rate_limited"},
	}
	for _, c := range cases {
		poolFor(t, "oa").ClearCooldown("")
		m.SetKey("oa-1", replay(c.bad))
		before := m.Stats("oa-2").Requests
		seq := recentSeq()
		resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", "a long prompt", true))
		rr := recentAfter(t, seq)
		first, second := keyStatus(t, "oa", "o1"), m.Stats("oa-2").Requests-before
		switch {
		case c.reason != "": // the key's: the next key answers
			if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "oa/o2" || first.Reason != c.reason || second != 1 {
				t.Errorf("%s: %d via %q, first key %s, second asked %d\n%s", c.name, resp.StatusCode, resp.Header.Get("X-Routed-Via"), first.Reason, second, b)
			}
		case c.status == 400: // relayed before content
			if resp.StatusCode != 400 || !strings.Contains(gjson.GetBytes(b, "error.message").Str, "context") ||
				second != 0 || rr.Status != 400 || attemptOutcomes(rr) != "o1:client_error" {
				t.Errorf("%s: %d %s; second asked %d; log %d %q", c.name, resp.StatusCode, b, second, rr.Status, attemptOutcomes(rr))
			}
			keyUntouched(t, "oa", "o1")
		default: // after content: the client's error event, no key blamed
			if resp.StatusCode != 200 || !bytes.Contains(b, []byte("Partial")) || !bytes.Contains(b, []byte("maximum context length")) || bytes.Contains(b, []byte("[DONE]")) ||
				second != 0 || rr.StreamOutcome != streamErrorEvent || attemptOutcomes(rr) != "o1:client_error" {
				t.Errorf("%s: %d %s; second asked %d; log %q %q", c.name, resp.StatusCode, b, second, rr.StreamOutcome, attemptOutcomes(rr))
			}
			keyUntouched(t, "oa", "o1")
		}
		m.SetKey("oa-1", mockupstream.KeyBehavior{})
	}
}
