package caddymodule

import (
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/translate"
)

// A request larger than a key's whole per-minute token limit: the
// upstream refuses it with a 429 however long the key rests, and the
// refusal says nothing against the key. Such an
// answer (keypool.Outcome.OverLimit) cools no key and counts no failure;
// the request moves on to a key whose limit is not known to be as small,
// and the upstream's answer is relayed to the client (in its dialect,
// X-Should-Retry: false) when a second key says the same (the same
// organization or the same limit: a key of the same tier) and no key is
// known (learned limits) to be larger, or when no other key can be
// tried. Two vendor forms:
//   - OpenAI and Groq say it in words, read by keypool.ClassifyResponseFor:
//     "Request too large for <model> in organization <org> on tokens per
//     min (TPM): Limit L, Requested R" with R > L;
//   - Anthropic answers its usual 429 rate_limit_error ("This request would
//     exceed the rate limit for your organization ... of N input tokens
//     per minute"), so the gateway compares the request's input tokens
//     with the key's input-tokens limit (overInputLimit).

// overLimits is what the over-limit answers of one request said so far.
type overLimits struct {
	maxTokens int64             // the largest tokens-per-minute limit an OpenAI-style answer named
	maxInput  int64             // the largest input-tokens-per-minute limit of an Anthropic answer
	said      []keypool.Outcome // the answers, for their OverLimit and OverLimitOrg
	// small are the keys known (learned limits) to have a limit no larger
	// than one already refused: skipped for the rest of the request
	small map[*keypool.Key]bool
	// refused are the fingerprints of the keys that answered over-limit
	refused map[string]bool
}

// noteOverLimit records an over-limit answer o (o.OverLimit > 0) from
// key k of pool p and reports whether it is the request's answer now: an
// earlier key said the same (the same organization, or the same limit)
// and no key of the pool is known (learned limits) to have a limit larger
// than every one of its kind that refused the request. input says o is
// about Anthropic's input-tokens limit.
func (c *call) noteOverLimit(p *pool, k *keypool.Key, o keypool.Outcome, input bool) (relay bool) {
	ov := c.over
	if ov == nil {
		ov = &overLimits{refused: make(map[string]bool)}
		c.over = ov
	}
	ov.refused[k.Fingerprint()] = true
	same := false
	for _, e := range ov.said {
		if e.OverLimit == o.OverLimit || o.OverLimitOrg != "" && e.OverLimitOrg == o.OverLimitOrg {
			same = true
			break
		}
	}
	ov.said = append(ov.said, o)
	if input {
		ov.maxInput = max(ov.maxInput, o.OverLimit)
	} else {
		ov.maxTokens = max(ov.maxTokens, o.OverLimit)
	}
	// the keys whose learned limit is no larger: they would say the same;
	// a key whose learned limit is larger than a refusal of its kind may
	// take the request. An Anthropic key (as this request reaches it) is
	// judged by its input-tokens limit, any other by its tokens limit.
	ov.small = nil
	larger := false
	for k, t := range p.kp.TokenLimits(c.upstreamModel) {
		uk := p.keys[k.Fingerprint()]
		if uk == nil {
			continue
		}
		d := translate.OpenAIChat
		if c.kind == kindCompletion {
			d, _ = uk.target(c.dialect)
		}
		limit, refused := t.Tokens, ov.maxTokens
		if d == translate.AnthropicMessages {
			limit, refused = t.InputTokens, ov.maxInput
		}
		switch {
		case limit <= 0:
		case limit <= refused:
			if ov.small == nil {
				ov.small = make(map[*keypool.Key]bool)
			}
			ov.small[k] = true
		case refused > 0:
			larger = true
		}
	}
	return same && !larger
}

// tooLargeForPool reports whether no key of pool p that could serve the
// request may still take it: each answered over-limit or is known
// (learned limits) to be no larger than a refusal. A key that was not
// asked (cooling, busy, at its limit) and whose limit is not known may be
// larger: the request can then succeed later, and the relayed 429 must not
// tell the client never to retry it.
func (c *call) tooLargeForPool(p *pool) bool {
	ov := c.over
	if ov == nil {
		return false
	}
	small := make(map[string]bool, len(ov.small))
	for k := range ov.small {
		small[k.Fingerprint()] = true
	}
	for _, fp := range p.order {
		uk := p.keys[fp]
		if uk == nil || ov.refused[fp] || small[fp] {
			continue
		}
		if c.kind == kindPassthrough && !c.pass.servedBy(uk) || p.keyLacksModel(uk, c.upstreamModel) {
			continue // a key that cannot serve the request at all
		}
		return false
	}
	return true
}

// skipOverLimit reports whether k is known to be too small for the
// request (see noteOverLimit). Called from AcquireOptions.Skip.
func (c *call) skipOverLimit(k *keypool.Key) bool {
	return c.over != nil && c.over.small[k]
}

// overInputLimit turns an Anthropic 429 o (RateLimited) into an
// over-limit answer when the request by itself is larger than the key's
// whole input-tokens-per-minute limit: the limit is the 429's
// anthropic-ratelimit-input-tokens-limit header (per Anthropic's rate
// limits docs), else the one learned for the key and model; the request's
// size is estimated by inputTokensFloor of the body the upstream got. A
// request within the limit, or whose size cannot be bounded, stays a rate
// limit (the key cools until Retry-After or the reset). Called for
// completions only (settle).
//
// sure says the answer is known to be about the request's size, not a
// window others spent: its words alone (each at least one token) are more
// than the limit, or the key refused it with its whole window left
// (anthropic-ratelimit-input-tokens-remaining, rounded to the nearest
// thousand, at least the limit). Otherwise the estimate (four bytes a
// token) may be high, as for indented code: the key is still not cooled
// (a client must not bench keys with large requests), but the client is
// not told that retrying is in vain.
//
// A 429 whose message (errBody, Anthropic's error object) names the key's
// requests per minute is that rate limit whatever the request's size: a
// client's large request must not keep a key whose window is spent from
// cooling. One naming output tokens per minute is left to the estimate
// (that window is charged with the request's max_tokens, which the client
// chooses), but a whole input window left does not make it sure.
func (x *exchange) overInputLimit(o keypool.Outcome, hdr http.Header, errBody []byte) (ov keypool.Outcome, sure bool) {
	limit, err := strconv.ParseInt(strings.TrimSpace(hdr.Get("Anthropic-Ratelimit-Input-Tokens-Limit")), 10, 64)
	if err != nil || limit <= 0 {
		limit = x.p.kp.TokenLimitOf(x.lease.Key(), x.c.upstreamModel).InputTokens
	}
	if limit <= 0 {
		return o, false
	}
	b := x.c.bodies[x.d]
	if b == nil || int64(len(*b))/4 <= limit {
		return o, false // cheap bound first: even every byte as text would fit
	}
	total, words := inputTokensFloor(*b)
	if total <= limit {
		return o, false
	}
	msg := gjson.GetBytes(errBody, "error.message").Str
	if strings.Contains(msg, "requests per minute") {
		return o, false // the requests window is spent: a rate limit
	}
	remaining, err := strconv.ParseInt(strings.TrimSpace(hdr.Get("Anthropic-Ratelimit-Input-Tokens-Remaining")), 10, 64)
	sure = words > limit || err == nil && remaining >= limit && !strings.Contains(msg, "output tokens per minute")
	return keypool.Outcome{Kind: keypool.ClientError, Status: o.Status, Code: o.Code, OverLimit: limit,
		Message: "request larger than the key's input tokens per minute (429; " + strconv.FormatInt(limit, 10) + ")"}, sure
}

// inputTokensFloor estimates, for an Anthropic Messages body, the input
// tokens that count toward an input-tokens-per-minute limit: total is
// the text (decoded, without quotes or escapes) of tools, system and
// messages at four bytes per token (the ratio of
// translate.Request.EstimatedTokens; denser text such as code or
// non-Latin script has more tokens per byte, indented text fewer), and
// words counts the whitespace-separated words of the text after the last
// cache_control breakpoint, a floor of what counts whatever the cache
// holds (a token never spans two words; text without spaces counts as one
// word). Both leave out base64 payloads (images, documents: "data" fields
// and data: URLs, whose token cost is far below their size), thinking
// blocks and their signatures (earlier turns' thinking is not counted as
// input).
//
// Prompt caching: the cached prefix is tools, system, messages in that
// order, up to the last breakpoint (per Anthropic's prompt caching docs);
// with a top-level "cache_control" (automatic caching) the breakpoint is
// placed upstream, at the end. Cache reads do not count toward the limit,
// cache writes do (Anthropic's rate limits docs), and whether the prefix
// is in the cache is not known here: total counts the prefix (a client's
// own breakpoint must not make a request that is too large for a key,
// because its prefix was never cached, pass for that key's spent window,
// which would cool the key), words does not (only the text after the
// prefix surely counts).
func inputTokensFloor(body []byte) (total, words int64) {
	auto := gjson.GetBytes(body, "cache_control").Exists()
	var n int64
	var walk func(key string, v gjson.Result)
	walk = func(key string, v gjson.Result) {
		switch {
		case key == "data" || key == "signature" || key == "thinking" || key == "cache_control":
		case v.IsObject() || v.IsArray():
			v.ForEach(func(k, e gjson.Result) bool {
				walk(k.Str, e)
				return true
			})
			if v.IsObject() && v.Get("cache_control").Exists() {
				words = 0 // a breakpoint: what came so far may be read from the cache
			}
		case v.Type == gjson.String && !strings.HasPrefix(v.Str, "data:"):
			n += int64(len(v.Str)) // the text, not its JSON escapes (\uXXXX is 6 bytes)
			words += fieldCount(v.Str)
		}
	}
	for _, f := range []string{"tools", "system", "messages"} {
		walk(f, gjson.GetBytes(body, f))
	}
	if auto {
		words = 0
	}
	return n / 4, words
}

// fieldCount is len(strings.Fields(s)) (words separated by Unicode white
// space) without building the slice: a large prompt's text is counted,
// not copied into a slice of its words.
func fieldCount(s string) int64 {
	var n int64
	in := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}
