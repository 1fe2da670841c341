package caddymodule

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/llmgateway/llm_gateway/translate"
)

// TestChatCustomToolThroughTranslation: a Chat Completions client's
// custom (freeform) tool, per the Chat Completions API reference,
// answered by an Anthropic Messages or Responses key: the upstream is
// offered a function tool with one string parameter "input" (the grammar
// in its description) and the tool_choice naming it; the call comes back
// to the openai-go client as a tool_calls entry of "type":"custom" whose
// custom.input is the patch text, whole and streamed ({"custom":{"input"}}
// deltas); the custom tool call and its tool result of the next turn
// reach the upstream as the call and its result.
func TestChatCustomToolThroughTranslation(t *testing.T) {
	m, gw := dialectGateway(t)
	c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	ctx := context.Background()
	const patch = "*** Begin Patch\n*** Update File: a.go\n@@\n-\tx := \"old\"\n+\tx := \"new é 😀\"\n*** End Patch\n"
	args := string(translate.AppendJSONString([]byte(`{"input":`), patch)) + "}"
	for _, up := range upstreams[1:] {
		t.Run(up.name, func(t *testing.T) {
			m.SetKey(up.key, mockupstream.KeyBehavior{ToolTrigger: "patch", ToolName: "apply_patch", ToolArguments: args})
			defer m.SetKey(up.key, mockupstream.KeyBehavior{})
			p := openai.ChatCompletionNewParams{Model: shared.ChatModel(up.model),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("please patch a.go")},
				Tools: []openai.ChatCompletionToolUnionParam{
					openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "shell", Parameters: shared.FunctionParameters{"type": "object"}}),
					{OfCustom: &openai.ChatCompletionCustomToolParam{Custom: openai.ChatCompletionCustomToolCustomParam{
						Name: "apply_patch", Description: openai.String("Edit files."),
						Format: openai.ChatCompletionCustomToolCustomFormatUnionParam{OfGrammar: &openai.ChatCompletionCustomToolCustomFormatGrammarParam{
							Grammar: openai.ChatCompletionCustomToolCustomFormatGrammarGrammarParam{Definition: "start: /.+/s", Syntax: "lark"}}}}}},
				},
				ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfCustomToolChoice: &openai.ChatCompletionNamedToolChoiceCustomParam{
					Custom: openai.ChatCompletionNamedToolChoiceCustomCustomParam{Name: "apply_patch"}}},
			}
			res, err := c.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Choices) != 1 || len(res.Choices[0].Message.ToolCalls) != 1 {
				t.Fatalf("answer %s", res.RawJSON())
			}
			call := res.Choices[0].Message.ToolCalls[0]
			if call.Type != "custom" || call.Custom.Name != "apply_patch" || call.Custom.Input != patch || call.ID == "" || res.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("tool call %s", gjson.Get(res.RawJSON(), "choices.0.message").Raw)
			}
			body := m.Stats(up.key).LastBody
			tool := gjson.GetBytes(body, `tools.#(name=="apply_patch")`)
			schema := tool.Get("parameters")
			choice := gjson.GetBytes(body, "tool_choice")
			if up.key == "an-key" {
				schema = tool.Get("input_schema")
				if choice.Raw != `{"type":"tool","name":"apply_patch"}` {
					t.Errorf("upstream tool_choice %s", choice.Raw)
				}
			} else if choice.Get("name").Str != "apply_patch" {
				t.Errorf("upstream tool_choice %s", choice.Raw)
			}
			if len(gjson.GetBytes(body, "tools").Array()) != 2 || schema.Get("properties.input.type").Str != "string" || !strings.Contains(tool.Get("description").Str, "start: /.+/s") {
				t.Fatalf("upstream tools %s", gjson.GetBytes(body, "tools").Raw)
			}

			st := c.Chat.Completions.NewStreaming(ctx, p)
			var input strings.Builder
			typ, name, finish := "", "", ""
			for st.Next() {
				ch := st.Current()
				if len(ch.Choices) == 0 {
					continue
				}
				if ch.Choices[0].FinishReason != "" {
					finish = ch.Choices[0].FinishReason
				}
				for _, tc := range ch.Choices[0].Delta.ToolCalls {
					if tc.Type != "" {
						typ = tc.Type
					}
					if tc.Function.Arguments != "" || tc.Function.Name != "" {
						t.Errorf("function delta for a custom tool: %s", tc.RawJSON())
					}
					cu := gjson.Parse(tc.RawJSON()).Get("custom")
					if n := cu.Get("name").Str; n != "" {
						name = n
					}
					input.WriteString(cu.Get("input").Str)
				}
			}
			if st.Err() != nil || typ != "custom" || name != "apply_patch" || input.String() != patch || finish != "tool_calls" {
				t.Fatalf("stream %v: type %q name %q finish %q input %q", st.Err(), typ, name, finish, input.String())
			}

			// the next turn: the custom call and its result
			p.Messages = append(p.Messages,
				openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
					ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfCustom: &openai.ChatCompletionMessageCustomToolCallParam{
						ID: call.ID, Custom: openai.ChatCompletionMessageCustomToolCallCustomParam{Name: "apply_patch", Input: call.Custom.Input}}}}}},
				openai.ToolMessage("Done!", call.ID))
			p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{}
			res, err = c.Chat.Completions.New(ctx, p)
			if err != nil || len(res.Choices) == 0 || res.Choices[0].Message.Content != mockupstream.ToolText("Done!") {
				t.Fatalf("final %v %s", err, res.RawJSON())
			}
			body = m.Stats(up.key).LastBody
			var upArgs string
			if up.key == "an-key" {
				upArgs = gjson.GetBytes(body, `messages.1.content.#(type=="tool_use").input`).Raw
			} else {
				upArgs = gjson.GetBytes(body, `input.#(type=="function_call").arguments`).Str
			}
			if gjson.Get(upArgs, "input").Str != patch {
				t.Errorf("upstream history call %s", upArgs)
			}
		})
	}
}

// TestToolNameClashRefused: a custom tool and a function tool of one
// name, which no translation can carry, are refused with a 400
// invalid_request_error naming the tool, in the client's dialect (Chat
// and Responses clients), before any key is used.
func TestToolNameClashRefused(t *testing.T) {
	m, gw := dialectGateway(t)
	c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	ctx := context.Background()
	before := m.Stats("an-key").Requests
	_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-x",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "apply_patch"}),
			{OfCustom: &openai.ChatCompletionCustomToolParam{Custom: openai.ChatCompletionCustomToolCustomParam{Name: "apply_patch"}}},
		}})
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || ae.Type != "invalid_request_error" || !strings.Contains(ae.Message, `"apply_patch"`) {
		t.Fatalf("chat: %v", err)
	}
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-x",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		Tools: []responses.ToolUnionParam{
			{OfCustom: &responses.CustomToolParam{Name: "apply_patch"}},
			responses.ToolParamOfFunction("apply_patch", map[string]any{"type": "object"}, false),
		}})
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || ae.Type != "invalid_request_error" || !strings.Contains(ae.Message, `"apply_patch"`) {
		t.Fatalf("responses: %v", err)
	}
	if n := m.Stats("an-key").Requests; n != before {
		t.Fatalf("the upstream got %d requests", n-before)
	}
}

// TestResponsesEchoSettingsThroughTranslation: a Responses client
// answered by an Anthropic or Chat key gets a response object that
// restates its request's settings (temperature, top_p, instructions,
// parallel_tool_calls, max_output_tokens, metadata, reasoning, store,
// truncation, safety_identifier, service_tier), whole and in
// response.created and response.completed, and the API's defaults for
// what it left out.
func TestResponsesEchoSettingsThroughTranslation(t *testing.T) {
	_, gw := dialectGateway(t)
	c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	ctx := context.Background()
	for _, up := range upstreams[:2] {
		t.Run(up.name, func(t *testing.T) {
			p := responses.ResponseNewParams{Model: shared.ResponsesModel(up.model),
				Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")},
				Instructions: openai.String("be brief"), Temperature: openai.Float(0.25), TopP: openai.Float(0.5),
				ParallelToolCalls: openai.Bool(false), MaxOutputTokens: openai.Int(321), Store: openai.Bool(false),
				Metadata:   shared.Metadata{"team": "a"},
				Reasoning:  shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
				Truncation: responses.ResponseNewParamsTruncationAuto, SafetyIdentifier: openai.String("s1"),
				ServiceTier: responses.ResponseNewParamsServiceTierFlex,
			}
			check := func(label string, r responses.Response) {
				t.Helper()
				if r.Temperature != 0.25 || r.TopP != 0.5 || r.Instructions.OfString != "be brief" || r.ParallelToolCalls || r.MaxOutputTokens != 321 ||
					r.Metadata["team"] != "a" || r.Reasoning.Effort != "low" || r.Truncation != "auto" || r.SafetyIdentifier != "s1" || r.ServiceTier != "flex" ||
					gjson.Get(r.RawJSON(), "store").Raw != "false" || gjson.Get(r.RawJSON(), "text.format.type").Str != "text" || gjson.Get(r.RawJSON(), "user").Raw != "null" {
					t.Errorf("%s: %s", label, r.RawJSON())
				}
			}
			res, err := c.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			check("whole", *res)
			st := c.Responses.NewStreaming(ctx, p)
			n := 0
			for st.Next() {
				if ev := st.Current(); ev.Type == "response.created" || ev.Type == "response.completed" {
					n++
					check(ev.Type, ev.Response)
				}
			}
			if st.Err() != nil || n != 2 {
				t.Fatalf("stream %v, %d events", st.Err(), n)
			}
			// a request that sets none of them: the defaults (store false: the gateway keeps nothing)
			res, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: shared.ResponsesModel(up.model),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
			if err != nil || res.Temperature != 1 || res.TopP != 1 || !res.ParallelToolCalls || res.Truncation != "disabled" ||
				gjson.Get(res.RawJSON(), "store").Raw != "false" || gjson.Get(res.RawJSON(), "instructions").Raw != "null" {
				t.Fatalf("defaults %v %s", err, res.RawJSON())
			}
		})
	}
}
