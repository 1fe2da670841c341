package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sort"
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
	"github.com/llmgateway/llm_gateway/mockupstream/testskip"
)

// responsesFixture is one recorded OpenAI Responses answer: a response
// object, a stream, or an error body, with the HTTP status it came with.
type responsesFixture struct {
	name   string
	body   []byte
	stream bool
	status int
}

// sharedFixtureDir returns ../shared/fixtures/<sub> beside the module root;
// the test is skipped when the folder is absent, and fails under CI=true.
func sharedFixtureDir(t *testing.T, sub string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "shared", "fixtures", sub))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("fixtures directory ../shared/fixtures (beside the module root) is missing; it is required when CI=true")
		}
		testskip.Skipf(t, "tests replaying ../shared/fixtures", "folder absent",
			"fixtures directory %s not found", dir)
	}
	return dir
}

// responsesFixtures reads every recorded Responses answer: the extracted
// cassette interactions to POST /v1/responses, the recorder's streams
// (one JSON event per line, several streams in a row) rebuilt as SSE, and
// the bare error bodies (insufficient_quota is a 429, per OpenAI's error
// codes guide; the other a 400).
func responsesFixtures(t *testing.T, dir string) []responsesFixture {
	t.Helper()
	var out []responsesFixture
	cassettes, _ := filepath.Glob(filepath.Join(dir, "extracted", "*", "interactions.json"))
	sort.Strings(cassettes)
	for _, ij := range cassettes {
		raw, err := os.ReadFile(ij)
		if err != nil {
			t.Fatal(err)
		}
		cdir := filepath.Dir(ij)
		for i, it := range gjson.ParseBytes(raw).Array() {
			if !strings.HasSuffix(it.Get("uri").String(), "/v1/responses") {
				continue // input_tokens: count_tokens, see TestResponsesInputTokensFixture
			}
			stem := filepath.Join(cdir, twoDigits(i)+".response.")
			f := responsesFixture{name: filepath.Base(cdir) + "/" + twoDigits(i), status: int(it.Get("status").Int())}
			if b, err := os.ReadFile(stem + "sse"); err == nil {
				f.body, f.stream = b, true
			} else if f.body, err = os.ReadFile(stem + "json"); err != nil {
				t.Fatal(err)
			}
			out = append(out, f)
		}
	}
	chunks, _ := filepath.Glob(filepath.Join(dir, "*.chunks.txt"))
	for _, c := range chunks {
		raw, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		var cur []byte
		n := 0
		flush := func() {
			if len(cur) > 0 {
				out = append(out, responsesFixture{name: filepath.Base(c) + "/" + twoDigits(n), body: cur, stream: true, status: 200})
				n++
			}
			cur = nil
		}
		for _, line := range bytes.Split(raw, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			typ := gjson.GetBytes(line, "type").String()
			if typ == "response.created" {
				flush()
			}
			cur = append(cur, "event: "+typ+"\ndata: "...)
			cur = append(cur, line...)
			cur = append(cur, "\n\n"...)
		}
		flush()
	}
	for name, status := range map[string]int{"vercel__reasoning-model-temperature-error.json": 400, "vercel__error-insufficient-quota.json": 429} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, responsesFixture{name: name, body: b, status: status})
	}
	// errors last: a quota error benches the key
	sort.SliceStable(out, func(i, j int) bool { return out[i].status < out[j].status })
	return out
}

func twoDigits(i int) string { return string([]byte{byte('0' + i/10), byte('0' + i%10)}) }

// responsesTruth is what a recorded Responses answer says, read from its
// final response object with gjson: the client dialects' renderings must
// agree with it.
type responsesTruth struct {
	text     string
	calls    []responsesCall
	status   string // completed, incomplete
	reason   string // incomplete_details.reason
	input    int64
	output   int64
	errorMsg string
}

type responsesCall struct{ id, name, args string }

func truthOf(t *testing.T, f responsesFixture) responsesTruth {
	t.Helper()
	if f.status >= 400 {
		return responsesTruth{errorMsg: gjson.GetBytes(f.body, "error.message").String()}
	}
	resp := gjson.ParseBytes(f.body)
	if f.stream {
		resp = gjson.Result{}
		for _, line := range bytes.Split(f.body, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				if typ := gjson.GetBytes(d, "type").String(); typ == "response.completed" || typ == "response.incomplete" {
					resp = gjson.GetBytes(d, "response")
				}
			}
		}
		if !resp.Exists() {
			t.Fatalf("%s: no response.completed event", f.name)
		}
	}
	var tr responsesTruth
	for _, item := range resp.Get("output").Array() {
		switch item.Get("type").String() {
		case "message":
			for _, c := range item.Get("content").Array() {
				if c.Get("type").String() == "output_text" {
					tr.text += c.Get("text").String()
				}
			}
		case "function_call":
			tr.calls = append(tr.calls, responsesCall{item.Get("call_id").String(), item.Get("name").String(), item.Get("arguments").String()})
		}
	}
	tr.status, tr.reason = resp.Get("status").String(), resp.Get("incomplete_details.reason").String()
	tr.input, tr.output = resp.Get("usage.input_tokens").Int(), resp.Get("usage.output_tokens").Int()
	return tr
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// TestResponsesUpstreamFixtures serves every recorded OpenAI Responses
// answer in ../shared/fixtures/openai-responses from a mock key of dialect
// responses to the three client dialects, through the official SDKs: the
// accumulated text, tool calls, stop reason and usage agree with the
// recording, a Responses client gets the recorded bytes unchanged, and a
// recorded error reaches every client as an error in its dialect.
func TestResponsesUpstreamFixtures(t *testing.T) {
	dir := sharedFixtureDir(t, "openai-responses")
	fixtures := responsesFixtures(t, dir)
	if len(fixtures) < 12 {
		t.Fatalf("read %d Responses fixtures, want at least 12", len(fixtures))
	}
	m, base := mock(t, mockupstream.Config{})
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool rs {\n\t\t\tmodels *\n\t\t\tkey rs-key "+base+" {\n\t\t\t\tid rs\n\t\t\t\tdialect responses\n\t\t\t}\n\t\t}\n\t}\n")
	ctx := context.Background()
	oc := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	ac := anthropic.NewClient(aopt.WithBaseURL(gw), aopt.WithAPIKey(gatewayKey), aopt.WithMaxRetries(0))
	calc := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}}}

	for _, f := range fixtures {
		ct := "application/json"
		if f.stream {
			ct = "text/event-stream; charset=utf-8"
		}
		m.SetKey("rs-key", mockupstream.KeyBehavior{ReplayBody: f.body, ReplayContentType: ct, ReplayStatus: f.status})
		want := truthOf(t, f)
		stop := map[bool]string{true: "tool_use", false: "end_turn"}[len(want.calls) > 0]
		finish := map[bool]string{true: "tool_calls", false: "stop"}[len(want.calls) > 0]
		if want.status == "incomplete" && want.reason == "max_output_tokens" {
			stop, finish = "max_tokens", "length"
		}

		t.Run(f.name+"/responses", func(t *testing.T) {
			body := `{"model":"gpt-5","input":"hi","store":false,"stream":` + map[bool]string{true: "true", false: "false"}[f.stream] + `}`
			resp, got := post(t, gw+"/v1/responses", []byte(body))
			if f.status >= 400 {
				msg := gjson.GetBytes(got, "error.message").String()
				if resp.StatusCode < 400 || msg == "" || f.status == http.StatusBadRequest && (resp.StatusCode != f.status || msg != want.errorMsg) {
					t.Fatalf("error relay: %d %s", resp.StatusCode, got)
				}
				return
			}
			if resp.StatusCode != 200 || !bytes.Equal(got, f.body) {
				t.Fatalf("passthrough changed the bytes: status %d, %d bytes vs %d recorded\n%.400s", resp.StatusCode, len(got), len(f.body), got)
			}
			p := responses.ResponseNewParams{Model: shared.ResponsesModel("gpt-5"), Store: openai.Bool(false),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
			var res *responses.Response
			if f.stream {
				st := oc.Responses.NewStreaming(ctx, p)
				for st.Next() {
					if ev := st.Current(); ev.Type == "response.completed" || ev.Type == "response.incomplete" {
						r := ev.Response
						res = &r
					}
				}
				if st.Err() != nil {
					t.Fatal(st.Err())
				}
			} else {
				var err error
				if res, err = oc.Responses.New(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			if res == nil || res.OutputText() != want.text || res.Usage.InputTokens != want.input || res.Usage.OutputTokens != want.output {
				t.Fatalf("SDK view %+v, want %+v", res, want)
			}
		})

		t.Run(f.name+"/chat", func(t *testing.T) {
			p := openai.ChatCompletionNewParams{Model: "gpt-5", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
				Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "calculator", Parameters: calc})}}
			var cc openai.ChatCompletion
			if f.stream {
				st := oc.Chat.Completions.NewStreaming(ctx, p, option.WithJSONSet("stream_options", map[string]any{"include_usage": true}))
				acc := openai.ChatCompletionAccumulator{}
				for st.Next() {
					acc.AddChunk(st.Current())
				}
				if f.status >= 400 {
					checkOpenAIError(t, st.Err(), f.status, want.errorMsg)
					return
				}
				if st.Err() != nil {
					t.Fatal(st.Err())
				}
				cc = acc.ChatCompletion
			} else {
				res, err := oc.Chat.Completions.New(ctx, p)
				if f.status >= 400 {
					checkOpenAIError(t, err, f.status, want.errorMsg)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				cc = *res
			}
			if len(cc.Choices) != 1 {
				t.Fatalf("choices %+v", cc.Choices)
			}
			msg := cc.Choices[0].Message
			if msg.Content != want.text || string(cc.Choices[0].FinishReason) != finish {
				t.Fatalf("content %q finish %q, want %q %q", msg.Content, cc.Choices[0].FinishReason, want.text, finish)
			}
			if len(msg.ToolCalls) != len(want.calls) {
				t.Fatalf("tool calls %+v, want %+v", msg.ToolCalls, want.calls)
			}
			for i, c := range want.calls {
				tc := msg.ToolCalls[i]
				if tc.ID != c.id || tc.Function.Name != c.name || !sameJSON(tc.Function.Arguments, c.args) {
					t.Fatalf("tool call %d %+v, want %+v", i, tc, c)
				}
			}
			if cc.Usage.PromptTokens != want.input || cc.Usage.CompletionTokens != want.output {
				t.Fatalf("usage %+v, want in %d out %d", cc.Usage, want.input, want.output)
			}
		})

		t.Run(f.name+"/anthropic", func(t *testing.T) {
			p := anthropic.MessageNewParams{Model: "gpt-5", MaxTokens: 1024,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
				Tools:    []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: calc["properties"]}, "calculator")}}
			var msg anthropic.Message
			if f.stream {
				st := ac.Messages.NewStreaming(ctx, p)
				for st.Next() {
					if err := msg.Accumulate(st.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if f.status >= 400 {
					checkAnthropicError(t, st.Err(), f.status, want.errorMsg)
					return
				}
				if st.Err() != nil {
					t.Fatal(st.Err())
				}
			} else {
				res, err := ac.Messages.New(ctx, p)
				if f.status >= 400 {
					checkAnthropicError(t, err, f.status, want.errorMsg)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				msg = *res
			}
			var text string
			var calls []anthropic.ToolUseBlock
			for _, b := range msg.Content {
				switch b.Type {
				case "text":
					text += b.AsText().Text
				case "tool_use":
					calls = append(calls, b.AsToolUse())
				}
			}
			if text != want.text || string(msg.StopReason) != stop {
				t.Fatalf("text %q stop %q, want %q %q", text, msg.StopReason, want.text, stop)
			}
			if len(calls) != len(want.calls) {
				t.Fatalf("tool_use %+v, want %+v", calls, want.calls)
			}
			for i, c := range want.calls {
				if calls[i].Name != c.name || !sameJSON(string(calls[i].Input), c.args) || calls[i].ID == "" {
					t.Fatalf("tool_use %d %+v, want %+v", i, calls[i], c)
				}
			}
			// Anthropic's input_tokens excludes what was read from or
			// written to the cache
			if in := msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens + msg.Usage.CacheCreationInputTokens; in != want.input || msg.Usage.OutputTokens != want.output {
				t.Fatalf("usage %+v, want in %d out %d", msg.Usage, want.input, want.output)
			}
		})
	}
}

// checkOpenAIError asserts that err is the upstream's error relayed in
// OpenAI's shape: a 4xx keeps its status and message; a key-level error
// (insufficient_quota) is a failure too, never a success.
func checkOpenAIError(t *testing.T, err error, status int, msg string) {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want an API error, got %v", err)
	}
	if status == http.StatusBadRequest && (ae.StatusCode != status || ae.Message != msg) {
		t.Fatalf("error %d %q, want %d %q", ae.StatusCode, ae.Message, status, msg)
	}
	if ae.StatusCode < 400 {
		t.Fatalf("error status %d", ae.StatusCode)
	}
}

// checkAnthropicError is checkOpenAIError for Anthropic's error shape.
func checkAnthropicError(t *testing.T, err error, status int, msg string) {
	t.Helper()
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want an API error, got %v", err)
	}
	if ae.StatusCode < 400 || status == http.StatusBadRequest && (ae.StatusCode != status || !strings.Contains(ae.RawJSON(), msg)) {
		t.Fatalf("error %d %s, want %d %q", ae.StatusCode, ae.RawJSON(), status, msg)
	}
	if gjson.Get(ae.RawJSON(), "type").String() != "error" {
		t.Fatalf("not Anthropic's error shape: %s", ae.RawJSON())
	}
}

// TestCountTokensOnResponsesKey: count_tokens routed to a pool of
// Responses keys is counted by the upstream's /responses/input_tokens (the
// request translated and reduced to what that endpoint accepts), not
// estimated; the recorded OpenAI answer reaches the client as Anthropic's
// {"input_tokens":N} (the recorded answer's shape is checked in
// translate's TestCountTokensAnswer).
func TestCountTokensOnResponsesKey(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool rs {\n\t\t\tmodels *\n\t\t\tkey rs-key "+base+" {\n\t\t\t\tid rs\n\t\t\t\tdialect responses\n\t\t\t}\n\t\t}\n\t}\n")
	ac := anthropic.NewClient(aopt.WithBaseURL(gw), aopt.WithAPIKey(gatewayKey), aopt.WithMaxRetries(0))
	p := anthropic.MessageCountTokensParams{Model: "gpt-5",
		System:   anthropic.MessageCountTokensParamsSystemUnion{OfString: anthropic.String("be brief")},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count these words please"))}}
	n, err := ac.Messages.CountTokens(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	st := m.Stats("rs-key")
	sent := gjson.ParseBytes(st.LastBody)
	if st.Endpoints["responses/input_tokens"] != 1 || sent.Get("instructions").Str != "be brief" || sent.Get("max_output_tokens").Exists() || sent.Get("store").Exists() {
		t.Fatalf("upstream asked %v with %s", st.Endpoints, st.LastBody)
	}
	// the mock counts the words of the instructions and the input: 2 + 4
	if n.RawJSON() != `{"input_tokens":6}` {
		t.Fatalf("count %s", n.RawJSON())
	}
	// a count the Responses dialect cannot express is estimated, never
	// refused, and asks nothing of the key
	resp, body := post(t, gw+"/v1/messages/count_tokens", []byte(`{"model":"gpt-5","messages":[{"role":"user","content":[{"type":"bogus_block","x":1}]}]}`))
	if resp.StatusCode != 200 || resp.Header.Get("X-Token-Count-Estimate") != "true" || !gjson.GetBytes(body, "estimated").Bool() {
		t.Fatalf("untranslatable count: %d %s", resp.StatusCode, body)
	}
	if m.Stats("rs-key").Endpoints["responses/input_tokens"] != 1 || keyStatus(t, "rs", "rs").State != "ready" {
		t.Fatalf("the key was asked or changed: %v %+v", m.Stats("rs-key").Endpoints, keyStatus(t, "rs", "rs"))
	}
}
