package caddymodule

import (
	"bytes"
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestStreamAnsweredWhole: a client asks for a stream and the upstream
// answers with one whole JSON answer instead (a server that ignores
// "stream"). The client gets that answer as a stream in its own dialect,
// which its SDK reads (text, stop reason, usage), passthrough and
// translated; the request is a complete stream and the key's success.
func TestStreamAnsweredWhole(t *testing.T) {
	m, gw := streamPair(t)
	whole := func(body string) mockupstream.KeyBehavior {
		return mockupstream.KeyBehavior{ReplayBody: []byte(body), ReplayContentType: "application/json"}
	}
	m.SetKey("an-1", whole(`{"id":"msg_w","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Whole answer"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":2}}`))
	m.SetKey("oa-1", whole(`{"id":"chatcmpl-w","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Whole answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`))
	ac := anthropic.NewClient(aopt.WithBaseURL(gw), aopt.WithAPIKey(gatewayKey), aopt.WithMaxRetries(0))
	oc := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	for _, up := range []struct{ pool, model, key string }{{"an", "claude-x", "a1"}, {"oa", "gpt-x", "o1"}} {
		seq := recentSeq()
		acc := streamAnthropic(t, ac, anthropic.MessageNewParams{Model: anthropic.Model(up.model), MaxTokens: 100,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		if len(acc.Content) != 1 || acc.Content[0].Text != "Whole answer" || acc.StopReason != "end_turn" || acc.Usage.OutputTokens != 2 {
			t.Errorf("%s -> anthropic client: %+v", up.pool, acc)
		}
		if rr := recentAfter(t, seq); rr.StreamOutcome != streamComplete || attemptOutcomes(rr) != up.key+":success" {
			t.Errorf("%s -> anthropic client: request log %q %q", up.pool, rr.StreamOutcome, attemptOutcomes(rr))
		}
		st := oc.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: up.model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		cacc := openai.ChatCompletionAccumulator{}
		n := 0
		for st.Next() {
			cacc.AddChunk(st.Current())
			n++
		}
		if st.Err() != nil || n < 2 || len(cacc.Choices) != 1 || cacc.Choices[0].Message.Content != "Whole answer" || cacc.Choices[0].FinishReason != "stop" {
			t.Errorf("%s -> chat client: %v, %d chunks, %+v", up.pool, st.Err(), n, cacc.Choices)
		}
		if s := keyStatus(t, up.pool, up.key); s.State != keypool.StateReady {
			t.Errorf("%s: key %s %s", up.pool, s.State, s.Reason)
		}
	}
}

// TestEmptyChoicesIsAnAnswer: Gemini's OpenAI-compatible endpoint answers
// a prompt its safety filter blocks with status 200 and "choices": []. That
// is the prompt's doing: the Chat client gets the answer as sent, an
// Anthropic client an empty message that stopped for a refusal (as the
// streamed case ends), and no key is cooled (it used to cool
// every key of the pool in turn and end in a 502).
func TestEmptyChoicesIsAnAnswer(t *testing.T) {
	m, gw := streamPair(t)
	const blocked = `{"id":"x","object":"chat.completion","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}}`
	m.SetKey("oa-1", mockupstream.KeyBehavior{ReplayBody: []byte(blocked), ReplayContentType: "application/json"})
	resp, b := post(t, gw+"/v1/chat/completions", []byte(`{"model":"gpt-x","messages":[{"role":"user","content":"blocked"}]}`))
	if resp.StatusCode != 200 || string(b) != blocked || resp.Header.Get("X-Routed-Via") != "oa/o1" {
		t.Errorf("chat client: %d via %q: %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
	}
	resp, b = post(t, gw+"/v1/messages", []byte(`{"model":"gpt-x","max_tokens":50,"messages":[{"role":"user","content":"blocked"}]}`), "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"content":[]`)) || !bytes.Contains(b, []byte(`"stop_reason":"refusal"`)) {
		t.Errorf("anthropic client: %d: %s", resp.StatusCode, b)
	}
	for _, k := range []string{"o1", "o2"} {
		if s := keyStatus(t, "oa", k); s.State != keypool.StateReady {
			t.Errorf("key %s %s %s", k, s.State, s.Reason)
		}
	}
}
