package translate

import (
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Custom (freeform) tools, per the OpenAI Responses API reference ("Custom
// tools" in the function calling guide): a tool of "type":"custom" takes
// free text instead of JSON arguments, optionally constrained by a
// "format" ({"type":"text"} or {"type":"grammar","syntax":"lark"|"regex",
// "definition":…}). The model calls one with a custom_tool_call item
// ({"call_id","name","input"}, input a string) and the client answers
// with a custom_tool_call_output item. Codex sends apply_patch this way.
//
// Chat Completions and Anthropic Messages upstreams have function tools
// only, so a custom tool goes out as a function tool with one string
// parameter, "input" (customInputSchema), its format folded into the
// description (as LiteLLM and CLIProxyAPI do); a custom_tool_call in the
// history goes out as a call of that function with {"input":…}, and its
// output as the call's tool result. Back from the upstream, a call of a
// tool the client declared as custom (ResponseOptions.CustomTools) becomes
// a custom_tool_call item again, its input the "input" string unwrapped,
// whole or streamed (response.custom_tool_call_input.delta / .done).

// customInputSchema is the parameters of the function tool a custom tool
// goes out as (no "additionalProperties": some OpenAI-compatible servers,
// Gemini's among them, refuse the keyword).
const customInputSchema = `{"type":"object","properties":{"input":{"type":"string","description":"The tool's input: free-form text, passed as it is (not JSON)."}},"required":["input"]}`

// responsesCustomTool reads a Responses custom tool definition t at path p
// ({"type":"custom","name","description","format"}) into the function
// tool it goes out as (see customInputSchema).
func responsesCustomTool(t gjson.Result, p fpath, c *checker) (canonTool, *Error) {
	res := getMany(&[4]gjson.Result{}, t.Raw, "name", "description", "format")
	return customTool(res[0], res[1], res[2], p, false, c)
}

// customTool reads a custom tool's name, description and format (at path
// p.name, p.description, p.format) into the function tool it goes out as.
// A format is {"type":"text"} or a grammar: for Responses (nested false)
// {"type":"grammar","syntax","definition"}, for Chat Completions (nested)
// {"type":"grammar","grammar":{"definition","syntax"}}, per each API
// reference; syntax "lark" or "regex" (optional for Chat, lark assumed).
func customTool(nameV, descV, f gjson.Result, p fpath, nested bool, c *checker) (canonTool, *Error) {
	name, e := c.reqNonEmpty(nameV, p.dot("name"))
	if e != nil {
		return canonTool{}, e
	}
	desc, e := c.str(descV, p.dot("description"))
	if e != nil {
		return canonTool{}, e
	}
	if e := c.object(f, p.dot("format")); e != nil {
		return canonTool{}, e
	}
	var syntax, def string
	if f.IsObject() {
		fp := p.dot("format")
		ft := getMany(&[4]gjson.Result{}, f.Raw, "type", "syntax", "definition", "grammar")
		typ, e := c.reqStr(ft[0], fp.dot("type"))
		if e == nil {
			e = c.enum(typ, fp.dot("type"), "text", "grammar")
		}
		if e == nil && typ == "grammar" {
			gp, sv, dv := fp, ft[1], ft[2]
			if nested {
				gp = fp.dot("grammar")
				if !present(ft[3]) {
					e = c.missing(gp)
				} else if e = c.object(ft[3], gp); e == nil {
					g := getMany(&[4]gjson.Result{}, ft[3].Raw, "syntax", "definition")
					sv, dv = g[0], g[1]
				}
			}
			if e == nil {
				if syntax, e = c.strEnum(sv, gp.dot("syntax"), "lark", "regex"); e == nil {
					def, e = c.reqStr(dv, gp.dot("definition"))
				}
			}
		}
		if e != nil {
			return canonTool{}, e
		}
	}
	return canonTool{name: name, description: customToolDescription(desc, syntax, def), schema: customInputSchema, custom: true}, nil
}

// customToolDescription is the description of the function tool a custom
// tool goes out as: its own, then how the input is passed and, for a
// grammar, the grammar the input must follow.
func customToolDescription(desc, syntax, def string) string {
	var sb strings.Builder
	sb.WriteString(desc)
	if desc != "" {
		sb.WriteString("\n\n")
	}
	sb.WriteString(`Pass the tool's whole input as the string parameter "input", exactly as the tool reads it (free-form text, not JSON).`)
	if def != "" {
		if syntax == "" {
			syntax = "lark"
		}
		sb.WriteString("\nThe input must match this ")
		sb.WriteString(syntax)
		sb.WriteString(" grammar:\n```\n")
		sb.WriteString(strings.TrimRight(def, "\n"))
		sb.WriteString("\n```")
	}
	return sb.String()
}

// wrapCustomInput returns the function arguments a custom tool call's
// input goes out as: {"input":<input>}.
func wrapCustomInput(input string) string {
	b := make([]byte, 0, len(input)+16)
	b = append(b, `{"input":`...)
	b = appendString(b, input)
	return string(append(b, '}'))
}

// unwrapCustomInput returns the input of a custom tool call the upstream
// made as a function call with arguments args: the "input" string of the
// arguments object; for arguments that are not valid JSON but start as
// {"input":" (cut short by max_tokens, or with junk after the string),
// what a stream gives (customArgs.input: the string decoded as far as it
// was written, a dangling escape kept as written), so that a whole answer
// and a stream of the same arguments give the same input; the arguments
// as they are when the model wrote something else (better the text than
// nothing); "" for none.
func unwrapCustomInput(args string) string {
	if isBlank(args) {
		return ""
	}
	if gjson.Valid(args) {
		a := gjson.Parse(args)
		if a.IsObject() {
			if in := a.Get("input"); in.Type == gjson.String {
				return in.Str
			}
		}
		return args
	}
	var a customArgs
	a.next(args)
	if a.state == customIn || a.state == customDone {
		return a.input(args)
	}
	return args
}

// isCustomTool reports whether name is one of the custom tools names.
func isCustomTool(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// markCustomCalls marks the tool calls of ps that call a custom tool.
func markCustomCalls(ps []canonPart, names []string) {
	if len(names) == 0 {
		return
	}
	for i := range ps {
		if p := &ps[i]; p.kind == partToolCall && isCustomTool(names, p.name) {
			p.custom = true
		}
	}
}

// customToolNames returns the names of r's custom tools, nil when none.
func (r *canonRequest) customToolNames() []string {
	var names []string
	for i := range r.tools {
		if r.tools[i].custom {
			names = append(names, r.tools[i].name)
		}
	}
	return names
}

// CustomTools returns the names of the custom (freeform) tools an OpenAI
// Responses request ("tools":[{"type":"custom","name":…}], per the
// Responses API reference) or Chat Completions request
// ("tools":[{"type":"custom","custom":{"name":…}}], per the Chat
// Completions API reference) declared, nil when none (and for Anthropic
// requests, or a request that cannot be translated). Set them as
// ResponseOptions.CustomTools when the answer comes from an upstream of
// another dialect, so that its calls of those tools reach the client as
// custom_tool_call items (Responses) or tool_calls entries of
// "type":"custom" (Chat). The slice is the Request's: do not modify it.
func (r *Request) CustomTools() []string {
	if r.d != OpenAIResponses && r.d != OpenAIChat {
		return nil
	}
	if !r.customDone {
		r.customDone = true
		// a passthrough's validation pass keeps no canonical form: built
		// now, as the first translation would (see Request.canonical)
		if canon, e := r.canonical(); e == nil {
			r.custom = canon.customToolNames()
		}
	}
	return r.custom
}

// ResponsesEcho returns the raw JSON of an OpenAI Responses request's
// "tools" array and "tool_choice" (nil for one it does not have, and for
// other dialects), for ResponseOptions.Tools and ToolChoice: a translated
// answer's response object echoes them, as the Responses API does. Read
// once and kept; the slices are views of the request body (a copy
// without the line breaks of a pretty-printed value, see echoRaw, or with
// invalid UTF-8 as \ufffd, see appendRawUTF8): do not modify them.
func (r *Request) ResponsesEcho() (tools, toolChoice []byte) {
	if r.d != OpenAIResponses {
		return nil, nil
	}
	if !r.echoDone {
		r.echoDone = true
		for i, v := range gjson.GetManyBytes(r.body, "tools", "tool_choice") {
			if !v.Exists() || v.Type == gjson.Null || v.Index <= 0 || v.Index+len(v.Raw) > len(r.body) {
				continue
			}
			raw := r.body[v.Index : v.Index+len(v.Raw) : v.Index+len(v.Raw)]
			if e := echoRaw(v.Raw); len(e) != len(v.Raw) || !utf8.ValidString(e) {
				// see echoRaw (no line break in an SSE data: line) and
				// appendRawUTF8 (no invalid UTF-8 echoed)
				raw = appendRawUTF8(nil, e)
			}
			if i == 0 && v.IsArray() {
				r.echoTools = raw
			} else if i == 1 && (v.IsObject() || v.Type == gjson.String) {
				r.echoChoice = raw
			}
		}
	}
	return r.echoTools, r.echoChoice
}

// appendRSCustomToolCallItem appends a Responses custom_tool_call output
// item: {"id","type":"custom_tool_call","status","call_id","input","name"}.
func appendRSCustomToolCallItem(b []byte, id, status, callID, name, input string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"type":"custom_tool_call","status":"`...)
	b = append(b, status...)
	b = append(b, '"')
	b = appendStrField(b, "call_id", callID)
	b = appendStrField(b, "input", input)
	b = appendStrField(b, "name", name)
	return append(b, '}')
}

// customArgs unwraps, as it streams, the "input" string of the arguments
// of a function call that is a custom tool call: the arguments text (the
// block's accumulated text) is scanned for the opening of the "input"
// string, and each complete run of its characters (never a partial
// escape or half a surrogate pair) is decoded and sent as it arrives.
type customArgs struct {
	state int    // customSeek, customIn, customDone, customOther
	pos   int    // where the scan resumes in the arguments text
	sent  []byte // the input decoded and sent so far
}

const (
	customSeek  = iota // before the input string
	customIn           // inside it, pos at the first unsent byte
	customDone         // past its closing quote
	customOther        // the arguments are not {"input":"…"}: sent whole at the end
)

// next returns the input decoded from the arguments text args since the
// last call ("" when nothing new is complete).
func (a *customArgs) next(args string) string {
	if a.state == customSeek {
		i, ok := customInputStart(args)
		switch {
		case i < 0:
			a.state = customOther
		case ok:
			a.state, a.pos = customIn, i
		}
	}
	if a.state != customIn {
		return ""
	}
	start, i := a.pos, a.pos
	cut := -1
	for i < len(args) && cut < 0 {
		switch args[i] {
		case '"':
			cut = i
		case '\\':
			n := 2
			if i+1 < len(args) && args[i+1] == 'u' {
				n = 6
				if hi, ok := surrogateAt(args, i); ok && hi < 0xdc00 {
					n = 12 // a high surrogate waits for its low half
					if i+6 < len(args) && args[i+6] != '\\' || i+7 < len(args) && args[i+7] != 'u' || !lowSurrogateAt(args, i+6) {
						n = 6 // no low half follows: decoded alone
					}
				}
			}
			if i+n > len(args) {
				return a.decode(args, start, i, false)
			}
			i += n
		default:
			i++
		}
	}
	if cut >= 0 {
		return a.decode(args, start, cut, true)
	}
	return a.decode(args, start, i, false)
}

// lowSurrogateAt reports whether the escape at args[i] may be a low
// surrogate half: \uDC00 to \uDFFF, or too short yet to tell.
func lowSurrogateAt(args string, i int) bool {
	if i+6 > len(args) {
		return true
	}
	lo, ok := surrogateAt(args, i)
	return ok && lo >= 0xdc00
}

// decode decodes args[start:end] (complete characters of the input
// string), records it as sent and moves on; done when the string ends at
// end.
func (a *customArgs) decode(args string, start, end int, done bool) string {
	a.pos = end
	if done {
		a.state = customDone
	}
	if end <= start {
		return ""
	}
	seg := args[start:end]
	s := seg
	if strings.IndexByte(seg, '\\') >= 0 {
		s = gjson.Parse(`"` + seg + `"`).Str
	}
	a.sent = append(a.sent, s...)
	return s
}

// input returns the whole input of the call whose arguments text is
// args, always what the deltas sent add up to, followed by what is left
// to send (the response.custom_tool_call_input.done event, the item and
// the stream's deltas agree): once the stream decoded the "input" string
// to its end, that string (what unwrapCustomInput gives for well-formed
// arguments, also when the arguments break off or go wrong after it); when
// the string never ended (a call cut short by max_tokens, arguments that
// are not JSON), the decoded part, then the undecodable tail (a dangling
// escape) as written; else unwrapCustomInput(args), none of which was
// sent.
func (a *customArgs) input(args string) string {
	switch a.state {
	case customDone:
		return string(a.sent)
	case customIn:
		if a.pos < len(args) {
			return string(a.sent) + args[a.pos:]
		}
		return string(a.sent)
	}
	return unwrapCustomInput(args)
}

// customInputStart finds the start of the "input" string value in the
// beginning of an arguments text: its first byte's offset and true; -1
// when the text does not start as {"input":"; ok false when it may but
// is not long enough yet.
func customInputStart(args string) (int, bool) {
	i := 0
	for _, want := range [...]string{`{`, `"input"`, `:`, `"`} {
		i = skipSpace(args, i)
		rest := args[i:]
		if len(rest) < len(want) {
			if strings.HasPrefix(want, rest) {
				return 0, false
			}
			return -1, false
		}
		if !strings.HasPrefix(rest, want) {
			return -1, false
		}
		i += len(want)
	}
	return i, true
}

// customStart opens a custom_tool_call item for a tool call block that
// calls one of the client's custom tools; false for any other block.
func (e *responsesStreamEncoder) customStart(cs *canonStream, blk *streamBlock) bool {
	if blk.kind != partToolCall || !isCustomTool(cs.customTools, blk.name) {
		return false
	}
	blk.custom = &customArgs{}
	blk.itemID = withPrefix("ctc_", blk.id)
	return true
}

// customDelta sends the input a custom tool call's arguments delta
// completed as response.custom_tool_call_input.delta.
func (e *responsesStreamEncoder) customDelta(cs *canonStream, blk *streamBlock) {
	e.customInputDelta(cs, blk, blk.custom.next(view(blk.text)))
}

func (e *responsesStreamEncoder) customInputDelta(cs *canonStream, blk *streamBlock, s string) {
	if s == "" {
		return
	}
	e.emit(cs, "response.custom_tool_call_input.delta", func(b []byte) []byte {
		b = e.itemHead(b, blk)
		b = append(b, `,"delta":`...)
		return appendString(b, s)
	})
}

// customStop ends a custom tool call: what is left of its input as a
// last delta, response.custom_tool_call_input.done with the whole input,
// and the completed item.
func (e *responsesStreamEncoder) customStop(cs *canonStream, blk *streamBlock) []byte {
	a := blk.custom
	input := a.input(view(blk.text))
	if strings.HasPrefix(input, string(a.sent)) {
		e.customInputDelta(cs, blk, input[len(a.sent):])
	}
	e.emit(cs, "response.custom_tool_call_input.done", func(b []byte) []byte {
		b = e.itemHead(b, blk)
		b = append(b, `,"input":`...)
		return appendString(b, input)
	})
	return appendRSCustomToolCallItem(nil, blk.itemID, "completed", blk.id, blk.name, input)
}
