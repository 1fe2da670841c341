package caddymodule

import (
	"math"
	"testing"

	"github.com/llmgateway/llm_gateway/translate"
)

// TestAttackDec02bUsageTokensSaturate: the tokens a request books against
// its key (input plus output) saturate at math.MaxInt64: an upstream that
// reports the largest counts must not wrap the sum negative, which the
// key's tpm bucket and token quota would read as no usage at all.
func TestAttackDec02bUsageTokensSaturate(t *testing.T) {
	big, one := int64(math.MaxInt64), int64(1)
	if got := usageTokens(translate.Usage{InputTokens: &big, OutputTokens: &one}); got != math.MaxInt64 {
		t.Fatalf("usageTokens(MaxInt64 + 1) = %d, want %d", got, int64(math.MaxInt64))
	}
	if got := usageTokens(translate.Usage{InputTokens: &big, OutputTokens: &big}); got != math.MaxInt64 {
		t.Fatalf("usageTokens(MaxInt64 + MaxInt64) = %d, want %d", got, int64(math.MaxInt64))
	}
	neg, ten := int64(-50), int64(10)
	if got := usageTokens(translate.Usage{InputTokens: &neg, OutputTokens: &ten}); got != 10 {
		t.Fatalf("usageTokens(-50 + 10) = %d, want 10 (a negative figure is no usage)", got)
	}
}
