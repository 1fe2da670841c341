package translate

import (
	"fmt"
	"testing"
)

func TestProbe11(t *testing.T) {
	in := ccChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"type":"function","function":{"name":"a","arguments":"{}"}}]}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":1,"id":"","type":"function","function":{"name":"b","arguments":"{}"}}]}`, "", "") + ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n"
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		out, _, err := run(t, OpenAIChat, to, in)
		fmt.Println(to, err)
		for _, d := range sseData(out) {
			if d.Get("content_block.type").Str == "tool_use" || d.Get("type").Str == "response.output_item.done" {
				fmt.Println(d.Raw)
			}
		}
	}
	whole := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"a","arguments":"{}"}},{"id":"","type":"function","function":{"name":"b","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		b, _, err := TranslateResponse(OpenAIChat, to, []byte(whole), "cm")
		fmt.Println(to, string(b), err)
	}
}
