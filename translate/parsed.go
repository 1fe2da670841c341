package translate

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"
)

// Request is a client request parsed once: ParseRequest checks the body
// in one validation pass (as RequestInfo and ValidateRequest do) and the
// value then answers the routing questions (dialect, model, stream,
// session seed, estimated tokens) and encodes the body for any upstream
// dialect on demand, without reading the body again.
//
// The canonical form a translation needs is built at most once: in the
// validation pass (OpenAI Chat and Responses requests parsed with
// ParseRequest, or any request parsed with ParseRequestFor for another
// upstream dialect) or, for an Anthropic Messages request parsed with
// ParseRequest and any request parsed with ParseRequestFor for its own
// dialect, on its first translation; a passthrough never builds it. The
// encoded body is cached per upstream dialect and model, so a retry on
// another key costs no work and no allocation.
//
// A Request refers to the body it was parsed from (Body, SessionSeed and
// the encoded bodies are views of it, or of buffers built from it): the
// body must stay unchanged while the Request is in use. A Request is for
// one goroutine (a request's attempts are sequential).
type Request struct {
	d        Dialect
	body     []byte
	model    string
	modelAt  int // offset of the model's literal in body; 0 when unknown
	modelLen int // its length
	stream   bool
	// usageAsked: an OpenAI Chat stream whose stream_options.include_usage
	// is true (StreamUsageAsked)
	usageAsked bool
	// noStreamOpts: the top level has no "stream_options" (read in the
	// validation pass's walk; see AddStreamUsage)
	noStreamOpts bool

	conv gjson.Result // "messages" (Chat, Anthropic) or "input" (Responses), a view of body
	sys  gjson.Result // "system" (Anthropic) or "instructions" (Responses); unset for Chat

	// canon is the canonical form, decoded with the vendor's ranges and
	// enums (translate mode); nil when xerr is set.
	canon *canonRequest
	// xerr is why the request cannot be translated to another dialect
	// (what TranslateRequest answers), though its own dialect accepts it.
	xerr *Error

	hyg     []byte // body after the same-dialect hygiene; nil until first needed
	hygDone bool
	// clean is true when the validation pass found nothing the
	// same-dialect hygiene (SanitizeAnthropicRequest,
	// ChatReasoningToContent) would change, so Encode skips its scans
	clean bool

	customDone bool     // custom is set (CustomTools)
	custom     []string // the custom tools' names
	echoDone   bool
	echoTools  []byte // ResponsesEcho: the request's "tools" (a view of body)
	echoChoice []byte // ResponsesEcho: the request's "tool_choice" (a view of body)

	echoMembers []byte // ResponsesEchoMembers, once built

	seedDone       bool
	seedSys, seed1 string

	enc  [3]encoded // the first encoded bodies, inline: no allocation to cache them
	nenc int
	more []encoded // further ones, rarely needed
}

// requestCanon is a Request and the canonical form its validation pass
// builds (ParseRequestFor another dialect), allocated together.
type requestCanon struct {
	req   Request
	canon canonRequest
}

// encoded is one cached result of Encode.
type encoded struct {
	to    Dialect
	model string
	body  []byte
	err   error
}

// parses counts full parses of request bodies (see ParseCount).
var parses atomic.Uint64

// canonBuilds counts canonical forms built after the validation pass (on
// a Request's first translation), for tests.
var canonBuilds atomic.Uint64

// countParse records one full parse of a request body.
func countParse() { parses.Add(1) }

// ParseCount returns the number of full parses of request bodies since
// start: one per ParseRequest, RequestInfo, ValidateRequest and
// TranslateRequest call that reads the body past its size check (plus one
// more when ParseRequest meets a request its own dialect accepts but a
// translation refuses, which it reads again without the vendor's ranges).
// It is a diagnostics counter, for tests and metrics; it only grows.
func ParseCount() uint64 { return parses.Load() }

// ParseRequest checks a request body of client dialect d in one
// validation pass and returns it parsed.
//
// The checks are RequestInfo's followed by ValidateRequest's, and an
// invalid body gets the very *Error those two give, in that order (same
// Class, Message, Param, Code): the body must be a JSON object within
// MaxRequestSize, nested at most MaxNesting levels, without duplicate
// top-level keys, with a non-empty string "model", a boolean "stream" if
// any, the conversation field and every field of the dialect well typed
// and within the limits no upstream accepts past. The vendor's own
// ranges and enums, which only a translation enforces, are checked in the
// same pass: a request that breaks one of them is accepted here (its own
// dialect's upstream judges it) and Encode to another dialect returns the
// error TranslateRequest would.
//
// body is not copied: it must stay unchanged while the Request is used.
//
// The canonical form a translation encodes is built in the validation
// pass for OpenAI Chat and Responses requests; for Anthropic Messages
// requests, most often passed through, the pass only checks, and the
// first Encode to another dialect builds it (once; see ParseRequestFor).
func ParseRequest(d Dialect, body []byte) (*Request, error) {
	r, e := parseRequest(d, body, d == AnthropicMessages)
	if e != nil {
		return nil, e
	}
	return r, nil
}

// ParseRequestFor is ParseRequest for a request the caller expects to
// send to an upstream of dialect upstream (the dialect of its pool's
// keys, say): the same checks, errors and Request, with the work arranged
// for that upstream. When upstream differs from d, the validation pass
// also builds the canonical form the translation encodes (no second walk
// of the body on the first Encode); when it is d, the pass only checks
// (in every dialect: it keeps nothing a passthrough does not need) and
// the first Encode to another dialect, or CustomTools, builds the
// canonical form then, once. Encode to any dialect works either way, and
// the checks and errors are the same in both.
func ParseRequestFor(d Dialect, body []byte, upstream Dialect) (*Request, error) {
	r, e := parseRequest(d, body, upstream == d)
	if e != nil {
		return nil, e
	}
	return r, nil
}

// parseRequest is ParseRequest with a concrete error type; checkOnly asks
// for a validation pass that keeps no canonical form (checker.checkOnly),
// else the pass builds it.
func parseRequest(d Dialect, body []byte, checkOnly bool) (*Request, *Error) {
	if e := checkSize(body); e != nil {
		return nil, e
	}
	countParse()
	// checkJSON's checks, with one walk of the top level for the duplicate
	// keys, the outline and the decoder
	sc := parseScratchPool.Get().(*parseScratch)
	defer sc.put()
	root, e := checkJSONRootInto(sc.root[:0], body)
	if root != nil { // nil: rejected before the walk, the buffer unused
		sc.root = root
	}
	if e != nil {
		return nil, e
	}
	if !d.valid() {
		return nil, invalid("", "unknown dialect")
	}
	var r *Request
	var canonMem *canonRequest
	if checkOnly {
		r = &Request{d: d, body: body}
	} else {
		// the canonical form the pass builds lives as long as the
		// Request: one allocation for both
		rc := &requestCanon{req: Request{d: d, body: body}}
		r, canonMem = &rc.req, &rc.canon
	}
	o, e := outlineOf(d, root)
	if e != nil {
		return nil, e
	}
	r.model, r.stream, r.conv, r.sys = strings.Clone(o.model.Str), o.stream, o.conv, o.sys
	so := root.get("stream_options") // the top level is walked already (root): no second walk of the body
	r.noStreamOpts = !so.Exists()
	r.usageAsked = d == OpenAIChat && o.stream && so.Get("include_usage").Type == gjson.True
	if i, n := o.model.Index, len(o.model.Raw); i > 0 && i+n <= len(body) && string(body[i:i+n]) == o.model.Raw {
		r.modelAt, r.modelLen = i, n
	}

	// one decoding pass, in translate mode: it checks everything
	// ValidateRequest checks and the vendor's ranges and enums too, and
	// leaves the canonical form a translation encodes
	c := &sc.check
	*c = checker{d: d, translate: true, root: root, rootSet: true, checkOnly: checkOnly,
		members: sc.members, parts: sc.parts, canonMem: canonMem}
	canon, e := decodeWith(c, body)
	sc.members, sc.parts = c.members, c.parts
	if e == nil {
		if c.checkOnly {
			e = c.pairErr
		} else {
			e = canon.validate()
		}
	}
	if e == nil {
		if !c.checkOnly {
			r.canon = canon
		}
		r.clean = !c.dirty
		r.seedFrom(c)
		return r, nil
	}
	// refused in translate mode: whether its own dialect accepts it is
	// ValidateRequest's verdict (rare: an invalid request, or one only a
	// translation refuses); the second reading is counted
	countParse()
	if v := validateDecoded(d, body); v != nil {
		return nil, v
	}
	r.xerr = e
	return r, nil
}

// Dialect returns the client's dialect.
func (r *Request) Dialect() Dialect { return r.d }

// Model returns the client's "model" (non-empty; a copy, not a view of the
// body).
func (r *Request) Model() string { return r.model }

// Stream reports whether the client asked for a stream ("stream": true).
func (r *Request) Stream() bool { return r.stream }

// StreamUsageAsked reports whether the request is an OpenAI Chat stream
// that asks for the usage chunk ("stream": true and
// "stream_options.include_usage": true, per the OpenAI API reference,
// "stream_options"), as the package's StreamUsageAsked reads a body, from
// what the parse read: no walk of the body. False for other dialects.
func (r *Request) StreamUsageAsked() bool { return r.usageAsked }

// Body returns the client's bytes, untouched (the slice ParseRequest was
// given).
func (r *Request) Body() []byte { return r.body }

// EstimatedTokens returns a rough estimate of the request's input tokens,
// for token-per-minute gates before the upstream reports usage: the body's
// size in bytes / 4 (about four bytes per token for English text and JSON).
func (r *Request) EstimatedTokens() int64 { return int64(len(r.body) / 4) }

// SessionSeed returns what identifies the request's conversation, for
// session affinity: the raw JSON (a view of the body) of the first system
// text and of the first user message, "" for one that is absent. Per
// dialect: Anthropic "system" and the content of the first message with
// role "user"; OpenAI Chat the content of the first "system" message and
// of the first "user" message; OpenAI Responses "instructions" and
// "input" (the first item with role "user" when input is an array). Both
// are stable across the turns of one conversation; callers hash a prefix.
func (r *Request) SessionSeed() (system, firstUser string) {
	if !r.seedDone {
		// a request that only its own dialect accepts (see xerr): the
		// pass that noted the seeds stopped early; ask the body
		r.seedDone = true
		var s, u gjson.Result
		switch r.d {
		case AnthropicMessages:
			s, u = r.sys, r.conv.Get(`#(role=="user").content`)
		case OpenAIResponses:
			s, u = r.sys, r.conv
			if u.IsArray() {
				u = u.Get(`#(role=="user")`)
			}
		default:
			s, u = r.conv.Get(`#(role=="system").content`), r.conv.Get(`#(role=="user").content`)
		}
		r.seedSys, r.seed1 = s.Raw, u.Raw
	}
	return r.seedSys, r.seed1
}

// seedFrom takes the session seeds a successful validation pass noted
// (checker.noteSeed): SessionSeed's answer without querying the body.
func (r *Request) seedFrom(c *checker) {
	var s, u gjson.Result
	switch r.d {
	case AnthropicMessages:
		s, u = r.sys, c.seedUser
	case OpenAIResponses:
		s, u = r.sys, r.conv
		if u.IsArray() {
			u = c.seedUser
		}
	default:
		s, u = c.seedSys, c.seedUser
	}
	r.seedSys, r.seed1, r.seedDone = s.Raw, u.Raw, true
}

// Encode returns the request body for an upstream of dialect to, asking
// for model ("" keeps the client's).
//
// For the client's own dialect it is the client's bytes with only the
// "model" field rewritten (SetModel; the very slice Body returns when
// there is nothing to change) after the dialect's hygiene:
// SanitizeAnthropicRequest for Anthropic Messages, ChatReasoningToContent
// for OpenAI Chat (both return their input when they find nothing to do),
// run only when the validation pass met something they change (a blank
// text block, an unsigned or OpenAI-signed thinking block, an assistant's
// "reasoning"; TestHygieneFlaggedByParse), so a clean body costs no scan.
// For another dialect it is the translation TranslateRequest gives,
// encoded from the canonical form (built by the validation pass, or now
// on the first translation: see Request; not a new validation, and not
// counted by ParseCount); its error, when the request cannot be translated (the
// vendor's ranges and enums, n > 1, a feature without a counterpart), is
// an *Error with a client-facing message.
//
// Results are cached per (to, model): a second call returns the same
// slice and error at no cost. The returned slice must not be modified.
func (r *Request) Encode(to Dialect, model string) ([]byte, error) {
	for i := 0; i < r.nenc; i++ {
		if e := &r.enc[i]; e.to == to && e.model == model {
			return e.body, e.err
		}
	}
	for i := range r.more {
		if e := &r.more[i]; e.to == to && e.model == model {
			return e.body, e.err
		}
	}
	b, err := r.encode(to, model)
	e := encoded{to: to, model: model, body: b, err: err}
	if r.nenc < len(r.enc) {
		r.enc[r.nenc] = e
		r.nenc++
	} else {
		r.more = append(r.more, e)
	}
	return b, err
}

// encode is Encode without the cache.
func (r *Request) encode(to Dialect, model string) ([]byte, error) {
	if to == r.d {
		if !r.hygDone {
			r.hygDone = true
			switch {
			case r.clean:
				// the validation pass saw every block and message the
				// hygiene looks at, and none it would change
				r.hyg = r.body
			case to == AnthropicMessages:
				r.hyg = SanitizeAnthropicRequest(r.body)
			case to == OpenAIChat:
				r.hyg = ChatReasoningToContent(r.body)
			default:
				r.hyg = r.body
			}
		}
		if model == "" || model == r.model {
			return r.hyg, nil
		}
		if r.modelAt > 0 && &r.hyg[0] == &r.body[0] && len(r.hyg) == len(r.body) {
			// the hygiene changed nothing: the model's place is known
			// (what SetModel would find again with a scan)
			// (one allocation: the literal is written in place)
			out := make([]byte, 0, len(r.body)-r.modelLen+len(model)+2)
			out = append(out, r.body[:r.modelAt]...)
			out = appendString(out, model)
			return append(out, r.body[r.modelAt+r.modelLen:]...), nil
		}
		return SetModel(r.hyg, model)
	}
	if !to.valid() {
		return nil, invalid("", "translation from %s to %s is not supported", r.d, to)
	}
	canon, e := r.canonical()
	if e != nil {
		return nil, e
	}
	return encodeCanon(canon, to, model)
}

// canonical returns the request's canonical form, building it on first
// need when the validation pass kept none, or why the request cannot be
// translated (r.xerr, then set).
func (r *Request) canonical() (*canonRequest, *Error) {
	if r.xerr != nil {
		return nil, r.xerr
	}
	if r.canon == nil {
		// the first translation of a request whose validation pass kept
		// no canonical form: built now, once (with the same checks,
		// which the body passed; the top level is walked again, which
		// keeps the pass from copying its members for a translation a
		// passthrough seldom needs)
		canonBuilds.Add(1)
		canon, e := decodeWith(&checker{d: r.d, translate: true, checked: true}, r.body)
		if e == nil {
			e = canon.validate()
		}
		if e != nil {
			r.xerr = e
			return nil, e
		}
		r.canon = canon
	}
	return r.canon, nil
}

// encodeCanon encodes a decoded, validated request for dialect to with
// model ("" keeps the request's), leaving req as it was.
func encodeCanon(req *canonRequest, to Dialect, model string) ([]byte, error) {
	if req.n > 1 {
		return nil, unsupported("n", "n: only n=1 can be translated to another API dialect")
	}
	if e := req.toolNameClash(); e != nil {
		return nil, e
	}
	if model != "" {
		defer func(m string) { req.model = m }(req.model)
		req.model = model
	}
	switch to {
	case OpenAIChat:
		return encodeChatRequest(req)
	case OpenAIResponses:
		return encodeResponsesRequest(req)
	default:
		return encodeAnthropicRequest(req)
	}
}

// checkJSONRoot is checkJSON for ParseRequest: the same checks and
// errors, with the duplicate-key walk also returning the top-level
// members (read once, for the outline and the decoder).
func checkJSONRoot(body []byte) (objFields, *Error) {
	return checkJSONRootInto(make(objFields, 0, 24), body)
}

// checkJSONRootInto is checkJSONRoot reading the members into buf (from
// its length on); the members are returned even with an error, so that
// buf can be reused.
func checkJSONRootInto(buf objFields, body []byte) (objFields, *Error) {
	t := bytes.TrimLeft(body, " \t\r\n")
	if len(t) == 0 {
		return nil, invalid("", "request body is empty; expected a JSON object")
	}
	if t[0] != '{' {
		return nil, invalid("", "request body must be a JSON object")
	}
	if tooDeep(body, MaxNesting) {
		return nil, invalid("", "request body nests objects and arrays more than %d levels deep", MaxNesting)
	}
	if !gjson.ValidBytes(body) {
		return nil, invalid("", "request body is not valid JSON")
	}
	root := fieldsInto(buf, gjson.Parse(view(body)))
	if e := duplicateKey(root); e != nil {
		return root, e
	}
	return root, nil
}

// duplicateKey is duplicateTopLevelKey on members already read.
func duplicateKey(f objFields) *Error {
	var seen nameSet
	for i := range f {
		if prev, ok := seen.add(f[i].key); ok {
			return repeatedMember(f[i].key, prev)
		}
	}
	return nil
}

// parseScratch holds the buffers parseRequest's pass walks objects into:
// the top-level members and the checker's spares. They are reused across
// requests (parseScratchPool): each holds pointers, and a fresh set cost
// several KiB of allocation per request, a large share of a small
// request's preparation. Nothing the Request keeps points into them; put
// clears what they held, so no request body stays reachable from the
// pool.
type parseScratch struct {
	root    objFields
	members spares[objField]
	parts   spares[canonPart]
	check   checker // the pass's checker (views of the body: cleared by put)
}

// maxPooledRoot bounds the top-level buffer kept in the pool (members).
const maxPooledRoot = 256

var parseScratchPool = sync.Pool{New: func() any { return &parseScratch{root: make(objFields, 0, 24)} }}

// put clears the buffers and returns them to the pool.
func (sc *parseScratch) put() {
	clear(sc.root[:cap(sc.root)])
	if cap(sc.root) > maxPooledRoot {
		sc.root = make(objFields, 0, 24)
	}
	sc.root = sc.root[:0]
	sc.members.clear()
	sc.parts.clear()
	sc.check = checker{}
	parseScratchPool.Put(sc)
}
