package translate

// usageIn is what of u a client of dialect d can read back: the figures
// its usage schema has, with the schema's required figures 0 when the
// upstream did not report them (Anthropic output_tokens/input_tokens,
// Chat prompt/completion tokens, every Responses figure). Anthropic has no
// reasoning figure and Responses no cache-write figure.
func usageIn(d Dialect, u Usage) Usage {
	if u.IsZero() {
		return u
	}
	zero := func(p *int64) *int64 {
		if p == nil {
			return i64(0)
		}
		return p
	}
	switch d {
	case AnthropicMessages:
		u.ReasoningTokens = nil
		u.OutputTokens = zero(u.OutputTokens)
		u.InputTokens = zero(u.InputTokens)
	case OpenAIResponses:
		u.CacheWriteTokens = nil
		u.InputTokens, u.OutputTokens = zero(u.InputTokens), zero(u.OutputTokens)
		u.CacheReadTokens, u.ReasoningTokens = zero(u.CacheReadTokens), zero(u.ReasoningTokens)
	case OpenAIChat:
		u.InputTokens, u.OutputTokens = zero(u.InputTokens), zero(u.OutputTokens)
	}
	return u
}
