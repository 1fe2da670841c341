package keypool

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxClassifyBody is how much of an error body ClassifyResponse looks at,
// in bytes; a longer bodyPrefix is cut. Callers should read at most this
// much (4-8 KiB is plenty for every known upstream error shape).
const MaxClassifyBody = 8 << 10

// ShortWait is the longest upstream-named wait that still marks a 429 as a
// transient rate limit: a 429 that says "try again in 20s" (or sends
// Retry-After: 20) is never a spent quota, even when its body says
// "quota". A longer wait on a quota-shaped body is a QuotaExhausted.
const ShortWait = time.Hour

// ClassifyResponse turns an upstream HTTP answer into an Outcome. It is a
// pure function of status, headers h, the first bytes of the body
// (bodyPrefix, at most MaxClassifyBody used; nil when the body was not
// read, e.g. on success) and now (to resolve dates and the next UTC
// midnight).
//
// Classes:
//   - 2xx, 3xx: Success.
//   - 429: RateLimited, with the upstream's wait as RetryAfter when one is
//     named in Retry-After / retry-after-ms (Source "retry-after"), in the
//     body (Google RetryInfo.retryDelay, resets_in_seconds, "try again in
//     20s"; Source "body") or in the reset header of an exhausted limit
//     (x-ratelimit-reset-requests/-tokens with remaining 0,
//     anthropic-ratelimit-*-reset; Source "reset-header"). When the body
//     says a daily, monthly or billing quota is spent (insufficient_quota,
//     "daily", "quota", "allocation", usage_limit_reached) and no wait
//     shorter than ShortWait is named: QuotaExhausted until the named
//     reset, else the next UTC midnight (Source "utc-midnight").
//   - 402: NoCredit. 401: InvalidKey. 403: Forbidden. A 400 whose body
//     says the credit balance is too low (Anthropic) is NoCredit too.
//   - 404 naming a model: ModelNotFound; any other 404: ClientError.
//   - 408: Timeout. 5xx (529 overloaded included): ServerError, with a
//     Retry-After hint when sent.
//   - other 4xx (400, 413, 422 ...): ClientError, no retry, no cooldown.
//
// Message is built from the status, the upstream's error code and the
// wait; it never copies the body, which may quote the key.
func ClassifyResponse(status int, h http.Header, bodyPrefix []byte, now time.Time) Outcome {
	o := Outcome{Status: status}
	if status >= 200 && status < 400 {
		o.Kind = Success
		return o
	}
	if len(bodyPrefix) > MaxClassifyBody {
		bodyPrefix = bodyPrefix[:MaxClassifyBody]
	}
	e := parseErrorBody(bodyPrefix)
	o.Code = e.code
	switch {
	case status == http.StatusTooManyRequests:
		classify429(&o, h, &e, now)
	case status == http.StatusUnauthorized:
		o.Kind = InvalidKey
		o.Message = describe("invalid key", status, e.code, "")
	case status == http.StatusPaymentRequired:
		o.Kind = NoCredit
		o.Message = describe("out of credit", status, e.code, "")
	case status == http.StatusForbidden:
		o.Kind = Forbidden
		o.Message = describe("forbidden (tier or permission)", status, e.code, "")
	case status == http.StatusNotFound:
		if e.mentionsModel() {
			o.Kind = ModelNotFound
			o.Message = describe("model not found", status, e.code, "")
		} else {
			o.Kind = ClientError
			o.Message = describe("not found", status, e.code, "")
		}
	case status == http.StatusRequestTimeout:
		o.Kind, o.Message = Timeout, "upstream timeout (408)"
	case status >= 500:
		o.Kind = ServerError
		if d, ok := RetryAfter(h, now); ok {
			o.RetryAfter, o.HasRetryAfter, o.Source = d, true, "retry-after"
		}
		what := "upstream error"
		if status == 529 || e.has("overloaded") {
			what = "upstream overloaded"
		}
		o.Message = describe(what, status, e.code, hintText(o))
	case status == http.StatusBadRequest && e.has("credit balance"):
		o.Kind = NoCredit
		o.Message = describe("out of credit", status, e.code, "")
	default:
		o.Kind = ClientError
		o.Message = describe("request rejected", status, e.code, "")
	}
	return o
}

// classify429 fills o for a 429 answer.
func classify429(o *Outcome, h http.Header, e *errorBody, now time.Time) {
	wait, src := time.Duration(0), ""
	if d, ok := RetryAfter(h, now); ok {
		wait, src = d, "retry-after"
	} else if d, ok := e.retryHint(); ok {
		wait, src = d, "body"
	} else if d, ok := resetHeaderHint(h, now); ok {
		wait, src = d, "reset-header"
	}
	quota := e.quotaSpent()
	switch {
	case src != "" && (wait < ShortWait || !quota):
		o.Kind = RateLimited
		o.RetryAfter, o.HasRetryAfter, o.Source = wait, true, src
		o.Message = describe("rate limited", 429, e.code, hintText(*o))
	case quota:
		o.Kind = QuotaExhausted
		if src == "" {
			wait, src = nextUTCMidnight(now).Sub(now), "utc-midnight"
		}
		o.RetryAfter, o.HasRetryAfter, o.Source = wait, true, src
		o.Message = describe("quota exhausted", 429, e.code, hintText(*o))
	default:
		o.Kind = RateLimited
		o.Message = describe("rate limited", 429, e.code, "")
	}
}

// nextUTCMidnight returns the first UTC midnight strictly after now.
func nextUTCMidnight(now time.Time) time.Time {
	return now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
}

// describe builds a secret-free Outcome.Message such as
// "rate limited (429; rate_limit_exceeded; wait 20s from body)" or
// "upstream error (Bad Gateway)".
func describe(what string, status int, code, hint string) string {
	var b strings.Builder
	b.WriteString(what)
	b.WriteString(" (")
	if status >= 500 && http.StatusText(status) != "" {
		b.WriteString(http.StatusText(status)) // "upstream error (Bad Gateway)"
	} else {
		b.WriteString(strconv.Itoa(status))
	}
	if code != "" {
		b.WriteString("; ")
		b.WriteString(code)
	}
	if hint != "" {
		b.WriteString("; ")
		b.WriteString(hint)
	}
	b.WriteByte(')')
	return b.String()
}

func hintText(o Outcome) string {
	if !o.HasRetryAfter {
		return ""
	}
	if o.Source == "utc-midnight" {
		return "until UTC midnight"
	}
	return "wait " + o.RetryAfter.Round(time.Millisecond).String() + " from " + o.Source
}

// errorBody is what ClassifyResponse extracts from an error body.
type errorBody struct {
	lower      string // the whole prefix, lower-cased, for word search
	code       string // error.code, else error.type, else error.status (sanitised)
	retryDelay string // Google RetryInfo.retryDelay, e.g. "17s"
	resetsIn   float64
	hasResets  bool
}

// parseErrorBody decodes the common error shapes
// ({"error":{"type","code","message","status","details"}}, {"error":"..."},
// top-level "type"/"code"/"message") and keeps a lower-cased copy of the
// prefix for word search, which also serves truncated or non-JSON bodies.
func parseErrorBody(b []byte) errorBody {
	e := errorBody{lower: string(bytes.ToLower(b))}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		// truncated or not JSON: fall back to byte search
		if i := strings.Index(e.lower, `"resets_in_seconds"`); i >= 0 {
			e.resetsIn, e.hasResets = leadingNumber(strings.TrimLeft(e.lower[i+len(`"resets_in_seconds"`):], ": "))
		}
		if i := strings.Index(e.lower, `"retrydelay"`); i >= 0 {
			e.retryDelay = strings.Trim(strings.TrimLeft(e.lower[i+len(`"retrydelay"`):], ": "), `"`)
			if j := strings.IndexAny(e.retryDelay, `",}`); j >= 0 {
				e.retryDelay = e.retryDelay[:j]
			}
		}
		return e
	}
	obj := top
	if raw, ok := top["error"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) == nil {
			obj = inner
		}
	}
	for _, f := range []string{"code", "type", "status"} {
		if c := sanitizeCode(jsonScalar(obj[f])); c != "" && c != "error" {
			e.code = c
			break
		}
	}
	if v, ok := numberField(obj, "resets_in_seconds"); ok {
		e.resetsIn, e.hasResets = v, true
	} else if v, ok := numberField(top, "resets_in_seconds"); ok {
		e.resetsIn, e.hasResets = v, true
	}
	var details []map[string]json.RawMessage
	if json.Unmarshal(obj["details"], &details) == nil {
		for _, d := range details {
			if rd := jsonScalar(d["retryDelay"]); rd != "" {
				e.retryDelay = rd
			}
		}
	}
	return e
}

// jsonScalar returns a JSON string's value or a number's text; "" for
// anything else.
func jsonScalar(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func numberField(obj map[string]json.RawMessage, name string) (float64, bool) {
	raw, ok := obj[name]
	if !ok {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return 0, false
	}
	return f, true
}

// leadingNumber parses the number at the start of s.
func leadingNumber(s string) (float64, bool) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	f, err := strconv.ParseFloat(s[:i], 64)
	return f, err == nil
}

// sanitizeCode keeps a code safe to log: [A-Za-z0-9_.-], at most 48 bytes.
func sanitizeCode(s string) string {
	if len(s) > 48 {
		s = s[:48]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return ""
		}
	}
	return s
}

func (e *errorBody) has(word string) bool { return strings.Contains(e.lower, word) }

// mentionsModel reports whether a 404 body is about a model rather than a
// path: OpenAI model_not_found, Anthropic "model: x", Ollama
// `model "x" not found`.
func (e *errorBody) mentionsModel() bool {
	if e.code == "model_not_found" {
		return true
	}
	if t := strings.TrimSpace(e.lower); strings.HasPrefix(t, "<") {
		return false // an HTML page from a proxy or router: a path, not a model
	}
	if e.has("invalid url") || e.has("unknown url") || e.has("no route") {
		return false
	}
	return e.has("model")
}

// retryHint returns a wait named in the body: resets_in_seconds, Google
// RetryInfo.retryDelay, or a phrase "try again in 20s" / "retry in
// 1m30s" / "retry after 5 seconds".
func (e *errorBody) retryHint() (time.Duration, bool) {
	if e.hasResets && e.resetsIn >= 0 {
		return time.Duration(e.resetsIn * float64(time.Second)), true
	}
	if e.retryDelay != "" {
		if d, ok := parseWait(e.retryDelay); ok {
			return d, true
		}
	}
	for _, p := range []string{"try again in ", "retry in ", "retry after ", "retry-after ", "please wait "} {
		if i := strings.Index(e.lower, p); i >= 0 {
			if d, ok := parseWait(e.lower[i+len(p):]); ok {
				return d, true
			}
		}
	}
	return 0, false
}

// quotaSpent reports whether a 429 body speaks of a daily, monthly or
// billing quota rather than a per-minute rate limit.
func (e *errorBody) quotaSpent() bool {
	switch e.code {
	case "insufficient_quota", "billing_hard_limit_reached", "usage_limit_reached", "quota_exceeded":
		return true
	}
	if e.has("per minute") || e.has("per min ") || e.has("perminute") || e.has("per_minute") ||
		e.has("(rpm)") || e.has("(tpm)") {
		return false
	}
	for _, w := range []string{"insufficient_quota", "daily", "per day", "perday", "monthly", "per month", "quota", "allocation", "usage_limit", "usage limit"} {
		if e.has(w) {
			return true
		}
	}
	return false
}

// resetHeaderHint returns the wait until the latest reset among the
// rate-limit headers whose remaining count is 0: OpenAI
// x-ratelimit-reset-{requests,tokens} (a Go-like duration, "6m0s",
// "20ms", "1d2h") and Anthropic anthropic-ratelimit-{requests,tokens,
// input-tokens,output-tokens}-reset (an RFC 3339 time).
func resetHeaderHint(h http.Header, now time.Time) (time.Duration, bool) {
	var best time.Duration
	found := false
	for _, r := range []string{"requests", "tokens"} {
		if strings.TrimSpace(h.Get("X-Ratelimit-Remaining-"+r)) != "0" {
			continue
		}
		if d, ok := parseWait(strings.TrimSpace(h.Get("X-Ratelimit-Reset-" + r))); ok && (!found || d > best) {
			best, found = d, true
		}
	}
	for _, r := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		if strings.TrimSpace(h.Get("Anthropic-Ratelimit-"+r+"-Remaining")) != "0" {
			continue
		}
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(h.Get("Anthropic-Ratelimit-"+r+"-Reset")))
		if err != nil {
			continue
		}
		if d := max(t.Sub(now), 0); !found || d > best {
			best, found = d, true
		}
	}
	return best, found
}

// parseWait parses a wait at the start of s: one or more number+unit
// pairs such as "20s", "1m30s", "12.03s", "3m9.504s", "120ms", "1d2h",
// "20 seconds", "2 minutes", or a bare number of seconds. Parsing stops
// at the first token that is not part of a duration.
func parseWait(s string) (time.Duration, bool) {
	var total float64
	n := 0
	for {
		s = strings.TrimLeft(s, " ")
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		if i == 0 {
			break
		}
		v, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			break
		}
		rest := strings.TrimLeft(s[i:], " ")
		j := 0
		for j < len(rest) && rest[j] >= 'a' && rest[j] <= 'z' {
			j++
		}
		unit, known := waitUnits[rest[:j]]
		if !known {
			if n == 0 && j == 0 {
				return time.Duration(v * float64(time.Second)), true // bare seconds
			}
			break
		}
		total += v * float64(unit)
		n++
		s = rest[j:]
	}
	if n == 0 || total < 0 || total != total {
		return 0, false
	}
	return time.Duration(total), true
}

var waitUnits = map[string]time.Duration{
	"ms": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}
