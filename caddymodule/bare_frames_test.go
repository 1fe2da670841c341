package caddymodule

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aopt "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/llmgateway/llm_gateway/keypool"
)

// TestBareFramesThroughGateway: a Chat upstream behind a relay that
// writes its stream chunks as bare JSON lines, without "data:"
// (new-api#6797, new-api#6798), reaches an anthropic-sdk-go client
// through the gateway as the whole answer with its stop_reason and
// usage, not as a truncation error, and the key counts no failure.
func TestBareFramesThroughGateway(t *testing.T) {
	m, gw := streamPair(t)
	chunk := func(delta, finish string) string {
		return `{"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	m.SetKey("oa-1", replay(chunk(`{"role":"assistant","content":""}`, "null")+
		chunk(`{"content":"Hello"}`, "null")+chunk(`{"content":" there"}`, "null")+chunk(`{}`, `"stop"`)+
		`{"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`+"\n\n"))
	ac := anthropic.NewClient(aopt.WithBaseURL(gw), aopt.WithAPIKey(gatewayKey), aopt.WithMaxRetries(0))
	acc := streamAnthropic(t, ac, anthropic.MessageNewParams{Model: "gpt-x", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if len(acc.Content) != 1 || acc.Content[0].Text != "Hello there" || acc.StopReason != "end_turn" || acc.Usage.OutputTokens != 2 {
		t.Fatalf("anthropic client: %+v", acc)
	}
	if s := keyStatus(t, "oa", "o1"); s.State != keypool.StateReady || s.ConsecutiveFailures != 0 {
		t.Errorf("o1 after a whole answer in bare frames: %+v", s)
	}
}
