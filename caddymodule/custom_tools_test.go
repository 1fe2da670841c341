package caddymodule

import (
	"context"
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

// TestCodexCustomToolThroughTranslation: Codex's apply_patch, a custom
// (freeform) tool of a Responses request, answered by a Chat Completions
// or Anthropic Messages key: the upstream is offered a function tool
// with one string parameter "input", and its call comes back to the
// openai-go client as a custom_tool_call whose input is the patch text,
// whole and streamed (response.custom_tool_call_input.delta / .done); the
// custom_tool_call_output of the next turn reaches the upstream as the
// call's tool result.
func TestCodexCustomToolThroughTranslation(t *testing.T) {
	m, gw := dialectGateway(t)
	c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	ctx := context.Background()
	const patch = "*** Begin Patch\n*** Update File: a.go\n@@\n-\tx := \"old\"\n+\tx := \"new é\"\n*** End Patch\n"
	args := string(translate.AppendJSONString([]byte(`{"input":`), patch)) + "}"
	for _, up := range upstreams[:2] {
		t.Run(up.name, func(t *testing.T) {
			m.SetKey(up.key, mockupstream.KeyBehavior{ToolTrigger: "patch", ToolName: "apply_patch", ToolArguments: args})
			defer m.SetKey(up.key, mockupstream.KeyBehavior{})
			p := responses.ResponseNewParams{Model: shared.ResponsesModel(up.model), Store: openai.Bool(false),
				Instructions: openai.String("You are a coding agent."),
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					responses.ResponseInputItemParamOfMessage("please patch a.go", responses.EasyInputMessageRoleUser)}},
				Tools: []responses.ToolUnionParam{
					responses.ToolParamOfFunction("shell", map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}, false),
					{OfCustom: &responses.CustomToolParam{Name: "apply_patch", Description: openai.String("Edit files."),
						Format: shared.CustomToolInputFormatUnionParam{OfGrammar: &shared.CustomToolInputFormatGrammarParam{Syntax: "lark", Definition: "start: /.+/s"}}}},
				}}
			res, err := c.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			var call responses.ResponseCustomToolCall
			for _, it := range res.Output {
				if it.Type == "custom_tool_call" {
					call = it.AsCustomToolCall()
				}
			}
			if call.Name != "apply_patch" || call.Input != patch || call.CallID == "" {
				t.Fatalf("custom_tool_call %+v in %s", call, res.RawJSON())
			}
			// the response object echoes the request's tools, as the
			// Responses API does (it said "tools":[] before)
			if len(res.Tools) != 2 || res.Tools[0].Name != "shell" || res.Tools[1].Type != "custom" || res.Tools[1].Name != "apply_patch" ||
				res.ToolChoice.OfToolChoiceMode != "" && res.ToolChoice.OfToolChoiceMode != "auto" {
				t.Fatalf("tools %s tool_choice %s", gjson.Get(res.RawJSON(), "tools").Raw, gjson.Get(res.RawJSON(), "tool_choice").Raw)
			}
			tool := gjson.GetBytes(m.Stats(up.key).LastBody, `tools.#(name=="apply_patch")`)
			if up.key == "oa-key" {
				tool = gjson.GetBytes(m.Stats(up.key).LastBody, `tools.#(function.name=="apply_patch").function`)
			}
			schema := tool.Get("parameters")
			if up.key == "an-key" {
				schema = tool.Get("input_schema")
			}
			if schema.Get("properties.input.type").Str != "string" || !strings.Contains(tool.Get("description").Str, "start: /.+/s") {
				t.Fatalf("upstream tool %s", tool.Raw)
			}

			st := c.Responses.NewStreaming(ctx, p)
			var deltas strings.Builder
			var done string
			var completed responses.Response
			for st.Next() {
				ev := st.Current()
				switch ev.Type {
				case "response.custom_tool_call_input.delta":
					deltas.WriteString(ev.Delta)
				case "response.custom_tool_call_input.done":
					done = ev.Input
				case "response.function_call_arguments.delta":
					t.Errorf("function call event: %s", ev.RawJSON())
				case "response.completed":
					completed = ev.Response
				}
			}
			if st.Err() != nil || deltas.String() != patch || done != patch || len(completed.Output) == 0 ||
				completed.Output[len(completed.Output)-1].AsCustomToolCall().Input != patch || len(completed.Tools) != 2 {
				t.Fatalf("stream %v deltas %q done %q %s", st.Err(), deltas.String(), done, completed.RawJSON())
			}

			// the next turn: the call and its output
			p.Input.OfInputItemList = append(p.Input.OfInputItemList,
				responses.ResponseInputItemParamOfCustomToolCall(call.CallID, call.Input, call.Name),
				responses.ResponseInputItemParamOfCustomToolCallOutput(call.CallID, "Done!"))
			res, err = c.Responses.New(ctx, p)
			if err != nil || res.OutputText() != mockupstream.ToolText("Done!") {
				t.Fatalf("final %v %q", err, res.OutputText())
			}
		})
	}
}
