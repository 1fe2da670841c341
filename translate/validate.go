package translate

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ValidateRequest checks a client request body of dialect d as thoroughly
// as TranslateRequest does when it translates (JSON shape, field types,
// messages/input present, tool results paired with a preceding tool call,
// base64 image data that decodes), without building any output. The
// gateway calls it for same-dialect passthrough, so a request that would
// be rejected when translated is rejected the same way when it is not, and
// never reaches an upstream.
//
// Field checks (per the OpenAI Chat Completions / Responses and Anthropic
// Messages API references) come in two levels. Both levels run here and in
// TranslateRequest:
//   - JSON type: a field the dialect defines as an integer, number, string,
//     boolean, object or array must have that type (null counts as absent);
//     an integer must be written as one ("1024", not "1024.0" or "1e3").
//   - impossible values: token counts (max_tokens, max_completion_tokens,
//     max_output_tokens, thinking.budget_tokens) outside 0..2^31-1,
//     numbers too large for a float64, a negative temperature, top_p outside
//     0..1, n below 1.
//
// The vendor's own ranges and enums (temperature <= 2 for OpenAI and <= 1
// for Anthropic, penalties within -2..2, n <= 128, at most 4 stop
// sequences, max_output_tokens >= 16, budget_tokens >= 1024, roles,
// reasoning efforts, tool_choice values, ...) are enforced only by
// TranslateRequest: a same-dialect upstream may be a compatible server that
// accepts more (temperature up to 2 on an Anthropic-compatible endpoint,
// a role or effort OpenAI added later), and it answers for itself.
//
// Messages are worded as the client's vendor words them: OpenAI
// "Invalid type for 'max_output_tokens': expected an integer, but got a
// string instead." (with Param and Code "invalid_type"), Anthropic
// "max_tokens: Input should be a valid integer". Strings quoted from the
// request are cut to 256 bytes.
//
// Errors are *Error values with client-facing messages (class
// ErrInvalidRequest or ErrRequestTooLarge).
func ValidateRequest(d Dialect, body []byte) error {
	if e := checkBody(body); e != nil {
		return e
	}
	if !d.valid() {
		return invalid("", "unknown dialect")
	}
	if e := validateDecoded(d, body); e != nil {
		return e
	}
	return nil
}

// validateDecoded is ValidateRequest's check past the outline: a decoding
// pass without the vendor's ranges and enums, then the canonical checks.
func validateDecoded(d Dialect, body []byte) *Error {
	req, e := decodeRequest(d, body, false)
	if e != nil {
		if e.untranslatable {
			// valid in its own dialect, only untranslatable: the upstream
			// of the same dialect judges the rest
			return nil
		}
		return e
	}
	return req.validate()
}

// MaxTokenCount is the largest token count (max_tokens,
// max_completion_tokens, max_output_tokens, thinking.budget_tokens) a
// request may carry: 2^31-1. No model comes near it; a larger value is a
// mistake that would otherwise turn into "no limit" or an int64 overflow
// on the way to the upstream.
const MaxTokenCount = 1<<31 - 1

// clipLen is how many bytes of a client-supplied string an error message
// quotes.
const clipLen = 256

// clip cuts a client-supplied string to clipLen bytes (on a UTF-8
// boundary) for quoting in an error message.
func clip(s string) string {
	if len(s) <= clipLen {
		return s
	}
	s = s[:clipLen]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "..."
}

// fpath is a request field path ("messages[2].content[0].text"), built
// as a chain of stack values while decoding and rendered only when an error
// names it, so a valid request costs no path strings.
type fpath struct {
	up   *fpath
	name string // member name (may hold dots: "function.name"); "" for an index
	idx  int
}

// top returns the path of a top-level field.
func top(name string) fpath { return fpath{name: name} }

// dot returns the path of member name of p.
func (p *fpath) dot(name string) fpath { return fpath{up: p, name: name} }

// at returns the path of element i of p.
func (p *fpath) at(i int) fpath { return fpath{up: p, idx: i} }

// String renders the path in OpenAI notation.
func (p fpath) String() string {
	var chain [24]*fpath
	n := 0
	for q := &p; q != nil && n < len(chain); q = q.up {
		chain[n] = q
		n++
	}
	b := make([]byte, 0, 64)
	for k := n - 1; k >= 0; k-- {
		q := chain[k]
		if q.name == "" {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(q.idx), 10)
			b = append(b, ']')
			continue
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = append(b, q.name...)
	}
	return string(b)
}

// checker applies the field checks of ValidateRequest for the client
// dialect d; translating adds the vendor's ranges and enums.
type checker struct {
	d         Dialect
	translate bool

	// root holds the body's top-level members when the caller has read
	// them already (ParseRequest's one walk of the top level), so the
	// decoder does not walk it again; rootSet says it does.
	root    objFields
	rootSet bool

	// dirty is set by a decoder that meets what the client dialect's
	// same-dialect hygiene changes (Anthropic Messages: a blank text block,
	// string content or system, a thinking block with a blank or OpenAI
	// signature, a redacted_thinking block with OpenAI data, as
	// SanitizeAnthropicRequest removes them; OpenAI Chat: a string
	// "reasoning" member of an assistant message without
	// reasoning_content, as ChatReasoningToContent renames it). It may be
	// set when the hygiene then changes nothing, never left unset when it
	// would; it means something only after a decode that succeeded.
	dirty bool

	// members and parts hold buffers a decoder gave back, for the next
	// walk to reuse: an 80 KB request has a few hundred objects and content
	// arrays, read with a handful of buffers instead of one growing buffer
	// each
	members spares[objField]
	parts   spares[canonPart]
	chunk   []canonPart // where keepParts cuts the parts it keeps

	// checkOnly makes the decoder check everything and keep nothing of
	// the canonical form (ParseRequest's pass for Anthropic Messages,
	// whose canonical form is built when a translation first needs it):
	// the cross-message checks of canonRequest.validate run as the
	// messages are read (pair), the first failure kept in pairErr.
	checkOnly bool
	// checked says the body passed a checkOnly pass of the same checks:
	// what costs more than reading (base64 decoding) is not redone
	checked  bool
	calls    map[string]bool // tool call ids met so far; nil until the first
	nmsg     int             // messages as addMessage would have merged them
	lastRole string
	pairErr  *Error

	// seeds are what Request.SessionSeed answers, noted as the decoders
	// walk the conversation (noteSeed), so no query reads it again: the
	// first message (Responses: input item) whose role is "user" (its
	// content; the whole item for Responses) and, for OpenAI Chat, the
	// content of the first one whose role is "system"
	seedUser, seedSys       gjson.Result
	seedUserSet, seedSysSet bool

	// sink is the canonical request a checkOnly pass writes into and
	// drops (newCanon)
	sink canonRequest
	// canonMem, when set, is where a full decode builds the canonical
	// request (newCanon): parseRequest's, allocated with its Request
	canonMem *canonRequest
}

// noteSeed notes the session seeds (see checker.seedUser) in one message
// or input item: item is its value, f its members. The roles are compared
// as SessionSeed's gjson queries (`#(role=="user")`) compare them: a
// string member "role" equal to the name, whatever else the item holds.
func (c *checker) noteSeed(f objFields, item gjson.Result) {
	if c.seedUserSet && (c.seedSysSet || c.d != OpenAIChat) {
		return
	}
	role := f.get("role")
	if role.Type != gjson.String {
		return
	}
	switch {
	case role.Str == "user" && !c.seedUserSet:
		c.seedUserSet = true
		if c.d == OpenAIResponses {
			c.seedUser = item
		} else {
			c.seedUser = f.get("content")
		}
	case role.Str == "system" && c.d == OpenAIChat && !c.seedSysSet:
		c.seedSysSet = true
		c.seedSys = f.get("content")
	}
}

// pair runs canonRequest.validate's check on the parts of one message
// of role, read in checkOnly mode, numbering messages as addMessage
// merges them; the first failure is kept in c.pairErr.
func (c *checker) pair(role string, parts []canonPart) {
	if c.nmsg == 0 || c.lastRole != role || role == "system" {
		c.nmsg++
	}
	c.lastRole = role
	if c.pairErr != nil {
		return
	}
	for j := range parts {
		if c.calls == nil && parts[j].kind == partToolCall {
			c.calls = map[string]bool{} // checkPairing reads a nil map as empty
		}
		if e := checkPairing(c.calls, c.nmsg-1, &parts[j]); e != nil {
			c.pairErr = e
			return
		}
	}
}

// partsOut is what a decoder returns for the parts it collected in
// scratch: a kept copy (keepParts), or in checkOnly mode scratch itself,
// which the caller gives back once it has checked it.
func (c *checker) partsOut(scratch []canonPart) []canonPart {
	if c.checkOnly {
		return scratch
	}
	return c.keepParts(scratch)
}

// onePart is partsOut for a content of one part.
func (c *checker) onePart(p canonPart) []canonPart {
	if c.checkOnly {
		return append(c.parts.take(), p)
	}
	return c.cutParts(p)
}

// spares is a small stack of reusable slices.
type spares[T any] struct {
	s [8][]T
	n int
}

// take returns an empty slice: one given back, else a new one of capacity
// 16.
func (p *spares[T]) take() []T {
	if p.n == 0 {
		return make([]T, 0, 16)
	}
	p.n--
	f := p.s[p.n]
	p.s[p.n] = nil
	return f[:0]
}

// give hands a slice from take back for reuse; a slice grown past
// maxSpareCap is dropped.
func (p *spares[T]) give(f []T) {
	if p.n < len(p.s) && cap(f) <= maxSpareCap {
		p.s[p.n] = f
		p.n++
	}
}

// maxSpareCap bounds the capacity of a slice spares keeps, and so what
// clear zeroes per slice when the pooled parse scratch goes back
// (parseScratch.put): one request with a content array of hundreds of
// parts leaves no large buffer for every later request to clear. An
// object's members or a content array's parts rarely number more; a
// larger slice is used for its request and dropped.
const maxSpareCap = 64

// clear zeroes every slice held, to its capacity: what they held were
// views of a request body, which a pooled spares must not keep reachable.
func (p *spares[T]) clear() {
	for _, f := range p.s[:p.n] {
		clear(f[:cap(f)])
	}
}

// take returns an empty member buffer for an object walk. Each take is
// paired with a give once its walk is done; a walk nested in another
// takes its own. What the buffers hold is views of the body: the checker
// lives no longer than the decoding.
func (c *checker) take() objFields { return c.members.take() }

// give hands a buffer from take back for reuse.
func (c *checker) give(f objFields) { c.members.give(f) }

// keepParts returns a copy of the parts collected in scratch (a slice
// from c.parts.take), nil when there are none, and gives scratch back.
// The copies are cut from a few shared chunks (capacity equal to length,
// so appending to one never writes over its neighbour): a request's
// content arrays cost a few allocations in all instead of one per array
// and per doubling.
func (c *checker) keepParts(scratch []canonPart) []canonPart {
	out := c.cutParts(scratch...)
	c.parts.give(scratch)
	return out
}

// cutParts returns a copy of ps cut from the current chunk (nil for no
// parts); a chunk that cannot hold them is replaced by a new one, 2 parts
// first (a system prompt and one user message: the whole of many small
// requests), then twice the last up to 64, or len(ps) if more.
func (c *checker) cutParts(ps ...canonPart) []canonPart {
	n := len(ps)
	if n == 0 {
		return nil
	}
	if cap(c.chunk)-len(c.chunk) < n {
		c.chunk = make([]canonPart, 0, max(n, min(2*cap(c.chunk), 64), 2))
	}
	start := len(c.chunk)
	c.chunk = append(c.chunk, ps...)
	return c.chunk[start:len(c.chunk):len(c.chunk)]
}

// rootFields returns the top-level members of body: the ones the caller
// read already, else a walk of the top level.
func (c *checker) rootFields(body []byte) objFields {
	if c.rootSet {
		return c.root
	}
	return fieldsOf(gjson.Parse(view(body)))
}

// want is the JSON type a field must have.
type want uint8

const (
	wantInt want = iota + 1
	wantNum
	wantStr
	wantBool
	wantObj
	wantArr
	wantStrOrArr // string or array of parts/items
	wantStrOrObj // tool_choice
)

// present reports whether v is set to something other than null (null is
// "absent" for every optional field, as both vendors treat it).
func present(v gjson.Result) bool { return v.Exists() && v.Type != gjson.Null }

// isInt reports whether a JSON number literal is written as an integer
// (digits with an optional minus sign): both vendors reject 1024.0 and 1e3
// where an integer is expected.
func isInt(raw string) bool {
	if strings.HasPrefix(raw, "-") {
		raw = raw[1:]
	}
	if raw == "" {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return false
		}
	}
	return true
}

// path renders a field path in the client's notation: OpenAI
// "messages[0].content[1].text", Anthropic "messages.0.content.1.text".
func (c *checker) path(p string) string {
	if c.d != AnthropicMessages || strings.IndexByte(p, '[') < 0 {
		return p
	}
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[':
			b = append(b, '.')
		case ']':
		default:
			b = append(b, p[i])
		}
	}
	return string(b)
}

// fail builds the error for path with an OpenAI message and code or an
// Anthropic message, by client dialect.
func (c *checker) fail(path, code, openai, anthropic string) *Error {
	if c.d == AnthropicMessages {
		return &Error{Class: ErrInvalidRequest, Param: path, Message: c.path(path) + ": " + anthropic}
	}
	return &Error{Class: ErrInvalidRequest, Param: path, Code: code, Message: openai}
}

// failAt is fail for a path not rendered yet; openai and anthropic may
// hold "%s" for the rendered path.
func (c *checker) failAt(p fpath, code, openai, anthropic string) *Error {
	ps := p.String()
	return c.fail(ps, code, strings.ReplaceAll(openai, "%s", ps), anthropic)
}

// typeErr reports a field of the wrong JSON type.
func (c *checker) typeErr(p fpath, w want, got gjson.Result) *Error {
	path := p.String()
	var oa, an string
	switch w {
	case wantInt:
		oa, an = "an integer", "Input should be a valid integer"
		if f := got.Num; got.Type == gjson.Number && f != math.Trunc(f) {
			an += ", got a number with a fractional part"
		}
	case wantNum:
		oa, an = "a number", "Input should be a valid number"
	case wantStr:
		oa, an = "a string", "Input should be a valid string"
	case wantBool:
		oa, an = "a boolean", "Input should be a valid boolean"
	case wantObj:
		oa, an = "an object", "Input should be a valid dictionary"
	case wantArr:
		oa, an = "an array", "Input should be a valid list"
	case wantStrOrArr:
		oa, an = "one of a string or array", "Input should be a valid string or a valid list"
	case wantStrOrObj:
		oa, an = "one of a string or object", "Input should be a valid dictionary"
	}
	return c.fail(path, "invalid_type", "Invalid type for '"+path+"': expected "+oa+", but got "+gotKind(got)+" instead.", an)
}

// gotKind names a JSON value's type the way OpenAI's messages do.
func gotKind(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return "a string"
	case gjson.Number:
		if isInt(v.Raw) {
			return "an integer"
		}
		return "a decimal number"
	case gjson.True, gjson.False:
		return "a boolean"
	case gjson.Null:
		return "null"
	}
	if v.IsArray() {
		return "an array"
	}
	return "an object"
}

// missing reports a required field that is absent.
func (c *checker) missing(p fpath) *Error {
	path := p.String()
	return c.fail(path, "missing_required_parameter", "Missing required parameter: '"+path+"'.", "Field required")
}

// badValue reports a string outside the vendor's enum.
func (c *checker) badValue(p fpath, got string, values []string) *Error {
	path := p.String()
	var oa, an strings.Builder
	for i, v := range values {
		switch {
		case i == 0:
		case i == len(values)-1 && len(values) > 2:
			oa.WriteString(", and ")
		case i == len(values)-1:
			oa.WriteString(" and ")
		default:
			oa.WriteString(", ")
		}
		switch {
		case i == 0:
		case i == len(values)-1:
			an.WriteString(" or ")
		default:
			an.WriteString(", ")
		}
		oa.WriteString("'" + v + "'")
		an.WriteString("'" + v + "'")
	}
	return c.fail(path, "invalid_value", "Invalid value: '"+clip(got)+"'. Supported values are: "+oa.String()+".", "Input should be "+an.String())
}

// outOfRange reports a number below min (below) or above max.
func (c *checker) outOfRange(p fpath, isInteger, below bool, bound float64, raw string) *Error {
	path := p.String()
	kind := "decimal"
	if isInteger {
		kind = "integer"
	}
	b := strconv.FormatFloat(bound, 'f', -1, 64)
	if math.Abs(bound) > 1<<63 {
		b = strconv.FormatFloat(bound, 'g', -1, 64)
	}
	got := clip(raw)
	if below {
		return c.fail(path, kind+"_below_min_value",
			"Invalid '"+path+"': "+kind+" below minimum value. Expected a value >= "+b+", but got "+got+" instead.",
			"Input should be greater than or equal to "+b)
	}
	return c.fail(path, kind+"_above_max_value",
		"Invalid '"+path+"': "+kind+" above maximum value. Expected a value <= "+b+", but got "+got+" instead.",
		"Input should be less than or equal to "+b)
}

// tooLong reports an array with more than max items.
func (c *checker) tooLong(p fpath, max, n int) *Error {
	path := p.String()
	return c.fail(path, "array_above_max_length",
		sprintf("Invalid '%s': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", path, max, n),
		sprintf("List should have at most %d items after validation, not %d", max, n))
}

// bounds are the limits of a numeric field: min/max always apply (values
// no upstream accepts), vmin/vmax only when translating (the vendor's
// documented range). Unset bounds are infinite.
type bounds struct{ min, max, vmin, vmax float64 }

var (
	noBounds     = bounds{math.Inf(-1), math.Inf(1), math.Inf(-1), math.Inf(1)}
	tokenBounds  = bounds{0, MaxTokenCount, 0, MaxTokenCount}
	unitBounds   = bounds{0, 1, 0, 1}
	int64Bounds  = bounds{math.MinInt64, math.MaxInt64, math.MinInt64, math.MaxInt64}
	nonNegBounds = bounds{0, math.Inf(1), 0, math.Inf(1)}
)

// withVendor returns b with the vendor range vmin..vmax.
func (b bounds) withVendor(vmin, vmax float64) bounds {
	b.vmin, b.vmax = math.Max(b.min, vmin), math.Min(b.max, vmax)
	return b
}

// check applies the bounds to f (raw is the literal, for the message).
func (c *checker) check(path fpath, isInteger bool, b bounds, f float64, raw string) *Error {
	lo, hi := b.min, b.max
	if c.translate {
		lo, hi = b.vmin, b.vmax
	}
	// a value beyond float64 breaks every bound; an infinite bound is
	// reported as the vendor's, or float64's
	if f < lo || math.IsInf(f, -1) {
		return c.outOfRange(path, isInteger, true, finite(lo, b.vmin, -math.MaxFloat64), raw)
	}
	if f > hi || math.IsInf(f, 1) {
		return c.outOfRange(path, isInteger, false, finite(hi, b.vmax, math.MaxFloat64), raw)
	}
	return nil
}

// finite returns the first of bounds that is finite.
func finite(bounds ...float64) float64 {
	for _, b := range bounds {
		if !math.IsInf(b, 0) {
			return b
		}
	}
	return 0
}

// integer reads an optional integer field within b. set is false when it
// is absent or null.
func (c *checker) integer(v gjson.Result, path fpath, b bounds) (n int64, set bool, err *Error) {
	if !present(v) {
		return 0, false, nil
	}
	if v.Type != gjson.Number || !isInt(v.Raw) {
		return 0, false, c.typeErr(path, wantInt, v)
	}
	n, perr := strconv.ParseInt(v.Raw, 10, 64)
	f := float64(n)
	if perr != nil { // beyond int64: certainly out of range
		f = math.Inf(1)
		if strings.HasPrefix(v.Raw, "-") {
			f = math.Inf(-1)
		}
	}
	if e := c.check(path, true, b, f, v.Raw); e != nil {
		return 0, false, e
	}
	return n, true, nil
}

// number reads an optional number field within b and returns its literal
// ("" when absent or null).
func (c *checker) number(v gjson.Result, path fpath, b bounds) (string, *Error) {
	if !present(v) {
		return "", nil
	}
	if v.Type != gjson.Number {
		return "", c.typeErr(path, wantNum, v)
	}
	f, _ := strconv.ParseFloat(v.Raw, 64) // ±Inf beyond float64
	if e := c.check(path, false, b, f, v.Raw); e != nil {
		return "", e
	}
	return v.Raw, nil
}

// str reads an optional string field.
func (c *checker) str(v gjson.Result, path fpath) (string, *Error) {
	if !present(v) {
		return "", nil
	}
	if v.Type != gjson.String {
		return "", c.typeErr(path, wantStr, v)
	}
	return v.Str, nil
}

// reqStr reads a required string field (null counts as missing).
func (c *checker) reqStr(v gjson.Result, path fpath) (string, *Error) {
	if !present(v) {
		return "", c.missing(path)
	}
	return c.str(v, path)
}

// reqNonEmpty reads a required string field that may not be empty (an id or
// a name): missing, not a string, or "" (invalid_request_error
// "…: required") are errors.
func (c *checker) reqNonEmpty(v gjson.Result, path fpath) (string, *Error) {
	s, e := c.reqStr(v, path)
	if e == nil && s == "" {
		e = invalidAt(path, ": required")
	}
	return s, e
}

// boolean reads an optional boolean field.
func (c *checker) boolean(v gjson.Result, path fpath) (val, set bool, err *Error) {
	if !present(v) {
		return false, false, nil
	}
	if !v.IsBool() {
		return false, false, c.typeErr(path, wantBool, v)
	}
	return v.Bool(), true, nil
}

// object checks an optional object field.
func (c *checker) object(v gjson.Result, path fpath) *Error {
	if present(v) && !v.IsObject() {
		return c.typeErr(path, wantObj, v)
	}
	return nil
}

// array checks an optional array field.
func (c *checker) array(v gjson.Result, path fpath) *Error {
	if present(v) && !v.IsArray() {
		return c.typeErr(path, wantArr, v)
	}
	return nil
}

// enum checks, when translating, that a string field set to s (""
// = absent) is one of values.
func (c *checker) enum(s string, path fpath, values ...string) *Error {
	if !c.translate || s == "" {
		return nil
	}
	for _, v := range values {
		if s == v {
			return nil
		}
	}
	return c.badValue(path, s, values)
}

// strEnum reads an optional string field and checks its enum.
func (c *checker) strEnum(v gjson.Result, path fpath, values ...string) (string, *Error) {
	s, err := c.str(v, path)
	if err == nil {
		err = c.enum(s, path, values...)
	}
	return s, err
}

// strList reads an optional array of strings (stop sequences); when
// single is true a lone string is accepted too (OpenAI stop). max > 0
// limits the count when translating.
func (c *checker) strList(v gjson.Result, path fpath, single bool, max int) ([]string, *Error) {
	if !present(v) {
		return nil, nil
	}
	if single && v.Type == gjson.String {
		return []string{v.Str}, nil
	}
	if !v.IsArray() {
		if single {
			return nil, c.typeErr(path, wantStrOrArr, v)
		}
		return nil, c.typeErr(path, wantArr, v)
	}
	var out []string
	var err *Error
	i := 0
	v.ForEach(func(_, s gjson.Result) bool {
		if s.Type != gjson.String {
			err = c.typeErr(path.at(i), wantStr, s)
			return false
		}
		out = append(out, s.Str)
		i++
		return true
	})
	if err == nil && c.translate && max > 0 && len(out) > max {
		err = c.tooLong(path, max, len(out))
	}
	return out, err
}

// stringMap checks OpenAI metadata: an object of string values; when
// translating, at most 16 pairs, keys up to 64 and values up to 512
// characters (OpenAI API reference, "metadata").
func (c *checker) stringMap(v gjson.Result, path fpath) *Error {
	if !present(v) {
		return nil
	}
	if !v.IsObject() {
		return c.typeErr(path, wantObj, v)
	}
	var err *Error
	n := 0
	v.ForEach(func(k, s gjson.Result) bool {
		n++
		p := path.dot(clip(k.Str))
		if s.Type != gjson.String {
			err = c.typeErr(p, wantStr, s)
			return false
		}
		if !c.translate {
			return true
		}
		if l := utf8.RuneCountInString(k.Str); l > 64 {
			err = c.failAt(p, "string_above_max_length", sprintf("Invalid '%%s': key too long. Expected a key with maximum length 64, but got a key with length %d instead.", l), "String should have at most 64 characters")
			return false
		}
		if l := utf8.RuneCountInString(s.Str); l > 512 {
			err = c.failAt(p, "string_above_max_length", sprintf("Invalid '%%s': string too long. Expected a string with maximum length 512, but got a string with length %d instead.", l), "String should have at most 512 characters")
			return false
		}
		return true
	})
	if err == nil && c.translate && n > 16 {
		err = c.failAt(path, "object_above_max_properties", sprintf("Invalid '%%s': too many properties. Expected an object with at most 16 properties, but got an object with %d properties instead.", n), "Dictionary should have at most 16 items")
	}
	return err
}

// efforts are the reasoning efforts OpenAI accepts (reasoning_effort,
// reasoning.effort).
var openAIEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// errorBodyCode is errorBody for OpenAI dialects with an explicit
// error.code.
func errorBodyCode(d Dialect, class ErrorClass, message, param, code string) []byte {
	typ, _ := class.openAIType()
	b := make([]byte, 0, 96+len(message)+len(param))
	return appendOpenAIError(b, typ, message, param, code)
}

// invalidAt is invalid for the field at p, with the message p's rendering
// followed by msg.
func invalidAt(p fpath, msg string) *Error {
	ps := p.String()
	return &Error{Class: ErrInvalidRequest, Param: ps, Message: ps + msg}
}

// unsupportedAt is unsupported for the field at p, with the message p's
// rendering followed by msg.
func unsupportedAt(p fpath, msg string) *Error {
	e := invalidAt(p, msg)
	e.untranslatable = true
	return e
}
