package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// sdkOutcome is what an SDK client saw of one request: its API error's
// status, the error body's type and message, the Retry-After it was given,
// or a success.
type sdkOutcome struct {
	ok         bool
	status     int
	typ, msg   string
	retryAfter string
	err        error
}

func (o sdkOutcome) String() string {
	if o.ok {
		return "success"
	}
	return fmt.Sprintf("%d %s %q retry-after %q (%T)", o.status, o.typ, o.msg, o.retryAfter, o.err)
}

// sdkCall runs one request of client dialect cd for model through the
// official SDK, streamed or whole, and returns what the SDK saw.
func sdkCall(gw, cd, model string, stream bool) sdkOutcome {
	ctx := context.Background()
	var err error
	if cd == "anthropic" {
		ac := anthropic.NewClient(aopt.WithBaseURL(gw), aopt.WithAPIKey(gatewayKey), aopt.WithMaxRetries(0))
		p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
		if stream {
			st := ac.Messages.NewStreaming(ctx, p)
			var msg anthropic.Message
			for st.Next() {
				_ = msg.Accumulate(st.Current())
			}
			err = st.Err()
		} else {
			_, err = ac.Messages.New(ctx, p)
		}
		var ae *anthropic.Error
		if errors.As(err, &ae) {
			return sdkOutcome{status: ae.StatusCode, typ: gjson.Get(ae.RawJSON(), "error.type").String(), msg: gjson.Get(ae.RawJSON(), "error.message").String(),
				retryAfter: respHeader(ae.Response, "Retry-After"), err: err}
		}
		return sdkOutcome{ok: err == nil, err: err}
	}
	oc := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	if cd == "chat" {
		p := openai.ChatCompletionNewParams{Model: shared.ChatModel(model), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
		if stream {
			st := oc.Chat.Completions.NewStreaming(ctx, p)
			for st.Next() {
			}
			err = st.Err()
		} else {
			_, err = oc.Chat.Completions.New(ctx, p)
		}
	} else {
		p := responses.ResponseNewParams{Model: shared.ResponsesModel(model), Store: openai.Bool(false),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
		if stream {
			st := oc.Responses.NewStreaming(ctx, p)
			failed := ""
			for st.Next() {
				if ev := st.Current(); ev.Type == "response.failed" || ev.Type == "error" {
					failed = ev.RawJSON()
				}
			}
			err = st.Err()
			if err == nil && failed != "" {
				return sdkOutcome{typ: "event", msg: failed}
			}
		} else {
			_, err = oc.Responses.New(ctx, p)
		}
	}
	var oe *openai.Error
	if errors.As(err, &oe) {
		return sdkOutcome{status: oe.StatusCode, typ: oe.Type, msg: oe.Message, retryAfter: respHeader(oe.Response, "Retry-After"), err: err}
	}
	return sdkOutcome{ok: err == nil, err: err}
}

func respHeader(r *http.Response, name string) string {
	if r == nil {
		return ""
	}
	return r.Header.Get(name)
}

// TestSDKUpstreamErrorMatrix: an upstream error status (400, 401, 429 with
// Retry-After, 500) from a key of each dialect reaches each SDK client,
// streamed and whole, as an API error of its dialect, never as a success.
func TestSDKUpstreamErrorMatrix(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	var cf strings.Builder
	cf.WriteString("\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n")
	type cell struct {
		up, client string
		status     int
		stream     bool
	}
	var cells []cell
	for _, up := range []string{"openai", "anthropic", "responses"} {
		for _, st := range []int{400, 401, 429, 500} {
			for _, cd := range []string{"chat", "anthropic", "responses"} {
				for _, stream := range []bool{false, true} {
					c := cell{up, cd, st, stream}
					name := fmt.Sprintf("%s-%d-%s-%v", up, st, cd, stream)
					u := base
					if up == "anthropic" {
						u = root
					}
					fmt.Fprintf(&cf, "\t\tpool p-%s {\n\t\t\tmodels m-%s\n\t\t\tkey k-%s %s {\n\t\t\t\tid k\n\t\t\t\tdialect %s\n\t\t\t}\n\t\t}\n", name, name, name, u, up)
					m.SetKey("k-"+name, mockupstream.KeyBehavior{Status: st})
					cells = append(cells, c)
				}
			}
		}
	}
	cf.WriteString("\t}\n")
	gw := gateway(t, cf.String())
	for _, c := range cells {
		name := fmt.Sprintf("%s-%d-%s-%v", c.up, c.status, c.client, c.stream)
		t.Run(name, func(t *testing.T) {
			t.Parallel() // the 429 cells wait out Retry-After on their one key
			o := sdkCall(gw, c.client, "m-"+name, c.stream)
			serverType := map[bool]string{true: "api_error", false: "server_error"}[c.client == "anthropic"]
			switch c.status {
			case 400:
				// the client's own fault: relayed as is, the key untouched
				if o.status != 400 || o.typ != "invalid_request_error" || o.msg != "Invalid request." {
					t.Fatalf("400 relayed as %s", o)
				}
				if s := keyStatus(t, "p-"+name, "k"); s.State != "ready" {
					t.Fatalf("a 400 changed the key: %+v", s)
				}
			case 401:
				// the key's fault, not the client's: never a 401 (the
				// client's gateway key is good), the pool's answer
				// with how long to wait
				if o.status != 503 || o.typ != serverType || !strings.Contains(o.msg, "no key available") || o.retryAfter == "" {
					t.Fatalf("a key's 401 reached the client as %s", o)
				}
				if s := keyStatus(t, "p-"+name, "k"); s.State == "ready" {
					t.Fatalf("a 401 left the key ready: %+v", s)
				}
			case 429:
				// every attempt refused with a 429: the client's own
				// rate limit to wait out (TestPoolRateLimitedAnswers429)
				if o.status != 429 || o.typ != "rate_limit_error" || !strings.Contains(o.msg, "rate limited") || o.retryAfter != "1" {
					t.Fatalf("429 with Retry-After 1 reached the client as %s", o)
				}
			case 500:
				if o.status != 502 || o.typ != serverType || !strings.Contains(o.msg, "upstream error") || o.retryAfter == "" {
					t.Fatalf("500 reached the client as %s", o)
				}
			}
		})
	}
}

// TestSDKStreamErrorFixtures replays every failing stream of testdata
// (an in-band error before or after content, a stream cut off, [DONE]
// without a finish) from a key of its dialect to the three SDK clients:
// each reports a failure, none sees a finished answer.
func TestSDKStreamErrorFixtures(t *testing.T) {
	var files []string
	for _, sub := range []string{"openai-chat", "anthropic-messages", "openai-responses"} {
		f, _ := filepath.Glob(filepath.Join("..", "testdata", sub, "stream-errors", "*.sse"))
		files = append(files, f...)
	}
	if len(files) < 10 {
		t.Fatalf("%d failing streams in testdata, want at least 10", len(files))
	}
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	var cf strings.Builder
	cf.WriteString("\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n")
	type cell struct{ name, model, client string }
	var cells []cell
	for n, p := range files {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sub := filepath.Base(filepath.Dir(filepath.Dir(p)))
		up, u := map[string]string{"openai-chat": "openai", "anthropic-messages": "anthropic", "openai-responses": "responses"}[sub], base
		if up == "anthropic" {
			u = root
		}
		for _, cd := range []string{"chat", "anthropic", "responses"} {
			// a pool and key of its own per cell: a failure benches the
			// key, which must not decide the next cell
			id := fmt.Sprintf("s%d-%s", n, cd)
			fmt.Fprintf(&cf, "\t\tpool p-%s {\n\t\t\tmodels m-%s\n\t\t\tkey k-%s %s {\n\t\t\t\tid k\n\t\t\t\tdialect %s\n\t\t\t}\n\t\t}\n", id, id, id, u, up)
			m.SetKey("k-"+id, mockupstream.KeyBehavior{ReplayBody: body, ReplayContentType: "text/event-stream"})
			cells = append(cells, cell{sub + "/" + filepath.Base(p) + "/" + cd, "m-" + id, cd})
		}
	}
	cf.WriteString("\t}\n")
	gw := gateway(t, cf.String())
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // the before-content rate limits wait out their hint
			o := sdkCall(gw, c.client, c.model, true)
			t.Logf("%s: %s", c.name, o)
			if o.ok {
				t.Fatalf("a failing stream reached the %s client as a success", c.client)
			}
			if strings.Contains(c.name, "before-content") && (o.status < 500 && o.status != 429 || o.retryAfter == "") {
				// nothing was sent yet: an HTTP error the SDK retries (429
				// when the in-band error was a rate limit)
				t.Fatalf("an error before content reached the client as %s", o)
			}
		})
	}
}
