package translate

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// A bare error: relays (one-api, new-api, OpenRouter-style proxies) that
// fail after they sent the 200 text/event-stream headers write the error
// as a JSON body, without the SSE "data:" field:
//
//	{"error":{"message":"…","type":"server_error","code":500}}
//
// or without the "error" wrapper ({"message":"…","type":…,"code":…}, or
// vLLM's {"object":"error",…}). An SSE reader sees a block with no data
// (its line's field name is not one SSE knows), which a client's reader
// ignores: the stream would end as a truncation, the upstream's own words
// lost. StreamTranslator.Run reads such a block as the upstream's in-band
// error (StreamError, UpstreamError), as if it had come as the dialect's
// error event: before the commit point it fails the attempt with that
// cause (HoldPreamble), after it the client gets it in its dialect
// (bareErrorEvent).

// bareError returns the StreamError of an SSE block ev without data whose
// text is a JSON error object (see above), nil for any other block. It
// costs a byte test for a comment or keep-alive.
func bareError(up Dialect, ev *SSEEvent) *StreamError {
	if len(ev.Data) != 0 {
		return nil
	}
	return bareJSONError(up, ev.Raw)
}

// strayError returns the StreamError of a bare error (see above) written
// into an SSE block that also has data: lines, nil when there is none:
// a relay that writes its error after (or before) an event's data
// without the blank line that ends the event, e.g.
//
//	data: {"choices":[…]}
//	{"error":{"message":"…","type":"server_error","code":502}}
//
// Per the SSE spec (WHATWG HTML, "Event stream interpretation") such a
// line is a field whose name SSE does not know ("{\"error\"", up to the
// first colon), ignored: a client's reader takes the data alone and the
// error is lost. The block's lines that are no SSE field (data, event,
// id, retry) and no comment are read together, from the first one that
// begins with "{", as one JSON value, which is an error only as
// bareError judges one. first reports whether that line comes before
// the block's first data: line. A block without such a line costs a scan
// for its line ends.
func strayError(up Dialect, ev *SSEEvent) (se *StreamError, first bool) {
	raw := ev.Raw
	at := -1                              // offset of the first stray line that begins with "{"
	cr := bytes.IndexByte(raw, '\r') >= 0 // lines may end in CR alone (the SSE reader takes LF, CR and CRLF)
	for i := 0; i < len(raw); {
		if raw[i] == '{' {
			at = i
			break
		}
		_, i = rawLine(raw, i, cr)
	}
	if at < 0 {
		return nil, false
	}
	var js []byte
	sawData, dataFirst := false, false
	for i := 0; i < len(raw); {
		end, next := rawLine(raw, i, cr)
		line := raw[i:end]
		switch f := sseFieldName(line); {
		case f == "data":
			if !sawData {
				sawData, dataFirst = true, i < at
			}
		case f == "" && len(line) > 0 && line[0] != ':' && i >= at:
			js = append(append(js, line...), '\n')
		}
		i = next
	}
	if se = bareJSONError(up, js); se == nil {
		return nil, false
	}
	return se, !dataFirst
}

// rawLine returns the end of the line of raw that begins at i (before
// its terminator) and where the next begins; cr tells whether raw holds a
// CR at all, which a line may end in, alone or before LF.
func rawLine(raw []byte, i int, cr bool) (end, next int) {
	j := bytes.IndexByte(raw[i:], '\n')
	if cr {
		if k := bytes.IndexByte(raw[i:], '\r'); k >= 0 && (j < 0 || k < j) {
			if k+1 == j {
				return i + k, i + j + 1
			}
			return i + k, i + k + 1
		}
	}
	if j < 0 {
		return len(raw), len(raw)
	}
	return i + j, i + j + 1
}

// sseFieldName returns the SSE field a line sets ("data", "event", "id",
// "retry": the name up to its first colon, or the whole line), "" for
// any other line.
func sseFieldName(line []byte) string {
	name := line
	if k := bytes.IndexByte(line, ':'); k >= 0 {
		name = line[:k]
	}
	switch string(name) {
	case "data", "event", "id", "retry":
		return string(name)
	}
	return ""
}

// bareJSONError is bareError's reading of the text of a block (or of its
// stray lines, strayError).
func bareJSONError(up Dialect, text []byte) *StreamError {
	js := bytes.TrimSpace(text)
	if len(js) < 2 || js[0] != '{' || !gjson.ValidBytes(js) {
		return nil
	}
	r := gjson.GetManyBytes(js, "error", "object", "choices", "content", "output", "delta", "message", "type", "code")
	if se := answerErrorOf(up, r[0], r[1], r[2], r[3], r[4]); se != nil {
		return se
	}
	if r[0].Exists() || r[2].Exists() || r[3].Exists() || r[4].Exists() || r[5].Exists() {
		return nil // an "error" that states nothing, or a chunk or answer
	}
	// the error object's fields at the top level: a non-empty message with
	// a code, or with a type that names an error (OpenAI's types end in
	// "error" or are given with a code: "tokens", "insufficient_quota"),
	// or vLLM's "object":"error"; a relay's {"type":"ping","message":…}
	// is no error
	msg := r[6]
	typeSaysError := r[7].Type == gjson.String && strings.Contains(strings.ToLower(r[7].Str), "error")
	codeGiven := errStr(r[8]) != "" // a non-empty string or a number
	if msg.Type != gjson.String || msg.Str == "" || !(codeGiven || typeSaysError || r[1].Str == "error") {
		return nil
	}
	if r[1].Exists() && r[1].Str != "error" {
		return nil
	}
	whole := gjson.ParseBytes(js)
	return keepErrorMetadata(newStreamError(up, errStr(r[7]), errStr(r[8]), msg.Str, errStr(whole.Get("param"))), whole)
}

// bareErrorEvent handles a bare error se read from the upstream (see
// bareError) in place of an SSE event: it is the upstream's error
// (UpstreamError) and ends the stream. A translated stream fails as for
// the dialect's error event. A passthrough fails before the commit point
// (HoldPreamble: nothing written, the cause se); after it the client gets
// the error in its dialect, scrubbed as in-band errors are (se's Message
// and Body): an OpenAI Chat chunk data: {"error":{…}}, an Anthropic
// event: error, a Responses error event with the nested error object
// followed by response.failed (as the gateway's own error form, since no
// upstream response.failed follows a bare error).
func (t *StreamTranslator) bareErrorEvent(se *StreamError) {
	se = t.setUpstreamError(se)
	typ := gjson.GetBytes(se.Body, "error.type").Str
	code := errStr(gjson.GetBytes(se.Body, "error.code"))
	if t.from != t.to {
		if t.cs.closed {
			return
		}
		t.cs.fail(classForErrorType(typ, code), firstNonEmpty(se.Message, "upstream error"), se)
		return
	}
	st := &t.pt
	st.errored = true
	t.stopped = true
	if t.failBeforeCommit(se) {
		return
	}
	t.errEvent = true
	defer func() { t.errEvent = false }()
	switch t.from {
	case OpenAIChat:
		t.write(appendEvent(nil, "", se.Body))
	case AnthropicMessages:
		t.write(appendEvent(nil, "error", se.Body))
	case OpenAIResponses:
		seq := st.lastSeq + 1
		e := []byte(`{"type":"error","sequence_number":`)
		e = strconv.AppendInt(e, seq, 10)
		e = appendRSErrorFields(e, firstNonEmpty(typ, "server_error"), code, se.Message)
		t.write(appendEvent(nil, "error", append(e, '}')))
		f := []byte(`{"type":"response.failed","sequence_number":`)
		f = strconv.AppendInt(f, seq+1, 10)
		f = append(f, `,"response":`...)
		f = appendRSResponse(f, firstNonEmpty(st.respID, "resp_gateway"), nowUnix(), "failed", "", firstNonEmpty(t.model, st.upModel), nil, t.usage, firstNonEmpty(code, se.Type), se.Message, nil, nil)
		t.write(appendEvent(nil, "response.failed", append(f, '}')))
	}
}
