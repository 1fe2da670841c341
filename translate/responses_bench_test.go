package translate

import (
	"testing"
)

// BenchmarkToResponses measures TranslateRequest to a Responses upstream
// on the 80 KB Claude Code-shaped request and its Chat translation (B/op
// and "x-body", as BenchmarkRequest reports them).
func BenchmarkToResponses(b *testing.B) {
	am, rs := bigAnthropicRequest(), bigResponsesRequest()
	// the same conversation as a Chat request
	cc, err := TranslateRequest(AnthropicMessages, OpenAIChat, am, "gpt-5")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("anthropic_to_responses", func(b *testing.B) { benchRequest(b, AnthropicMessages, OpenAIResponses, am) })
	b.Run("chat_to_responses", func(b *testing.B) { benchRequest(b, OpenAIChat, OpenAIResponses, cc) })
	b.Run("passthrough_responses", func(b *testing.B) { benchRequest(b, OpenAIResponses, OpenAIResponses, rs) })
}

// BenchmarkResponsesUpstreamStream measures a recorded Responses stream
// (the largest of ../shared/fixtures/openai-responses: reasoning summary,
// encrypted content and a function call) translated for each client
// dialect, passthrough included.
func BenchmarkResponsesUpstreamStream(b *testing.B) {
	var body []byte
	for _, fx := range streamFixtures(b, OpenAIResponses) {
		if len(fx.body) > len(body) {
			body = fx.body
		}
	}
	if body == nil {
		b.Skip("no Responses stream")
	}
	for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		b.Run("responses_to_"+to.String(), func(b *testing.B) { benchStream(b, OpenAIResponses, to, body) })
	}
}
