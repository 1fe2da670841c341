package translate

import (
	"bytes"
	"io"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Same-dialect streams: every upstream block is forwarded as it came, with
// the model rewritten, error messages scrubbed of secrets and usage
// observed. A stream that ends without a finish reason, or breaks off, gets
// the dialect's error form instead of a finish; an upstream error event is
// the last thing relayed.

// passState is what a passthrough needs to know to end a stream.
type passState struct {
	started  bool
	finished bool // finish_reason / message_delta / response.completed seen
	done     bool // terminator seen
	errored  bool // the upstream sent an error event
	lastSeq  int64
	respID   string
	upModel  string // Responses response.model
}

func (t *StreamTranslator) passEvent(ev *SSEEvent) {
	raw := ev.Raw
	data := ev.Data
	if len(data) == 0 {
		t.pre = true // comment / keep-alive
		t.write(raw)
		t.pre = false
		return
	}
	st := &t.pt
	// classify only while it matters: before the commit point
	classify := t.hold && !t.committed
	pre := false
	sd := view(data)
	switch t.from {
	case OpenAIChat:
		if bytes.Equal(bytes.TrimSpace(data), doneMarker) {
			if !st.finished {
				t.passTruncated()
				return
			}
			st.done = true
			break
		}
		t.scratch = fieldsInto(t.scratch, gjson.Parse(sd))
		f := t.scratch
		if e := f.get("error"); e.IsObject() || (e.Type == gjson.String && e.Str != "") {
			st.errored = true
			t.stopped = true
			typ, code, msg, param := openAIErrorFields(e)
			if t.failBeforeCommit(t.setUpstreamError(newStreamError(OpenAIChat, typ, code, msg, param))) {
				return
			}
			raw = t.scrub(ev, "error.message")
			break
		}
		u := f.get("usage")
		if u.IsObject() {
			t.usage.merge(chatUsage(u))
			if t.hideUsage && !hasElements(f.get("choices")) {
				return // the client did not ask for the usage chunk
			}
		}
		st.started = true
		pre = classify && !u.IsObject()
		f.get("choices").ForEach(func(_, c gjson.Result) bool {
			if fr := c.Get("finish_reason"); fr.Type == gjson.String && fr.Str != "" {
				st.finished = true
				pre = false
			} else if pre && !chatDeltaIsPreamble(c.Get("delta")) {
				pre = false
			}
			return true
		})
		if m := f.get("model"); t.model != "" && m.Type == gjson.String && m.Str != t.model {
			raw = t.splice(ev, m, t.model)
		}
	case AnthropicMessages:
		typ := gjson.Get(sd, "type").Str
		if typ == "" {
			typ = ev.Event
		}
		switch typ {
		case "message_start":
			pre = true
			st.started = true
			m := gjson.Get(sd, "message")
			t.au.add(m.Get("usage"))
			if mm := m.Get("model"); t.model != "" && mm.Exists() && mm.Str != t.model {
				raw = t.rewrite(ev, "message.model")
			}
		case "ping":
			pre = true
		case "message_delta":
			st.finished = true
			t.au.add(gjson.Get(sd, "usage"))
		case "message_stop":
			if !st.finished {
				t.passTruncated()
				return
			}
			st.done = true
		case "error":
			st.errored = true
			t.stopped = true
			e := gjson.Get(sd, "error")
			se := t.setUpstreamError(newStreamError(AnthropicMessages, e.Get("type").Str, "", e.Get("message").String(), ""))
			if t.failBeforeCommit(se) {
				return
			}
			raw = t.scrub(ev, "error.message")
		}
	case OpenAIResponses:
		res := gjson.GetMany(sd, "type", "sequence_number", "response.model", "response.usage", "response.id")
		typ := res[0].Str
		if typ == "" {
			typ = ev.Event
		}
		if st.errored && typ != "response.failed" {
			return // after the upstream's error event only its response.failed is relayed
		}
		if res[1].Type == gjson.Number {
			st.lastSeq = res[1].Int()
		}
		if res[4].Str != "" && res[4].Str != st.respID {
			st.respID = strings.Clone(res[4].Str)
		}
		if res[2].Str != "" && res[2].Str != st.upModel {
			st.upModel = strings.Clone(res[2].Str)
		}
		switch typ {
		case "response.created", "response.in_progress", "response.queued":
			pre = true
			st.started = true
		case "response.completed", "response.incomplete":
			st.finished = true
			st.done = true
			if res[3].IsObject() {
				t.usage.merge(responsesUsage(res[3]))
			}
		case "response.failed":
			if res[3].IsObject() {
				t.usage.merge(responsesUsage(res[3]))
			}
			t.stopped = true
			if !st.errored {
				st.errored = true
				e := gjson.Get(sd, "response.error")
				se := t.setUpstreamError(newStreamError(OpenAIResponses, "", errStr(e.Get("code")), e.Get("message").String(), ""))
				if t.failBeforeCommit(se) {
					return
				}
			}
			raw = t.scrub(ev, "response.error.message")
		case "error":
			st.errored = true
			typ, code, msg, param := errStr(gjson.Get(sd, "type")), errStr(gjson.Get(sd, "code")), gjson.Get(sd, "message").String(), errStr(gjson.Get(sd, "param"))
			if e := gjson.Get(sd, "error"); e.IsObject() {
				typ, code, msg, param = openAIErrorFields(e)
			} else {
				typ = "" // the event's own type, "error"
			}
			if t.failBeforeCommit(t.setUpstreamError(newStreamError(OpenAIResponses, typ, code, msg, param))) {
				return
			}
			raw = t.scrub(ev, "message", "error.message") // flat and nested, as OpenAI sends both
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
	t.pre = pre
	t.write(raw)
	t.pre = false
}

// chatDeltaIsPreamble reports whether a Chat delta carries nothing but the
// role: every other member is null, "" or [].
func chatDeltaIsPreamble(d gjson.Result) bool {
	pre := true
	d.ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "role", v.Type == gjson.Null, v.Type == gjson.String && v.Str == "":
		case v.IsArray() && !hasElements(v):
		default:
			pre = false
		}
		return pre
	})
	return pre
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

// scrub returns ev.Raw with secrets removed from the messages at paths
// (see ScrubSecrets), copying the event at most once; unchanged bytes when
// there is nothing to remove.
func (t *StreamTranslator) scrub(ev *SSEEvent, paths ...string) []byte {
	var nd []byte // the data as scrubbed so far; nil while unchanged
	for _, path := range paths {
		src := ev.Data
		if nd != nil {
			src = nd
		}
		m := gjson.GetBytes(src, path)
		if m.Type != gjson.String {
			continue
		}
		clean := ScrubSecrets(m.Str)
		if clean == m.Str {
			continue
		}
		if nd == nil {
			nd = bytes.Clone(ev.Data)
		}
		if d, err := sjson.SetBytes(nd, path, clean); err == nil {
			nd = d
		}
	}
	if nd == nil {
		return ev.Raw
	}
	return withData(ev, nd)
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
	return withData(ev, nd)
}

// withData returns ev.Raw with its data replaced by nd, keeping every other
// byte when the data is one contiguous line of Raw (ev.dataOff >= 0, as the
// SSEReader records it; no second scan of the event).
func withData(ev *SSEEvent, nd []byte) []byte {
	if i := ev.dataOff; i >= 0 {
		out := make([]byte, 0, len(ev.Raw)+len(nd)-len(ev.Data))
		out = append(out, ev.Raw[:i]...)
		out = append(out, nd...)
		return append(out, ev.Raw[i+len(ev.Data):]...)
	}
	return appendEvent(nil, ev.Event, nd)
}

// passEnd ends a passthrough stream: a stream that finished gets its
// terminator if the upstream left it out; one that broke off, or ended
// without a finish reason, gets the dialect's error form.
func (t *StreamTranslator) passEnd(readErr error) {
	st := &t.pt
	if t.stopped || st.errored || st.done {
		return
	}
	if readErr == nil && st.finished {
		switch t.from {
		case OpenAIChat:
			t.write([]byte("data: [DONE]\n\n"))
		case AnthropicMessages:
			t.write(appendEvent(nil, "message_stop", []byte(`{"type":"message_stop"}`)))
		}
		return
	}
	if readErr != nil {
		t.passFail(msgInterrupted, readErr)
		return
	}
	t.passTruncated()
}

// passTruncated ends a stream that stopped without a finish reason.
func (t *StreamTranslator) passTruncated() {
	t.truncated = true
	msg := msgTruncated
	if !t.pt.started {
		msg = msgEmpty
	}
	t.passFail(msg, io.ErrUnexpectedEOF)
}

// passFail writes the dialect's error form (see StreamTranslator) and stops
// the stream; before the commit point it writes nothing (see HoldPreamble).
func (t *StreamTranslator) passFail(msg string, cause error) {
	t.stopped = true
	if t.failBeforeCommit(cause) {
		return
	}
	st := &t.pt
	switch t.from {
	case OpenAIChat:
		t.write(appendEvent(nil, "", errorBody(OpenAIChat, ErrUpstreamUnavailable, msg, "")))
	case AnthropicMessages:
		t.write(appendEvent(nil, "error", errorBody(AnthropicMessages, ErrUpstreamUnavailable, msg, "")))
	case OpenAIResponses:
		typ, code := ErrUpstreamUnavailable.openAIType()
		seq := st.lastSeq + 1
		e := []byte(`{"type":"error","sequence_number":`)
		e = strconv.AppendInt(e, seq, 10)
		e = appendRSErrorFields(e, typ, code, msg)
		t.write(appendEvent(nil, "error", append(e, '}')))
		f := []byte(`{"type":"response.failed","sequence_number":`)
		f = strconv.AppendInt(f, seq+1, 10)
		f = append(f, `,"response":`...)
		f = appendRSResponse(f, firstNonEmpty(st.respID, "resp_gateway"), nowUnix(), "failed", "", firstNonEmpty(t.model, st.upModel), nil, t.usage, code, msg)
		t.write(appendEvent(nil, "response.failed", append(f, '}')))
	}
}
