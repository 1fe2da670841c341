package translate

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// MaxRequestSize is the largest request body the translation functions
// accept (32 MiB). The HTTP handler should enforce its own, usually smaller,
// limit while reading; this is a last line of defence.
const MaxRequestSize = 32 << 20

// RequestInfo validates the outline of a request body of dialect d and
// returns its model and stream flag. It checks that the body is a JSON
// object within MaxRequestSize, that "model" is a non-empty string, that
// "stream" (if present) is a boolean, and that the conversation field has
// the right type: "messages" must be an array (OpenAIChat,
// AnthropicMessages), "input" a string or an array (OpenAIResponses).
//
// The error is an *Error whose message is client-facing, free of secrets
// and worded as the client's vendor words it (see ValidateRequest); the
// handler renders it with (*Error).Body as a 400. The returned model is a
// copy, not a view of body.
func RequestInfo(d Dialect, body []byte) (model string, stream bool, err error) {
	if e := checkBody(body); e != nil {
		return "", false, e
	}
	if !d.valid() {
		return "", false, invalid("", "unknown dialect")
	}
	o, e := outline(d, body)
	if e != nil {
		return "", false, e
	}
	// the model outlives the call; the body's bytes may not
	return strings.Clone(o.model.Str), o.stream, nil
}

// outlineFields are the top-level fields RequestInfo checks, as views of
// the body.
type outlineFields struct {
	model  gjson.Result
	stream bool
	conv   gjson.Result // "messages" (Chat, Anthropic) or "input" (Responses)
	sys    gjson.Result // "system" (Anthropic) or "instructions" (Responses)
}

// outline reads and checks the top-level fields of RequestInfo in a body
// checkBody accepted, for the valid dialect d.
func outline(d Dialect, body []byte) (o outlineFields, err *Error) {
	sysName := "system"
	if d == OpenAIResponses {
		sysName = "instructions"
	}
	// read in place: GetManyBytes would copy "messages", most of the body
	res := gjson.GetMany(view(body), "model", "stream", "messages", "input", sysName)
	return outlineFrom(d, res[0], res[1], res[2], res[3], res[4])
}

// outlineOf is outline on the top-level members of the body.
func outlineOf(d Dialect, root objFields) (o outlineFields, err *Error) {
	sysName := "system"
	if d == OpenAIResponses {
		sysName = "instructions"
	}
	return outlineFrom(d, root.get("model"), root.get("stream"), root.get("messages"), root.get("input"), root.get(sysName))
}

// outlineFrom checks the top-level members outline reads.
func outlineFrom(d Dialect, m, s, msgs, input, sys gjson.Result) (o outlineFields, err *Error) {
	c := &checker{d: d}
	if !m.Exists() {
		return o, c.missing(top("model"))
	}
	if m.Type != gjson.String {
		return o, c.typeErr(top("model"), wantStr, m)
	}
	if m.Str == "" {
		return o, invalid("model", "model: must be a non-empty string")
	}
	stream, _, e := c.boolean(s, top("stream"))
	if e != nil {
		return o, e
	}
	o.model, o.stream = m, stream
	switch d {
	case OpenAIChat, AnthropicMessages:
		if !present(msgs) {
			return o, c.missing(top("messages"))
		}
		if !msgs.IsArray() {
			return o, c.typeErr(top("messages"), wantArr, msgs)
		}
		o.conv = msgs
	default:
		if !present(input) {
			return o, c.missing(top("input"))
		}
		if input.Type != gjson.String && !input.IsArray() {
			return o, c.typeErr(top("input"), wantStrOrArr, input)
		}
		o.conv = input
	}
	if d != OpenAIChat {
		o.sys = sys
	}
	return o, nil
}

// checkBody rejects bodies that are too large, not valid JSON or not an
// object. It is one full parse of the body (see ParseCount).
func checkBody(body []byte) *Error {
	if e := checkSize(body); e != nil {
		return e
	}
	countParse()
	return checkJSON(body)
}

// checkSize rejects a body over MaxRequestSize.
func checkSize(body []byte) *Error {
	if len(body) > MaxRequestSize {
		return &Error{Class: ErrRequestTooLarge, Message: sprintf("request body too large: %d bytes, limit %d", len(body), MaxRequestSize)}
	}
	return nil
}

// checkJSON rejects a body that is not a JSON object, nests too deep or
// repeats a top-level key.
func checkJSON(body []byte) *Error {
	t := bytes.TrimLeft(body, " \t\r\n")
	if len(t) == 0 {
		return invalid("", "request body is empty; expected a JSON object")
	}
	if t[0] != '{' {
		return invalid("", "request body must be a JSON object")
	}
	if tooDeep(body, MaxNesting) {
		// checked before any parse: a parser recurses once per level, so
		// an 8 MB "[[[[..." would cost far more memory than its size
		return invalid("", "request body nests objects and arrays more than %d levels deep", MaxNesting)
	}
	if !gjson.ValidBytes(body) {
		return invalid("", "request body is not valid JSON")
	}
	if e := duplicateTopLevelKey(body); e != nil {
		return e
	}
	return nil
}

// MaxNesting is the deepest nesting of objects and arrays a request body
// may have. Real requests (JSON Schemas of tools included) stay far below
// it.
const MaxNesting = 256

// tooDeep reports whether body nests objects and arrays more than max
// levels deep, in one pass over the bytes that skips strings, without
// parsing (and so without recursion).
func tooDeep(body []byte, max int) bool {
	depth := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			// skip the string: its end is the first quote after an even
			// run of backslashes (IndexByte jumps over the text itself)
			for {
				j := bytes.IndexByte(body[i+1:], '"')
				if j < 0 {
					return false // unterminated: not JSON, and no deeper
				}
				i += 1 + j
				k := i - 1
				for body[k] == '\\' { // stops at the opening quote at the latest
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
		case '{', '[':
			depth++
			if depth > max {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// duplicateTopLevelKey returns the error for the first top-level member
// name of a JSON object that repeats an earlier one, exactly or up to
// letter case, or that differs from a member the gateway reads only in
// letter case (nameSet), or nil.
func duplicateTopLevelKey(body []byte) *Error {
	var seen nameSet
	var e *Error
	gjson.Parse(view(body)).ForEach(func(k, _ gjson.Result) bool { // in place: ParseBytes copies the body
		name := k.String()
		if prev, ok := seen.add(name); ok {
			e = repeatedMember(name, prev)
			return false
		}
		return true
	})
	return e
}

// SetModel rewrites the top-level "model" field of a JSON object body,
// leaving every other byte as it was (used for passthrough). When the
// field already holds model, body is returned unchanged (no copy);
// otherwise the result is one new buffer of exactly the new size.
func SetModel(body []byte, model string) ([]byte, error) {
	cur := gjson.Get(view(body), "model")
	if cur.Type == gjson.String && cur.Str == model {
		return body, nil
	}
	if cur.Exists() && cur.Index > 0 {
		lit := appendString(make([]byte, 0, len(model)+2), model)
		return splice(body, cur.Index, len(cur.Raw), lit), nil
	}
	out, err := sjson.SetBytes(body, "model", model)
	if err != nil {
		return nil, invalid("model", "cannot set model: request body is not a JSON object")
	}
	return out, nil
}

// splice returns a new buffer holding body with the n bytes at off
// replaced by repl: one allocation of exactly the result's size, written
// once (bytes.Join allocates without zeroing first, which for an 80 KB
// body is a pass over it saved).
func splice(body []byte, off, n int, repl []byte) []byte {
	return bytes.Join([][]byte{body[:off], repl, body[off+n:]}, nil)
}

// TranslateRequest converts a request body from the client's dialect `from`
// into the upstream dialect `to` and sets its model to upstreamModel (when
// upstreamModel is "", the client's model is kept).
//
// When from == to the body is passed through byte for byte except for the
// "model" field (SetModel) and, for AnthropicMessages, the blank text
// blocks SanitizeAnthropicRequest removes; nothing is re-encoded and
// unknown fields survive. Otherwise the body is decoded into the canonical form and
// encoded for `to`; fields without a counterpart are dropped (see
// docs/translation-dropped-fields.md). When the translated request streams
// and `to` is OpenAIChat, stream_options.include_usage is set to true so the
// final usage chunk arrives.
//
// Before translating, the body is checked as ValidateRequest describes,
// with the vendor's ranges and enums too (a value the client's vendor
// would refuse is refused here, in its words, never dropped or coerced);
// a same-dialect passthrough is not checked here (call ValidateRequest).
//
// Supported directions: any of OpenAIChat, AnthropicMessages and
// OpenAIResponses to any of them.
// Errors are *Error values with client-facing messages (class
// ErrInvalidRequest, or ErrRequestTooLarge).
func TranslateRequest(from, to Dialect, body []byte, upstreamModel string) ([]byte, error) {
	if e := checkBody(body); e != nil {
		return nil, e
	}
	if from == to {
		if to == AnthropicMessages {
			// the one exception to byte for byte: blank text blocks, which
			// Anthropic always refuses (a cheap scan; most bodies are
			// returned as they are)
			body = SanitizeAnthropicRequest(body)
		}
		if upstreamModel == "" {
			return body, nil
		}
		return SetModel(body, upstreamModel)
	}
	if !from.valid() || !to.valid() {
		return nil, invalid("", "translation from %s to %s is not supported", from, to)
	}
	req, err := decodeRequest(from, body, true)
	if err != nil {
		return nil, err
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	return encodeCanon(req, to, upstreamModel)
}

// decodeRequest decodes a request of dialect from into the canonical form.
// translate adds the vendor's ranges and enums to the field checks (see
// ValidateRequest).
func decodeRequest(from Dialect, body []byte, translate bool) (*canonRequest, *Error) {
	return decodeWith(&checker{d: from, translate: translate}, body)
}

// decodeWith is decodeRequest with the checker given (c.d is the dialect).
func decodeWith(c *checker, body []byte) (*canonRequest, *Error) {
	from := c.d
	var r *canonRequest
	var err *Error
	switch from {
	case OpenAIChat:
		r, err = decodeChatRequest(body, c)
	case AnthropicMessages:
		r, err = decodeAnthropicRequest(body, c)
	default:
		r, err = decodeResponsesRequest(body, c)
	}
	if r != nil {
		r.srcLen = len(body)
	}
	return r, err
}

// AddStreamUsage prepares an OpenAI Chat streaming request for passthrough
// usage accounting: it sets stream_options.include_usage to true (sjson,
// other bytes unchanged) so the upstream sends its final usage-only chunk.
// clientAsked reports whether the client had already asked for it; when it
// had not, call HideUsageChunk on the passthrough StreamTranslator so the
// client's stream stays exactly what it asked for. Non-streaming requests
// and requests that already ask are returned unchanged.
//
// body is a JSON object, as ParseRequest accepts it: its top level is
// read in one walk (see streamMembers).
func AddStreamUsage(body []byte) (out []byte, clientAsked bool) {
	stream, so, iu, ok := streamMembers(body)
	if !ok {
		res := gjson.GetMany(view(body), "stream", "stream_options", "stream_options.include_usage")
		stream, so, iu = res[0], res[1], res[2]
	}
	if stream.Type != gjson.True {
		return body, false
	}
	if iu.Type == gjson.True {
		return body, true
	}
	// splice the field in (one allocation) where its place is known
	const field = `"include_usage":true`
	switch {
	case !so.Exists():
		if end := bytes.LastIndexByte(body, '}'); end > 0 {
			return splice(body, end, 0, []byte(`,"stream_options":{`+field+`}`)), false
		}
	case so.Type == gjson.Null && so.Index > 0:
		return splice(body, so.Index, len(so.Raw), []byte(`{`+field+`}`)), false
	case so.IsObject() && iu.Exists() && iu.Index > 0:
		return splice(body, iu.Index, len(iu.Raw), []byte("true")), false
	case so.IsObject() && !iu.Exists() && so.Index > 0:
		ins := field
		if strings.TrimSpace(so.Raw[1:len(so.Raw)-1]) != "" {
			ins += ","
		}
		return splice(body, so.Index+1, 0, []byte(ins)), false
	}
	out, err := sjson.SetBytes(body, "stream_options.include_usage", true)
	if err != nil {
		return body, false
	}
	return out, false
}

// streamUsageMember is what AddStreamUsage appends to a request without
// stream_options, before its closing brace.
var streamUsageMember = []byte(`,"stream_options":{"include_usage":true}`)

// AddStreamUsage is the package's AddStreamUsage for body, an encoding
// of r for its own dialect (Encode(r.Dialect(), model) for any model),
// with the same result, but without a walk of body's top level when the
// validation pass found no "stream_options" there (the usual request):
// the model rewrite and the same-dialect hygiene leave the top level's
// other members as they are, so the member is appended before body's
// last '}', where AddStreamUsage puts it. For a request of another
// dialect than OpenAI Chat it is AddStreamUsage(body).
func (r *Request) AddStreamUsage(body []byte) (out []byte, clientAsked bool) {
	if r.d == OpenAIChat && r.noStreamOpts {
		if !r.stream {
			return body, false
		}
		if end := bytes.LastIndexByte(body, '}'); end > 0 {
			return splice(body, end, 0, streamUsageMember), false
		}
	}
	return AddStreamUsage(body)
}

// StreamUsageAsked reports whether an OpenAI Chat request asks for the
// usage chunk: "stream" true and "stream_options.include_usage" true (per
// the OpenAI API reference, "stream_options"). Without it OpenAI sends no
// usage-only chunk (choices: []), and a client that reads choices[0] of
// every chunk is not sent one: see HideUsageChunk. body is a JSON object,
// as ParseRequest accepts it.
func StreamUsageAsked(body []byte) bool {
	stream, _, iu, ok := streamMembers(body)
	if !ok {
		res := gjson.GetMany(view(body), "stream", "stream_options.include_usage")
		stream, iu = res[0], res[1]
	}
	return stream.Type == gjson.True && iu.Type == gjson.True
}

// streamMembers reads a request's "stream", "stream_options" and
// "stream_options.include_usage" in one walk of its top level, as gjson's
// lookups of the three paths find them (a lookup scans the body from its
// start, and one that finds nothing scans all of it: the usual request,
// without stream_options, cost three scans), each Index its offset in
// body. ok is false when "stream_options" is there more than
// once (a lookup of the nested path would go on to the next one): the
// caller asks gjson.
func streamMembers(body []byte) (stream, so, iu gjson.Result, ok bool) {
	nStream, nSO := 0, 0
	gjson.Parse(view(body)).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "stream":
			if nStream == 0 {
				stream = v
			}
			nStream++
		case "stream_options":
			if nSO == 0 {
				so = v
			}
			nSO++
		}
		return true
	})
	if nSO > 1 {
		return gjson.Result{}, gjson.Result{}, gjson.Result{}, false
	}
	if iu = so.Get("include_usage"); !iu.Exists() { // its Index in body (Result.Get)
		iu = gjson.Result{}
	}
	return stream, so, iu, true
}
