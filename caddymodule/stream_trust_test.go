package caddymodule

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// Anthropic and Chat streams the upstream may send, per the vendors'
// streaming docs, cut at the interesting points.
const (
	anthropicStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
		"event: ping\ndata: {\"type\":\"ping\"}\n\n"
	anthropicOverloaded = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	anthropicText       = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Partial\"}}\n\n"
	chatRole      = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
	chatText      = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Partial\"},\"finish_reason\":null}]}\n\n"
	chatErrorJSON = "data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"code\":null}}\n\n"
)

// streamPair serves model claude-* from two Anthropic-dialect keys and
// gpt-* from two OpenAI-dialect keys of one mock, priority order (k1
// first).
func streamPair(t *testing.T) (*mockupstream.Server, string) {
	t.Helper()
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool an {\n\t\t\tmodels claude-*\n\t\t\tstrategy priority\n\t\t\taffinity off\n"+
		"\t\t\tkey an-1 "+root+" {\n\t\t\t\tid a1\n\t\t\t\tdialect anthropic\n\t\t\t\tpriority 1\n\t\t\t}\n"+
		"\t\t\tkey an-2 "+root+" {\n\t\t\t\tid a2\n\t\t\t\tdialect anthropic\n\t\t\t\tpriority 2\n\t\t\t}\n\t\t}\n"+
		"\t\tpool oa {\n\t\t\tmodels gpt-*\n\t\t\tstrategy priority\n\t\t\taffinity off\n"+
		"\t\t\tkey oa-1 "+base+" {\n\t\t\t\tid o1\n\t\t\t\tpriority 1\n\t\t\t}\n"+
		"\t\t\tkey oa-2 "+base+" {\n\t\t\t\tid o2\n\t\t\t\tpriority 2\n\t\t\t}\n\t\t}\n\t}\n")
	return m, gw
}

func replay(sse string) mockupstream.KeyBehavior {
	return mockupstream.KeyBehavior{ReplayBody: []byte(sse), ReplayContentType: "text/event-stream"}
}

// TestErrorBeforeContentMovesToAnotherKey: message_start and ping, then
// an overloaded_error before any content, on key A; the client gets key
// B's whole answer, no error, and A cools as for a 529.
func TestErrorBeforeContentMovesToAnotherKey(t *testing.T) {
	m, gw := streamPair(t)
	m.SetKey("an-1", replay(anthropicStart+anthropicOverloaded))
	m.SetKey("oa-1", replay(chatRole+chatErrorJSON))
	ac := anthropic.NewClient(aopt.WithBaseURL(gw), aopt.WithAPIKey(gatewayKey), aopt.WithMaxRetries(0))
	msg := "before content"
	acc := streamAnthropic(t, ac, anthropic.MessageNewParams{Model: "claude-x", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(msg))}})
	if len(acc.Content) != 1 || acc.Content[0].Text != mockupstream.Text(msg) || acc.StopReason != "end_turn" {
		t.Fatalf("anthropic client: %+v", acc)
	}
	if s := keyStatus(t, "an", "a1"); s.State != "cooling" || s.Reason != "server_error" {
		t.Fatalf("a1 after an overloaded_error event: %+v", s)
	}
	// the same for a Chat client whose upstream sends a role chunk, then
	// an error chunk
	oc := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	st := oc.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-x",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(msg)}})
	cacc := openai.ChatCompletionAccumulator{}
	for st.Next() {
		cacc.AddChunk(st.Current())
	}
	if st.Err() != nil || cacc.Choices[0].Message.Content != mockupstream.Text(msg) || cacc.Choices[0].FinishReason != "stop" {
		t.Fatalf("chat client: %v %+v", st.Err(), cacc.Choices)
	}
	if s := keyStatus(t, "oa", "o1"); s.State != "cooling" || s.Reason != "server_error" {
		t.Fatalf("o1 after an error chunk: %+v", s)
	}
}

// TestMidStreamErrorIsTheOutcome: an in-band error after content went
// out reaches the client as an error (the SDK reports it), and the
// attempt counts as the failure it is: the key cools, the request log and
// the requests_total metric say how the stream ended.
func TestMidStreamErrorIsTheOutcome(t *testing.T) {
	m, gw := streamPair(t)
	m.SetKey("an-1", replay(anthropicStart+anthropicText+anthropicOverloaded+"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	before := testutil.ToFloat64(gatewayMetrics.requests.WithLabelValues("an", "anthropic_messages", "anthropic_messages", "200", streamErrorEvent))
	ac := anthropic.NewClient(aopt.WithBaseURL(gw), aopt.WithAPIKey(gatewayKey), aopt.WithMaxRetries(0))
	st := ac.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-x", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("mid"))}})
	var text strings.Builder
	sawStop := false
	for st.Next() {
		ev := st.Current()
		if ev.Type == "content_block_delta" {
			text.WriteString(ev.Delta.Text)
		}
		if ev.Type == "message_stop" {
			sawStop = true
		}
	}
	if st.Err() == nil || !strings.Contains(st.Err().Error(), "overloaded") || text.String() != "Partial" || sawStop {
		t.Fatalf("client: err %v, text %q, message_stop %v", st.Err(), text.String(), sawStop)
	}
	// the client has its error before the attempt ends (the gateway reads
	// the upstream to its end): the verdict follows shortly
	eventually(t, 2*time.Second, "a1 cooling after a mid-stream overloaded_error", func() bool {
		s := keyStatus(t, "an", "a1")
		return s.State == "cooling" && s.Reason == "server_error"
	})
	eventually(t, 2*time.Second, "requests_total{stream_outcome=error}", func() bool {
		return testutil.ToFloat64(gatewayMetrics.requests.WithLabelValues("an", "anthropic_messages", "anthropic_messages", "200", streamErrorEvent)) == before+1
	})
}

// TestTruncatedStreamIsAnError: an upstream stream that ends cleanly but
// without a finish reason reaches each client dialect as its dialect's
// error, never as a normal finish; the official SDKs report an error.
func TestTruncatedStreamIsAnError(t *testing.T) {
	m, gw := streamPair(t)
	m.SetKey("an-1", replay(anthropicStart+anthropicText))
	m.SetKey("an-2", replay(anthropicStart+anthropicText))
	m.SetKey("oa-1", replay(chatRole+chatText))
	m.SetKey("oa-2", replay(chatRole+chatText))
	ctx := context.Background()
	ac := anthropic.NewClient(aopt.WithBaseURL(gw), aopt.WithAPIKey(gatewayKey), aopt.WithMaxRetries(0))
	oc := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	for _, model := range []string{"claude-x", "gpt-x"} {
		t.Run(model, func(t *testing.T) {
			// Anthropic Messages client
			pool := map[string]string{"claude-x": "an", "gpt-x": "oa"}[model]
			up := map[string]string{"claude-x": "anthropic_messages", "gpt-x": "openai_chat"}[model]
			truncated := gatewayMetrics.requests.WithLabelValues(pool, "anthropic_messages", up, "200", streamTruncated)
			before := testutil.ToFloat64(truncated)
			ast := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 100,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("cut"))}})
			stopped := false
			for ast.Next() {
				if ev := ast.Current(); ev.Type == "message_stop" || ev.Type == "message_delta" && ev.Delta.StopReason != "" {
					stopped = true
				}
			}
			if ast.Err() == nil || stopped {
				t.Fatalf("anthropic client: err %v, finished %v", ast.Err(), stopped)
			}
			// the log and the metric say so, never "complete"
			eventually(t, 2*time.Second, "requests_total{stream_outcome=truncated}", func() bool {
				return testutil.ToFloat64(truncated) == before+1
			})
			// Chat client
			cst := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: shared.ChatModel(model),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("cut")}})
			finish := ""
			for cst.Next() {
				if c := cst.Current(); len(c.Choices) > 0 && c.Choices[0].FinishReason != "" {
					finish = c.Choices[0].FinishReason
				}
			}
			if cst.Err() == nil || finish != "" {
				t.Fatalf("chat client: err %v, finish_reason %q", cst.Err(), finish)
			}
			// Responses client
			rst := oc.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: shared.ResponsesModel(model), Store: openai.Bool(false),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("cut")}})
			completed, failed := false, false
			for rst.Next() {
				switch rst.Current().Type {
				case "response.completed":
					completed = true
				case "response.failed", "error":
					failed = true
				}
			}
			if completed || !failed && rst.Err() == nil {
				t.Fatalf("responses client: completed %v, failed %v, err %v", completed, failed, rst.Err())
			}
		})
	}
}
