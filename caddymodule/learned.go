package caddymodule

import (
	"strconv"
	"strings"
	"time"

	"github.com/llmgateway/llm_gateway/keypool"
)

// sharedLearnedView renders the learned limits a state backend holds for
// a key (keypool.SharedKeyState.Learned, resets relative to the
// snapshot) like a key's own (keypool.LearnedLimit), as of now.
func sharedLearnedView(ls []keypool.SharedLearned, now time.Time) []keypool.LearnedLimit {
	if len(ls) == 0 {
		return nil
	}
	out := make([]keypool.LearnedLimit, 0, len(ls))
	win := func(r keypool.RateLimit) *keypool.LearnedWindow {
		if !r.Set {
			return nil
		}
		return &keypool.LearnedWindow{Limit: r.Limit, Remaining: r.Remaining, ResetAt: now.Add(r.Reset).UTC(),
			ResetSeconds: int((r.Reset + time.Second - 1) / time.Second)}
	}
	for _, l := range ls {
		out = append(out, keypool.LearnedLimit{Model: l.Model, Requests: win(l.Limits.Requests), Tokens: win(l.Limits.Tokens),
			InputTokens: win(l.Limits.InputTokens), OutputTokens: win(l.Limits.OutputTokens)})
	}
	return out
}

// encodeLearned writes learned limits for the Redis state backend:
// "limit,remaining,reset_ms" per window (requests, tokens, input tokens,
// output tokens; "-" for a window not reported), joined by ";", then the
// model: e.g. "500,12,3000;-;-;-;gpt-4o". "" for nil.
func encodeLearned(l *keypool.SharedLearned) string {
	if l == nil {
		return ""
	}
	var b []byte
	for _, w := range [...]keypool.RateLimit{l.Limits.Requests, l.Limits.Tokens, l.Limits.InputTokens, l.Limits.OutputTokens} {
		if w.Set {
			b = strconv.AppendInt(b, w.Limit, 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, w.Remaining, 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, w.Reset.Milliseconds(), 10)
		} else {
			b = append(b, '-')
		}
		b = append(b, ';')
	}
	return string(append(b, l.Model...))
}

// decodeLearned reads encodeLearned's form, its resets shortened by
// elapsed (the time since it was stored); ok false when malformed or
// every window has reset since.
func decodeLearned(s string, elapsed time.Duration) (keypool.SharedLearned, bool) {
	var l keypool.SharedLearned
	parts := strings.SplitN(s, ";", 5)
	if len(parts) != 5 {
		return l, false
	}
	l.Model = parts[4]
	any := false
	for i, dst := range [...]*keypool.RateLimit{&l.Limits.Requests, &l.Limits.Tokens, &l.Limits.InputTokens, &l.Limits.OutputTokens} {
		if parts[i] == "-" {
			continue
		}
		f := strings.Split(parts[i], ",")
		if len(f) != 3 {
			return l, false
		}
		lim, e1 := strconv.ParseInt(f[0], 10, 64)
		rem, e2 := strconv.ParseInt(f[1], 10, 64)
		ms, e3 := strconv.ParseInt(f[2], 10, 64)
		if e1 != nil || e2 != nil || e3 != nil || lim < 0 || rem < 0 || ms < 0 {
			return l, false
		}
		reset := time.Duration(ms)*time.Millisecond - elapsed
		if reset <= 0 {
			continue
		}
		*dst = keypool.RateLimit{Limit: lim, Remaining: rem, Reset: reset, Set: true}
		any = true
	}
	return l, any
}

// parseLearnedEvent reads the Redis state event of learned limits,
// "L|pool|instance|fp|<encodeLearned>".
func parseLearnedEvent(s string) (string, keypool.SharedEvent, bool) {
	f := strings.SplitN(s, "|", 5)
	if len(f) != 5 || f[0] != "L" {
		return "", keypool.SharedEvent{}, false
	}
	l, ok := decodeLearned(f[4], 0)
	if !ok {
		return "", keypool.SharedEvent{}, false
	}
	return f[1], keypool.SharedEvent{Instance: f[2], Fingerprint: f[3], Learned: &l}, true
}
