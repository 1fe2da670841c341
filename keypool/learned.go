package keypool

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// This file holds the limits learned from the vendors' own rate-limit
// headers: parsing both header families, keeping the latest limit,
// remaining count and reset per key and model, and the "learned" gate
// that keeps a key from being driven into a 429.

// RateLimit is one rate limit as an upstream reported it on one answer.
type RateLimit struct {
	// Limit is the window's full budget (requests or tokens); 0: not
	// reported.
	Limit int64
	// Remaining is what was left when the upstream answered.
	Remaining int64
	// Reset is how long after the answer the budget is fully replenished
	// (OpenAI: "the time until the rate limit resets to its initial
	// state"; Anthropic: the RFC 3339 time "when the rate limit will be
	// fully replenished", made relative to the answer's time).
	Reset time.Duration
	// Set is true when Remaining was reported (the limit is known).
	Set bool
}

// RateLimits are the rate limits one upstream answer reported, as
// ParseRateLimits reads them. Requests and Tokens are filled from either
// family; InputTokens and OutputTokens only from Anthropic's.
type RateLimits struct {
	Requests     RateLimit
	Tokens       RateLimit
	InputTokens  RateLimit
	OutputTokens RateLimit
}

// windows returns r's windows in learnedEntry.w order.
func (r *RateLimits) windows() [lwCount]*RateLimit {
	return [lwCount]*RateLimit{&r.Requests, &r.Tokens, &r.InputTokens, &r.OutputTokens}
}

// Any reports whether any limit was reported.
func (r *RateLimits) Any() bool {
	return r.Requests.Set || r.Tokens.Set || r.InputTokens.Set || r.OutputTokens.Set
}

// ParseRateLimits reads the rate-limit headers of an upstream answer
// (success or not, streamed or not) at now, the time the answer arrived:
//
//   - OpenAI (and the many relays that copy it), per OpenAI's rate limits
//     guide: x-ratelimit-limit-{requests,tokens},
//     x-ratelimit-remaining-{requests,tokens} and
//     x-ratelimit-reset-{requests,tokens}, the reset a duration such as
//     "1s", "6m0s", "20ms" or "1d2h";
//   - Anthropic, per its rate limits docs:
//     anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
//     {limit,remaining,reset}, the reset an RFC 3339 time.
//
// When both families report the same window, OpenAI's wins. A window
// whose remaining count is missing, negative or not an integer is not
// set; a missing or unreadable reset is 0 (the budget is full again at
// once, so the window gates nothing). ok reports whether any window was
// set. It does not allocate when the answer has no such headers.
func ParseRateLimits(h http.Header, now time.Time) (rl RateLimits, ok bool) {
	if len(h) == 0 {
		return rl, false
	}
	rl.Requests = openAILimit(h, hdrOAILimitReq, hdrOAIRemainReq, hdrOAIResetReq)
	rl.Tokens = openAILimit(h, hdrOAILimitTok, hdrOAIRemainTok, hdrOAIResetTok)
	if !rl.Requests.Set {
		rl.Requests = anthropicLimit(h, now, hdrAntReqLimit, hdrAntReqRemain, hdrAntReqReset)
	}
	if !rl.Tokens.Set {
		rl.Tokens = anthropicLimit(h, now, hdrAntTokLimit, hdrAntTokRemain, hdrAntTokReset)
	}
	rl.InputTokens = anthropicLimit(h, now, hdrAntInLimit, hdrAntInRemain, hdrAntInReset)
	rl.OutputTokens = anthropicLimit(h, now, hdrAntOutLimit, hdrAntOutRemain, hdrAntOutReset)
	return rl, rl.Any()
}

// Canonical header names (net/textproto form), read by direct map access
// so that parsing allocates nothing.
const (
	hdrOAILimitReq  = "X-Ratelimit-Limit-Requests"
	hdrOAIRemainReq = "X-Ratelimit-Remaining-Requests"
	hdrOAIResetReq  = "X-Ratelimit-Reset-Requests"
	hdrOAILimitTok  = "X-Ratelimit-Limit-Tokens"
	hdrOAIRemainTok = "X-Ratelimit-Remaining-Tokens"
	hdrOAIResetTok  = "X-Ratelimit-Reset-Tokens"

	hdrAntReqLimit  = "Anthropic-Ratelimit-Requests-Limit"
	hdrAntReqRemain = "Anthropic-Ratelimit-Requests-Remaining"
	hdrAntReqReset  = "Anthropic-Ratelimit-Requests-Reset"
	hdrAntTokLimit  = "Anthropic-Ratelimit-Tokens-Limit"
	hdrAntTokRemain = "Anthropic-Ratelimit-Tokens-Remaining"
	hdrAntTokReset  = "Anthropic-Ratelimit-Tokens-Reset"
	hdrAntInLimit   = "Anthropic-Ratelimit-Input-Tokens-Limit"
	hdrAntInRemain  = "Anthropic-Ratelimit-Input-Tokens-Remaining"
	hdrAntInReset   = "Anthropic-Ratelimit-Input-Tokens-Reset"
	hdrAntOutLimit  = "Anthropic-Ratelimit-Output-Tokens-Limit"
	hdrAntOutRemain = "Anthropic-Ratelimit-Output-Tokens-Remaining"
	hdrAntOutReset  = "Anthropic-Ratelimit-Output-Tokens-Reset"
)

func rlHeader(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return strings.TrimSpace(v[0])
	}
	return ""
}

// count parses a non-negative integer count ("12", also "12.0" as some
// relays send); ok false otherwise.
func count(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, false // callers that ignore ok must not read a negative limit
		}
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f || f < 0 || f > 1e15 {
		return 0, false
	}
	return int64(f), true
}

// headerLimit reads one window's limit and remaining counts; ok false
// (and a zero RateLimit) when the remaining count is absent or malformed.
func headerLimit(h http.Header, limit, remain string) (RateLimit, bool) {
	rem, ok := count(rlHeader(h, remain))
	if !ok {
		return RateLimit{}, false
	}
	r := RateLimit{Remaining: rem, Set: true}
	r.Limit, _ = count(rlHeader(h, limit))
	return r, true
}

func openAILimit(h http.Header, limit, remain, reset string) RateLimit {
	r, ok := headerLimit(h, limit, remain)
	if !ok {
		return r
	}
	if d, ok := parseWait(rlHeader(h, reset)); ok {
		r.Reset = min(d, maxHint)
	}
	return r
}

func anthropicLimit(h http.Header, now time.Time, limit, remain, reset string) RateLimit {
	r, ok := headerLimit(h, limit, remain)
	if !ok {
		return r
	}
	if s := rlHeader(h, reset); s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			r.Reset = min(max(t.Sub(now), 0), maxHint)
		}
	}
	return r
}

// Learned windows, in learnedEntry.w order.
const (
	lwRequests = iota
	lwTokens
	lwInput
	lwOutput
	lwCount
)

// learnedWin is one learned window: what an answer said, and the key's
// lease counters at the start of the request that reported it (so the
// leases begun since are counted against Remaining).
type learnedWin struct {
	limit, remaining int64
	resetAt          time.Time
	base             int64 // Key.requests (requests window) or Key.lrnTok (token windows) after the reporting lease began
	set              bool
}

// left returns the window's remaining budget at now, less what the
// leases begun since the reporting request took; ok false when the
// window is unknown or has reset (aged out).
func (w *learnedWin) left(used int64, now time.Time) (int64, bool) {
	if !w.set || !now.Before(w.resetAt) {
		return 0, false
	}
	return w.remaining - (used - w.base), true
}

// learnedEntry is what the latest answer for one model said.
type learnedEntry struct {
	model string
	at    time.Time // when it was learned
	seq   int64     // Key.requests after the reporting lease began: an older request's answer does not replace it
	w     [lwCount]learnedWin
}

// learnedKey is a key's learned state, allocated at its first answer
// with rate-limit headers (keys without any cost one nil check).
type learnedKey struct {
	entries []learnedEntry // per model; at most maxLearnedModels
	latest  int            // index of the most recently learned entry
	// recent failures for the smart strategy: an exponentially decaying
	// count (half-life smartFailHalfLife), never a lifetime count
	fail   float64
	failAt time.Time
}

// maxLearnedModels bounds a key's learned per-model table; the entry
// learned longest ago goes first when it is full.
const maxLearnedModels = 16

// entry returns the entry of model, nil when none.
func (lk *learnedKey) entry(model string) *learnedEntry {
	for i := range lk.entries {
		if lk.entries[i].model == model {
			return &lk.entries[i]
		}
	}
	return nil
}

// lrnUsed returns the key's lease counter window i counts against.
func (k *Key) lrnUsed(i int) int64 {
	if i == lwRequests {
		return k.requests
	}
	return k.lrnTok
}

// learnedGate reports whether a request for model needing tokens
// (AcquireOptions.Tokens) fits the limits learned for that model: the
// requests window must have at least one left, the tokens and input
// tokens windows at least max(tokens, 1), the output tokens window at
// least one. When it does not fit, until is the latest reset among the
// refusing windows (the learned values age out then).
func (k *Key) learnedGate(model string, tokens int64, now time.Time) (ok bool, until time.Time) {
	e := k.lrn.entry(model)
	if e == nil {
		return true, time.Time{}
	}
	need := max(tokens, 1)
	ok = true
	for i := range e.w {
		w := &e.w[i]
		left, known := w.left(k.lrnUsed(i), now)
		if !known {
			continue
		}
		least := int64(1)
		if i == lwTokens || i == lwInput {
			least = need
		}
		if left < least {
			ok = false
			if w.resetAt.After(until) {
				until = w.resetAt
			}
		}
	}
	return ok, until
}

// learnedShare is the smallest share of its limit any learned window of
// model still has at now, in [0, 1] (1: nothing known), and the time
// until that window resets. Unlike learnedGate, which waits for the
// reset, it expects the budget to come back evenly until the reset (as a
// vendor's token bucket refills), so a key whose window refills faster is
// not under-rated between its answers.
func (k *Key) learnedShare(model string, now time.Time) (share float64, reset time.Duration) {
	share = 1
	if k.lrn == nil {
		return share, 0
	}
	e := k.lrn.entry(model)
	if e == nil {
		return share, 0
	}
	for i := range e.w {
		w := &e.w[i]
		left, known := w.left(k.lrnUsed(i), now)
		if !known || w.limit <= 0 {
			continue
		}
		if span := w.resetAt.Sub(e.at); span > 0 {
			left += int64(float64(w.limit-w.remaining) * float64(now.Sub(e.at)) / float64(span))
		}
		if s := min(max(float64(left)/float64(w.limit), 0), 1); s < share {
			share, reset = s, w.resetAt.Sub(now)
		}
	}
	return share, reset
}

// Learn records the rate limits the upstream reported on this lease's
// answer (ParseRateLimits), for the lease's key and model (the vendors'
// limits are per model). Call it as soon as the answer's headers arrive,
// success or not, streamed or not, before Release; it may be called at
// most once per lease, later calls are ignored, and so is everything
// when Settings.LearnLimitsOff is set.
//
// The latest answer wins: an answer to a request begun before the one
// that reported the key's current values does not replace them. From
// then on the leases begun after the reporting request are counted
// against the remaining counts, so concurrent requests do not overshoot;
// a key whose requests are used up, or whose tokens left are fewer than
// a request's AcquireOptions.Tokens, is not leased for that model until
// the window's reset (KeyStatus Reason "learned"). This is not a failure:
// no cooldown, backoff, breaker or probe. Learned values age out at their
// reset. In cluster mode (SetBackend) they are shared with the other
// instances at Release.
func (l *Lease) Learn(rl RateLimits) {
	if !rl.Any() {
		return
	}
	p := l.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.released || l.learned != nil || p.settings.LearnLimitsOff {
		return
	}
	now := p.clock.Now()
	x := rl
	l.learned = &x
	if p.learnLocked(l.key, l.model, &rl, now, l.lrnReq, l.lrnTok) {
		p.refreshLocked(l.key, now)
		p.wakeWaitersLocked()
	}
}

// learnLocked applies rl, reported for model at now by a request begun
// when the key's counters were req and tok, and reports whether it did.
func (p *Pool) learnLocked(k *Key, model string, rl *RateLimits, now time.Time, req, tok int64) bool {
	if k.lrn == nil {
		k.lrn = &learnedKey{}
	}
	lk := k.lrn
	e := lk.entry(model)
	if e != nil && req < e.seq {
		// an older request's answer: keep it only for windows that aged out
		fresh := false
		for i := range e.w {
			if _, known := e.w[i].left(0, now); known {
				fresh = true
			}
		}
		if fresh {
			return false
		}
	}
	if e == nil {
		if len(lk.entries) < maxLearnedModels {
			lk.entries = append(lk.entries, learnedEntry{model: model})
			e = &lk.entries[len(lk.entries)-1]
		} else {
			// the oldest entry that does not hold the key back goes: an
			// entry that gates its model now is never pushed out by other
			// model names (a client's made-up ones would otherwise clear
			// it and drive the key into the vendor's 429s); when every
			// entry gates, the new answer is not kept
			old := -1
			for i := range lk.entries {
				if ok, _ := k.learnedGate(lk.entries[i].model, 0, now); ok && (old < 0 || lk.entries[i].at.Before(lk.entries[old].at)) {
					old = i
				}
			}
			if old < 0 {
				return false
			}
			lk.entries[old] = learnedEntry{model: model}
			e = &lk.entries[old]
		}
	}
	e.at, e.seq = now, req
	for i, r := range rl.windows() {
		if !r.Set {
			continue
		}
		base := req
		if i != lwRequests {
			base = tok
		}
		// a reset further than max_hint_cooldown is capped like any
		// upstream hint: a relay's bogus header cannot hold a key for a year
		reset := r.Reset
		if m := p.settings.MaxHintCooldown; m > 0 {
			reset = min(reset, m)
		}
		e.w[i] = learnedWin{limit: r.Limit, remaining: r.Remaining, resetAt: now.Add(reset), base: base, set: true}
	}
	for i := range lk.entries {
		if &lk.entries[i] == e {
			lk.latest = i
		}
	}
	return true
}

// smartFailHalfLife is how fast the smart strategy forgets a failure.
const smartFailHalfLife = time.Minute

// noteFailure counts an attributable failure of k at now for the smart
// strategy's recent-failure penalty.
func (k *Key) noteFailure(now time.Time) {
	if k.lrn == nil {
		k.lrn = &learnedKey{}
	}
	k.lrn.fail = k.recentFailures(now) + 1
	k.lrn.failAt = now
}

// recentFailures is the key's failure count decayed to now (half-life
// smartFailHalfLife): 1 failure a minute ago counts 0.5.
func (k *Key) recentFailures(now time.Time) float64 {
	if k.lrn == nil || k.lrn.fail == 0 {
		return 0
	}
	d := now.Sub(k.lrn.failAt)
	if d <= 0 {
		return k.lrn.fail
	}
	f := k.lrn.fail * math.Exp2(-float64(d)/float64(smartFailHalfLife))
	if f < 0.01 {
		return 0 // forgotten (after about 7 half-lives)
	}
	return f
}

// LearnedLimit is one model's limits as last reported by the upstream
// for a key (KeyStatus.Learned). Counts are as of now: Remaining already
// less the requests (or estimated tokens) begun since the answer that
// reported it. A window whose reset has passed is left out.
type LearnedLimit struct {
	// Model is the upstream model the answer was for ("" when the
	// request named none).
	Model string `json:"model"`
	// LearnedAt is when the answer arrived.
	LearnedAt time.Time `json:"learned_at,omitzero"`
	// Requests, Tokens, InputTokens and OutputTokens are the windows the
	// answer reported (nil: not reported, or reset since).
	Requests     *LearnedWindow `json:"requests,omitempty"`
	Tokens       *LearnedWindow `json:"tokens,omitempty"`
	InputTokens  *LearnedWindow `json:"input_tokens,omitempty"`
	OutputTokens *LearnedWindow `json:"output_tokens,omitempty"`
}

// LearnedWindow is one learned window of a LearnedLimit.
type LearnedWindow struct {
	// Limit is the window's full budget (0: not reported).
	Limit int64 `json:"limit"`
	// Remaining is what is left now (never below 0).
	Remaining int64 `json:"remaining"`
	// ResetAt is when the budget is full again; ResetSeconds is that
	// from now in whole seconds, rounded up.
	ResetAt      time.Time `json:"reset_at"`
	ResetSeconds int       `json:"reset_seconds"`
}

// learnedStatus returns what k learned, most recent first; nil when
// nothing is current.
func (k *Key) learnedStatus(now time.Time) []LearnedLimit {
	if k.lrn == nil {
		return nil
	}
	var out []LearnedLimit
	for ei := range k.lrn.entries {
		e := &k.lrn.entries[ei]
		ll := LearnedLimit{Model: e.model, LearnedAt: e.at}
		any := false
		for i, dst := range [lwCount]**LearnedWindow{&ll.Requests, &ll.Tokens, &ll.InputTokens, &ll.OutputTokens} {
			w := &e.w[i]
			left, known := w.left(k.lrnUsed(i), now)
			if !known {
				continue
			}
			secs := int((w.resetAt.Sub(now) + time.Second - 1) / time.Second)
			*dst = &LearnedWindow{Limit: w.limit, Remaining: max(left, 0), ResetAt: w.resetAt, ResetSeconds: secs}
			any = true
		}
		if any {
			out = append(out, ll)
		}
	}
	for i := 1; i < len(out); i++ { // most recent first
		for j := i; j > 0 && out[j].LearnedAt.After(out[j-1].LearnedAt); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// latestModel is the model of the most recent learned entry.
func (k *Key) latestModel() (string, bool) {
	if k.lrn == nil || len(k.lrn.entries) == 0 {
		return "", false
	}
	return k.lrn.entries[k.lrn.latest].model, true
}
