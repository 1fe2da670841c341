package translate

import (
	"math"
	"strconv"

	"github.com/tidwall/gjson"
)

// Usage is normalised token usage. A nil pointer means the upstream did not
// report that figure; it is never replaced by an invented 0.
//
// Units are tokens. Semantics follow OpenAI's (the superset):
//   - InputTokens is every input token, including cache reads and cache
//     writes (OpenAI prompt_tokens / input_tokens; for Anthropic,
//     input_tokens + cache_read_input_tokens + cache_creation_input_tokens).
//   - OutputTokens is every generated token, including reasoning (OpenAI
//     completion_tokens / output_tokens; Anthropic output_tokens).
//   - CacheReadTokens (OpenAI prompt_tokens_details.cached_tokens, Anthropic
//     cache_read_input_tokens) and CacheWriteTokens (OpenAI
//     prompt_tokens_details.cache_write_tokens, Anthropic
//     cache_creation_input_tokens) are parts of InputTokens.
//   - ReasoningTokens (OpenAI completion_tokens_details.reasoning_tokens,
//     Anthropic output_tokens_details.thinking_tokens) is part of
//     OutputTokens.
type Usage struct {
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens, ReasoningTokens *int64
}

// IsZero reports whether no figure at all was reported.
func (u Usage) IsZero() bool {
	return u.InputTokens == nil && u.OutputTokens == nil && u.CacheReadTokens == nil &&
		u.CacheWriteTokens == nil && u.ReasoningTokens == nil
}

// Tokens is the input plus output tokens (0 for a figure not reported,
// or below zero, which the decoders never produce but a caller's Usage
// may hold), saturating at math.MaxInt64 instead of wrapping negative (a
// wrapped sum would read as no usage to a key's tpm bucket and quota).
func (u Usage) Tokens() int64 {
	var n int64
	for _, v := range [...]*int64{u.InputTokens, u.OutputTokens} {
		if v != nil && *v > 0 {
			n = addCounts(n, *v)
		}
	}
	return n
}

// merge overwrites the fields of u that are set in v.
func (u *Usage) merge(v Usage) {
	if v.InputTokens != nil {
		u.InputTokens = v.InputTokens
	}
	if v.OutputTokens != nil {
		u.OutputTokens = v.OutputTokens
	}
	if v.CacheReadTokens != nil {
		u.CacheReadTokens = v.CacheReadTokens
	}
	if v.CacheWriteTokens != nil {
		u.CacheWriteTokens = v.CacheWriteTokens
	}
	if v.ReasoningTokens != nil {
		u.ReasoningTokens = v.ReasoningTokens
	}
}

func i64(n int64) *int64 { return &n }

// intAt returns the count at r, or nil when r is missing, null, not a
// number or negative (a token count never is: a hostile or broken
// upstream's -5 is no report, not a refund). A number beyond int64 (1e30)
// is math.MaxInt64 (gjson clamps), a fraction is truncated.
func intAt(r gjson.Result) *int64 {
	n, ok := countAt(r)
	if !ok {
		return nil
	}
	return i64(n)
}

// countAt is intAt without the pointer: ok false for a missing, non-number
// or negative r.
func countAt(r gjson.Result) (int64, bool) {
	if r.Type != gjson.Number {
		return 0, false
	}
	n := r.Int()
	return n, n >= 0
}

// addCounts adds two non-negative counts, saturating at math.MaxInt64
// instead of wrapping negative.
func addCounts(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ResponseUsage extracts usage from a whole non-streamed response body of
// dialect d: OpenAI Chat "usage" {prompt_tokens, completion_tokens,
// prompt_tokens_details.{cached_tokens,cache_write_tokens},
// completion_tokens_details.reasoning_tokens}; Anthropic "usage"
// {input_tokens, output_tokens, cache_read_input_tokens,
// cache_creation_input_tokens, output_tokens_details.thinking_tokens};
// Responses "usage" {input_tokens, output_tokens,
// input_tokens_details.{cached_tokens,cache_write_tokens},
// output_tokens_details.reasoning_tokens}. Missing fields stay nil.
func ResponseUsage(d Dialect, body []byte) Usage {
	return usageOf(d, gjson.GetBytes(body, "usage"))
}

// usageOf is ResponseUsage given the body's top-level usage member.
func usageOf(d Dialect, u gjson.Result) Usage {
	if !u.IsObject() {
		return Usage{}
	}
	switch d {
	case OpenAIChat:
		return chatUsage(u)
	case AnthropicMessages:
		var a anthropicUsage
		a.add(u)
		return a.usage()
	case OpenAIResponses:
		return responsesUsage(u)
	}
	return Usage{}
}

// chatUsage reads an OpenAI Chat Completions usage object. DeepSeek's
// prompt_cache_hit_tokens is accepted when cached_tokens is absent.
func chatUsage(u gjson.Result) Usage {
	var r [len(chatUsagePaths)]gjson.Result
	usageLookup(u, chatUsagePaths[:], r[:])
	var out Usage
	out.InputTokens = intAt(r[0])
	out.OutputTokens = intAt(r[1])
	out.CacheReadTokens = intAt(r[2])
	if out.CacheReadTokens == nil {
		out.CacheReadTokens = intAt(r[3])
	}
	out.CacheWriteTokens = intAt(r[4])
	out.ReasoningTokens = intAt(r[5])
	return out
}

// chatUsagePaths are the members chatUsage reads.
var chatUsagePaths = [...]usagePath{{"", "prompt_tokens"}, {"", "completion_tokens"},
	{"prompt_tokens_details", "cached_tokens"}, {"", "prompt_cache_hit_tokens"},
	{"prompt_tokens_details", "cache_write_tokens"}, {"completion_tokens_details", "reasoning_tokens"}}

// responsesUsage reads an OpenAI Responses usage object.
func responsesUsage(u gjson.Result) Usage {
	var r [len(responsesUsagePaths)]gjson.Result
	usageLookup(u, responsesUsagePaths[:], r[:])
	var out Usage
	out.InputTokens = intAt(r[0])
	out.OutputTokens = intAt(r[1])
	out.CacheReadTokens = intAt(r[2])
	out.CacheWriteTokens = intAt(r[3])
	out.ReasoningTokens = intAt(r[4])
	return out
}

// responsesUsagePaths are the members responsesUsage reads.
var responsesUsagePaths = [...]usagePath{{"", "input_tokens"}, {"", "output_tokens"},
	{"input_tokens_details", "cached_tokens"}, {"input_tokens_details", "cache_write_tokens"},
	{"output_tokens_details", "reasoning_tokens"}}

// usagePath is a member of a usage object: name at the top level (parent
// ""), or name inside the top-level object parent.
type usagePath struct{ parent, name string }

// usageLookup sets dst[i] to what gjson's Get(paths[i]) gives on the usage
// object u, reading u's members once instead of once per path: a
// top-level name resolves to its first member, "parent.name" to name in
// the first member parent. Where a parent occurs more than once (gjson's
// Get would go on to a later copy when the first does not hold the
// name), every path is looked up with gjson's Get instead, so the result
// is the same for every object. dst has len(paths) elements.
func usageLookup(u gjson.Result, paths []usagePath, dst []gjson.Result) {
	var seen uint32 // paths whose parent was met
	again := false
	u.ForEach(func(k, v gjson.Result) bool {
		for i := range paths {
			p := &paths[i]
			if p.parent == "" {
				if p.name == k.Str && !dst[i].Exists() {
					dst[i] = v
				}
				continue
			}
			if p.parent != k.Str {
				continue
			}
			if seen&(1<<i) != 0 {
				again = true
				return false
			}
			seen |= 1 << i
			dst[i] = v.Get(p.name)
		}
		return true
	})
	if again {
		for i, p := range paths {
			if p.parent == "" {
				dst[i] = u.Get(p.name)
			} else {
				dst[i] = u.Get(p.parent + "." + p.name)
			}
		}
	}
}

// anthropicUsage accumulates Anthropic usage objects field by field
// (message_start, then the cumulative message_delta values overwrite), and
// normalises at the end, because input_tokens excludes the cache counts.
// The figures are kept by value (adding allocates nothing; usage builds
// the pointers).
type anthropicUsage struct {
	v   [5]int64 // in the order of anthropicUsagePaths
	set [5]bool
}

// anthropicUsagePaths are the members anthropicUsage reads: input_tokens,
// output_tokens, cache_read_input_tokens, cache_creation_input_tokens,
// output_tokens_details.thinking_tokens.
var anthropicUsagePaths = [5]usagePath{{"", "input_tokens"}, {"", "output_tokens"}, {"", "cache_read_input_tokens"},
	{"", "cache_creation_input_tokens"}, {"output_tokens_details", "thinking_tokens"}}

func (a *anthropicUsage) add(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	var r [len(anthropicUsagePaths)]gjson.Result
	usageLookup(u, anthropicUsagePaths[:], r[:])
	for i := range r {
		if n, ok := countAt(r[i]); ok {
			a.v[i], a.set[i] = n, true
		}
	}
}

// at returns figure i, nil when it was never reported.
func (a *anthropicUsage) at(i int) *int64 {
	if !a.set[i] {
		return nil
	}
	return i64(a.v[i])
}

func (a *anthropicUsage) usage() Usage {
	out := Usage{OutputTokens: a.at(1), CacheReadTokens: a.at(2), CacheWriteTokens: a.at(3), ReasoningTokens: a.at(4)}
	if a.set[0] {
		n := a.v[0]
		if a.set[2] {
			n = addCounts(n, a.v[2])
		}
		if a.set[3] {
			n = addCounts(n, a.v[3])
		}
		out.InputTokens = i64(n)
	}
	return out
}

// appendChatUsage appends an OpenAI Chat usage object for u (OpenAI
// "CompletionUsage": prompt_tokens, completion_tokens and total_tokens are
// required, so an unreported side is written as 0). Cache reads go to
// prompt_tokens_details.cached_tokens; cache writes to
// prompt_tokens_details.cache_write_tokens (OpenRouter's field, a named
// extension in docs/translation-dropped-fields.md); reasoning to
// completion_tokens_details.reasoning_tokens.
func appendChatUsage(b []byte, u Usage) []byte {
	var in, out int64
	if u.InputTokens != nil {
		in = *u.InputTokens
	}
	if u.OutputTokens != nil {
		out = *u.OutputTokens
	}
	b = append(b, '{')
	b = appendIntField(b, "prompt_tokens", in)
	b = appendIntField(b, "completion_tokens", out)
	b = appendIntField(b, "total_tokens", addCounts(in, out))
	if u.CacheReadTokens != nil || u.CacheWriteTokens != nil {
		b = appendKey(b, "prompt_tokens_details")
		b = append(b, '{')
		if u.CacheReadTokens != nil {
			b = appendIntField(b, "cached_tokens", *u.CacheReadTokens)
		}
		if u.CacheWriteTokens != nil {
			b = appendIntField(b, "cache_write_tokens", *u.CacheWriteTokens)
		}
		b = append(b, '}')
	}
	if u.ReasoningTokens != nil {
		b = appendKey(b, "completion_tokens_details")
		b = appendIntField(append(b, '{'), "reasoning_tokens", *u.ReasoningTokens)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendResponsesUsage appends an OpenAI Responses usage object for u
// (OpenAI "ResponseUsage": input_tokens, input_tokens_details.cached_tokens,
// output_tokens, output_tokens_details.reasoning_tokens and total_tokens are
// all required, so unreported figures are written as 0). The schema has no
// cache-write figure: cache writes are counted in input_tokens only.
func appendResponsesUsage(b []byte, u Usage) []byte {
	val := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	in, out := val(u.InputTokens), val(u.OutputTokens)
	b = append(b, '{')
	b = appendIntField(b, "input_tokens", in)
	b = appendKey(b, "input_tokens_details")
	b = appendIntField(append(b, '{'), "cached_tokens", val(u.CacheReadTokens))
	b = append(b, '}')
	b = appendIntField(b, "output_tokens", out)
	b = appendKey(b, "output_tokens_details")
	b = appendIntField(append(b, '{'), "reasoning_tokens", val(u.ReasoningTokens))
	b = append(b, '}')
	b = appendIntField(b, "total_tokens", addCounts(in, out))
	return append(b, '}')
}

// anthropicInput returns Anthropic's input_tokens for u: all input minus
// cache reads and writes, floored at 0 (MAPPING.md §3.4).
func anthropicInput(u Usage) *int64 {
	if u.InputTokens == nil {
		return nil
	}
	n := *u.InputTokens
	if u.CacheReadTokens != nil {
		n -= *u.CacheReadTokens
	}
	if u.CacheWriteTokens != nil {
		n -= *u.CacheWriteTokens
	}
	if n < 0 {
		n = 0
	}
	return i64(n)
}

// appendAnthropicUsage appends an Anthropic usage object for u, with only
// the fields of Anthropic's schema (input_tokens, cache_creation_input_tokens,
// cache_read_input_tokens, output_tokens; reasoning has no field there, it
// is part of output_tokens). output_tokens is always written (0 when
// unknown), as Anthropic's SDK types require it in message_start,
// message_delta and a whole message. When placeholders is true (message_start,
// a whole message), input_tokens is written as 0 when unknown too; in
// message_delta only the input figures the upstream reported are written.
func appendAnthropicUsage(b []byte, u Usage, placeholders bool) []byte {
	b = append(b, '{')
	if in := anthropicInput(u); in != nil {
		b = appendIntField(b, "input_tokens", *in)
	} else if placeholders {
		b = appendIntField(b, "input_tokens", 0)
	}
	if u.CacheWriteTokens != nil {
		b = appendIntField(b, "cache_creation_input_tokens", *u.CacheWriteTokens)
	}
	if u.CacheReadTokens != nil {
		b = appendIntField(b, "cache_read_input_tokens", *u.CacheReadTokens)
	}
	if u.OutputTokens != nil {
		b = appendIntField(b, "output_tokens", *u.OutputTokens)
	} else {
		b = appendIntField(b, "output_tokens", 0)
	}
	return append(b, '}')
}

// String renders u for logs, e.g. "in=12 out=7 cache_read=- cache_write=- reasoning=3".
func (u Usage) String() string {
	f := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatInt(*p, 10)
	}
	return "in=" + f(u.InputTokens) + " out=" + f(u.OutputTokens) + " cache_read=" + f(u.CacheReadTokens) +
		" cache_write=" + f(u.CacheWriteTokens) + " reasoning=" + f(u.ReasoningTokens)
}
