package translate

import (
	"strings"

	"github.com/tidwall/gjson"
)

// responsesStreamDecoder reads OpenAI Responses streaming events (OpenAI
// API reference, "Streaming events"; MAPPING.md §4.3 and §4.4 "RS upstream
// → CC / AM client"), dispatching on data.type (the event: line when
// absent, as OpenRouter sends no event: lines):
//
//   - response.created / response.in_progress / response.queued start the
//     message (response.id, response.model, response.created_at);
//   - response.output_item.added: a function_call opens a tool block at
//     once (call_id, name); a message opens a text block on its first
//     response.output_text.delta or response.refusal.delta; a reasoning item
//     a thinking block on its first response.reasoning_summary_text.delta or
//     response.reasoning_text.delta (summary parts joined by a blank line);
//   - response.function_call_arguments.delta streams the arguments, and
//     response.function_call_arguments.done sends what no delta carried
//     (backends that send the arguments only there);
//   - a function_call added while another one is still streaming is held
//     (its arguments buffered) and emitted whole once that one is done
//     (output_item.done), another kind of block starts or the response
//     ends, so calls whose deltas interleave by output_index reach the
//     client as contiguous blocks, each with its arguments;
//   - response.output_item.done closes the item's block; a reasoning item's
//     encrypted_content becomes a signature delta (sigPrefixOpenAI), or a
//     redacted thinking block when no text was streamed; text or arguments
//     the item holds but no delta carried are sent then;
//   - response.completed / response.incomplete record the usage and finish
//     (stop reason as decodeResponsesResponse maps it), then end; when no
//     output item was streamed before, the terminal event's output items
//     are sent first;
//   - response.failed and error are in-band upstream errors (the client's
//     error form, or nothing before the commit point).
//
// Other events (content_part.*, *.done, hosted-tool progress, future
// kinds) are ignored. A stream that ends without a terminal event is a
// truncation.
type responsesStreamDecoder struct {
	cs      *canonStream
	items   []*rsStreamItem
	called  bool // a function_call item was seen
	refusal bool // a refusal part was seen
	top     objFields
	cur     *rsStreamItem   // the function_call whose block is streaming
	pending []*rsStreamItem // function_calls added while cur streams, in order
}

// rsStreamItem is one output item of the upstream stream.
type rsStreamItem struct {
	outIdx  int64
	typ     string       // message, function_call, reasoning, or a hosted kind
	callID  string       // function_call
	name    string       // function_call
	blk     *streamBlock // its canonical block, nil until opened
	sent    []byte       // text, thinking or arguments sent so far
	summary int64        // summary_index of the last reasoning delta
	// a function_call held while another streams (see pending): the
	// arguments its deltas carried, the full arguments a done event gave,
	// and whether its output_item.done came
	held     bool
	buf      []byte
	full     string
	finished bool
}

func newResponsesStreamDecoder(cs *canonStream) upstreamDecoder {
	return &responsesStreamDecoder{cs: cs}
}

// item returns the item at output index idx, nil when unknown.
func (d *responsesStreamDecoder) item(idx int64) *rsStreamItem {
	for i := len(d.items) - 1; i >= 0; i-- {
		if d.items[i].outIdx == idx {
			return d.items[i]
		}
	}
	return nil
}

func (d *responsesStreamDecoder) event(ev *SSEEvent) {
	cs := d.cs
	if len(ev.Data) == 0 || cs.closed {
		return
	}
	d.top = fieldsInto(d.top, gjson.Parse(view(ev.Data)))
	f := d.top
	typ := f.get("type").Str
	if typ == "" {
		typ = ev.Event
	}
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		r := f.get("response")
		var rb1 [6]gjson.Result
		res := getEach(rb1[:], r.Raw, "id", "model", "created_at")
		cs.begin(res[0].Str, res[1].Str, res[2].Int())
	case "response.output_item.added":
		it := f.get("item")
		var rb2 [6]gjson.Result
		res := getEach(rb2[:], it.Raw, "type", "call_id", "name", "arguments")
		idx := f.get("output_index").Int()
		x := &rsStreamItem{outIdx: idx, typ: strings.Clone(res[0].Str), callID: strings.Clone(res[1].Str), name: strings.Clone(res[2].Str), summary: -1}
		d.items = append(d.items, x)
		if x.typ == "function_call" {
			d.called = true
			if d.streaming() {
				x.held = true
				x.buf = append(x.buf, res[3].Str...)
				d.pending = append(d.pending, x)
				return
			}
			d.openItem(x, partToolCall)
			d.cur = x
			if a := res[3].Str; a != "" {
				d.send(x, deltaArgs, a)
			}
		}
	case "response.output_text.delta", "response.refusal.delta":
		x := d.known(f, "message")
		refusal := typ == "response.refusal.delta"
		if refusal {
			d.refusal = true
		}
		if v := f.get("delta"); v.Str != "" {
			d.ensureText(x, refusal)
			d.sendJSON(x, deltaText, v)
		}
	case "response.function_call_arguments.delta":
		x := d.known(f, "function_call")
		s := f.get("delta").Str
		switch {
		case s == "":
		case x.held:
			x.buf = append(x.buf, s...)
		case x.blk != nil && cs.open == x.blk:
			d.sendJSON(x, deltaArgs, f.get("delta"))
		}
	case "response.function_call_arguments.done":
		x := d.known(f, "function_call")
		a := f.get("arguments").Str
		if x.held {
			x.full = strings.Clone(a)
		} else {
			d.sendRest(x, a)
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		x := d.known(f, "reasoning")
		s := f.get("delta").Str
		if s == "" {
			return
		}
		d.ensure(x, partThinking)
		if typ == "response.reasoning_summary_text.delta" {
			si := f.get("summary_index").Int()
			if x.summary >= 0 && si != x.summary && len(x.sent) > 0 {
				d.send(x, deltaThinking, "\n\n")
			}
			x.summary = si
		}
		d.sendJSON(x, deltaThinking, f.get("delta"))
	case "response.output_item.done":
		d.itemDone(f.get("output_index").Int(), f.get("item"))
	case "response.completed", "response.incomplete":
		r := f.get("response")
		var rb3 [6]gjson.Result
		res := getEach(rb3[:], r.Raw, "usage", "status", "incomplete_details.reason", "id", "model", "created_at")
		if !cs.started {
			cs.begin(res[3].Str, res[4].Str, res[5].Int())
		}
		d.flushAll()
		if len(d.items) == 0 {
			// no item was streamed (a backend that sends the answer only
			// in its terminal event): the output items, in order
			r.Get("output").ForEach(func(k, it gjson.Result) bool {
				d.itemDone(k.Int(), it)
				return true
			})
		}
		if res[0].IsObject() {
			cs.t.usage.merge(responsesUsage(res[0]))
		}
		status := res[1].Str
		if typ == "response.incomplete" {
			status = "incomplete"
		}
		cs.finish(rsStopReason(status, res[2].Str, d.called || cs.sawTool, d.refusal), "")
		cs.end()
	case "response.failed":
		r := f.get("response")
		var rb4 [6]gjson.Result
		res := getEach(rb4[:], r.Raw, "usage", "error.code", "error.message")
		if res[0].IsObject() {
			cs.t.usage.merge(responsesUsage(res[0]))
		}
		code := errStr(res[1])
		se := cs.t.setUpstreamError(newStreamError(OpenAIResponses, "", code, res[2].String(), ""))
		cs.fail(classForErrorType("", code), firstNonEmpty(se.Message, "upstream error"), se)
	case "error":
		// flat {code, message, param} per the API reference; nested
		// {error:{type, code, message, param}} as recorded
		typ, code, msg, param := "", errStr(f.get("code")), f.get("message").String(), errStr(f.get("param"))
		if e := f.get("error"); e.IsObject() {
			typ, code, msg, param = openAIErrorFields(e)
		}
		se := cs.t.setUpstreamError(newStreamError(OpenAIResponses, typ, code, msg, param))
		cs.fail(classForErrorType(typ, code), firstNonEmpty(se.Message, "upstream error"), se)
	}
}

// known returns the item an event refers to by output_index, adding it
// with type typ when its output_item.added was not seen.
func (d *responsesStreamDecoder) known(f objFields, typ string) *rsStreamItem {
	idx := f.get("output_index").Int()
	if x := d.item(idx); x != nil {
		return x
	}
	x := &rsStreamItem{outIdx: idx, typ: typ, summary: -1}
	d.items = append(d.items, x)
	return x
}

// openItem opens a new canonical block of kind for x (held function
// calls go first when it is another kind of block).
func (d *responsesStreamDecoder) openItem(x *rsStreamItem, kind partKind) {
	if kind != partToolCall {
		d.flushAll()
	}
	x.blk = d.cs.openBlock(kind, x.callID, x.name, "")
}

// streaming reports whether a function_call block is open and streaming
// its arguments (a new call is then held).
func (d *responsesStreamDecoder) streaming() bool {
	return d.cur != nil && d.cur.blk != nil && d.cs.open == d.cur.blk
}

// sendRest sends the part of a call's full arguments a (from a done
// event) that its deltas did not carry.
func (d *responsesStreamDecoder) sendRest(x *rsStreamItem, a string) {
	if len(a) > len(x.sent) && strings.HasPrefix(a, string(x.sent)) {
		d.send(x, deltaArgs, a[len(x.sent):])
	}
}

// flushHeld emits the held function calls in order after the streaming
// one is done: each opens its block with what it buffered; a finished one
// is closed, and the first one still running becomes the streaming call
// (the rest stay held). With all set, every held call is emitted and
// closed (another kind of block, or the end, follows).
func (d *responsesStreamDecoder) flushHeld(all bool) {
	for len(d.pending) > 0 {
		x := d.pending[0]
		d.pending = d.pending[1:]
		x.held = false
		x.blk = d.cs.openBlock(partToolCall, x.callID, x.name, "")
		d.cur = x
		if len(x.buf) > 0 {
			d.send(x, deltaArgs, string(x.buf))
		}
		x.buf = nil
		d.sendRest(x, x.full)
		if !x.finished && !all {
			return
		}
		d.closeCur()
	}
}

// flushAll emits every held function call (see flushHeld).
func (d *responsesStreamDecoder) flushAll() {
	if len(d.pending) > 0 {
		d.flushHeld(true)
	}
	d.pending = d.pending[:0]
}

// closeCur closes the streaming function call's block.
func (d *responsesStreamDecoder) closeCur() {
	if d.cur != nil && d.cur.blk != nil && d.cs.open == d.cur.blk {
		d.cs.closeBlock()
	}
	d.cur = nil
}

// ensureText is ensure for text: x's open block must be a text block
// that is a refusal (streamBlock.refusal) exactly when refusal is set.
func (d *responsesStreamDecoder) ensureText(x *rsStreamItem, refusal bool) {
	if x.blk == nil || d.cs.open != x.blk || x.blk.kind != partText || x.blk.refusal != refusal {
		d.flushAll()
		x.blk = d.cs.openBlockAs(partText, "", "", "", refusal)
	}
}

// ensure makes x's block of kind the open one (a new block when another
// block was opened since, or none yet).
func (d *responsesStreamDecoder) ensure(x *rsStreamItem, kind partKind) {
	if x.blk == nil || d.cs.open != x.blk || x.blk.kind != kind {
		d.openItem(x, kind)
	}
}

// sendJSON is send for a delta that is the JSON string value v of the
// event (see deltaJSON: a surrogate pair split across deltas is joined).
func (d *responsesStreamDecoder) sendJSON(x *rsStreamItem, k deltaKind, v gjson.Result) {
	if x.blk == nil || d.cs.open != x.blk {
		return
	}
	x.sent = append(x.sent, v.Str...)
	d.cs.deltaJSON(k, v)
}

// send sends a delta to x's block and remembers it.
func (d *responsesStreamDecoder) send(x *rsStreamItem, k deltaKind, s string) {
	if x.blk == nil || d.cs.open != x.blk {
		return
	}
	x.sent = append(x.sent, s...)
	d.cs.delta(k, s)
}

// itemDone handles response.output_item.done: what the item holds that
// no delta carried is sent, a reasoning item's encrypted_content is
// attached, and its block is closed.
func (d *responsesStreamDecoder) itemDone(idx int64, it gjson.Result) {
	cs := d.cs
	var rb5 [6]gjson.Result
	res := getEach(rb5[:], it.Raw, "type", "call_id", "name", "arguments", "encrypted_content")
	x := d.item(idx)
	if x == nil {
		x = &rsStreamItem{outIdx: idx, typ: strings.Clone(res[0].Str), callID: strings.Clone(res[1].Str), name: strings.Clone(res[2].Str), summary: -1}
		d.items = append(d.items, x)
	}
	switch res[0].Str {
	case "message":
		if len(x.sent) == 0 {
			// each text or refusal part in a block of its kind, in order
			it.Get("content").ForEach(func(_, c gjson.Result) bool {
				var s string
				refusal := false
				switch c.Get("type").Str {
				case "output_text", "text":
					s = c.Get("text").String()
				case "refusal":
					d.refusal = true
					s, refusal = c.Get("refusal").String(), true
				}
				if s != "" {
					d.ensureText(x, refusal)
					d.send(x, deltaText, s)
				}
				return true
			})
		}
	case "function_call":
		d.called = true
		if x.blk == nil && !x.held {
			x.callID, x.name = strings.Clone(firstNonEmpty(x.callID, res[1].Str)), strings.Clone(firstNonEmpty(x.name, res[2].Str))
			if d.streaming() && d.cur != x {
				x.held = true
				d.pending = append(d.pending, x)
			} else {
				d.openItem(x, partToolCall)
			}
		}
		if x.held {
			// emitted when the streaming call is done
			if a := res[3].Str; a != "" {
				x.full = strings.Clone(a)
			}
			x.finished = true
			return
		}
		// arguments no delta carried (a provider that sends only .done)
		d.sendRest(x, res[3].Str)
		if x == d.cur {
			d.closeCur()
			d.flushHeld(false)
			return
		}
	case "reasoning":
		enc := res[4].Str
		if len(x.sent) == 0 {
			if p, ok := rsReasoningPart(reasoningText(it), enc); ok {
				if p.kind == partRedactedThinking {
					d.flushAll()
					x.blk = cs.openBlock(partRedactedThinking, "", "", p.data)
				} else {
					d.ensure(x, partThinking)
					d.send(x, deltaThinking, p.text)
					if p.signature != "" && cs.open == x.blk {
						cs.delta(deltaSignature, p.signature)
					}
				}
			}
		} else if enc != "" && x.blk != nil && cs.open == x.blk {
			cs.delta(deltaSignature, sigPrefixOpenAI+enc)
		}
	default:
		return // hosted tool calls have no counterpart
	}
	if x.blk != nil && cs.open == x.blk {
		cs.closeBlock()
	}
}

func (d *responsesStreamDecoder) end(readErr error) { d.cs.endOrFail(readErr) }

// getEach looks each path up in json into dst (gjson.GetMany allocates
// its result) and returns dst[:len(paths)].
func getEach(dst []gjson.Result, json string, paths ...string) []gjson.Result {
	for i, p := range paths {
		dst[i] = gjson.Get(json, p)
	}
	return dst[:len(paths)]
}
