package translate

import (
	"bytes"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Same-dialect streams: every upstream block is forwarded as it came, with
// the model rewritten, error messages scrubbed of secrets, usage observed,
// and a proper close synthesised when the upstream stops early.

// passState is what a passthrough needs to know to close a stream the
// upstream left open.
type passState struct {
	started  bool
	finished bool // finish_reason / message_delta seen
	done     bool // terminator seen
	sawTool  bool
	open     []int // Anthropic open block indexes
	id       string
	created  int64
	upModel  string
	errored  bool
	lastSeq  int64
	respID   string
}

func (t *StreamTranslator) passEvent(ev *SSEEvent) {
	raw := ev.Raw
	data := ev.Data
	if len(data) == 0 {
		t.write(raw) // comment / keep-alive
		return
	}
	st := &t.pt
	sd := view(data)
	switch t.from {
	case OpenAIChat:
		if bytes.Equal(bytes.TrimSpace(data), doneMarker) {
			st.done = true
			break
		}
		t.scratch = fieldsInto(t.scratch, gjson.Parse(sd))
		f := t.scratch
		if e := f.get("error"); e.IsObject() || (e.Type == gjson.String && e.Str != "") {
			st.errored = true
			raw = t.scrub(ev, "error.message")
			break
		}
		if u := f.get("usage"); u.IsObject() {
			t.usage.merge(chatUsage(u))
			if t.hideUsage && !hasElements(f.get("choices")) {
				return // the client did not ask for the usage chunk
			}
		}
		st.started = true
		if id := f.get("id"); id.Str != "" {
			st.id = id.Str
		}
		if c := f.get("created"); c.Type == gjson.Number {
			st.created = c.Int()
		}
		f.get("choices").ForEach(func(_, c gjson.Result) bool {
			if c.Get("finish_reason").Type == gjson.String {
				st.finished = true
			}
			if c.Get("delta.tool_calls").Exists() {
				st.sawTool = true
			}
			return true
		})
		if m := f.get("model"); t.model != "" && m.Type == gjson.String && m.Str != t.model {
			st.upModel = m.Str
			raw = t.splice(ev, m, t.model)
		}
	case AnthropicMessages:
		typ := gjson.Get(sd, "type").Str
		switch typ {
		case "message_start":
			st.started = true
			m := gjson.Get(sd, "message")
			st.id = m.Get("id").Str
			st.upModel = m.Get("model").Str
			t.au.add(m.Get("usage"))
			if t.model != "" && st.upModel != t.model && m.Get("model").Exists() {
				raw = t.rewrite(ev, "message.model")
			}
		case "content_block_start":
			idx := int(gjson.Get(sd, "index").Int())
			st.open = append(st.open, idx)
			if gjson.Get(sd, "content_block.type").Str == "tool_use" {
				st.sawTool = true
			}
		case "content_block_stop":
			idx := int(gjson.Get(sd, "index").Int())
			for i, o := range st.open {
				if o == idx {
					st.open = append(st.open[:i], st.open[i+1:]...)
					break
				}
			}
		case "message_delta":
			st.finished = true
			st.open = st.open[:0]
			t.au.add(gjson.Get(sd, "usage"))
		case "message_stop":
			st.done = true
		case "error":
			st.errored = true
			raw = t.scrub(ev, "error.message")
		}
	case OpenAIResponses:
		res := gjson.GetMany(sd, "type", "sequence_number", "response.model", "response.usage", "response.id")
		if res[1].Type == gjson.Number {
			st.lastSeq = res[1].Int()
		}
		if res[4].Str != "" {
			st.respID = res[4].Str
		}
		switch res[0].Str {
		case "response.created", "response.in_progress":
			st.started = true
		case "response.completed", "response.incomplete", "response.failed":
			st.done = true
			if res[3].IsObject() {
				t.usage.merge(responsesUsage(res[3]))
			}
		case "error":
			st.errored = true
			raw = t.scrub(ev, "message")
			if gjson.Get(sd, "error.message").Exists() {
				raw = t.scrub(ev, "error.message")
			}
		}
		if res[0].Str == "response.failed" {
			raw = t.scrub(ev, "response.error.message")
		}
		if t.model != "" && res[2].Type == gjson.String && res[2].Str != t.model {
			cur := ev
			if &raw[0] != &ev.Raw[0] { // already scrubbed: rewrite that version
				if e, err := NewSSEReader(bytes.NewReader(raw)).Next(); err == nil {
					cur = &e
				}
			}
			raw = t.rewrite(cur, "response.model")
		}
	}
	t.write(raw)
}

// splice returns ev.Raw with the JSON string v (a value found in ev.Data,
// with its Index) replaced by value, copying the event once. It falls back
// to sjson when Data is not a contiguous part of Raw.
func (t *StreamTranslator) splice(ev *SSEEvent, v gjson.Result, value string) []byte {
	if ev.dataOff < 0 || v.Index <= 0 || v.Index+len(v.Raw) > len(ev.Data) {
		return t.replaceAt(ev, "model", value)
	}
	at := ev.dataOff + v.Index
	out := make([]byte, 0, len(ev.Raw)+len(value)+2-len(v.Raw))
	out = append(out, ev.Raw[:at]...)
	out = appendString(out, value)
	return append(out, ev.Raw[at+len(v.Raw):]...)
}

// scrub returns ev.Raw with secrets removed from the message at path (see
// ScrubSecrets); unchanged bytes when there is nothing to remove.
func (t *StreamTranslator) scrub(ev *SSEEvent, path string) []byte {
	m := gjson.GetBytes(ev.Data, path)
	if m.Type != gjson.String {
		return ev.Raw
	}
	clean := ScrubSecrets(m.Str)
	if clean == m.Str {
		return ev.Raw
	}
	return t.replaceAt(ev, path, clean)
}

// rewrite returns ev.Raw with the string at path inside the data replaced
// by the client's model, keeping every other byte.
func (t *StreamTranslator) rewrite(ev *SSEEvent, path string) []byte {
	return t.replaceAt(ev, path, t.model)
}

// replaceAt returns ev.Raw with the string at path inside the data set to
// value, keeping every other byte.
func (t *StreamTranslator) replaceAt(ev *SSEEvent, path, value string) []byte {
	nd, err := sjson.SetBytes(bytes.Clone(ev.Data), path, value)
	if err != nil {
		return ev.Raw
	}
	if i := bytes.Index(ev.Raw, ev.Data); i >= 0 && bytes.Count(ev.Data, []byte{'\n'}) == 0 {
		out := make([]byte, 0, len(ev.Raw)+len(nd)-len(ev.Data))
		out = append(out, ev.Raw[:i]...)
		out = append(out, nd...)
		return append(out, ev.Raw[i+len(ev.Data):]...)
	}
	return appendEvent(nil, ev.Event, nd)
}

// passEnd closes a passthrough stream that the upstream did not close.
func (t *StreamTranslator) passEnd(readErr error) {
	st := &t.pt
	if st.done {
		return
	}
	if st.errored && readErr == nil {
		// the upstream's error event was forwarded; add the terminator.
		switch t.from {
		case OpenAIChat:
			t.write([]byte("data: [DONE]\n\n"))
			return
		case AnthropicMessages:
			t.write(appendEvent(nil, "message_stop", []byte(`{"type":"message_stop"}`)))
			return
		}
	}
	if readErr == nil && !st.finished {
		t.truncated = true
	}
	msg := "upstream stream ended unexpectedly"
	if readErr != nil {
		msg = "upstream stream interrupted: connection error"
	}
	b := t.buf[:0]
	switch t.from {
	case OpenAIChat:
		if readErr != nil || !st.started {
			b = appendEvent(b, "", errorBody(OpenAIChat, ErrUpstreamUnavailable, msg, ""))
			t.write(b)
			t.write([]byte("data: [DONE]\n\n"))
			return
		}
		if !st.finished {
			fr := "stop"
			if st.sawTool {
				fr = "tool_calls"
			}
			c := append(b, `{"id":`...)
			c = appendString(c, st.id)
			c = append(c, `,"object":"chat.completion.chunk","created":`...)
			c = strconv.AppendInt(c, st.created, 10)
			c = append(c, `,"model":`...)
			c = appendString(c, firstNonEmpty(t.model, st.upModel))
			c = append(c, `,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"`...)
			c = append(c, fr...)
			c = append(c, `"}]}`...)
			t.write(appendEvent(nil, "", c))
		}
		t.write([]byte("data: [DONE]\n\n"))
	case AnthropicMessages:
		if readErr != nil || !st.started {
			t.write(appendEvent(b, "error", errorBody(AnthropicMessages, ErrUpstreamUnavailable, msg, "")))
			t.write(appendEvent(nil, "message_stop", []byte(`{"type":"message_stop"}`)))
			return
		}
		for _, idx := range st.open {
			d := strconv.AppendInt([]byte(`{"type":"content_block_stop","index":`), int64(idx), 10)
			t.write(appendEvent(nil, "content_block_stop", append(d, '}')))
		}
		if !st.finished {
			sr := stopEndTurn
			if st.sawTool {
				sr = stopToolUse
			}
			d := []byte(`{"type":"message_delta","delta":{"stop_reason":"` + sr + `","stop_sequence":null},"usage":`)
			u := t.au.usage()
			d = appendAnthropicUsage(d, u, false)
			t.write(appendEvent(nil, "message_delta", append(d, '}')))
		}
		t.write(appendEvent(nil, "message_stop", []byte(`{"type":"message_stop"}`)))
	case OpenAIResponses:
		seq := st.lastSeq + 1
		e := []byte(`{"type":"error","code":"upstream_unavailable","message":`)
		e = appendString(e, msg)
		e = append(e, `,"param":null,"sequence_number":`...)
		e = strconv.AppendInt(e, seq, 10)
		t.write(appendEvent(nil, "error", append(e, '}')))
		f := []byte(`{"type":"response.failed","sequence_number":`)
		f = strconv.AppendInt(f, seq+1, 10)
		f = append(f, `,"response":{"id":`...)
		f = appendString(f, st.respID)
		f = append(f, `,"object":"response","created_at":`...)
		f = strconv.AppendInt(f, nowUnix(), 10)
		f = append(f, `,"status":"failed","error":{"code":"server_error","message":`...)
		f = appendString(f, msg)
		f = append(f, `},"incomplete_details":null,"model":`...)
		f = appendString(f, t.model)
		f = append(f, `,"output":[],"usage":null}}`...)
		t.write(appendEvent(nil, "response.failed", f))
	}
}
