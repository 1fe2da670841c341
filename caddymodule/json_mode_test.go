package caddymodule

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

// TestJSONModeReachesAnthropic: the openai-go clients' JSON mode and
// structured outputs reach an Anthropic key through the gateway: Chat
// response_format and Responses text.format json_object as the last
// system block asking for one JSON object, json_schema as Anthropic's
// output_config.format, instead of being dropped.
func TestJSONModeReachesAnthropic(t *testing.T) {
	m, gw := streamPair(t)
	c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	ctx := context.Background()
	lastSystem := func() (string, string) {
		b := m.Stats("an-1").LastBody
		sys := gjson.GetBytes(b, "system").Array()
		if len(sys) == 0 {
			return "", gjson.GetBytes(b, "output_config.format").Raw
		}
		return sys[len(sys)-1].Get("text").Str, gjson.GetBytes(b, "output_config.format").Raw
	}
	const want = "Respond with a single valid JSON object and nothing else: no text and no Markdown code fence before or after it."

	_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-x",
		Messages:       []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be terse."), openai.UserMessage("three colours as JSON")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}})
	if err != nil {
		t.Fatal(err)
	}
	if s, f := lastSystem(); s != want || f != "" {
		t.Errorf("chat json_object: last system block %q, output_config.format %s", s, f)
	}
	if first := gjson.GetBytes(m.Stats("an-1").LastBody, "system.0.text").Str; first != "Be terse." {
		t.Errorf("chat json_object: the client's system prompt is %q", first)
	}

	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-x",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("three colours as JSON")},
		Text:  responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}})
	if err != nil {
		t.Fatal(err)
	}
	if s, f := lastSystem(); s != want || f != "" {
		t.Errorf("responses json_object: last system block %q, output_config.format %s", s, f)
	}

	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-x",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("a colour as JSON")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "colour", Schema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if s, f := lastSystem(); s == want || gjson.Get(f, "type").Str != "json_schema" || gjson.Get(f, "schema.properties.name.type").Str != "string" || gjson.Get(f, "schema.additionalProperties").Raw != "false" {
		t.Errorf("chat json_schema: last system block %q, output_config.format %s", s, f)
	}
}
