package caddymodule

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aopt "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestAnthropicStreamUsageFromTranslatedUpstream: Claude Code reads an
// answer's usage for its context size. Through a real Caddy, an
// Anthropic client (anthropic-sdk-go, Message.Accumulate) of a Chat or
// Responses upstream, which reports usage only at its end, gets the
// request's estimate in message_start (not 0: router-for-me/CLIProxyAPI#1700,
// BerriAI/litellm#41406) and ends with the upstream's usage in
// Anthropic's terms: 1200 prompt tokens of which 1000 cache reads (and,
// from Chat, 50 cache writes) are input_tokens 150 (200), cache_read 1000,
// cache_creation 50 (0), output 7.
func TestAnthropicStreamUsageFromTranslatedUpstream(t *testing.T) {
	chat := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":7,"total_tokens":1207,"prompt_tokens_details":{"cached_tokens":1000,"cache_write_tokens":50}}}` + "\n\n" +
		"data: [DONE]\n\n"
	rsResp := func(status, rest string) string {
		return `"response":{"id":"resp_1","object":"response","created_at":1,"status":"` + status + `","model":"up","output":[` + rest
	}
	rs := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0," + rsResp("in_progress", `],"usage":null}}`) + "\n\n" +
		"event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"hi\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":3," + rsResp("completed", `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}],"usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1000},"output_tokens":7,"total_tokens":1207}}}`) + "\n\n"
	m, gw := dialectGateway(t)
	m.SetKey("oa-key", mockupstream.KeyBehavior{ReplayBody: []byte(chat), ReplayContentType: "text/event-stream"})
	m.SetKey("rs-key", mockupstream.KeyBehavior{ReplayBody: []byte(rs), ReplayContentType: "text/event-stream"})
	c := anthropic.NewClient(aopt.WithBaseURL(gw), aopt.WithAPIKey(gatewayKey), aopt.WithMaxRetries(0))
	for _, up := range []struct {
		model            string
		in, read, create int64
	}{{"gpt-x", 150, 1000, 50}, {"rs-x", 200, 1000, 0}} {
		st := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: anthropic.Model(up.model), MaxTokens: 100,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("how large is my context?"))}})
		var acc anthropic.Message
		var start int64 = -1
		for st.Next() {
			ev := st.Current()
			if ev.Type == "message_start" {
				start = ev.Message.Usage.InputTokens
			}
			if err := acc.Accumulate(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(up.model, err)
		}
		if start <= 0 {
			t.Errorf("%s: message_start input_tokens %d, want the request's estimate", up.model, start)
		}
		u := acc.Usage
		if acc.Content[0].AsText().Text != "hi" || u.InputTokens != up.in || u.CacheReadInputTokens != up.read || u.CacheCreationInputTokens != up.create || u.OutputTokens != 7 {
			t.Errorf("%s: accumulated %q usage in %d read %d create %d out %d, want %d %d %d 7", up.model, acc.Content[0].AsText().Text,
				u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens, up.in, up.read, up.create)
		}
	}
}
