package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// countBody is a count_tokens request.
const countBody = `{"model":"claude-x","messages":[{"role":"user","content":"count these words please"}]}`

// TestCountTokensGatewayKeyRPM: count_tokens passes the gateway key's own
// limits like a completion: over its rpm it gets 429 with Retry-After in
// Anthropic's error shape, and the upstream is not asked.
func TestCountTokensGatewayKeyRPM(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+" {\n\t\t\tid counted\n\t\t\trpm 1\n\t\t}\n"+
		"\t\tpool an {\n\t\t\tmodels claude-*\n\t\t\tkey ct-key "+root+" {\n\t\t\t\tid an\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n\t}\n")
	resp, b := post(t, gw+"/v1/messages/count_tokens", []byte(countBody), "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != 200 || gjson.GetBytes(b, "input_tokens").Int() <= 0 || resp.Header.Get("X-Token-Count-Estimate") != "" {
		t.Fatalf("first count: %d %s estimate=%q", resp.StatusCode, b, resp.Header.Get("X-Token-Count-Estimate"))
	}
	if got := resp.Header.Get("X-Routed-Via"); got != "an/an" {
		t.Fatalf("X-Routed-Via %q", got)
	}
	resp, b = post(t, gw+"/v1/messages/count_tokens", []byte(countBody), "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != http.StatusTooManyRequests || gjson.GetBytes(b, "type").Str != "error" ||
		gjson.GetBytes(b, "error.type").Str != "rate_limit_error" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over rpm: %d %s Retry-After %q", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	if !strings.Contains(gjson.GetBytes(b, "error.message").Str, "gateway key counted") {
		t.Fatalf("message %s", b)
	}
	if n := m.Stats("ct-key").Requests; n != 1 {
		t.Fatalf("upstream asked %d times, want 1", n)
	}
}

// TestCountTokensHungUpstreamTimesOut: an upstream that never answers
// count_tokens costs the pool's attempt_timeout, then the client gets the
// local estimate (marked estimated) and the key is booked a timeout once
// the gateway's probe gets no answer within probe_timeout either.
func TestCountTokensHungUpstreamTimesOut(t *testing.T) {
	hung := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hung:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hung) })
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool an {\n\t\t\tmodels claude-*\n\t\t\tattempt_timeout 200ms\n\t\t\tprobe_timeout 200ms\n\t\t\tkey hung-key "+srv.URL+" {\n\t\t\t\tid hung\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n\t}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a bound on the test, not a measurement
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+"/v1/messages/count_tokens", strings.NewReader(countBody))
	req.Header.Set("X-Api-Key", gatewayKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("count_tokens on a hung upstream did not come back: %v", err)
	}
	defer resp.Body.Close()
	var b [256]byte
	n, _ := resp.Body.Read(b[:])
	if resp.StatusCode != 200 || resp.Header.Get("X-Token-Count-Estimate") != "true" ||
		!gjson.GetBytes(b[:n], "estimated").Bool() || gjson.GetBytes(b[:n], "input_tokens").Int() <= 0 {
		t.Fatalf("estimate: %d %s", resp.StatusCode, b[:n])
	}
	eventually(t, 2*time.Second, "timeout booked", func() bool {
		st := keyStatus(t, "an", "hung")
		return st.ConsecutiveFailures == 1 && strings.Contains(st.LastMessage, "timeout")
	})
}

// embeddingsGateway serves text-embedding-* from two OpenAI-dialect mock
// keys (e1, e2) in pool "emb", round robin, claude-* from a pool whose
// only key speaks Anthropic, and rs-embedding-* from a dialect responses
// key.
func embeddingsGateway(t *testing.T, cfg mockupstream.Config) (*mockupstream.Server, string) {
	t.Helper()
	m, base := mock(t, cfg)
	root := strings.TrimSuffix(base, "/v1")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool emb {\n\t\t\tmodels text-embedding-*\n\t\t\tstrategy round_robin\n"+
		"\t\t\tkey emb-key-1 "+base+" {\n\t\t\t\tid e1\n\t\t\t}\n\t\t\tkey emb-key-2 "+base+" {\n\t\t\t\tid e2\n\t\t\t}\n\t\t}\n"+
		"\t\tpool an {\n\t\t\tmodels claude-*\n\t\t\tkey emb-an-key "+root+" {\n\t\t\t\tid an\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n"+
		"\t\tpool rsemb {\n\t\t\tmodels rs-embedding-*\n\t\t\tkey emb-rs-key "+base+" {\n\t\t\t\tid rs\n\t\t\t\tdialect responses\n\t\t\t}\n\t\t}\n\t}\n")
	return m, gw
}

// TestEmbeddingsPooled: POST /v1/embeddings through the openai-go client
// spreads over the pool's keys, passes the answer through, and counts the
// prompt tokens as the key's input tokens.
func TestEmbeddingsPooled(t *testing.T) {
	m, gw := embeddingsGateway(t, mockupstream.Config{})
	c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	before := peekKeyStats("emb", "e1").tokens[0] + peekKeyStats("emb", "e2").tokens[0]
	var prompt int64
	for i := 0; i < 4; i++ {
		res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
			Model: "text-embedding-3-small",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"pooled embeddings", "second input"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Model != "text-embedding-3-small" || len(res.Data) != 2 || len(res.Data[0].Embedding) != 1536 || res.Data[1].Index != 1 {
			t.Fatalf("answer: model %q, %d embeddings", res.Model, len(res.Data))
		}
		if res.Usage.PromptTokens <= 0 || res.Usage.TotalTokens != res.Usage.PromptTokens {
			t.Fatalf("usage %+v", res.Usage)
		}
		prompt += res.Usage.PromptTokens
	}
	if a, b := m.Stats("emb-key-1").OK, m.Stats("emb-key-2").OK; a != 2 || b != 2 {
		t.Fatalf("spread: key 1 %d, key 2 %d; want 2 and 2", a, b)
	}
	if m.Stats("emb-key-1").LastModel != "text-embedding-3-small" {
		t.Fatalf("upstream model %q", m.Stats("emb-key-1").LastModel)
	}
	eventually(t, 2*time.Second, "input tokens counted", func() bool {
		return peekKeyStats("emb", "e1").tokens[0]+peekKeyStats("emb", "e2").tokens[0]-before == prompt
	})
}

// TestEmbeddingsRateLimitedKeyMovesOn: a key answering 429 sends the
// request to the pool's other key; the client never sees the 429.
func TestEmbeddingsRateLimitedKeyMovesOn(t *testing.T) {
	m, gw := embeddingsGateway(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"emb-key-1": {Status: 429, RetryAfter: "30"}}})
	c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	for i := 0; i < 3; i++ {
		res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
			Model: "text-embedding-3-small",
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("moves on")},
		})
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if len(res.Data) != 1 {
			t.Fatalf("answer %s", res.RawJSON())
		}
	}
	if s1, s2 := m.Stats("emb-key-1"), m.Stats("emb-key-2"); s1.RateLimited != 1 || s1.OK != 0 || s2.OK != 3 {
		t.Fatalf("key 1 %+v, key 2 %+v: want one 429 on key 1 (then its cooldown), 3 answers from key 2", s1, s2)
	}
	if st := keyStatus(t, "emb", "e1"); st.LastStatus != 429 {
		t.Fatalf("key 1 status %+v", st)
	}
}

// TestEmbeddingsAnthropicOnlyPool: a pool whose keys all speak Anthropic
// answers embeddings 404 in OpenAI's error shape; a dialect responses key
// serves them; the route table's other answers (405, unversioned path,
// 400) hold for the new route too.
func TestEmbeddingsAnthropicOnlyPool(t *testing.T) {
	m, gw := embeddingsGateway(t, mockupstream.Config{})
	resp, b := post(t, gw+"/v1/embeddings", []byte(`{"model":"claude-x","input":"hi"}`))
	if resp.StatusCode != 404 || gjson.GetBytes(b, "error.type").Str != "invalid_request_error" || gjson.GetBytes(b, "error.code").Str != "not_found" ||
		gjson.GetBytes(b, "error.message").Str != `no key of pool "an" serves embeddings (its keys speak only Anthropic Messages)` {
		t.Fatalf("anthropic-only pool: %d %s", resp.StatusCode, b)
	}
	if gjson.GetBytes(b, "type").Exists() {
		t.Fatalf("not OpenAI's shape: %s", b)
	}
	if n := m.Stats("emb-an-key").Requests; n != 0 {
		t.Fatalf("the Anthropic key was asked %d times", n)
	}
	req, _ := http.NewRequest(http.MethodGet, gw+"/v1/embeddings", nil)
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 405 || res.Header.Get("Allow") != "POST" {
		t.Fatalf("GET: %d Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
	resp, b = post(t, gw+"/embeddings", []byte(`{"model":"text-embedding-3-small","input":"no v1"}`))
	if resp.StatusCode != 200 || len(gjson.GetBytes(b, "data.0.embedding").Array()) != 1536 {
		t.Fatalf("unversioned path: %d %.200s", resp.StatusCode, b)
	}
	// a dialect responses key serves embeddings at <base_url>/embeddings
	resp, b = post(t, gw+"/v1/embeddings", []byte(`{"model":"rs-embedding-x","input":"responses key"}`))
	if s := m.Stats("emb-rs-key"); resp.StatusCode != 200 || gjson.GetBytes(b, "model").Str != "rs-embedding-x" ||
		s.Endpoints["embeddings"] != 1 || s.LastHeaders.Get("Authorization") != "Bearer emb-rs-key" {
		t.Fatalf("responses key: %d %.200s; upstream %v %v", resp.StatusCode, b, s.Endpoints, s.LastHeaders)
	}
	resp, b = post(t, gw+"/v1/embeddings", []byte(`{"input":"no model"}`))
	if resp.StatusCode != 400 || gjson.GetBytes(b, "error.message").Str != "model: a string is required" {
		t.Fatalf("no model: %d %s", resp.StatusCode, b)
	}
}
