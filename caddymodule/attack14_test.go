package caddymodule

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

// Hostile-client and misbehaving-upstream tests of issue 14's surfaces:
// pooled embeddings, count_tokens, the route table and dialect responses
// keys.

// do sends a request with the gateway key as Bearer token (hdr as in post)
// and returns the status, headers and body.
func do(t *testing.T, method, url string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	if method == http.MethodPost {
		return post(t, url, body, hdr...)
	}
	req, err := http.NewRequest(method, url, bytesReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp, b.Bytes()
}

// keyUntouched fails when a client's request changed a key's state.
func keyUntouched(t *testing.T, pool, id string) {
	t.Helper()
	if st := keyStatus(t, pool, id); st.State != keypool.StateReady || st.ConsecutiveFailures != 0 || st.Reason != "" {
		t.Fatalf("key %s/%s changed by a client's request: %+v", pool, id, st)
	}
}

// TestAttack14EmbeddingsHostileBodies: POST /v1/embeddings refuses what a
// completion refuses before any parse (a body nested deeper than
// MaxNesting: gjson's validator recurses per level, and 8 MB of "[" used to
// overflow the stack and kill the process; a repeated "model", which the
// gateway would route by the first copy and the upstream run by the
// last), in OpenAI's error shape, without asking an upstream; what it
// passes reaches the upstream byte for byte, and an upstream 400 the
// request caused is relayed once and benches no key.
func TestAttack14EmbeddingsHostileBodies(t *testing.T) {
	m, gw := embeddingsGateway(t, mockupstream.Config{})
	asked := func() int64 { return m.Stats("emb-key-1").Requests + m.Stats("emb-key-2").Requests }
	refused := []struct{ name, body, msg string }{
		{"deep", `{"model":"text-embedding-3-small","input":` + strings.Repeat("[", 8<<20-100), "request body nests objects and arrays more than 256 levels deep"},
		{"duplicate model", `{"model":"text-embedding-3-small","input":"x","model":"gpt-secret"}`, `request body has the field "model" more than once`},
		{"not an object", `["text-embedding-3-small"]`, "request body must be a JSON object"},
		{"truncated", `{"model":"text-embedding-3-small","input":"x"`, "request body is not valid JSON"},
		{"empty", ``, "request body is empty; expected a JSON object"},
		{"model a number", `{"model":7,"input":"x"}`, "model: a string is required"},
		{"model empty", `{"model":"","input":"x"}`, "model: a string is required"},
	}
	for _, c := range refused {
		resp, b := post(t, gw+"/v1/embeddings", []byte(c.body))
		if resp.StatusCode != 400 || gjson.GetBytes(b, "error.type").Str != "invalid_request_error" || gjson.GetBytes(b, "error.message").Str != c.msg {
			t.Errorf("%s: %d %.300s", c.name, resp.StatusCode, b)
		}
	}
	if n := asked(); n != 0 {
		t.Fatalf("refused bodies reached the upstream %d times", n)
	}

	// byte for byte: key order, spacing, escapes and unknown fields kept
	var prev [2]int64
	sent := "{ \"input\" : [\"\\u00e9t\\u00e9\", \"caf\u00e9\"],\n\t\"model\":\"text-embedding-3-small\", \"encoding_format\":\"float\", \"x-unknown\":{\"a\":[1,2]} }"
	resp, b := post(t, gw+"/v1/embeddings", []byte(sent))
	if resp.StatusCode != 200 || len(gjson.GetBytes(b, "data").Array()) != 2 {
		t.Fatalf("passthrough: %d %.300s", resp.StatusCode, b)
	}
	if got := lastBody(m, &prev); got != sent {
		t.Fatalf("upstream got\n%q\nwant\n%q", got, sent)
	}
	// addressed to the pool: only the model changes, both ways
	resp, b = post(t, gw+"/v1/embeddings", []byte(`{"input":[[1,2,3]],"model":"emb/text-embedding-3-small"}`))
	if resp.StatusCode != 200 || gjson.GetBytes(b, "model").Str != "emb/text-embedding-3-small" {
		t.Fatalf("pool-addressed: %d %.300s", resp.StatusCode, b)
	}
	if got := lastBody(m, &prev); got != `{"input":[[1,2,3]],"model":"text-embedding-3-small"}` {
		t.Fatalf("upstream got %q", got)
	}

	// the upstream refuses the input (OpenAI's 400): relayed once, no key blamed
	before := asked()
	for _, in := range []string{`[]`, `""`, `[{"a":1}]`, `7`} {
		resp, b = post(t, gw+"/v1/embeddings", []byte(`{"model":"text-embedding-3-small","input":`+in+`}`))
		if resp.StatusCode != 400 || gjson.GetBytes(b, "error.type").Str != "invalid_request_error" ||
			!strings.Contains(gjson.GetBytes(b, "error.message").Str, "'$.input' is invalid") && !strings.Contains(gjson.GetBytes(b, "error.message").Str, "'input' is a required property") {
			t.Fatalf("input %s: %d %.300s", in, resp.StatusCode, b)
		}
	}
	if n := asked() - before; n != 4 {
		t.Fatalf("4 refused inputs asked the upstream %d times (a client's 400 is not retried)", n)
	}
	keyUntouched(t, "emb", "e1")
	keyUntouched(t, "emb", "e2")
}

// lastBody is the body of the request sent just now to one of the two
// embeddings keys (round robin: the one whose count moved last is
// unknown, so the one whose body is newer than prev).
func lastBody(m *mockupstream.Server, prev *[2]int64) string {
	var body string
	for i, k := range []string{"emb-key-1", "emb-key-2"} {
		if s := m.Stats(k); s.Requests != prev[i] {
			body, prev[i] = string(s.LastBody), s.Requests
		}
	}
	return body
}

// TestAttack14CountTokensHostileBodies: count_tokens refuses a deep or
// ambiguous body in Anthropic's error shape before any parse, and asks no
// upstream.
func TestAttack14CountTokensHostileBodies(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	gw := gateway(t, gatewayBlock("\t\tpool an {\n\t\t\tmodels claude-*\n\t\t\tkey ct-key "+root+" {\n\t\t\t\tid an\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n"))
	for _, c := range []struct{ body, msg string }{
		{`{"model":"claude-x","messages":` + strings.Repeat("[", 8<<20-100), "request body nests objects and arrays more than 256 levels deep"},
		{`{"model":"claude-x","messages":[],"model":"claude-opus"}`, `request body has the field "model" more than once`},
	} {
		resp, b := post(t, gw+"/v1/messages/count_tokens", []byte(c.body), "Anthropic-Version", "2023-06-01")
		if resp.StatusCode != 400 || gjson.GetBytes(b, "type").Str != "error" || gjson.GetBytes(b, "error.type").Str != "invalid_request_error" ||
			gjson.GetBytes(b, "error.message").Str != c.msg {
			t.Errorf("%d %.300s", resp.StatusCode, b)
		}
	}
	if n := m.Stats("ct-key").Requests; n != 0 {
		t.Fatalf("upstream asked %d times", n)
	}
	resp, b := post(t, gw+"/v1/messages/count_tokens", []byte(countBody), "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != 200 || gjson.GetBytes(b, "input_tokens").Int() <= 0 {
		t.Fatalf("after the hostile bodies: %d %s", resp.StatusCode, b)
	}
}

// TestAttack14ResponsesUpstreamMisbehaviour: a dialect responses key that
// misbehaves is judged the same for the three client dialects. Before the
// first content (an error event, response.failed, a 2xx that is not an
// answer: HTML, a failed response object, an error object, {}) the next
// key answers and the client never sees the failure; after content
// (response.failed, a stream cut before response.completed) the client
// gets its dialect's error and no terminator; a 400 the request caused is
// relayed (the key's secret redacted) and benches no key; a 429's
// Retry-After cools that key only.
func TestAttack14ResponsesUpstreamMisbehaviour(t *testing.T) {
	_, recBase := mock(t, mockupstream.Config{})
	_, rec := post(t, recBase+"/responses", []byte(`{"model":"m","stream":true,"input":"hello there"}`), "Authorization", "Bearer x")
	cut := func(before string) []byte { return append([]byte{}, rec[:bytes.Index(rec, []byte(before))]...) }
	failedEvent := func(seq, code, msg string) []byte {
		return []byte("event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_mock1\",\"object\":\"response\",\"status\":\"failed\",\"model\":\"m\",\"output\":[],\"error\":{\"code\":\"" +
			code + "\",\"message\":\"" + msg + "\"}},\"sequence_number\":" + seq + "}\n\n")
	}
	sse := func(b []byte) mockupstream.KeyBehavior {
		return mockupstream.KeyBehavior{ReplayBody: b, ReplayContentType: "text/event-stream"}
	}
	js := func(status int, b string) mockupstream.KeyBehavior {
		return mockupstream.KeyBehavior{ReplayBody: []byte(b), ReplayStatus: status, ReplayContentType: "application/json"}
	}
	const (
		stream   = iota // the bad key's stream is answered, the client told
		moveOn          // the good key answers, the bad key is blamed
		relay400        // the upstream's 400 is the answer, no key blamed
	)
	cases := []struct {
		name   string
		bad    mockupstream.KeyBehavior
		stream bool
		want   int
		reason keypool.Reason
		msg    string // in the bad key's LastMessage, or in the client's error
	}{
		{"trunc", sse(cut("event: response.completed")), true, stream, "network_error", "stream ended without a finish reason"},
		{"failed", sse(append(cut("event: response.output_text.done"), failedEvent("9", "server_error", "boom rs-bad-failed")...)), true, stream, "server_error", "boom [redacted]"},
		{"failedearly", sse(append(cut("event: response.output_item.added"), failedEvent("2", "rate_limit_exceeded", "slow down")...)), true, moveOn, "rate_limited", "stream error event before content"},
		{"errfirst", sse([]byte("event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"overloaded\",\"param\":null,\"sequence_number\":0}\n\n")), true, moveOn, "server_error", "stream error event before content"},
		{"html", mockupstream.KeyBehavior{ReplayBody: []byte("<html><body>Welcome to nginx</body></html>"), ReplayContentType: "text/html"}, false, moveOn, "server_error", "not JSON"},
		{"jsonfailed", js(200, `{"id":"resp_1","object":"response","status":"failed","model":"m","output":[],"error":{"code":"server_error","message":"The model failed"}}`), false, moveOn, "server_error", "unreadable upstream response"},
		{"jsonerror", js(200, `{"error":{"message":"proxy says no","type":"server_error"}}`), false, moveOn, "server_error", "unreadable upstream response"},
		{"jsonempty", js(200, `{}`), false, moveOn, "server_error", "unreadable upstream response"},
		{"bad400", js(400, `{"error":{"message":"Invalid 'input': key rs-bad-bad400 is not allowed","type":"invalid_request_error","param":"input","code":null}}`), false, relay400, "", "Invalid 'input': key [redacted] is not allowed"},
		{"rl", mockupstream.KeyBehavior{Status: 429, RetryAfter: "30"}, true, moveOn, "rate_limited", "wait 30s from retry-after"},
		{"ctxlen", sse(append(cut("event: response.output_item.added"), failedEvent("2", "context_length_exceeded", "Your input exceeds the context window of this model.")...)), true, relay400, "", "Your input exceeds the context window of this model."},
		{"errclient", sse([]byte("event: error\ndata: {\"type\":\"error\",\"code\":\"invalid_prompt\",\"message\":\"Invalid prompt: key rs-bad-errclient\",\"param\":null,\"sequence_number\":0}\n\n")), true, relay400, "", "Invalid prompt: key [redacted]"},
	}
	clients := []string{"chat", "responses", "anthropic"}
	keys := map[string]mockupstream.KeyBehavior{}
	for _, c := range cases {
		keys["rs-bad-"+c.name] = c.bad
	}
	var pools []string
	m, base := mock(t, mockupstream.Config{Keys: keys})
	key := func(secret, id, prio string) string {
		return "\t\t\tkey " + secret + " " + base + " {\n\t\t\t\tid " + id + "\n\t\t\t\tdialect responses\n\t\t\t\tpriority " + prio + "\n\t\t\t}\n"
	}
	for _, c := range cases {
		for _, cl := range clients {
			pools = append(pools, "\t\tpool "+c.name+cl+" {\n\t\t\tmodels "+c.name+cl+"-*\n\t\t\tstrategy priority\n\t\t\tacquire_timeout 10ms\n"+
				key("rs-bad-"+c.name, "bad", "1")+key("rs-good-"+c.name+cl, "good", "2")+"\t\t}\n")
		}
	}
	gw := gateway(t, gatewayBlock(pools...))
	for _, c := range cases {
		for _, cl := range clients {
			name, model := c.name+"/"+cl, c.name+cl+"-x"
			var resp *http.Response
			var b []byte
			switch cl {
			case "chat":
				resp, b = post(t, gw+"/v1/chat/completions", chatBody(model, "hello there", c.stream))
			case "responses":
				resp, b = post(t, gw+"/v1/responses", []byte(`{"model":"`+model+`","input":"hello there","stream":`+strconv.FormatBool(c.stream)+`}`))
			default:
				resp, b = post(t, gw+"/v1/messages", []byte(`{"model":"`+model+`","max_tokens":100,"messages":[{"role":"user","content":"hello there"}],"stream":`+strconv.FormatBool(c.stream)+`}`),
					"Anthropic-Version", "2023-06-01")
			}
			bad, good := keyStatus(t, c.name+cl, "bad"), keyStatus(t, c.name+cl, "good")
			if bytes.Contains(b, []byte("rs-bad-")) {
				t.Errorf("%s: the key's secret reached the client: %s", name, b)
			}
			switch c.want {
			case stream:
				terminators := map[string][]string{"chat": {"data: [DONE]"}, "responses": {"event: response.completed"}, "anthropic": {"event: message_stop"}}[cl]
				errs := map[string]string{"chat": "data: {\"error\":", "responses": "event: response.failed", "anthropic": "event: error"}[cl]
				if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != c.name+cl+"/bad" || !bytes.Contains(b, []byte("hello ")) ||
					!bytes.Contains(b, []byte(errs)) || bytes.Contains(b, []byte(terminators[0])) || !bytes.Contains(b, []byte(c.msg)) && c.name == "failed" {
					t.Errorf("%s: %d via %q\n%s", name, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
				}
				if bad.Reason != c.reason || good.Requests != 0 {
					t.Errorf("%s: bad key %s %q, good key asked %d times", name, bad.Reason, bad.LastMessage, good.Requests)
				}
			case moveOn:
				complete := map[string]string{"chat": `"finish_reason":"stop"`, "responses": `"status":"completed"`, "anthropic": `"stop_reason":"end_turn"`}[cl]
				if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != c.name+cl+"/good" || !bytes.Contains(b, []byte(complete)) ||
					!bytes.Contains(b, []byte("Mock ")) || !bytes.Contains(b, []byte("there")) {
					t.Errorf("%s: %d via %q\n%s", name, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
				}
				if bad.Reason != c.reason || !strings.Contains(bad.LastMessage, c.msg) || good.Successes != 1 {
					t.Errorf("%s: bad key %s %q; good key %d successes", name, bad.Reason, bad.LastMessage, good.Successes)
				}
			case relay400:
				msg := gjson.GetBytes(b, "error.message").Str
				shape := gjson.GetBytes(b, "type").Str == "error"
				typ := gjson.GetBytes(b, "error.type").Str
				if cl == "responses" && c.stream {
					// an in-band error relayed to the same dialect keeps the
					// event's code as its type (translate.newStreamError)
					typ = "invalid_request_error"
				}
				if resp.StatusCode != 400 || msg != c.msg || shape != (cl == "anthropic") || typ != "invalid_request_error" {
					t.Errorf("%s: %d %s", name, resp.StatusCode, b)
				}
				keyUntouched(t, c.name+cl, "bad")
				if good.Requests != 0 {
					t.Errorf("%s: a client's 400 was retried on another key", name)
				}
			}
		}
	}
	if c := keyStatus(t, "rlchat", "bad"); c.Source != "retry-after" || c.SecondsLeft < 28 || c.SecondsLeft > 30 {
		t.Fatalf("429 cooldown %+v", c)
	}
	if n := m.Stats("rs-bad-bad400").Requests; n != 3 {
		t.Fatalf("the 400 key was asked %d times for 3 requests", n)
	}
}

// TestAttack14ModelsListTooDeep: an upstream's models list nested past
// MaxNesting is not a list (16 MiB of "[" used to overflow gjson's
// recursive validator and kill the process).
func TestAttack14ModelsListTooDeep(t *testing.T) {
	if ids, ok := parseModelIDs(bytes.Repeat([]byte("["), 16<<20)); ok || ids != nil {
		t.Fatalf("deep list read as %v", ids)
	}
	if ids, ok := parseModelIDs([]byte(`{"data":[{"id":"a"},{"id":"b"}]}`)); !ok || strings.Join(ids, ",") != "a,b" {
		t.Fatalf("list %v %v", ids, ok)
	}
}

// TestAttack14EmbeddingsUnknownModel: a model the pool's pattern admits
// but no upstream serves is answered with the upstream's own 404 (OpenAI's
// shape) after the second key says the same, however often, and benches
// no key (the name is the client's): the next request with a real model
// is served by both, in turn.
func TestAttack14EmbeddingsUnknownModel(t *testing.T) {
	var asked [2]int
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		i := 0
		if r.Header.Get("Authorization") == "Bearer um-key-2" {
			i = 1
		}
		asked[i]++
		w.Header().Set("Content-Type", "application/json")
		if m := gjson.GetBytes(b.Bytes(), "model").Str; m != "text-embedding-3-small" {
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"error":{"message":"The model '` + m + `' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":2,"total_tokens":2}}`))
	}))
	t.Cleanup(up.Close)
	gw := gateway(t, gatewayBlock("\t\tpool emb {\n\t\t\tmodels text-embedding-*\n\t\t\tstrategy round_robin\n"+
		"\t\t\tkey um-key-1 "+up.URL+"/v1 {\n\t\t\t\tid u1\n\t\t\t}\n\t\t\tkey um-key-2 "+up.URL+"/v1 {\n\t\t\t\tid u2\n\t\t\t\tdialect responses\n\t\t\t}\n\t\t}\n"))
	for i := 1; i <= 4; i++ { // past the bench threshold (3)
		resp, b := post(t, gw+"/v1/embeddings", []byte(`{"model":"text-embedding-typo","input":"x"}`))
		if resp.StatusCode != 404 || gjson.GetBytes(b, "error.code").Str != "model_not_found" ||
			gjson.GetBytes(b, "error.message").Str != "The model 'text-embedding-typo' does not exist or you do not have access to it." || asked != [2]int{i, i} {
			t.Fatalf("unknown model: %d %s; asked %v", resp.StatusCode, b, asked)
		}
	}
	for _, id := range []string{"u1", "u2"} {
		keyUntouched(t, "emb", id)
		if st := keyStatus(t, "emb", id); len(st.BenchedModels) != 0 {
			t.Fatalf("key %s benched by a client's model name: %v", id, st.BenchedModels)
		}
	}
	var resp *http.Response
	var b []byte
	for i := 0; i < 2; i++ {
		resp, b = post(t, gw+"/v1/embeddings", []byte(`{"model":"text-embedding-3-small","input":"x"}`))
		if resp.StatusCode != 200 || string(b) != `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":2,"total_tokens":2}}` {
			t.Fatalf("good model: %d %s", resp.StatusCode, b)
		}
	}
	if asked != [2]int{5, 5} {
		t.Fatalf("good model spread %v, want one more each", asked)
	}
}

// TestAttack14RouteTable: methods, paths and credentials against the
// route table. HEAD is served wherever GET is (RFC 9110); other methods
// get 405 with Allow; the answer's dialect is the route's (an
// anthropic-version header does not turn an OpenAI route's errors into
// Anthropic's), else the header's; a valid key in any key header is accepted.
func TestAttack14RouteTable(t *testing.T) {
	m, gw := embeddingsGateway(t, mockupstream.Config{})
	emb := []byte(`{"model":"text-embedding-3-small","input":"x"}`)
	cases := []struct {
		method, path string
		hdr          []string
		status       int
		allow        string
		anthropic    bool   // Anthropic's error shape
		msg          string // the error message, "" for a success
	}{
		{"HEAD", "/v1/models", nil, 200, "", false, ""},
		{"HEAD", "/models/", nil, 200, "", false, ""},
		{"POST", "/v1/models", nil, 405, "GET, HEAD", false, "method POST not allowed; use GET"},
		{"HEAD", "/v1/embeddings", nil, 405, "POST", false, ""},
		{"OPTIONS", "/v1/embeddings", nil, 405, "POST", false, "method OPTIONS not allowed; use POST"},
		{"GET", "/v1/messages/count_tokens", nil, 405, "POST", true, "method GET not allowed; use POST"},
		{"POST", "/v1/embeddings/", nil, 200, "", false, ""},
		{"POST", "/v1/embedding%73", nil, 200, "", false, ""},
		{"POST", "/v1//embeddings", nil, 404, "", false, `unknown endpoint "/v1//embeddings"`},
		{"POST", "/v1/Embeddings", nil, 404, "", false, `unknown endpoint "/v1/Embeddings"`},
		{"POST", "/v1/nope", []string{"Anthropic-Version", "2023-06-01"}, 404, "", true, `unknown endpoint "/v1/nope"`},
		{"POST", "/v1/embeddings", []string{"Anthropic-Version", "2023-06-01", "Authorization", ""}, 401, "", false,
			"missing gateway API key: send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'"},
		{"POST", "/v1/embeddings", []string{"Authorization", "Bearer wrong", "X-Api-Key", gatewayKey}, 200, "", false, ""},
		{"POST", "/v1/embeddings", []string{"Authorization", "bearer   " + gatewayKey + " "}, 200, "", false, ""},
		{"POST", "/v1/embeddings", []string{"Authorization", "", "X-Api-Key", gatewayKey}, 200, "", false, ""},
	}
	for _, c := range cases {
		var resp *http.Response
		var b []byte
		if c.method == http.MethodPost {
			resp, b = post(t, gw+c.path, emb, c.hdr...)
		} else {
			resp, b = do(t, c.method, gw+c.path, nil, c.hdr...)
		}
		name := c.method + " " + c.path
		if resp.StatusCode != c.status || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %v: %d Allow %q %.200s", name, c.hdr, resp.StatusCode, resp.Header.Get("Allow"), b)
			continue
		}
		switch {
		case c.method == http.MethodHead:
			if len(b) != 0 || c.status == 200 && resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s: body %q, Content-Type %q", name, b, resp.Header.Get("Content-Type"))
			}
		case c.msg != "":
			if gjson.GetBytes(b, "error.message").Str != c.msg || gjson.GetBytes(b, "type").Str == "error" != c.anthropic {
				t.Errorf("%s %v: %s", name, c.hdr, b)
			}
		default:
			if len(gjson.GetBytes(b, "data.0.embedding").Array()) != 1536 {
				t.Errorf("%s %v: %.200s", name, c.hdr, b)
			}
		}
	}
	if n := m.Stats("emb-key-1").Requests + m.Stats("emb-key-2").Requests; n != 5 {
		t.Fatalf("upstream asked %d times, want 5 (the successes)", n)
	}
}

// TestAttack14EmbeddingsEndpointMissing: a key whose base URL has no
// /embeddings (a plain 404, not about the model) does not answer for the
// pool: the next key serves the request; the key is not benched for the
// model the client named (it still serves completions of the same name,
// which a client could otherwise bench the key for).
func TestAttack14EmbeddingsEndpointMissing(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	var missing int
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/embeddings" {
			missing++
			http.NotFound(w, r)
			return
		}
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	gw := gateway(t, gatewayBlock("\t\tpool emb {\n\t\t\tmodels text-*\n\t\t\tstrategy priority\n"+
		"\t\t\tkey nf-key "+up.URL+"/v1 {\n\t\t\t\tid nf\n\t\t\t\tdialect responses\n\t\t\t\tpriority 1\n\t\t\t}\n"+
		"\t\t\tkey ok-key "+base+" {\n\t\t\t\tid ok\n\t\t\t\tpriority 2\n\t\t\t}\n\t\t}\n"))
	for i := 0; i < 4; i++ {
		resp, b := post(t, gw+"/v1/embeddings", []byte(`{"model":"text-embedding-3-small","input":"x"}`))
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "emb/ok" || len(gjson.GetBytes(b, "data.0.embedding").Array()) != 1536 {
			t.Fatalf("request %d: %d via %q %.200s", i, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
		}
	}
	if missing != 4 {
		t.Fatalf("the key without embeddings was asked %d times for 4 requests", missing)
	}
	// embeddings naming the chat model: the client gets the 404, and the
	// key still serves that model's completions
	for i := 0; i < 4; i++ {
		if resp, b := post(t, gw+"/v1/embeddings", []byte(`{"model":"text-x","input":"x"}`)); resp.StatusCode != 200 && resp.StatusCode != 404 {
			t.Fatalf("embeddings naming a chat model: %d %s", resp.StatusCode, b)
		}
	}
	keyUntouched(t, "emb", "nf")
	if st := keyStatus(t, "emb", "nf"); len(st.BenchedModels) != 0 {
		t.Fatalf("benched %v", st.BenchedModels)
	}
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("text-x", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "emb/nf" {
		t.Fatalf("completions on the key without embeddings: %d via %q %.200s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
	}
}
