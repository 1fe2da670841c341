// Wire compatibility with the official OpenAI and Anthropic Go SDKs (test
// dependencies only; the package itself uses the standard library).
package mockupstream_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

func TestSDKOpenAI(t *testing.T) {
	ts := httptest.NewServer(mockupstream.New(mockupstream.Config{}))
	defer ts.Close()
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	ctx := context.Background()
	p := openai.ChatCompletionNewParams{Model: "gpt-x", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello sdk")}}
	r, err := c.Chat.Completions.New(ctx, p)
	if err != nil || r.Choices[0].Message.Content != mockupstream.Text("hello sdk") || r.Usage.CompletionTokens == 0 {
		t.Fatalf("%v %+v", err, r)
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := c.Chat.Completions.NewStreaming(ctx, p)
	acc := openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if st.Err() != nil || acc.Choices[0].Message.Content != mockupstream.Text("hello sdk") || acc.Usage.CompletionTokens != int64(len(mockupstream.Words(mockupstream.Text("hello sdk")))) {
		t.Fatalf("stream %v %+v", st.Err(), acc)
	}
	p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("use tool")}
	p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})}
	st = c.Chat.Completions.NewStreaming(ctx, p)
	acc = openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if st.Err() != nil || len(acc.Choices[0].Message.ToolCalls) != 1 || acc.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"city":"mock"}` || acc.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" || acc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("tool stream %v %+v", st.Err(), acc.Choices)
	}
	// errors surface as API errors with the status
	s := mockupstream.New(mockupstream.Config{Default: mockupstream.KeyBehavior{Status: 429}})
	ts2 := httptest.NewServer(s)
	defer ts2.Close()
	c2 := openai.NewClient(option.WithBaseURL(ts2.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	_, err = c2.Chat.Completions.New(ctx, p)
	var apiErr *openai.Error
	if err == nil || !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" {
		t.Fatalf("error %v", err)
	}
	ms, err := c.Models.List(ctx)
	if err != nil || len(ms.Data) == 0 || ms.Data[0].ID != "mock-gpt" {
		t.Fatalf("models %v %+v", err, ms)
	}
}

func TestSDKAnthropic(t *testing.T) {
	ts := httptest.NewServer(mockupstream.New(mockupstream.Config{}))
	defer ts.Close()
	c := anthropic.NewClient(aopt.WithBaseURL(ts.URL), aopt.WithAPIKey("k"), aopt.WithMaxRetries(0))
	ctx := context.Background()
	p := anthropic.MessageNewParams{Model: "claude-x", MaxTokens: 100, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello sdk"))}}
	m, err := c.Messages.New(ctx, p)
	if err != nil || m.Content[0].AsText().Text != mockupstream.Text("hello sdk") || m.StopReason != "end_turn" {
		t.Fatalf("%v %+v", err, m)
	}
	p.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
	st := c.Messages.NewStreaming(ctx, p)
	acc := anthropic.Message{}
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if st.Err() != nil || len(acc.Content) != 2 || acc.Content[0].AsThinking().Thinking != mockupstream.ReasoningText("hello sdk") || acc.Content[0].AsThinking().Signature == "" || acc.Content[1].AsText().Text != mockupstream.Text("hello sdk") {
		t.Fatalf("thinking stream %v %+v", st.Err(), acc)
	}
	p.Thinking = anthropic.ThinkingConfigParamUnion{}
	p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("use tool"))}
	p.Tools = []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}, "get_weather")}
	st = c.Messages.NewStreaming(ctx, p)
	acc = anthropic.Message{}
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if st.Err() != nil || acc.StopReason != "tool_use" || string(acc.Content[0].AsToolUse().Input) != `{"city":"mock"}` || acc.Usage.OutputTokens == 0 || acc.Usage.InputTokens == 0 {
		t.Fatalf("tool stream %v %+v", st.Err(), acc)
	}
	n, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "claude-x", Messages: p.Messages})
	if err != nil || n.InputTokens != 2 {
		t.Fatalf("count %v %+v", err, n)
	}
}
