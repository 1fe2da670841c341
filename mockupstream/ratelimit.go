package mockupstream

import (
	"net/http"
	"strconv"
	"time"
)

// rateWindow is a key's vendor-style rate limits (KeyBehavior.RPM and
// TPM): an exact sliding 60 s window of the requests admitted and the
// input tokens they were charged at arrival. Guarded by keyState.mu.
type rateWindow struct {
	hits []rateHit // oldest first
}

type rateHit struct {
	at     time.Time
	tokens int64
}

// rateWindowLen is the window of RPM and TPM.
const rateWindowLen = time.Minute

// rateHeaders are the values one answer reports, for both header
// families.
type rateHeaders struct {
	set                bool
	rpm                int
	tpm                int64
	remReq, remTok     int64
	resetReq, resetTok time.Duration // until the budget is full again
	retry              time.Duration // on a refusal: until the request would fit
}

// admit charges a request of tokens at now against rpm and tpm (0: no
// limit) and reports whether it fits, with what the answer says. A
// refused request is not charged.
func (w *rateWindow) admit(rpm int, tpm int64, tokens int64, now time.Time) (bool, rateHeaders) {
	keep := w.hits[:0]
	for _, h := range w.hits {
		if now.Sub(h.at) < rateWindowLen {
			keep = append(keep, h)
		}
	}
	w.hits = keep
	var used int64
	for _, h := range w.hits {
		used += h.tokens
	}
	ok := (rpm <= 0 || len(w.hits) < rpm) && (tpm <= 0 || used+tokens <= tpm)
	rh := rateHeaders{set: true, rpm: rpm, tpm: tpm}
	if !ok {
		// the earliest time both fit: enough of the oldest hits have left
		var freedTok int64
		for i, h := range w.hits {
			freedTok += h.tokens
			reqFits := rpm <= 0 || len(w.hits)-(i+1) < rpm
			tokFits := tpm <= 0 || used-freedTok+tokens <= tpm
			if reqFits && tokFits {
				rh.retry = h.at.Add(rateWindowLen).Sub(now)
				break
			}
		}
		if rh.retry <= 0 {
			rh.retry = rateWindowLen // bigger than the whole budget
		}
	} else {
		w.hits = append(w.hits, rateHit{at: now, tokens: tokens})
		used += tokens
	}
	rh.remReq, rh.remTok = int64(max(rpm-len(w.hits), 0)), max(tpm-used, 0)
	if n := len(w.hits); n > 0 {
		full := w.hits[n-1].at.Add(rateWindowLen).Sub(now)
		rh.resetReq = full
		for i := n - 1; i >= 0; i-- {
			if w.hits[i].tokens > 0 {
				rh.resetTok = w.hits[i].at.Add(rateWindowLen).Sub(now)
				break
			}
		}
	}
	return ok, rh
}

// write sets both vendors' rate-limit header families on h: OpenAI's
// x-ratelimit-{limit,remaining,reset}-{requests,tokens} (the reset a
// duration such as "59.95s", per OpenAI's rate limits guide) and
// Anthropic's anthropic-ratelimit-{requests,tokens,input-tokens}-
// {limit,remaining,reset} (the reset an RFC 3339 time, per Anthropic's
// rate limits docs). Only the limits that are set are reported; on a
// refusal Retry-After and retry-after-ms say when the request would fit.
func (rh *rateHeaders) write(h http.Header, now time.Time, refused bool) {
	if !rh.set {
		return
	}
	at := func(d time.Duration) string {
		// Anthropic sends whole seconds: round up, never early
		return now.Add(d).Add(time.Second - 1).Truncate(time.Second).UTC().Format(time.RFC3339)
	}
	dur := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	if rh.rpm > 0 {
		h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(rh.rpm))
		h.Set("X-Ratelimit-Remaining-Requests", strconv.FormatInt(rh.remReq, 10))
		h.Set("X-Ratelimit-Reset-Requests", dur(rh.resetReq))
		h.Set("Anthropic-Ratelimit-Requests-Limit", strconv.Itoa(rh.rpm))
		h.Set("Anthropic-Ratelimit-Requests-Remaining", strconv.FormatInt(rh.remReq, 10))
		h.Set("Anthropic-Ratelimit-Requests-Reset", at(rh.resetReq))
	}
	if rh.tpm > 0 {
		lim, rem := strconv.FormatInt(rh.tpm, 10), strconv.FormatInt(rh.remTok, 10)
		h.Set("X-Ratelimit-Limit-Tokens", lim)
		h.Set("X-Ratelimit-Remaining-Tokens", rem)
		h.Set("X-Ratelimit-Reset-Tokens", dur(rh.resetTok))
		for _, w := range []string{"Tokens", "Input-Tokens"} {
			h.Set("Anthropic-Ratelimit-"+w+"-Limit", lim)
			h.Set("Anthropic-Ratelimit-"+w+"-Remaining", rem)
			h.Set("Anthropic-Ratelimit-"+w+"-Reset", at(rh.resetTok))
		}
	}
	if refused {
		h.Set("Retry-After", strconv.FormatInt(int64((rh.retry+time.Second-1)/time.Second), 10))
		h.Set("Retry-After-Ms", strconv.FormatInt(int64((rh.retry+time.Millisecond-1)/time.Millisecond), 10))
	}
}

// organization is KeyBehavior.Organization or its default.
func (b *KeyBehavior) organization() string {
	if b.Organization == "" {
		return "org-mock"
	}
	return b.Organization
}

// writeOverLimit answers a request whose tokens alone exceed the key's
// tpm with the vendor's 429 (see KeyBehavior.Organization): OpenAI's
// "Request too large ..." without Retry-After (waiting cannot help), or
// Anthropic's input-tokens rate_limit_error with the headers already set.
func (c *call) writeOverLimit(model, org string, tpm, tokens int64) {
	lim := strconv.FormatInt(tpm, 10)
	if c.d == dialectAnthropic {
		c.writeInfo(http.StatusTooManyRequests, errorInfo{"rate_limit_error", "",
			"This request would exceed the rate limit for your organization (" + org + ") of " + lim +
				" input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. " +
				"You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later."})
		return
	}
	h := c.w.Header()
	h.Del("Retry-After")
	h.Del("Retry-After-Ms")
	c.writeInfo(http.StatusTooManyRequests, errorInfo{"tokens", "rate_limit_exceeded",
		"Request too large for " + model + " in organization " + org + " on tokens per min (TPM): Limit " + lim +
			", Requested " + strconv.FormatInt(tokens, 10) +
			". The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more."})
}
