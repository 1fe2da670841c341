package caddymodule

import (
	"bytes"
	"net/http"
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
