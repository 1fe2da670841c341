package translate

import (
	"math"
	"testing"
)

// TestAttackDec02bUsageHostileNumbers: usage figures from a hostile or
// broken upstream are counts: a negative figure is not a count (not
// reported), a figure beyond int64 is the largest count, and Anthropic's
// input (input_tokens plus the two cache counts) saturates instead of
// wrapping negative, so that no cost, token total or key limit downstream
// goes below zero or is undercharged by an overflow.
func TestAttackDec02bUsageHostileNumbers(t *testing.T) {
	get := func(p *int64) int64 {
		if p == nil {
			return -1 // "not reported"
		}
		return *p
	}
	cases := []struct {
		name       string
		d          Dialect
		body       string
		in, out    int64
		cacheRead  int64
		cacheWrite int64
	}{
		{"anthropic sum overflows", AnthropicMessages,
			`{"usage":{"input_tokens":9000000000000000000,"cache_read_input_tokens":9000000000000000000,"cache_creation_input_tokens":9000000000000000000,"output_tokens":1}}`,
			math.MaxInt64, 1, 9000000000000000000, 9000000000000000000},
		{"anthropic 1e308", AnthropicMessages,
			`{"usage":{"input_tokens":1e308,"cache_read_input_tokens":5,"output_tokens":1e308}}`,
			math.MaxInt64, math.MaxInt64, 5, -1},
		{"anthropic negative", AnthropicMessages,
			`{"usage":{"input_tokens":-1000000,"cache_read_input_tokens":-7,"output_tokens":-3}}`,
			-1, -1, -1, -1},
		{"anthropic negative cache only", AnthropicMessages,
			`{"usage":{"input_tokens":10,"cache_creation_input_tokens":-1000,"output_tokens":2}}`,
			10, 2, -1, -1},
		{"chat negative", OpenAIChat,
			`{"usage":{"prompt_tokens":-5,"completion_tokens":-9223372036854775808,"prompt_tokens_details":{"cached_tokens":-1}}}`,
			-1, -1, -1, -1},
		{"chat huge", OpenAIChat,
			`{"usage":{"prompt_tokens":1e400,"completion_tokens":12.9}}`,
			math.MaxInt64, 12, -1, -1},
		{"responses negative", OpenAIResponses,
			`{"usage":{"input_tokens":-1,"output_tokens":4,"input_tokens_details":{"cached_tokens":-2}}}`,
			-1, 4, -1, -1},
		{"strings are not numbers", OpenAIChat,
			`{"usage":{"prompt_tokens":"12","completion_tokens":"NaN"}}`,
			-1, -1, -1, -1},
	}
	for _, c := range cases {
		u := ResponseUsage(c.d, []byte(c.body))
		if got := [4]int64{get(u.InputTokens), get(u.OutputTokens), get(u.CacheReadTokens), get(u.CacheWriteTokens)}; got != [4]int64{c.in, c.out, c.cacheRead, c.cacheWrite} {
			t.Errorf("%s: input, output, cache read, cache write = %v, want %v", c.name, got, [4]int64{c.in, c.out, c.cacheRead, c.cacheWrite})
		}
	}
}
