package translate

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/bits"
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

	// OpenAI Chat: the chunks' choices (a chunk not read counts as one
	// with choices)
	choices chatChoices
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
	isErr := false
	failAfter := false // the upstream's finish_reason "error": the error form follows the chunk
	sd := view(data)
	switch t.from {
	case OpenAIChat:
		if bytes.Equal(bytes.TrimSpace(data), doneMarker) {
			if !st.finished && !st.blocked() {
				t.passTruncated()
				return
			}
			st.done = true
			break
		}
		// A chunk is parsed only when a byte test says it may carry what
		// matters (an error, a usage object, a finish_reason) or while the
		// preamble is classified; content chunks are not. The parse's
		// findings count only where the byte test agrees, so that a
		// chunk means the same parsed or not (a member name written with
		// \u escapes is not seen either way).
		hasErr, hasUsage, hasFinish, usageAt := t.chunkLead.members(data)
		if objectError(data) {
			// vLLM's error chunk: the error's fields at the top level
			st.errored = true
			t.stopped = true
			if t.failBeforeCommit(t.setUpstreamError(openAIStreamError(OpenAIChat, gjson.Parse(sd)))) {
				return
			}
			raw = t.scrub(ev, "message")
			isErr = true
			break
		}
		if classify || hasErr || hasUsage || hasFinish {
			f := &t.chunk
			chatChunkSet.read(gjson.Parse(sd), f[:])
			if e := f[chunkError]; hasErr && (e.IsObject() || (e.Type == gjson.String && e.Str != "")) {
				st.errored = true
				t.stopped = true
				if t.failBeforeCommit(t.setUpstreamError(openAIStreamError(OpenAIChat, e))) {
					return
				}
				raw = t.scrub(ev, "error.message")
				isErr = true
				break
			}
			u, choices := f[chunkUsage], f[chunkChoices]
			if malformedChoices(choices) {
				// not a chat.completion.chunk: the upstream's failure,
				// relayed as the dialect's error form, never as it came
				st.errored = true
				se := t.setUpstreamError(newStreamError(OpenAIChat, "server_error", "", msgMalformedChoices, ""))
				t.passFail(se.Message, se) // nothing written before the commit point
				return
			}
			if !hasUsage {
				u = gjson.Result{}
			}
			if u.IsObject() {
				t.usage.merge(chatUsage(u))
				if t.hideUsage && st.choices.others && !hasElements(choices) {
					// the client did not ask for the usage chunk (kept
					// when no choice came: a blocked prompt's only chunk)
					return
				}
			}
			st.choices.note(choices, f[chunkPromptFilterResults], f[chunkUsage], f[chunkPromptFeedback], f[chunkPromptFeedbackSnake])
			pre = classify && !u.IsObject()
			finErr := false
			choices.ForEach(func(_, c gjson.Result) bool {
				if fr := c.Get("finish_reason"); hasFinish && fr.Type == gjson.String && fr.Str != "" {
					st.finished = true
					pre = false
					finErr = finErr || fr.Str == "error"
				} else if pre && !chatDeltaIsPreamble(c.Get("delta")) {
					pre = false
				}
				return true
			})
			if finErr {
				// OpenRouter's finish_reason for a generation that failed:
				// an upstream error, never a finish; the chunk is relayed,
				// then the dialect's error form ends the stream
				st.errored = true
				t.stopped = true
				if t.failBeforeCommit(t.setUpstreamError(newStreamError(OpenAIChat, "", "", msgFinishError, ""))) {
					return
				}
				failAfter = true
			}
		} else {
			st.choices.others = true
		}
		st.started = true
		var eds [2]dataEdit
		n := 0
		if t.model != "" { // the chunk is read for its model only when one is to be rewritten
			if ed, ok := t.modelAt.find(data); ok {
				eds[n] = ed
				n++
			} else if m := gjson.Get(sd, "model"); m.Type == gjson.String && m.Str != t.model {
				eds[n] = modelEdit(data, m)
				n++
				t.modelAt.note(data, eds[n-1])
			}
		}
		if t.hideUsage {
			if from, to, ok := usageNullMemberAt(data, usageAt); ok {
				eds[n] = dataEdit{from, to, false}
				n++
			}
		}
		raw = t.edit(ev, eds[:n], "model")
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
				raw = t.edit(ev, []dataEdit{modelEdit(data, mm)}, "message.model")
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
			isErr = true
		}
	case OpenAIResponses:
		typ := gjson.Get(sd, "type").Str
		if typ == "" {
			typ = ev.Event
		}
		if st.errored && typ != "response.failed" {
			return // after the upstream's error event only its response.failed is relayed
		}
		if seq := gjson.Get(sd, "sequence_number"); seq.Type == gjson.Number {
			st.lastSeq = seq.Int()
		}
		// only the lifecycle events (response.created … response.failed)
		// carry a "response" object: its id, model and usage (read from
		// the terminal events only)
		var resp, model gjson.Result
		if hasMember(data, keyResponse, '{') {
			resp = gjson.Get(sd, "response")
			model = resp.Get("model")
			if id := resp.Get("id"); id.Str != "" && id.Str != st.respID {
				st.respID = strings.Clone(id.Str)
			}
			if model.Str != "" && model.Str != st.upModel {
				st.upModel = strings.Clone(model.Str)
			}
		}
		switch typ {
		case "response.created", "response.in_progress", "response.queued":
			pre = true
			st.started = true
		case "response.completed", "response.incomplete":
			st.finished = true
			st.done = true
			if usage := resp.Get("usage"); usage.IsObject() {
				t.usage.merge(responsesUsage(usage))
			}
		case "response.failed":
			if usage := resp.Get("usage"); usage.IsObject() {
				t.usage.merge(responsesUsage(usage))
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
			isErr = true
		case "error":
			// only the upstream's response.failed may follow: it is
			// waited for by the drain (afterError), within its bounds
			st.errored = true
			t.stopped = true
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
			isErr = true
		}
		if t.model != "" && model.Type == gjson.String && model.Str != t.model {
			if &raw[0] != &ev.Raw[0] { // already scrubbed: rewrite that version
				if e, err := NewSSEReader(bytes.NewReader(raw)).Next(); err == nil {
					raw = t.rewrite(&e, "response.model")
				}
			} else {
				raw = t.edit(ev, []dataEdit{modelEdit(data, model)}, "response.model")
			}
		}
	}
	t.pre = pre
	t.errEvent = isErr
	t.write(raw)
	t.pre = false
	t.errEvent = false
	if failAfter {
		t.passFail(msgFinishError, nil)
	}
}

// Member names the passthrough looks for with hasMember.
var (
	keyError        = []byte(`"error"`)
	keyUsage        = []byte(`"usage"`)
	keyFinishReason = []byte(`"finish_reason"`)
	keyResponse     = []byte(`"response"`)
)

// hasMember is the byte test that decides whether an event is parsed: it
// reports whether data holds the quoted name qkey followed, after optional
// white space, by ':' and a value starting with first (any value when
// first is 0). It never misses such a member (a name written with \u
// escapes aside) and may find one that is not at the top level, or in a
// string value that holds JSON text, which only costs a parse.
func hasMember(data, qkey []byte, first byte) bool {
	for off := 0; off < len(data); {
		i := bytes.Index(data[off:], qkey)
		if i < 0 {
			return false
		}
		j := skipSpace(data, off+i+len(qkey))
		if j < len(data) && data[j] == ':' {
			j = skipSpace(data, j+1)
			if j < len(data) && (first == 0 || data[j] == first) {
				return true
			}
		}
		off += i + 1
	}
	return false
}

// chatChunkMembers is hasMember for the three members a Chat chunk is
// parsed for, in one pass over its colons instead of three searches for
// quoted names (a '"' is the commonest byte of JSON, so each search tests
// many false starts): "error" with any value, "usage" with an object,
// "finish_reason" with a string. Like hasMember it never misses such a
// member and may find one that is not at the top level. usageAt is where
// the last "usage" name followed by a colon starts, -1 when there is none
// (usageNullMemberAt's starting point).
func chatChunkMembers(data []byte) (hasErr, hasUsage, hasFinish bool, usageAt int) {
	hasErr, hasUsage, hasFinish, usageAt, _ = chatChunkMembersFrom(data, 0)
	return hasErr, hasUsage, hasFinish, usageAt
}

// chatChunkMembersFrom is chatChunkMembers over the colons at from and
// after (the name before a colon may start before from). first is the
// offset of the first of those colons whose name is one of the three,
// whatever its value; len(data) when there is none.
func chatChunkMembersFrom(data []byte, from int) (hasErr, hasUsage, hasFinish bool, usageAt, first int) {
	usageAt, first = -1, len(data)
	for off := from; off < len(data); {
		c := bytes.IndexByte(data[off:], ':')
		if c < 0 {
			break
		}
		c += off
		off = c + 1
		q := c - 1 // the name's closing quote, before any white space
		for q >= 0 && isJSONSpace(data[q]) {
			q--
		}
		if q < 0 || data[q] != '"' {
			continue
		}
		v := skipSpace(data, c+1)
		if q == 0 {
			continue
		}
		// the name's last letter picks the one name it can be: most
		// colons end another member and cost one byte test
		name := data[:q+1]
		switch data[q-1] {
		case 'r':
			if !bytes.HasSuffix(name, keyError) {
				continue
			}
			hasErr = hasErr || v < len(data)
		case 'e':
			if !bytes.HasSuffix(name, keyUsage) {
				continue
			}
			if v < len(data) {
				hasUsage = hasUsage || data[v] == '{'
				usageAt = q + 1 - len(keyUsage)
			}
		case 'n':
			if !bytes.HasSuffix(name, keyFinishReason) {
				continue
			}
			hasFinish = hasFinish || (v < len(data) && data[v] == '"')
		default:
			continue
		}
		first = min(first, c)
		if v >= len(data) {
			break
		}
	}
	return hasErr, hasUsage, hasFinish, usageAt, first
}

// chunkLead keeps the leading bytes of the last OpenAI Chat chunks that
// precede any colon after one of the names chatChunkMembers looks for, so
// that the next chunk's scan starts where it differs from them: an
// upstream writes every chunk of a stream with the same leading members
// (id, object, created, model, system_fingerprint, then choices[0].index
// and delta, per the OpenAI API reference, "The chat completion chunk
// object"), so only the delta's text onwards is read. A colon in the
// shared bytes has the same name before it as in the chunk the lead came
// from, which was none of the three.
//
// After a chunk that differs from the lead early, the lead is that whole
// chunk up to its first such colon; once the next chunk shares at least
// minStableLead bytes with it, the lead is cut to what the two share
// (stable) and later chunks that start with it are recognised by one
// compare, without copying.
type chunkLead struct {
	b      []byte
	stable bool
}

// maxChunkLead bounds the bytes chunkLead keeps of a chunk;
// minStableLead is the shortest shared lead that is kept as stable.
const (
	maxChunkLead  = 512
	minStableLead = 32
)

// members is chatChunkMembers(data), reading only the colons from where
// data first differs from the kept lead, and updates the lead.
func (l *chunkLead) members(data []byte) (hasErr, hasUsage, hasFinish bool, usageAt int) {
	if l.stable && bytes.HasPrefix(data, l.b) {
		hasErr, hasUsage, hasFinish, usageAt, _ = chatChunkMembersFrom(data, len(l.b))
		return hasErr, hasUsage, hasFinish, usageAt
	}
	from := commonPrefix(data, l.b)
	var first int
	hasErr, hasUsage, hasFinish, usageAt, first = chatChunkMembersFrom(data, from)
	if !l.stable && from >= minStableLead {
		// the bytes both share, none a colon after a name of note
		l.b, l.stable = l.b[:from], true
		return hasErr, hasUsage, hasFinish, usageAt
	}
	// the bytes both share are in place: copy only from where they differ
	n := min(first, maxChunkLead)
	k := min(from, n)
	l.b, l.stable = append(l.b[:k], data[k:n]...), false
	return hasErr, hasUsage, hasFinish, usageAt
}

// commonPrefix is the length of the longest common prefix of a and b,
// compared eight bytes at a time.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < n && a[i] == b[i]; i++ {
	}
	return i
}

// objectError reports whether an OpenAI Chat chunk is the error object
// vLLM (and servers built like it) stream instead of a chunk:
// {"object":"error","message":...,"type":...,"code":400}, its first member
// "object" with the string "error" (white space allowed between tokens).
// The byte test is exact for that form and costs a few byte compares.
func objectError(data []byte) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if !bytes.HasPrefix(data[i:], keyObject) {
		return false
	}
	i = skipSpace(data, i+len(keyObject))
	if i >= len(data) || data[i] != ':' {
		return false
	}
	return bytes.HasPrefix(data[skipSpace(data, i+1):], valueError)
}

var keyObject, valueError = []byte(`"object"`), []byte(`"error"`)

// skipSpace returns the index of the first byte of data at or after i
// that is not JSON white space.
func skipSpace[T ~[]byte | ~string](data T, i int) int {
	for i < len(data) && isJSONSpace(data[i]) {
		i++
	}
	return i
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// usageNullMember finds the top-level member "usage": null of an OpenAI
// Chat chunk, which stream_options.include_usage adds to every chunk but
// the usage chunk (OpenAI API reference, "The chat completion chunk
// object"), and returns the span of data to remove so that the chunk is
// what it would have been without the option: the member and the comma
// that separates it from its neighbour, with the white space between them
// (", \"usage\": null" after another member; "\"usage\":null, " as the first
// member; the member alone when it is the only one).
func usageNullMember(data []byte) (from, to int, ok bool) {
	return usageNullMemberAt(data, bytes.LastIndex(data, keyUsage))
}

// usageNullMemberAt is usageNullMember starting from ks, where a "usage"
// name starts (the last one of the chunk), -1 when the chunk has none.
func usageNullMemberAt(data []byte, ks int) (from, to int, ok bool) {
	if ks < 0 {
		return 0, 0, false
	}
	// The usual case, without a parse: the last "usage" of the chunk is
	// a null member and only members without objects or arrays follow it
	// up to the chunk's last '}' (OpenAI writes "usage":null last, or
	// before "obfuscation"), so its object is the top-level one.
	vs := -1
	if j := skipSpace(data, ks+len(keyUsage)); j < len(data) && data[j] == ':' {
		vs = skipSpace(data, j+1)
	}
	if !(vs > 0 && bytes.HasPrefix(data[vs:], nullLiteral) && ks > 0 && data[ks-1] != '\\' &&
		closesObject(data[vs+len(nullLiteral):]) && data[skipSpace(data, 0)] == '{') {
		// otherwise gjson finds the top-level member
		u := gjson.Get(view(data), "usage")
		if u.Type != gjson.Null || u.Raw != "null" || u.Index <= 0 {
			return 0, 0, false
		}
		vs = u.Index
		i := vs - 1
		for i >= 0 && isJSONSpace(data[i]) {
			i--
		}
		if i < 0 || data[i] != ':' {
			return 0, 0, false
		}
		i--
		for i >= 0 && isJSONSpace(data[i]) {
			i--
		}
		ks = i + 1 - len(keyUsage)
		if ks < 0 || !bytes.Equal(data[ks:i+1], keyUsage) {
			return 0, 0, false // an escaped name: left alone
		}
	}
	ve := vs + len(nullLiteral)
	j := ks - 1
	for j >= 0 && isJSONSpace(data[j]) {
		j--
	}
	switch {
	case j >= 0 && data[j] == ',':
		return j, ve, true
	case j >= 0 && data[j] == '{':
		if k := skipSpace(data, ve); k < len(data) && data[k] == ',' {
			return ks, skipSpace(data, k+1), true
		}
		return ks, ve, true
	}
	return 0, 0, false
}

var nullLiteral = []byte("null")

// closesObject reports whether tail, the rest of a chunk after a member's
// value, holds no object or array and exactly one '}', its last byte
// before trailing white space: the member's object is then the one that
// ends the chunk.
func closesObject(tail []byte) bool {
	n := len(tail)
	for n > 0 && isJSONSpace(tail[n-1]) {
		n--
	}
	if n == 0 || tail[n-1] != '}' {
		return false
	}
	// one pass over the tail (a few members after "usage":null, often
	// one short string) instead of a search per bracket
	for _, c := range tail[:n-1] {
		switch c {
		case '{', '}', '[', ']':
			return false
		}
	}
	return true
}

// dataEdit is one change to an event's data: the bytes data[from:to]
// are replaced by the client's model as a JSON string (model) or removed.
type dataEdit struct {
	from, to int
	model    bool
}

// modelPlace remembers where the top-level "model" of an OpenAI Chat
// chunk was found, for the next chunk: an upstream writes every chunk of
// a stream with the same leading members (id, object, created, model,
// per the OpenAI API reference, "The chat completion chunk object"), so
// the model is found again without a parse. pre is a copy of the chunk's
// bytes before the model's value, lit the value's literal.
type modelPlace struct {
	pre, lit []byte
}

// find returns the model edit of data when data starts with the noted
// bytes followed by the noted literal: the same bytes before it mean the
// same members before it, so the value there is the top-level "model"
// that a lookup would find first, and the same literal means the same
// name (a string literal ends at its closing quote).
func (p *modelPlace) find(data []byte) (dataEdit, bool) {
	n := len(p.pre)
	if n == 0 || len(data) < n+len(p.lit) || !bytes.Equal(data[n:n+len(p.lit)], p.lit) || !bytes.Equal(data[:n], p.pre) {
		return dataEdit{}, false
	}
	return dataEdit{n, n + len(p.lit), true}, true
}

// note remembers the model edit ed of data, found by a lookup (its from
// is -1 when it was not found as is: nothing is noted).
func (p *modelPlace) note(data []byte, ed dataEdit) {
	if ed.from <= 0 || ed.from > 512 {
		p.pre = p.pre[:0]
		return
	}
	p.pre = append(p.pre[:0], data[:ed.from]...)
	p.lit = append(p.lit[:0], data[ed.from:ed.to]...)
}

// modelEdit is the edit that replaces the model value m, a result of a
// gjson lookup in data (whose Index is its offset in data, nested paths
// included); its from is -1 when m is not found there as is.
func modelEdit(data []byte, m gjson.Result) dataEdit {
	if m.Index <= 0 || m.Index+len(m.Raw) > len(data) || string(data[m.Index:m.Index+len(m.Raw)]) != m.Raw {
		return dataEdit{-1, -1, true}
	}
	return dataEdit{m.Index, m.Index + len(m.Raw), true}
}

// edit returns ev.Raw with the edits (in increasing order, not
// overlapping) made, every other byte kept, in the translator's scratch
// buffer (valid until the next event). With a model edit whose place is
// unknown (no Index) it falls back to sjson at modelPath.
func (t *StreamTranslator) edit(ev *SSEEvent, eds []dataEdit, modelPath string) []byte {
	if len(eds) == 0 {
		return ev.Raw
	}
	if len(eds) == 2 && eds[1].from < eds[0].from {
		eds[0], eds[1] = eds[1], eds[0]
	}
	out := t.out[:0]
	prev := 0
	for _, e := range eds {
		if e.model && e.from < 0 {
			return t.replaceAt(ev, modelPath, t.model)
		}
		rf, rt, ok := rawSpan(ev, e.from, e.to)
		if !ok || rf < prev {
			return t.editData(ev, eds)
		}
		out = append(out, ev.Raw[prev:rf]...)
		if e.model {
			out = appendString(out, t.model)
		}
		prev = rt
	}
	out = append(out, ev.Raw[prev:]...)
	t.out = out
	return out
}

// editData makes the edits on a copy of the data and frames it anew (one
// data: line per line, the event: line kept): for multi-line data whose
// edit spans lines other than data lines.
func (t *StreamTranslator) editData(ev *SSEEvent, eds []dataEdit) []byte {
	var nd []byte
	prev := 0
	for _, e := range eds {
		nd = append(nd, ev.Data[prev:e.from]...)
		if e.model {
			nd = appendString(nd, t.model)
		}
		prev = e.to
	}
	nd = append(nd, ev.Data[prev:]...)
	return appendEvent(nil, ev.Event, nd)
}

// rawSpan maps data[from:to] of ev to the bytes of ev.Raw that hold it.
// For data of several data: lines (joined with "\n" in Data), a span that
// covers a line break covers the line terminator and the next line's
// "data:" prefix; ok is false when other lines (comments, event:, id:)
// sit between.
func rawSpan(ev *SSEEvent, from, to int) (rf, rt int, ok bool) {
	if ev.dataOff >= 0 {
		return ev.dataOff + from, ev.dataOff + to, true
	}
	rf, lf := dataToRaw(ev.Raw, from)
	rt, lt := dataToRaw(ev.Raw, to)
	if rf < 0 || rt < 0 {
		return 0, 0, false
	}
	return rf, rt, lt-lf == dataLinesBetween(ev.Raw, rf, rt)
}

// dataToRaw returns the offset in raw of the byte at offset d of the
// joined data, and the number of the raw line holding it; -1 when d is
// beyond the data.
func dataToRaw(raw []byte, d int) (int, int) {
	c := 0 // offset in the joined data of the current data line
	for line, at := 0, 0; at < len(raw); line++ {
		l := raw[at:]
		end := lineEnd(l)
		if end < 0 {
			end = len(l)
		}
		if v, ok := dataLineValue(l[:end]); ok {
			if d <= c+len(v) {
				return at + (end - len(v)) + (d - c), line
			}
			c += len(v) + 1
		}
		at += end + termLen(l[end:])
	}
	return -1, 0
}

// dataLinesBetween counts the line breaks in raw[from:to], or returns -1
// when a line that starts in it is not a data line.
func dataLinesBetween(raw []byte, from, to int) int {
	n := 0
	for at := from; at < to; {
		end := lineEnd(raw[at:to])
		if end < 0 {
			break
		}
		at += end + termLen(raw[at+end:])
		n++
		rest := raw[at:]
		if e := lineEnd(rest); e >= 0 {
			rest = rest[:e]
		}
		if _, ok := dataLineValue(rest); !ok {
			return -1
		}
	}
	return n
}

// dataLineValue returns the value of a data: line (after "data:" and one
// optional space).
func dataLineValue(l []byte) ([]byte, bool) {
	if !bytes.HasPrefix(l, []byte("data")) {
		return nil, false
	}
	switch {
	case len(l) == 4:
		return l[4:], true
	case l[4] != ':':
		return nil, false
	case len(l) > 5 && l[5] == ' ':
		return l[6:], true
	}
	return l[5:], true
}

// termLen is the length of the line terminator at the start of b.
func termLen(b []byte) int {
	switch {
	case len(b) >= 2 && b[0] == '\r' && b[1] == '\n':
		return 2
	case len(b) >= 1:
		return 1
	}
	return 0
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

// passEnd ends a passthrough stream: one that broke off (a read error) or
// ended without a finish reason gets the dialect's error form; one that
// finished and then ended cleanly is left as the upstream ended it, with
// or without its terminal event (data: [DONE], message_stop): no
// terminator the upstream did not send is added.
func (t *StreamTranslator) passEnd(readErr error) {
	st := &t.pt
	if t.stopped || st.errored || st.done {
		return
	}
	if readErr == nil && (st.finished || st.blocked()) {
		// the upstream closed its stream cleanly after its finish reason
		// without a terminal event: the answer is whole (some
		// OpenAI-compatible servers never send data: [DONE]), and the
		// client gets what a direct call gives, nothing added
		return
	}
	if readErr != nil {
		t.passFail(interruptedMsg(readErr), readErr)
		return
	}
	t.passTruncated()
}

// blocked reports whether an OpenAI Chat stream held only chunks with
// "choices": [] (see chatChoices).
func (st *passState) blocked() bool { return st.choices.blocked() }

// chatChoices follows the choices of an OpenAI Chat stream's chunks:
// empties, a chunk with "choices": [] was seen (not Azure's
// prompt_filter_results chunk); others, a chunk with choices (or no
// "choices" array); said, one of the empties carried a block reason
// (promptFeedback.blockReason, prompt_feedback.block_reason) or the usage.
// A stream of empties alone, one of them with a block reason or the
// usage, is how Gemini's OpenAI-compatible endpoint streams a prompt its
// safety filter blocked, with no finish_reason: when it ends cleanly,
// that is the answer (the prompt's doing, not the key's), never a
// truncation. Empties that say neither are an upstream that answered
// nothing: a truncation, like a stream that ends without a finish reason.
type chatChoices struct{ empties, others, said bool }

// note records one chunk, given its top-level members choices,
// prompt_filter_results, usage, promptFeedback and prompt_feedback.
func (c *chatChoices) note(choices, filter, usage, camel, snake gjson.Result) {
	if !choices.IsArray() || hasElements(choices) {
		c.others = true
	} else if !filter.Exists() {
		c.empties = true
		c.said = c.said || usage.IsObject() || blockReasonOf(camel, snake)
	}
}

// blocked reports whether the stream held empties alone, one of them
// with a block reason or the usage.
func (c *chatChoices) blocked() bool { return c.empties && !c.others && c.said }

// nothing reports whether the stream held empties alone, none with a
// block reason or the usage: the upstream answered nothing.
func (c *chatChoices) nothing() bool { return c.empties && !c.others && !c.said }

// blockReasonOf reports whether a chunk's members promptFeedback (camel)
// and prompt_feedback (snake) say why the prompt was blocked: Gemini's
// promptFeedback.blockReason (its OpenAI-compatible endpoint, camelCase)
// or prompt_feedback.block_reason, a non-empty value. A promptFeedback
// with safety ratings alone blocked nothing.
func blockReasonOf(camel, snake gjson.Result) bool {
	return camel.IsObject() && camel.Get("blockReason").String() != "" ||
		snake.IsObject() && snake.Get("block_reason").String() != ""
}

// malformedChoices reports whether a Chat chunk's "choices" is there but
// not an array (an object, a string, a number, a boolean): not a
// chat.completion.chunk (OpenAI API reference, "The chat completion chunk
// object": choices is an array), so the upstream's failure. An absent or
// null "choices" is not (a usage or error chunk of some servers).
func malformedChoices(choices gjson.Result) bool {
	return choices.Exists() && choices.Type != gjson.Null && !choices.IsArray()
}

// passTruncated ends a stream that stopped without a finish reason.
func (t *StreamTranslator) passTruncated() {
	t.truncated = true
	msg := msgTruncated
	switch {
	case !t.pt.started:
		msg = msgEmpty
	case t.pt.choices.nothing():
		msg = msgNoChoices
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
	t.errEvent = true
	defer func() { t.errEvent = false }()
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
		f = appendRSResponse(f, firstNonEmpty(st.respID, "resp_gateway"), nowUnix(), "failed", "", firstNonEmpty(t.model, st.upModel), nil, t.usage, code, msg, nil, nil)
		t.write(appendEvent(nil, "response.failed", append(f, '}')))
	}
}
