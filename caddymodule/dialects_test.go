package caddymodule

import (
	"context"
	"io"
	"net/http"
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

// dialectGateway serves model "gpt-*" from an OpenAI-dialect mock key,
// "claude-*" from an Anthropic-dialect one and "rs-*" from an OpenAI
// Responses one, all on the same mock.
func dialectGateway(t *testing.T) (*mockupstream.Server, string) {
	t.Helper()
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool oa {\n\t\t\tmodels gpt-*\n\t\t\tkey oa-key "+base+" {\n\t\t\t\tid oa\n\t\t\t}\n\t\t}\n"+
		"\t\tpool an {\n\t\t\tmodels claude-*\n\t\t\tkey an-key "+root+" {\n\t\t\t\tid an\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n"+
		"\t\tpool rs {\n\t\t\tmodels rs-*\n\t\t\tkey rs-key "+base+" {\n\t\t\t\tid rs\n\t\t\t\tdialect responses\n\t\t\t}\n\t\t}\n\t}\n")
	return m, gw
}

// upstreams lists the three upstream dialects by the model that selects them.
var upstreams = []struct{ name, model, key string }{
	{"openai-upstream", "gpt-x", "oa-key"},
	{"anthropic-upstream", "claude-x", "an-key"},
	{"responses-upstream", "rs-x", "rs-key"},
}

func TestAnthropicSDKThroughGateway(t *testing.T) {
	m, gw := dialectGateway(t)
	c := anthropic.NewClient(aopt.WithBaseURL(gw), aopt.WithAPIKey(gatewayKey), aopt.WithMaxRetries(0))
	ctx := context.Background()
	weather := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}, "get_weather")
	for _, up := range upstreams {
		t.Run(up.name, func(t *testing.T) {
			msg := "hello from " + up.name
			p := anthropic.MessageNewParams{Model: anthropic.Model(up.model), MaxTokens: 200,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(msg))}}
			res, err := c.Messages.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].AsText().Text; got != mockupstream.Text(msg) || res.StopReason != "end_turn" || string(res.Model) != up.model {
				t.Fatalf("message: %q stop %q model %q", got, res.StopReason, res.Model)
			}
			if res.Usage.OutputTokens != int64(len(mockupstream.Words(mockupstream.Text(msg)))) || res.Usage.InputTokens == 0 {
				t.Fatalf("usage %+v", res.Usage)
			}
			if m.Stats(up.key).LastModel != up.model {
				t.Fatalf("went upstream with model %q", m.Stats(up.key).LastModel)
			}

			acc := streamAnthropic(t, c, p)
			if got := acc.Content[0].AsText().Text; got != mockupstream.Text(msg) || acc.StopReason != "end_turn" || acc.Usage.OutputTokens == 0 {
				t.Fatalf("stream: %q stop %q usage %+v", got, acc.StopReason, acc.Usage)
			}

			// tool round trip: call -> result -> final answer
			p.Tools = []anthropic.ToolUnionParam{weather}
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("please use the tool"))}
			acc = streamAnthropic(t, c, p)
			if acc.StopReason != "tool_use" || len(acc.Content) == 0 {
				t.Fatalf("tool call: stop %q content %+v", acc.StopReason, acc.Content)
			}
			tu := acc.Content[len(acc.Content)-1].AsToolUse()
			if tu.Name != "get_weather" || string(tu.Input) != `{"city":"mock"}` || tu.ID == "" {
				t.Fatalf("tool_use %+v", tu)
			}
			p.Messages = append(p.Messages, acc.ToParam(),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(tu.ID, "sunny", false)))
			final, err := c.Messages.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if got := final.Content[0].AsText().Text; got != mockupstream.ToolText("sunny") {
				t.Fatalf("final answer %q", got)
			}
			if up.key == "oa-key" {
				// the OpenAI upstream saw a proper tool message paired by id
				last := gjson.GetBytes(m.Stats(up.key).LastBody, "messages.@reverse.0")
				if last.Get("role").String() != "tool" || last.Get("tool_call_id").String() != tu.ID {
					t.Fatalf("upstream tool message %s", last.Raw)
				}
			}
		})
	}
	// count_tokens: native upstream answers; otherwise an estimate
	n, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "claude-x",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count me"))}})
	if err != nil || n.InputTokens != 2 {
		t.Fatalf("native count: %v %+v", err, n)
	}
	n, err = c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "gpt-x",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count me please, estimate"))}})
	if err != nil || n.InputTokens < 5 || !strings.Contains(n.RawJSON(), `"estimated":true`) {
		t.Fatalf("estimated count: %v %s", err, n.RawJSON())
	}
	// models in Anthropic's shape when anthropic-version is sent
	// (the pools here list no exact model names, only wildcards)
	ms, err := c.Models.List(ctx, anthropic.ModelListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms.Data) != 0 || ms.HasMore {
		t.Fatalf("models list %s", ms.RawJSON())
	}
}

func streamAnthropic(t *testing.T, c anthropic.Client, p anthropic.MessageNewParams) anthropic.Message {
	t.Helper()
	st := c.Messages.NewStreaming(context.Background(), p)
	acc := anthropic.Message{}
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return acc
}

// TestOpenAIChatSDKAgainstAnthropicUpstream: a Chat Completions client
// served by the translated upstreams (Anthropic Messages, OpenAI
// Responses), streamed and not, with a tool round trip.
func TestOpenAIChatSDKAgainstAnthropicUpstream(t *testing.T) {
	m, gw := dialectGateway(t)
	c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	ctx := context.Background()
	for _, up := range upstreams[1:] {
		t.Run(up.name, func(t *testing.T) {
			msg := "translate me"
			p := openai.ChatCompletionNewParams{Model: shared.ChatModel(up.model), Messages: []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage("be brief"), openai.UserMessage(msg)}}
			res, err := c.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if res.Choices[0].Message.Content != mockupstream.Text(msg) || res.Choices[0].FinishReason != "stop" || res.Model != up.model || res.Usage.CompletionTokens == 0 {
				t.Fatalf("completion %+v", res)
			}
			sent := m.Stats(up.key)
			if up.key == "an-key" && (gjson.GetBytes(sent.LastBody, "system.0.text").String() != "be brief" || sent.LastHeaders.Get("Anthropic-Version") != "2023-06-01" || sent.LastHeaders.Get("X-Api-Key") != "an-key" || sent.LastHeaders.Get("Authorization") != "") {
				t.Fatalf("upstream request: %s %v", sent.LastBody, sent.LastHeaders)
			}
			if up.key == "rs-key" && (gjson.GetBytes(sent.LastBody, "instructions").String() != "be brief" || sent.LastHeaders.Get("Authorization") != "Bearer rs-key" || sent.LastHeaders.Get("X-Api-Key") != "" || sent.Endpoints["responses"] == 0 || sent.Endpoints["chat/completions"] != 0) {
				t.Fatalf("upstream request: %v %s %v", sent.Endpoints, sent.LastBody, sent.LastHeaders)
			}
			// streamed without stream_options: no usage chunk, as from
			// OpenAI (MAPPING.md, "AM upstream -> CC client"); with
			// include_usage: exactly one, choices []
			for _, asked := range []bool{false, true} {
				ps := p
				if asked {
					ps.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				}
				st := c.Chat.Completions.NewStreaming(ctx, ps)
				acc := openai.ChatCompletionAccumulator{}
				usageChunks := 0
				for st.Next() {
					ch := st.Current()
					if len(ch.Choices) == 0 || ch.JSON.Usage.Valid() && ch.Usage.TotalTokens > 0 {
						usageChunks++
					}
					acc.AddChunk(ch)
				}
				if st.Err() != nil || acc.Choices[0].Message.Content != mockupstream.Text(msg) || (acc.Usage.CompletionTokens > 0) != asked {
					t.Fatalf("stream (include_usage %v) %v %+v", asked, st.Err(), acc.ChatCompletion)
				}
				if want := map[bool]int{false: 0, true: 1}[asked]; usageChunks != want {
					t.Fatalf("stream (include_usage %v): %d usage chunks, want %d", asked, usageChunks, want)
				}
			}
			// tool round trip
			p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather",
				Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})}
			p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("use the tool")}
			st := c.Chat.Completions.NewStreaming(ctx, p)
			acc := openai.ChatCompletionAccumulator{}
			for st.Next() {
				acc.AddChunk(st.Current())
			}
			if st.Err() != nil || len(acc.Choices[0].Message.ToolCalls) != 1 || acc.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("tool stream %v %+v", st.Err(), acc.Choices)
			}
			call := acc.Choices[0].Message.ToolCalls[0]
			if call.Function.Name != "get_weather" || call.Function.Arguments != `{"city":"mock"}` {
				t.Fatalf("tool call %+v", call)
			}
			p.Messages = append(p.Messages, acc.Choices[0].Message.ToParam(), openai.ToolMessage("sunny", call.ID))
			res, err = c.Chat.Completions.New(ctx, p)
			if err != nil || res.Choices[0].Message.Content != mockupstream.ToolText("sunny") {
				t.Fatalf("final %v %+v", err, res)
			}
		})
	}
}

func TestOpenAIResponsesSDK(t *testing.T) {
	m, gw := dialectGateway(t)
	c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	ctx := context.Background()
	for _, up := range upstreams {
		t.Run(up.name, func(t *testing.T) {
			msg := "responses via " + up.name
			p := responses.ResponseNewParams{Model: shared.ResponsesModel(up.model), Store: openai.Bool(false),
				Instructions: openai.String("be brief"),
				Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String(msg)}}
			res, err := c.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if res.OutputText() != mockupstream.Text(msg) || res.Status != "completed" || string(res.Model) != up.model || res.Usage.OutputTokens == 0 {
				t.Fatalf("response %q %q %q %+v", res.OutputText(), res.Status, res.Model, res.Usage)
			}
			st := c.Responses.NewStreaming(ctx, p)
			var text strings.Builder
			var completed responses.Response
			for st.Next() {
				ev := st.Current()
				switch ev.Type {
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case "response.completed":
					completed = ev.Response
				}
			}
			if st.Err() != nil || text.String() != mockupstream.Text(msg) || completed.OutputText() != text.String() || completed.Usage.OutputTokens == 0 {
				t.Fatalf("stream %v %q %+v", st.Err(), text.String(), completed.Usage)
			}
			// tool round trip, linked by call_id
			p.Tools = []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather",
				map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}, false)}
			p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage("use the tool", responses.EasyInputMessageRoleUser)}}
			res, err = c.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			var fc responses.ResponseFunctionToolCall
			for _, item := range res.Output {
				if item.Type == "function_call" {
					fc = item.AsFunctionCall()
				}
			}
			if fc.Name != "get_weather" || fc.Arguments != `{"city":"mock"}` || fc.CallID == "" {
				t.Fatalf("function_call %+v", res.Output)
			}
			out := responses.ResponseInputItemParamOfFunctionCallOutput("sunny")
			out.OfFunctionCallOutput.CallID = openai.String(fc.CallID)
			p.Input.OfInputItemList = append(p.Input.OfInputItemList,
				responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name), out)
			res, err = c.Responses.New(ctx, p)
			if err != nil || res.OutputText() != mockupstream.ToolText("sunny") {
				t.Fatalf("final %v %q", err, res.OutputText())
			}
			// instructions reached the upstream as its system prompt
			if !strings.Contains(string(m.Stats(up.key).LastBody), `"be brief"`) {
				t.Fatalf("instructions lost: %s", m.Stats(up.key).LastBody)
			}
		})
	}
	// stateful requests are refused clearly, in OpenAI's error shape
	for _, body := range []string{
		`{"model":"gpt-x","input":"hi","store":true}`,
		`{"model":"gpt-x","input":"hi","previous_response_id":"resp_1"}`,
	} {
		resp, b := post(t, gw+"/v1/responses", []byte(body))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(gjson.GetBytes(b, "error.message").String(), "keeps no") {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
	if n := m.Stats("oa-key").Requests + m.Stats("an-key").Requests; n != 8 {
		t.Fatalf("upstream requests %d, want 8 (the refused ones must not go upstream)", n)
	}
}

// TestAnthropicClientErrorsInItsDialect: gateway errors reach an Anthropic
// client as Anthropic error objects.
func TestAnthropicClientErrorsInItsDialect(t *testing.T) {
	_, gw := dialectGateway(t)
	cases := []struct {
		body, key string
		status    int
		typ       string
	}{
		{`{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "sk-wrong", 401, "authentication_error"},
		{`{"model":"claude-x","max_tokens":5,"messages":"nope"}`, gatewayKey, 400, "invalid_request_error"},
		{`{"model":"unknown-model","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, gatewayKey, 404, "not_found_error"},
		{`{"model":"claude-x",`, gatewayKey, 400, "invalid_request_error"},
	}
	for i, c := range cases {
		resp, b := post(t, gw+"/v1/messages", []byte(c.body), "Authorization", "", "X-Api-Key", c.key, "Anthropic-Version", "2023-06-01")
		if resp.StatusCode != c.status || gjson.GetBytes(b, "type").String() != "error" || gjson.GetBytes(b, "error.type").String() != c.typ {
			t.Errorf("case %d: %d %s, want %d %s", i, resp.StatusCode, b, c.status, c.typ)
		}
	}
	// models list in Anthropic's shape
	req, _ := http.NewRequest(http.MethodGet, gw+"/v1/models", nil)
	req.Header.Set("X-Api-Key", gatewayKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	j := string(b)
	if !gjson.Get(j, "data").IsArray() || gjson.Get(j, "has_more").Type != gjson.False || gjson.Get(j, "object").Exists() {
		t.Fatalf("anthropic models list %s", j)
	}
}
