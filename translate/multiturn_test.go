package translate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"
)

// A DeepSeek-style Chat upstream answers an Anthropic client (Claude Code)
// with reasoning and a tool call; the client builds its next turn with the
// Anthropic SDK (Message.ToParam plus a tool_result), and the gateway must
// echo the reasoning as reasoning_content on the tool-call turn and keep the
// tool id paired.
func TestMultiTurnAnthropicClientChatUpstream(t *testing.T) {
	up := ccChunk(`{"role":"assistant","content":null,"reasoning_content":""}`, "", "") +
		ccChunk(`{"reasoning_content":"Need the weather."}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"id":"call_00_abc","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]}`, "", "") +
		ccChunk(`{}`, "tool_calls", `,"usage":{"prompt_tokens":20,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":4}}`) + "data: [DONE]\n\n"
	out, _, _ := run(t, OpenAIChat, AnthropicMessages, up)
	msg := accumulateAnthropic(t, out)
	if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[1].Type != "tool_use" || msg.StopReason != "tool_use" {
		t.Fatalf("unexpected message: %+v", msg.Content)
	}
	if msg.Usage.OutputTokens != 9 || msg.Usage.InputTokens != 20 {
		t.Errorf("usage %+v", msg.Usage)
	}
	params := anthropic.MessageNewParams{
		Model:     "claude-via-deepseek",
		MaxTokens: 1000,
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?")),
			msg.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(msg.Content[1].ID, "18C, sunny", false)),
		},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}},
	}
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	cc := mustTranslate(t, AnthropicMessages, OpenAIChat, string(body), "deepseek-reasoner")
	wantGet(t, cc, "messages.1.reasoning_content", `"Need the weather."`)
	wantGet(t, cc, "messages.1.tool_calls.0.id", `"call_00_abc"`)
	wantGet(t, cc, "messages.1.tool_calls.0.function.arguments", `"{\"city\":\"Paris\"}"`)
	wantGet(t, cc, "messages.2", `{"role":"tool","tool_call_id":"call_00_abc","content":"18C, sunny"}`)
}

// An OpenAI SDK client talks to an Anthropic upstream: the streamed
// tool_use comes back as tool_calls, the client replays it with
// ChatCompletionMessage.ToParam and a tool message, and the Anthropic
// request pairs tool_use and tool_result by the same id.
func TestMultiTurnChatClientAnthropicUpstream(t *testing.T) {
	var body []byte
	for _, fx := range streamFixtures(t, AnthropicMessages) {
		if strings.Contains(fx.name, "tool-use.sse") {
			body = fx.body
		}
	}
	if body == nil {
		t.Fatal("fixture missing")
	}
	out, _, _, err := collect(t, AnthropicMessages, OpenAIChat, "claude-via-gw", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	acc := accumulateChat(t, string(out))
	m := acc.Choices[0].Message
	if len(m.ToolCalls) != 1 {
		t.Fatalf("tool calls: %+v", m.ToolCalls)
	}
	params := openai.ChatCompletionNewParams{
		Model: "claude-via-gw",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("Weather in Paris?"),
			m.ToParam(),
			openai.ToolMessage("15C", m.ToolCalls[0].ID),
		},
	}
	pb, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	am := mustTranslate(t, OpenAIChat, AnthropicMessages, string(pb), "claude-sonnet-4-5")
	checkAnthropicRequest(t, "replay", []byte(am.Raw))
	wantGet(t, am, "messages.1.content.#.type", `["text","tool_use"]`)
	if id := am.Get("messages.1.content.1.id").Str; id != m.ToolCalls[0].ID || am.Get("messages.2.content.0.tool_use_id").Str != id {
		t.Errorf("ids not paired: %s", am.Raw)
	}
	if !gjson.Valid(am.Get("messages.1.content.1.input").Raw) {
		t.Error("input")
	}
}

func accumulateAnthropic(t *testing.T, out string) anthropic.Message {
	t.Helper()
	var msg anthropic.Message
	for _, ev := range readAllEvents(t, strings.NewReader(out)) {
		var u anthropic.MessageStreamEventUnion
		if err := json.Unmarshal(ev.Data, &u); err != nil {
			t.Fatal(err)
		}
		if u.Type == "ping" {
			continue
		}
		if err := msg.Accumulate(u); err != nil {
			t.Fatal(err)
		}
	}
	return msg
}

func accumulateChat(t *testing.T, out string) openai.ChatCompletionAccumulator {
	t.Helper()
	var acc openai.ChatCompletionAccumulator
	for _, ev := range readAllEvents(t, strings.NewReader(out)) {
		if string(ev.Data) == "[DONE]" {
			continue
		}
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatal(err)
		}
		acc.AddChunk(c)
	}
	return acc
}

// A Responses client (Codex style) with a DeepSeek-style Chat upstream: the
// reasoning item and function_call it received are replayed as input with
// the function_call_output, and the Chat upstream gets reasoning_content on
// the tool-call turn.
func TestMultiTurnResponsesClientChatUpstream(t *testing.T) {
	up := ccChunk(`{"role":"assistant","content":"","reasoning_content":"Think."}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}}]}`, "", "") +
		ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n"
	out, _, _ := run(t, OpenAIChat, OpenAIResponses, up)
	var output string
	for _, ev := range readAllEvents(t, strings.NewReader(out)) {
		if ev.Event == "response.completed" {
			output = gjson.GetBytes(ev.Data, "response.output").Raw
		}
	}
	items := gjson.Parse(output).Array()
	if len(items) != 2 || items[0].Get("type").Str != "reasoning" || items[1].Get("call_id").Str != "call_9" || items[1].Get("id").Str == "call_9" {
		t.Fatalf("output %s", output)
	}
	req := `{"model":"m","input":[{"role":"user","content":"list files"},` + items[0].Raw + `,` + items[1].Raw +
		`,{"type":"function_call_output","call_id":"call_9","output":"a.go"}]}`
	cc := mustTranslate(t, OpenAIResponses, OpenAIChat, req, "deepseek-reasoner")
	wantGet(t, cc, "messages.1.reasoning_content", `"Think."`)
	wantGet(t, cc, "messages.1.tool_calls.0.id", `"call_9"`)
	wantGet(t, cc, "messages.2", `{"role":"tool","tool_call_id":"call_9","content":"a.go"}`)
}
