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
// Retry-After: 20) is never a spent quota, even when its structured
// fields say "quota". A longer wait on a quota-shaped answer is a
// QuotaExhausted.
const ShortWait = time.Hour

// ClassifyResponse is ClassifyResponseFor without the requested model:
// ClassifyResponseFor("", status, h, bodyPrefix, now). Prefer
// ClassifyResponseFor when the model sent upstream is known, so a 403 or
// 404 naming it is told apart from a key-level refusal and text the
// upstream echoed from it is never read as the upstream's own words.
func ClassifyResponse(status int, h http.Header, bodyPrefix []byte, now time.Time) Outcome {
	return ClassifyResponseFor("", status, h, bodyPrefix, now)
}

// ClassifyResponseFor turns an upstream HTTP answer into an Outcome. It is
// a pure function of model (the model name the request sent upstream; ""
// when unknown), status, headers h, the first bytes of the body
// (bodyPrefix, at most MaxClassifyBody used; nil when the body was not
// read, e.g. on success) and now (to resolve dates and the next UTC
// midnight).
//
// Only what the upstream itself says is evidence: the status, headers and
// the structured fields of the error body (error.type, error.code,
// error.status, Google's error.details, resets_in_seconds). Free text is
// not, because upstreams echo the client's input in their messages
// (OpenAI "Unrecognized request argument supplied: <field>", Anthropic
// "<field>: Extra inputs are not permitted", rate-limit messages quoting
// the model). Where a vendor signals a state only in error.message, the
// vendor's known message is matched as a whole or at its start, never as
// a substring anywhere:
//   - Anthropic 400 invalid_request_error "Your credit balance is too low
//     to access the Anthropic API. ..." (NoCredit) and "This organization
//     has been disabled." (Forbidden): the message must start with the
//     vendor's sentence and hold no ':' (Anthropic puts an echoed field
//     path first, as "<path>: <problem>"), and must not have been cut.
//   - OpenAI/Groq 429 "Rate limit reached for <model> in organization
//     <org> on <limit>: ... Please try again in 20s. ...": the limit
//     ("per day", RPD, TPD) and the wait are read only after the last
//     " in organization ", past the client-controlled model segment.
//   - A wait phrase ("Please try again in 20s.", "Please retry in 17s.",
//     "Please retry after 6 seconds.", "Try again in 5 seconds.", "Please
//     wait 30 seconds") counts only at the start of a sentence, after the
//     last mention of model, the last one winning.
//
// Classes:
//   - 2xx, 3xx: Success.
//   - 429: RateLimited, with the upstream's wait as RetryAfter when one is
//     named in Retry-After / retry-after-ms (Source "retry-after"), in the
//     body (Google RetryInfo.retryDelay, resets_in_seconds, a wait phrase
//     as above; Source "body") or in the reset header of an exhausted
//     limit (x-ratelimit-reset-requests/-tokens with remaining 0,
//     anthropic-ratelimit-*-reset; Source "reset-header"). When the
//     structured fields say a daily, monthly or billing quota is spent
//     (code or type insufficient_quota, billing_hard_limit_reached,
//     billing_not_active, credit_balance_exhausted, usage_limit_reached,
//     quota_exceeded; a Google QuotaFailure quotaId "...PerDay..." or
//     "...PerMonth..."; an OpenAI/Groq limit "per day") and no wait
//     shorter than ShortWait is named: QuotaExhausted until the named
//     reset, else the next UTC midnight (Source "utc-midnight").
//     A 429 saying the request alone exceeds the key's limit (OpenAI/Groq
//     "Request too large for <model> in organization <org> on ...: Limit
//     L, Requested R", R > L): ClientError with OverLimit L and
//     OverLimitOrg <org>.
//   - 401: InvalidKey. 402: NoCredit. The Anthropic 400 messages above:
//     NoCredit, Forbidden. Google's 400 INVALID_ARGUMENT whose ErrorInfo
//     (error.details[].reason) is API_KEY_INVALID or API_KEY_EXPIRED:
//     InvalidKey.
//   - 403 and 404 about the model: ModelNotFound (the key is benched for
//     that model only). That is a structured code saying the model is
//     unknown or not permitted (model_not_found, model_not_allowed,
//     model_not_available, DeploymentNotFound ...), a vendor's model
//     message (Anthropic not_found_error "model: <name>", OpenAI "The
//     model `<name>` ...", Google "models/<name> ...", Ollama
//     `model "<name>" not found`), or a message naming model. Any other
//     403: Forbidden (key level); any other 404: ClientError. A 403 whose
//     error.metadata has flagged_input or reasons (OpenRouter's
//     moderation refusal of the input) is the request's: ClientError.
//   - 408: Timeout. 5xx (529 overloaded included): ServerError, with a
//     Retry-After hint when sent; but a 5xx whose error.code (or type) is
//     context_length_exceeded or string_above_max_length is the
//     request's: ClientError.
//   - other 4xx (400, 413, 422 ...): ClientError, no retry, no cooldown.
//
// Message is built from the status, the upstream's error code and the
// wait; it never copies the body, which may quote the key.
func ClassifyResponseFor(model string, status int, h http.Header, bodyPrefix []byte, now time.Time) Outcome {
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
		classify429(&o, h, &e, model, now)
	case status == http.StatusUnauthorized:
		o.Kind = InvalidKey
		o.Message = describe("invalid key", status, e.code, "")
	case status == http.StatusPaymentRequired:
		o.Kind = NoCredit
		o.Message = describe("out of credit", status, e.code, "")
	case status == http.StatusForbidden && e.flagged:
		// OpenRouter's moderation refusal ("Your chosen model requires
		// moderation and your input was flagged", error.metadata.reasons
		// and flagged_input, per its errors docs): the client's input,
		// never the key's tier or permission, whatever model it names
		o.Kind = ClientError
		o.Message = describe("input flagged by moderation", status, e.code, "")
	case (status == http.StatusForbidden || status == http.StatusNotFound) && e.aboutModel(model):
		o.Kind = ModelNotFound
		if status == http.StatusForbidden {
			o.Message = describe("model not permitted", status, e.code, "")
		} else {
			o.Message = describe("model not found", status, e.code, "")
		}
	case status == http.StatusForbidden:
		o.Kind = Forbidden
		o.Message = describe("forbidden (tier or permission)", status, e.code, "")
	case status == http.StatusNotFound:
		o.Kind = ClientError
		o.Message = describe("not found", status, e.code, "")
	case status == http.StatusRequestTimeout:
		o.Kind, o.Message = Timeout, "upstream timeout (408)"
	case status >= 500 && e.codeIs("context_length_exceeded", "string_above_max_length"):
		// a request too long for the model, answered with a 5xx (some
		// OpenAI-compatible servers do): the structured code says it is
		// the request's, as in an in-band error (translate's
		// StreamErrorStatus: 400), and a client must not cool every key
		// of a pool with one long prompt
		o.Kind = ClientError
		o.Message = describe("request rejected", status, e.code, "")
	case status >= 500:
		o.Kind = ServerError
		if d, ok := RetryAfter(h, now); ok {
			o.RetryAfter, o.HasRetryAfter, o.Source = d, true, "retry-after"
		}
		what := "upstream error"
		if status == 529 || e.overloaded() {
			what = "upstream overloaded"
		}
		o.Message = describe(what, status, e.code, hintText(o))
	case status == http.StatusBadRequest && e.reasonIs("API_KEY_INVALID", "API_KEY_EXPIRED"):
		o.Kind = InvalidKey
		o.Message = describe("invalid key", status, e.code, "")
	case status == http.StatusBadRequest && e.typeIs("invalid_request_error") && e.vendorMessage("Your credit balance is too low"):
		o.Kind = NoCredit
		o.Message = describe("out of credit", status, e.code, "")
	case status == http.StatusBadRequest && e.typeIs("invalid_request_error") && e.vendorMessage("This organization has been disabled"):
		o.Kind = Forbidden
		o.Message = describe("organization disabled", status, e.code, "")
	default:
		o.Kind = ClientError
		o.Message = describe("request rejected", status, e.code, "")
	}
	return o
}

// classify429 fills o for a 429 answer.
func classify429(o *Outcome, h http.Header, e *errorBody, model string, now time.Time) {
	if limit, org, ok := e.tooLargeForLimit(model); ok {
		// the request alone exceeds the key's limit: waiting will not
		// help, and the key is as ready as it was
		o.Kind = ClientError
		o.OverLimit, o.OverLimitOrg = limit, org
		o.Message = describe("request larger than the key's limit", 429, e.code, "")
		return
	}
	wait, src := time.Duration(0), ""
	if d, ok := RetryAfter(h, now); ok {
		wait, src = d, "retry-after"
	} else if d, ok := e.retryHint(model); ok {
		wait, src = d, "body"
	} else if d, ok := resetHeaderHint(h, now); ok {
		wait, src = d, "reset-header"
	}
	quota := e.quotaSpent(model)
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

// errorBody is what ClassifyResponseFor reads from an error body: the
// structured fields, and the vendor's message for the few states a vendor
// signals only in text.
type errorBody struct {
	code       string   // error.code, else error.type, else error.status (sanitised), for Outcome.Code
	typ        string   // error.type, lower-cased
	errCode    string   // error.code (a string or a number's text), lower-cased
	message    string   // error.message, else a string "error", else the top-level message
	cut        bool     // message was cut short by the body limit
	retryDelay string   // Google RetryInfo.retryDelay, e.g. "17s"
	reasons    []string // Google ErrorInfo details[].reason, e.g. "API_KEY_INVALID"
	quotaIDs   []string // Google QuotaFailure violations[].quotaId
	resetsIn   float64  // resets_in_seconds (Codex usage_limit_reached)
	hasResets  bool
	// flagged: error.metadata has flagged_input or reasons (OpenRouter's
	// moderation error: the client's input was flagged)
	flagged bool
}

// bodyFields are the scalar fields of one level of an error body.
type bodyFields struct {
	message, typ, code, status, resets string
}

func (f *bodyFields) set(name, v string) {
	switch name {
	case "message":
		f.message = v
	case "type":
		f.typ = v
	case "code":
		f.code = v
	case "status":
		f.status = v
	case "resets_in_seconds":
		f.resets = v
	}
}

// bodyFrame is one open object or array while parseErrorBody walks the
// body's tokens.
type bodyFrame struct {
	name    string // the key this container is the value of; "[]" for an array element
	obj     bool
	wantKey bool   // an object whose next token is a key
	key     string // an object's key whose value is being read
}

// parseErrorBody reads the common error shapes
// ({"error":{"type","code","message","status","details"}},
// {"error":"..."}, top-level "type"/"code"/"message"; Google's
// OpenAI-compatible endpoint's [{"error":{...}}], its first element) with
// encoding/json's tokenizer, so a body cut short by MaxClassifyBody still
// yields every
// field read before the cut, and a message cut in the middle yields its
// first part (errorBody.cut). A body that is not a JSON object (an HTML
// page, plain text) yields nothing.
func parseErrorBody(b []byte) errorBody {
	var e errorBody
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '[' {
		// Google's OpenAI-compatible endpoint: [{"error":{…}}]; the
		// first element is read
		t = bytes.TrimSpace(t[1:])
	}
	if len(t) == 0 || t[0] != '{' {
		return e
	}
	var top, inner bodyFields
	var errString string
	errObject, cutTop, cutInner := false, false, false
	stack := make([]bodyFrame, 0, 8)
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			// cut short, or not JSON from here on: keep what was read, and
			// a message whose string was cut by the limit
			if n := len(stack); n > 0 && stack[n-1].obj && !stack[n-1].wantKey && stack[n-1].key == "message" &&
				(n == 1 || n == 2 && stack[1].name == "error") {
				if s, ok := cutString(t[dec.InputOffset():]); ok {
					if n == 1 {
						top.message, cutTop = s, true
					} else {
						inner.message, cutInner = s, true
					}
				}
			}
			break
		}
		n := len(stack)
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:n-1]
			if n > 1 && stack[n-2].obj {
				stack[n-2].wantKey = true
			}
			if n == 1 {
				break // the root object is complete
			}
			continue
		}
		if n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].wantKey = false
			continue
		}
		if d, ok := tok.(json.Delim); ok { // '{' or '['
			name := "[]"
			if n > 0 && stack[n-1].obj {
				name = stack[n-1].key
			}
			if n == 1 && name == "error" && d == '{' {
				errObject = true
			}
			stack = append(stack, bodyFrame{name: name, obj: d == '{', wantKey: d == '{'})
			continue
		}
		if n == 0 {
			break
		}
		v := scalarText(tok)
		key := stack[n-1].key
		switch {
		case n == 1 && key == "error":
			errString = v
		case n == 1:
			top.set(key, v)
		case n == 2 && stack[1].name == "error":
			inner.set(key, v)
		case n == 3 && stack[1].name == "error" && stack[2].name == "metadata" && key == "flagged_input",
			n == 4 && stack[1].name == "error" && stack[2].name == "metadata" && stack[3].name == "reasons":
			e.flagged = true // OpenRouter's ModerationErrorMetadata
		case n == 4 && stack[1].name == "error" && stack[2].name == "details" && key == "retryDelay":
			e.retryDelay = v // details[].retryDelay (RetryInfo)
		case n == 4 && stack[1].name == "error" && stack[2].name == "details" && key == "reason":
			e.reasons = append(e.reasons, v) // details[].reason (ErrorInfo)
		case n == 6 && stack[1].name == "error" && stack[2].name == "details" && stack[4].name == "violations" && key == "quotaId":
			e.quotaIDs = append(e.quotaIDs, v) // details[].violations[].quotaId (QuotaFailure)
		}
		if stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	f := &top
	if errObject {
		f = &inner
	}
	for _, c := range []string{f.code, f.typ, f.status} {
		if c := sanitizeCode(c); c != "" && c != "error" {
			e.code = c
			break
		}
	}
	e.typ, e.errCode = strings.ToLower(f.typ), strings.ToLower(f.code)
	switch {
	case errObject:
		e.message, e.cut = inner.message, cutInner
	case errString != "":
		e.message = errString
	default:
		e.message, e.cut = top.message, cutTop
	}
	for _, r := range []string{inner.resets, top.resets} {
		if v, err := strconv.ParseFloat(r, 64); err == nil {
			e.resetsIn, e.hasResets = v, true
			break
		}
	}
	return e
}

// scalarText returns a JSON token's text: a string's value, a number's
// digits; "" for true, false and null.
func scalarText(tok json.Token) string {
	switch v := tok.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

// cutString decodes a JSON string literal cut short by the body limit
// (rest starts at the value, after the key): the part before the cut,
// with an escape sequence the cut split dropped.
func cutString(rest []byte) (string, bool) {
	rest = bytes.TrimLeft(rest, " \t\r\n:")
	if len(rest) < 2 || rest[0] != '"' {
		return "", false
	}
	buf := make([]byte, 0, len(rest)+1)
	for i := 0; i < 7 && len(rest) > 1; i++ { // \uXXXX is the longest escape
		var s string
		buf = append(append(buf[:0], rest...), '"')
		if json.Unmarshal(buf, &s) == nil {
			return s, true
		}
		rest = rest[:len(rest)-1]
	}
	return "", false
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

// reasonIs reports whether a Google ErrorInfo in error.details names one
// of reasons (upper case, as Google writes them).
func (e *errorBody) reasonIs(reasons ...string) bool {
	for _, r := range e.reasons {
		for _, want := range reasons {
			if r == want {
				return true
			}
		}
	}
	return false
}

// typeIs reports whether error.type is t.
func (e *errorBody) typeIs(t string) bool { return e.typ == t }

// codeIs reports whether error.code or error.type is one of codes
// (lower-case).
func (e *errorBody) codeIs(codes ...string) bool {
	for _, c := range codes {
		if e.errCode == c || e.typ == c {
			return true
		}
	}
	return false
}

// vendorMessage reports whether error.message is the vendor's own
// message that starts with prefix (case-sensitive): complete (not cut by
// the body limit), short, and holding no ':' outside a URL. Anthropic
// reports a problem with the client's input as "<field path>: <problem>",
// so a field named like a vendor message shows up with a ':' after it.
func (e *errorBody) vendorMessage(prefix string) bool {
	m := strings.TrimSpace(e.message)
	return !e.cut && len(m) <= 512 && strings.HasPrefix(m, prefix) &&
		!strings.Contains(strings.ReplaceAll(m, "://", ""), ":")
}

// overloaded reports whether error.type or error.code says the upstream
// is overloaded (Anthropic overloaded_error, OpenAI server_is_overloaded).
func (e *errorBody) overloaded() bool {
	return strings.Contains(e.typ, "overloaded") || strings.Contains(e.errCode, "overloaded")
}

// modelCodes are the error codes and types that say the requested model
// is unknown or not permitted for the key: OpenAI model_not_found (404,
// and 403 "Project ... does not have access to model ..."), Azure
// DeploymentNotFound, and the forms compatible servers use.
var modelCodes = []string{"model_not_found", "model_not_allowed", "model_not_available", "model_not_supported",
	"unsupported_model", "invalid_model", "deploymentnotfound"}

// aboutModel reports whether a 403 or 404 is about the requested model
// rather than the key or the path: a structured code (modelCodes), a
// vendor's model message at the start of error.message (Anthropic
// not_found_error "model: <name>", OpenAI "The model `<name>` does not
// exist ...", Google "models/<name> is not found ...", Ollama
// `model "<name>" not found`), or a message naming model. Whatever the
// client put in the model name can only make the failure model-level,
// never key-level.
func (e *errorBody) aboutModel(model string) bool {
	if e.codeIs(modelCodes...) {
		return true
	}
	m := strings.TrimSpace(e.message)
	switch {
	case e.typ == "not_found_error" && strings.HasPrefix(m, "model: "),
		strings.HasPrefix(m, "The model "),
		strings.HasPrefix(m, "models/"),
		strings.HasPrefix(m, `model "`), strings.HasPrefix(m, "model '"):
		return true
	}
	return model != "" && namesModel(strings.ToLower(m), strings.ToLower(model))
}

// namesModel reports whether the lower-cased message low names the
// lower-cased model as a model: quoted (`x`, "x", 'x') or right after
// "model " / "model: " / "model=" (OpenAI's "does not have access to model
// x"), in OpenRouter's "No endpoints found for x", or after " use " /
// " access to " (relays' "this token may not use x"). The model name is the client's, so a
// bare occurrence anywhere proves nothing: a model named "organization"
// must not turn "This organization has been disabled." into a model-level
// answer.
func namesModel(low, model string) bool {
	for from := 0; ; {
		i := strings.Index(low[from:], model)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(model)
		if i > 0 && end < len(low) {
			if q := low[i-1]; (q == '`' || q == '"' || q == '\'') && low[end] == q {
				return true
			}
		}
		before := low[:i]
		if strings.HasSuffix(before, "model ") || strings.HasSuffix(before, "model: ") || strings.HasSuffix(before, "model=") ||
			strings.HasSuffix(before, "no endpoints found for ") || // OpenRouter
			strings.HasSuffix(before, " use ") || strings.HasSuffix(before, " access to ") { // relays: "may not use x", "no access to x"
			return true
		}
		from = i + 1
	}
}

// trustedFrom returns where, in the lower-cased message low, the text the
// upstream wrote itself begins: after the last mention of the requested
// model, and in an OpenAI/Groq "Rate limit reached for <model> in
// organization <org> on <limit>" or "Request too large for <model> in
// organization <org> on <limit>" message after the last " in
// organization " (the model segment before it is the client's).
func trustedFrom(low, model string) int {
	from := 0
	if model != "" {
		lm := strings.ToLower(model)
		if i := strings.LastIndex(low, lm); i >= 0 {
			from = i + len(lm)
		}
	}
	if strings.HasPrefix(low, "rate limit reached for ") || strings.HasPrefix(low, "request too large for ") {
		const org = " in organization "
		if i := strings.LastIndex(low, org); i >= 0 && i+len(org) > from {
			from = i + len(org)
		}
	}
	return from
}

// waitPhrases are the vendors' wait phrases, lower-cased: OpenAI and Groq
// "Please try again in 20s.", Google "Please retry in 17.5s.", Azure
// "Please retry after 6 seconds." and "Try again in 5 seconds.", GitHub
// Models "Please wait 30 seconds before retrying."
var waitPhrases = []string{"please try again in ", "please retry in ", "please retry after ", "try again in ", "please wait "}

// retryHint returns a wait named in the body: resets_in_seconds, Google
// RetryInfo.retryDelay, or a vendor's wait phrase opening a sentence of
// error.message after the client-controlled part (see trustedFrom); the
// last such phrase wins.
func (e *errorBody) retryHint(model string) (time.Duration, bool) {
	if e.hasResets && e.resetsIn >= 0 {
		if d, ok := hintDuration(e.resetsIn, time.Second); ok {
			return d, true
		}
	}
	if e.retryDelay != "" {
		if d, ok := parseWait(e.retryDelay); ok {
			return d, true
		}
	}
	low := strings.ToLower(e.message)
	from := trustedFrom(low, model)
	best, bestAt := time.Duration(0), -1
	for _, p := range waitPhrases {
		for end := len(low); ; {
			i := strings.LastIndex(low[:end], p)
			if i < from {
				break
			}
			if sentenceStart(low, i) {
				if d, ok := parseWait(low[i+len(p):]); ok && i > bestAt {
					best, bestAt = d, i
				}
				break
			}
			end = i
		}
	}
	return best, bestAt >= 0
}

// sentenceStart reports whether position i of s opens a sentence: the
// start of s, or after '.', '!', '?' or a line break (spaces between).
func sentenceStart(s string, i int) bool {
	j := i
	for j > 0 && s[j-1] == ' ' {
		j--
	}
	if j == 0 {
		return true
	}
	switch s[j-1] {
	case '.', '!', '?', '\n':
		return true
	}
	return false
}

// quotaSpent reports whether a 429 is about a daily, monthly or billing
// quota rather than a per-minute rate limit, from structured fields: a
// billing or quota code or type, a Google QuotaFailure quotaId per day or
// per month, or the limit an OpenAI/Groq "Rate limit reached ..." message
// names after the organization ("on requests per day (RPD)"). Words
// elsewhere in the body (a model name such as "gpt-daily-quota") are not
// evidence.
func (e *errorBody) quotaSpent(model string) bool {
	if e.codeIs("insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "credit_balance_exhausted",
		"usage_limit_reached", "quota_exceeded") {
		return true
	}
	for _, id := range e.quotaIDs {
		if l := strings.ToLower(id); strings.Contains(l, "perday") || strings.Contains(l, "permonth") {
			return true
		}
	}
	low := strings.ToLower(strings.TrimSpace(e.message))
	if !strings.HasPrefix(low, "rate limit reached ") {
		return false
	}
	from := trustedFrom(low, model)
	if from == 0 && !strings.HasPrefix(low, "rate limit reached on ") {
		return false // no anchor: the limit cannot be told from the model
	}
	limit := low[from:]
	for _, sep := range []string{": ", ". "} {
		if i := strings.Index(limit, sep); i >= 0 {
			limit = limit[:i]
		}
	}
	if strings.Contains(limit, "per min") || strings.Contains(limit, "(rpm)") || strings.Contains(limit, "(tpm)") {
		return false
	}
	return strings.Contains(limit, "per day") || strings.Contains(limit, "(rpd)") || strings.Contains(limit, "(tpd)")
}

// tooLargeForLimit reports whether a 429 says that the request by
// itself exceeds the key's limit, so that it can never be served by this
// key however long it waits: OpenAI's "Request too large for <model> in
// organization <org> on tokens per min (TPM): Limit 30000, Requested
// 35064. The input or output tokens must be reduced ..." (Groq's has the
// same words). The message must open with the vendor's "Request too large
// for ", and the limit and the requested amount are read only after the
// client-controlled part (trustedFrom); the requested amount must exceed
// the limit. It returns the limit and the organization named right after
// " in organization " (its first word, quotes and backquotes removed; ""
// when the anchor is the model name only).
func (e *errorBody) tooLargeForLimit(model string) (limit int64, org string, ok bool) {
	low := strings.ToLower(strings.TrimSpace(e.message))
	const head = "request too large for "
	if !strings.HasPrefix(low, head) || e.cut {
		return 0, "", false
	}
	from := trustedFrom(low, model)
	if from == 0 {
		return 0, "", false // no anchor past the model name
	}
	rest := low[from:]
	limit, ok1 := numberAfter(rest, "limit ")
	req, ok2 := numberAfter(rest, "requested ")
	if !ok1 || !ok2 || req <= limit {
		return 0, "", false
	}
	const anchor = " in organization "
	if i := strings.LastIndex(low, anchor); i >= 0 && i+len(anchor) == from {
		w, _, _ := strings.Cut(rest, " ")
		org = strings.Trim(w, "`'\"")
	}
	return limit, org, true
}

// numberAfter returns the integer (digits, commas ignored) right after the
// first occurrence of word in s.
func numberAfter(s, word string) (int64, bool) {
	i := strings.Index(s, word)
	if i < 0 {
		return 0, false
	}
	s = s[i+len(word):]
	var n int64
	digits := 0
	for j := 0; j < len(s) && digits < 18; j++ {
		switch c := s[j]; {
		case c >= '0' && c <= '9':
			n = n*10 + int64(c-'0')
			digits++
		case c == ',' && digits > 0:
		default:
			j = len(s)
		}
	}
	return n, digits > 0
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
		if d := min(max(t.Sub(now), 0), maxHint); !found || d > best {
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
				return clampWait(v * float64(time.Second)), true // bare seconds
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
	return clampWait(total), true
}

// clampWait converts a non-negative wait in nanoseconds to a Duration no
// longer than maxHint: a float beyond the int64 range would otherwise
// convert to a negative Duration ("99999999h" read as no wait at all).
func clampWait(ns float64) time.Duration {
	if ns >= float64(maxHint) {
		return maxHint
	}
	return time.Duration(ns)
}

var waitUnits = map[string]time.Duration{
	"ms": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}
