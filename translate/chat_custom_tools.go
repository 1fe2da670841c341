package translate

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Custom (freeform) tools of OpenAI Chat Completions clients, per the Chat
// Completions API reference: a tool {"type":"custom","custom":{"name",
// "description","format"}} (format {"type":"text"} or {"type":"grammar",
// "grammar":{"definition","syntax":"lark"|"regex"}}), an assistant tool
// call {"id","type":"custom","custom":{"name","input"}} (input a string)
// and a tool_choice {"type":"custom","custom":{"name"}}. Translated, they
// take the path a Responses client's custom tools take (custom_tools.go):
// the tool goes out as a function tool with one string parameter "input",
// a call in the history as a call of it with {"input":…}, the choice as a
// choice of it; back from the upstream, a call of it reaches the client
// as a tool_calls entry of "type":"custom" with custom.input unwrapped.
//
// Streamed, the Chat Completions reference documents no custom variant of
// a chunk's delta.tool_calls (openai-go's ChatCompletionChunkChoiceDeltaToolCall
// has only function; it keeps "custom" as an extra field). The gateway
// sends the shape of the whole answer's entry, split as function calls
// are: a first delta {"index","id","type":"custom","custom":{"name",
// "input":""}}, then {"index","custom":{"input":…}} deltas carrying the
// input decoded as it streams (never a partial escape or half a surrogate
// pair), which concatenate to custom.input.

// chatCustomTool reads the Chat custom tool t (its "custom" object,
// required) at path p.
func chatCustomTool(t objFields, p fpath, c *checker) (canonTool, *Error) {
	cu := t.get("custom")
	cp := p.dot("custom")
	if !present(cu) {
		return canonTool{}, c.missing(cp)
	}
	if !cu.IsObject() {
		return canonTool{}, c.typeErr(cp, wantObj, cu)
	}
	res := getMany(&[4]gjson.Result{}, cu.Raw, "name", "description", "format")
	return customTool(res[0], res[1], res[2], cp, true, c)
}

// chatCustomToolCall reads the Chat assistant tool call tc of "type":
// "custom" at path tp into the call of the function tool it goes out as.
func chatCustomToolCall(tc gjson.Result, id string, tp fpath, c *checker) (canonPart, *Error) {
	cu := tc.Get("custom")
	cp := tp.dot("custom")
	if !present(cu) {
		return canonPart{}, c.missing(cp)
	}
	if !cu.IsObject() {
		return canonPart{}, c.typeErr(cp, wantObj, cu)
	}
	res := getMany(&[4]gjson.Result{}, cu.Raw, "name", "input")
	name, e := c.reqNonEmpty(res[0], cp.dot("name"))
	if e != nil {
		return canonPart{}, e
	}
	input, e := c.str(res[1], cp.dot("input"))
	if e != nil {
		return canonPart{}, e
	}
	return canonPart{kind: partToolCall, id: id, name: name, args: wrapCustomInput(input), custom: true}, nil
}

// toolNameClash refuses the translation (encodeCanon) of a request that
// declares a custom tool and another tool of the same name: both would go
// out as function tools of one name (which upstreams refuse), and a call
// of that name could not be told apart on the way back. An
// ErrInvalidRequest (400, invalid_request_error) naming the tool, param
// "tools". A passthrough is the upstream's to judge.
func (r *canonRequest) toolNameClash() *Error {
	for i := range r.tools {
		if !r.tools[i].custom {
			continue
		}
		for j := range r.tools {
			if j != i && r.tools[j].name == r.tools[i].name {
				return invalid("tools", "tools: %q is declared both as a custom tool and as another tool; tool names must be unique", clip(r.tools[i].name))
			}
		}
	}
	return nil
}

// appendChatCustomToolCall appends a Chat Completions tool_calls entry
// of a custom tool: {"id","type":"custom","custom":{"name","input"}}.
func appendChatCustomToolCall(b []byte, id, name, input string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"type":"custom","custom":{"name":`...)
	b = appendString(b, name)
	b = append(b, `,"input":`...)
	b = appendString(b, input)
	return append(b, "}}"...)
}

// customStart opens a streamed call of a Chat client's custom tool: the
// first tool_calls delta {"index","id","type":"custom","custom":{"name",
// "input":""}}; false for any other block.
func (e *chatStreamEncoder) customStart(cs *canonStream, blk *streamBlock) bool {
	if !isCustomTool(cs.customTools, blk.name) {
		return false
	}
	blk.custom = &customArgs{}
	d := append(e.tmp[:0], `{"tool_calls":[{"index":`...)
	d = strconv.AppendInt(d, int64(blk.outIdx), 10)
	d = append(d, `,"id":`...)
	d = appendString(d, blk.id)
	d = append(d, `,"type":"custom","custom":{"name":`...)
	d = appendString(d, blk.name)
	d = append(d, `,"input":""}}]}`...)
	e.choiceBytes(cs, d)
	return true
}

// customInput sends input decoded from a custom tool call's arguments as
// a {"index","custom":{"input":…}} tool_calls delta.
func (e *chatStreamEncoder) customInput(cs *canonStream, blk *streamBlock, s string) {
	if s == "" {
		return
	}
	d := append(e.tmp[:0], `{"tool_calls":[{"index":`...)
	d = strconv.AppendInt(d, int64(blk.outIdx), 10)
	d = append(d, `,"custom":{"input":`...)
	d = appendString(d, s)
	e.choiceBytes(cs, append(d, "}}]}"...))
}

// customStop sends what is left of a custom tool call's input (arguments
// that were not {"input":"…"}, or an undecodable tail: see
// customArgs.input) as a last delta.
func (e *chatStreamEncoder) customStop(cs *canonStream, blk *streamBlock) {
	a := blk.custom
	if input := a.input(view(blk.text)); strings.HasPrefix(input, string(a.sent)) {
		e.customInput(cs, blk, input[len(a.sent):])
	}
}
