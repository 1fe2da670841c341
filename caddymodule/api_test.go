package caddymodule

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

func TestGatewayAuth(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	t.Run("no api_key configured", func(t *testing.T) {
		gw := gateway(t, "\tllm_gateway {\n"+poolBlock("noauth", base, 1, "")+"\t}\n")
		resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
		if resp.StatusCode != 401 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if msg := gjson.GetBytes(body, "error.message").String(); !strings.Contains(msg, "no api_key configured") {
			t.Fatalf("message %q does not say why", msg)
		}
	})
	t.Run("auth off", func(t *testing.T) {
		gw := gateway(t, "\tllm_gateway {\n\t\tauth off\n"+poolBlock("authoff", base, 1, "")+"\t}\n")
		resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false), "Authorization", "")
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	})
	t.Run("keys", func(t *testing.T) {
		gw := gateway(t, gatewayBlock(poolBlock("authkeys", base, 1, "")))
		cases := []struct {
			name string
			hdr  []string
			want int
		}{
			{"bearer", nil, 200},
			{"x-api-key", []string{"Authorization", "", "X-Api-Key", gatewayKey}, 200},
			{"wrong bearer", []string{"Authorization", "Bearer sk-wrong"}, 401},
			{"wrong x-api-key", []string{"Authorization", "", "X-Api-Key", "sk-wrong"}, 401},
			{"prefix of the key", []string{"Authorization", "Bearer " + gatewayKey[:10]}, 401},
			{"missing", []string{"Authorization", ""}, 401},
		}
		for _, c := range cases {
			resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false), c.hdr...)
			if resp.StatusCode != c.want {
				t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.want, body)
			}
			if c.want == 401 && gjson.GetBytes(body, "error.type").String() != "authentication_error" && gjson.GetBytes(body, "error.type").String() != "invalid_request_error" {
				t.Errorf("%s: not an OpenAI error: %s", c.name, body)
			}
		}
	})
}

func TestBadRequestsNeverGoUpstream(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tmax_request_body 4KB\n"+poolBlock("badreq", base, 1, "")+"\t}\n")
	cases := []struct {
		name   string
		body   string
		status int
	}{
		{"malformed JSON", `{"model":"mock-gpt","messages":[`, 400},
		{"not an object", `[1,2,3]`, 400},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"model not a string", `{"model":5,"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"missing messages", `{"model":"mock-gpt"}`, 400},
		{"too large", `{"model":"mock-gpt","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413},
		{"empty", ``, 400},
	}
	for _, c := range cases {
		resp, body := post(t, gw+"/v1/chat/completions", []byte(c.body))
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.status, body)
			continue
		}
		if msg := gjson.GetBytes(body, "error.message").String(); msg == "" {
			t.Errorf("%s: not an OpenAI error body: %s", c.name, body)
		}
	}
	if n := m.Stats("mk-1").Requests; n != 0 {
		t.Fatalf("%d bad requests reached the upstream", n)
	}
}

func TestEndpoints(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw := gateway(t, gatewayBlock(poolBlock("ep", base, 1,
		"\t\t\tmodels gpt-4o mini-* claude-x\n\t\t\tmodel_map gpt-4o mock-large\n\t\t\tmodel_map mini-* mock-mini\n\t\t\tmodel_map mini-special mock-special\n")))
	get := func(path string, auth bool) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, gw+path, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+gatewayKey)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := get("/healthz", false); resp.StatusCode != 200 || body != `{"status":"ok"}` {
		t.Fatalf("healthz %d %s", resp.StatusCode, body)
	}
	if resp, body := get("/readyz", false); resp.StatusCode != 200 || body != `{"status":"ready"}` {
		t.Fatalf("readyz %d %s", resp.StatusCode, body)
	}
	resp, body := get("/v1/models", true)
	if resp.StatusCode != 200 || gjson.Get(body, "object").String() != "list" {
		t.Fatalf("models %d %s", resp.StatusCode, body)
	}
	var ids []string
	for _, v := range gjson.Get(body, "data.#.id").Array() {
		ids = append(ids, v.String())
	}
	if strings.Join(ids, ",") != "gpt-4o,claude-x,mini-special" {
		t.Fatalf("model ids %v", ids)
	}
	if resp, _ := get("/v1/models", false); resp.StatusCode != 401 {
		t.Fatalf("models without a key: %d", resp.StatusCode)
	}
	resp, body = get("/v1/nope", true)
	if resp.StatusCode != 404 || gjson.Get(body, "error.message").String() == "" {
		t.Fatalf("unknown path %d %s", resp.StatusCode, body)
	}

	// model_map: most specific pattern wins; the client sees its own model
	for _, c := range []struct{ client, upstream string }{
		{"gpt-4o", "mock-large"}, {"mini-fast", "mock-mini"}, {"mini-special", "mock-special"}, {"claude-x", "claude-x"},
	} {
		resp, body := post(t, gw+"/v1/chat/completions?beta=true", chatBody(c.client, "hi", false), "X-Request-Id", "req-"+c.client)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.client, resp.StatusCode, body)
		}
		if got := m.Stats("mk-1").LastModel; got != c.upstream {
			t.Errorf("%s went upstream as %q, want %q", c.client, got, c.upstream)
		}
		if got := gjson.GetBytes(body, "model").String(); got != c.client {
			t.Errorf("%s: response model %q", c.client, got)
		}
		if got := resp.Header.Get("X-Request-Id"); got != "req-"+c.client {
			t.Errorf("X-Request-Id %q", got)
		}
	}
	// an unserved model: 404, nothing upstream
	before := m.Stats("mk-1").Requests
	resp2, body2 := post(t, gw+"/v1/chat/completions", chatBody("other", "hi", false))
	if resp2.StatusCode != 404 || m.Stats("mk-1").Requests != before {
		t.Fatalf("unserved model: %d %s", resp2.StatusCode, body2)
	}
	// generated request ids
	resp3, _ := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "hi", false))
	if id := resp3.Header.Get("X-Request-Id"); len(id) != 32 {
		t.Fatalf("generated X-Request-Id %q", id)
	}
	// what went upstream: the key's own credentials, never the gateway key
	h := m.Stats("mk-1").LastHeaders
	if h.Get("Authorization") != "Bearer mk-1" || h.Get("X-Api-Key") != "" {
		t.Fatalf("upstream auth headers: %v", h)
	}
}

func TestOpenAISDKClient(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	gw := gateway(t, gatewayBlock(poolBlock("sdk", base, 2, "")))
	client := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	ctx := context.Background()
	msg := "What is the capital of France?"

	comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "mock-gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(msg)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := comp.Choices[0].Message.Content; got != mockupstream.Text(msg) {
		t.Fatalf("content %q, want %q", got, mockupstream.Text(msg))
	}
	if comp.Usage.CompletionTokens == 0 || comp.Choices[0].FinishReason != "stop" {
		t.Fatalf("usage/finish: %+v %q", comp.Usage, comp.Choices[0].FinishReason)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "mock-gpt",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(msg)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != mockupstream.Text(msg) {
		t.Fatalf("streamed content %q, want %q", got, mockupstream.Text(msg))
	}
	if acc.Usage.CompletionTokens != int64(len(mockupstream.Words(mockupstream.Text(msg)))) {
		t.Fatalf("streamed usage %+v", acc.Usage)
	}
	if chunks < 5 {
		t.Fatalf("only %d chunks", chunks)
	}
}
