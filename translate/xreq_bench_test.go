package translate

import (
	"encoding/json"
	"strings"
	"testing"
)

// harnessAnthropicRequest is the request the load harness sends to
// gw-a2o (bench/bodies.go messagesRequest: 2 KB, a system string and one
// user message, max_tokens, temperature).
func harnessAnthropicRequest() []byte {
	const words = "the quick brown fox jumps over the lazy dog while a gateway relays tokens "
	b, _ := json.Marshal(map[string]any{"model": "bench-json", "stream": false, "max_tokens": 1024, "temperature": 0.2,
		"system":   "You are a terse assistant.",
		"messages": []map[string]any{{"role": "user", "content": "Summarise: " + strings.Repeat(words, 26)}}})
	return b
}

// translateCase is one direction of BenchmarkTranslateRequest.
type translateCase struct {
	name     string
	from, to Dialect
	body     []byte
}

// translateCases are the load harness's 2 KB requests (gw-a2o: an
// Anthropic client to an OpenAI Chat upstream; gw-o2a: the reverse) and a
// 50 KB multi-turn coding agent's conversation (chatMultiTurn, and its
// Anthropic translation), both directions.
func translateCases(tb testing.TB) []translateCase {
	chat50 := chatMultiTurn(50 << 10)
	am50, err := TranslateRequest(OpenAIChat, AnthropicMessages, chat50, "claude-sonnet-4-5")
	if err != nil {
		tb.Fatal(err)
	}
	return []translateCase{
		{"a2o_2k", AnthropicMessages, OpenAIChat, harnessAnthropicRequest()},
		{"o2a_2k", OpenAIChat, AnthropicMessages, harnessChatRequest()},
		{"a2o_50k", AnthropicMessages, OpenAIChat, am50},
		{"o2a_50k", OpenAIChat, AnthropicMessages, chat50},
	}
}

// BenchmarkTranslateRequest measures the preparation of a translated
// request as the handler does it: ParseRequestFor the upstream's dialect
// (the validation pass builds the canonical form), the session seed,
// Encode for the upstream with its model. It reports cpu-ns/op (the
// process's CPU time per request) next to ns/op. The file runs unchanged
// on the code before the request encoders' rework (the old figures).
func BenchmarkTranslateRequest(b *testing.B) {
	for _, c := range translateCases(b) {
		b.Run(c.name, func(b *testing.B) {
			want, err := TranslateRequest(c.from, c.to, c.body, "up-model")
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			for i := 0; i < b.N; i++ {
				r, err := ParseRequestFor(c.from, c.body, c.to)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = r.SessionSeed()
				if out, err := r.Encode(c.to, "up-model"); err != nil || len(out) != len(want) {
					b.Fatal("output differs", err)
				}
			}
			cpu.report(b)
		})
	}
}
