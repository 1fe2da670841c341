package translate

import (
	"bytes"
	"io"
	"strings"

	"github.com/tidwall/gjson"
)

// chatStreamDecoder reads OpenAI Chat Completions chunks
// (chat.completion.chunk, OpenAI API reference "The chat completion chunk
// object"): role-only first chunk, delta.content / delta.refusal,
// reasoning from OpenAI-compatible upstreams (delta.reasoning_content,
// delta.reasoning, delta.reasoning_details[].text), tool_calls keyed by
// index, finish_reason, a trailing usage-only chunk (choices: []), a
// mid-stream {"error":…}, and data: [DONE]. Only choices[0] is used.
//
// Tool calls are emitted as contiguous blocks: the first call streams as it
// arrives; a call that starts while another is streaming is buffered and
// emitted whole when the current one is known to be done (text, the finish
// chunk or the end), so providers that interleave indexes are handled. A
// call whose first delta has no function name is held the same way until
// a later delta of its index names it (and gives its id, when that came
// late too).
type chatStreamDecoder struct {
	cs      *canonStream
	tools   []*chatTool
	cur     *chatTool
	pending []*chatTool
	refusal bool
	choices chatChoices // the chunks' choices (blocked)
	// scratch for the members read of the chunk, a choice and the delta
	// (chatChunkSet, chatChoiceSet, chatDeltaSet)
	top [numChunkMembers]gjson.Result
	chc [numChoiceMembers]gjson.Result
	dsc [numDeltaMembers]gjson.Result
}

// The members the decoder reads of a chunk, of a choice and of a delta,
// each set read in one walk (memberSet); the constants are their slots.
var (
	chatChunkSet  = newMemberSet("error", "id", "model", "created", "usage", "choices", "prompt_filter_results", "promptFeedback", "prompt_feedback")
	chatChoiceSet = newMemberSet("index", "delta", "finish_reason", "stop_reason")
	chatDeltaSet  = newMemberSet("reasoning_content", "reasoning", "reasoning_details", "content", "refusal", "tool_calls")
)

const (
	chunkError = iota
	chunkID
	chunkModel
	chunkCreated
	chunkUsage
	chunkChoices
	chunkPromptFilterResults
	chunkPromptFeedback      // Gemini's, camelCase
	chunkPromptFeedbackSnake // prompt_feedback
	numChunkMembers
)

const (
	choiceIndex = iota
	choiceDelta
	choiceFinishReason
	choiceStopReason
	numChoiceMembers
)

const (
	deltaReasoningContent = iota
	deltaReasoning
	deltaReasoningDetails
	deltaContent
	deltaRefusal
	deltaToolCalls
	numDeltaMembers
)

type chatTool struct {
	index    int64
	id, name string
	realID   bool // id came from the upstream
	args     []byte
	done     bool
}

func newChatStreamDecoder(cs *canonStream) upstreamDecoder {
	return &chatStreamDecoder{cs: cs}
}

var doneMarker = []byte("[DONE]")

func (d *chatStreamDecoder) event(ev *SSEEvent) {
	cs := d.cs
	data := ev.Data
	if len(data) == 0 || cs.closed {
		return
	}
	if bytes.Equal(bytes.TrimSpace(data), doneMarker) {
		d.flushTools()
		d.blocked()
		cs.end()
		return
	}
	res := &d.top
	var e gjson.Result
	if objectError(data) {
		e = gjson.Parse(view(data)) // vLLM's error chunk (objectError): an object, which fails below
	} else {
		chatChunkSet.read(gjson.Parse(view(data)), res[:])
		e = res[chunkError]
	}
	if e.IsObject() || (e.Type == gjson.String && e.Str != "") {
		typ, code, _, _ := openAIErrorFields(e)
		se := cs.t.setUpstreamError(openAIStreamError(OpenAIChat, e))
		cs.fail(classForErrorType(typ, code), firstNonEmpty(se.Message, "upstream error"), se)
		return
	}
	choices := res[chunkChoices]
	if malformedChoices(choices) {
		// not a chat.completion.chunk: the upstream's failure, never
		// counted as a chunk with choices (or without)
		se := cs.t.setUpstreamError(newStreamError(OpenAIChat, "server_error", "", msgMalformedChoices, ""))
		cs.fail(ErrUpstreamUnavailable, se.Message, se)
		return
	}
	if u := res[chunkUsage]; u.IsObject() {
		cs.t.usage.merge(chatUsage(u))
	}
	d.choices.note(choices, res[chunkPromptFilterResults], res[chunkUsage], res[chunkPromptFeedback], res[chunkPromptFeedbackSnake])
	if !cs.started {
		if res[chunkID].Str == "" && !hasElements(choices) {
			return // Azure's prompt_filter_results chunk, or a usage-only chunk
		}
		cs.begin(res[chunkID].Str, res[chunkModel].Str, res[chunkCreated].Int())
	}
	if !choices.IsArray() {
		return
	}
	choices.ForEach(func(_, c gjson.Result) bool {
		chc := &d.chc
		chatChoiceSet.read(c, chc[:]) // one walk of the choice, as for the chunk and its delta
		index, delta, fr := chc[choiceIndex].Int(), chc[choiceDelta], chc[choiceFinishReason]
		if index != 0 {
			return true // n > 1: only the first choice is translated
		}
		if delta.Exists() {
			d.delta(delta)
		}
		if fr.Type == gjson.String && fr.Str != "" {
			if fr.Str == "error" {
				// OpenRouter's finish_reason for a generation that
				// failed: an upstream error, never a finish
				se := cs.t.setUpstreamError(newStreamError(OpenAIChat, "", "", msgFinishError, ""))
				cs.fail(ErrUpstreamUnavailable, se.Message, se)
				return false
			}
			d.flushTools()
			stop := stopFromChat(fr.Str)
			if d.refusal && stop == stopEndTurn {
				stop = stopRefusal
			}
			stop, seq := chatStopSequence(fr.Str, chc[choiceStopReason], stop, cs.sawTool, cs.stops)
			cs.finish(stop, seq)
		}
		return true
	})
}

func (d *chatStreamDecoder) delta(delta gjson.Result) {
	cs := d.cs
	res := &d.dsc
	chatDeltaSet.read(delta, res[:])
	thinking := ""
	var thinkingJSON gjson.Result // the string value thinking came from, when one
	switch {
	case res[deltaReasoningContent].Type == gjson.String && res[deltaReasoningContent].Str != "":
		thinking, thinkingJSON = res[deltaReasoningContent].Str, res[deltaReasoningContent]
	case res[deltaReasoning].Type == gjson.String && res[deltaReasoning].Str != "":
		thinking, thinkingJSON = res[deltaReasoning].Str, res[deltaReasoning]
	case res[deltaReasoningDetails].IsArray():
		res[deltaReasoningDetails].ForEach(func(_, x gjson.Result) bool {
			thinking += x.Get("text").String()
			return true
		})
	}
	if thinking != "" {
		if cs.open == nil || cs.open.kind != partThinking {
			d.flushTools()
			cs.openBlock(partThinking, "", "", "")
		}
		if thinkingJSON.Type == gjson.String {
			cs.deltaJSON(deltaThinking, thinkingJSON)
		} else {
			cs.delta(deltaThinking, thinking)
		}
	}
	// content and refusal go to blocks of their own (streamBlock.refusal),
	// content first when a chunk carries both
	for _, m := range [...]int{deltaContent, deltaRefusal} {
		v := res[m]
		if v.Type != gjson.String || v.Str == "" {
			continue
		}
		refusal := m == deltaRefusal
		if refusal {
			d.refusal = true
		}
		if o := cs.open; o == nil || o.kind != partText || o.refusal != refusal {
			d.flushTools()
			cs.openText(refusal)
		}
		cs.deltaJSON(deltaText, v)
	}
	res[deltaToolCalls].ForEach(func(_, tc gjson.Result) bool {
		d.toolDelta(tc)
		return true
	})
}

func (d *chatStreamDecoder) toolDelta(tc gjson.Result) {
	cs := d.cs
	idx := tc.Get("index").Int()
	id := tc.Get("id").String()
	var t *chatTool
	for i := len(d.tools) - 1; i >= 0; i-- {
		if d.tools[i].index == idx {
			t = d.tools[i]
			break
		}
	}
	fragJSON := tc.Get("function.arguments")
	frag := fragJSON.String()
	// A new call starts when the index is new, or when a provider reuses an
	// index for a call with a different id. A call is held (its arguments
	// buffered) while another streams, and until its name is known: some
	// providers send the name, or the id, in a later delta of the index.
	if t == nil || (id != "" && t.realID && id != t.id) {
		t = &chatTool{index: idx, id: strings.Clone(id), realID: id != "", name: strings.Clone(tc.Get("function.name").String())}
		if t.id == "" {
			t.id = chatCallID(cs.id, len(d.tools))
		}
		d.tools = append(d.tools, t)
		if d.cur == nil && len(d.pending) == 0 && t.name != "" {
			d.stream(t)
		} else {
			d.pending = append(d.pending, t)
		}
	} else if t.done {
		return // more arguments for a call already closed: cannot be sent
	} else {
		if t.name == "" {
			t.name = strings.Clone(tc.Get("function.name").String())
		}
		if !t.realID && id != "" {
			t.id, t.realID = strings.Clone(id), true
		}
		if d.cur == nil && len(d.pending) > 0 && d.pending[0] == t && t.name != "" {
			// the first held call, named now, streams
			d.pending = d.pending[1:]
			d.stream(t)
			if len(t.args) > 0 {
				cs.delta(deltaArgs, string(t.args))
				t.args = nil
			}
		}
	}
	if frag == "" {
		return
	}
	if t == d.cur {
		if fragJSON.Type == gjson.String {
			cs.deltaJSON(deltaArgs, fragJSON)
		} else {
			cs.delta(deltaArgs, frag)
		}
	} else {
		t.args = append(t.args, frag...)
	}
}

// stream opens t's block: t is the call whose arguments stream as they
// come.
func (d *chatStreamDecoder) stream(t *chatTool) {
	if d.cs.open != nil {
		d.cs.closeBlock()
	}
	d.cur = t
	d.cs.openBlock(partToolCall, t.id, t.name, "")
}

// flushTools closes the streaming tool call and emits the buffered ones.
func (d *chatStreamDecoder) flushTools() {
	cs := d.cs
	if cs.closed || d.cur == nil && len(d.pending) == 0 {
		return // a failed stream writes nothing after its error
	}
	if d.cur != nil {
		d.cur.done = true
		d.cur = nil
		cs.closeBlock()
	}
	for _, t := range d.pending {
		cs.openBlock(partToolCall, t.id, t.name, "")
		if len(t.args) > 0 {
			cs.delta(deltaArgs, string(t.args))
		}
		cs.closeBlock()
		t.done = true
		t.args = nil
	}
	d.pending = d.pending[:0]
}

func (d *chatStreamDecoder) end(readErr error) {
	if readErr == nil {
		d.flushTools()
		d.blocked()
	}
	d.cs.endOrFail(readErr)
}

// blocked finishes, at a clean end, a stream that held only chunks with
// "choices": [], one of them with a block reason or the usage (Gemini's
// OpenAI-compatible stream of a prompt its safety filter blocked, with no
// finish_reason; see chatChoices): an empty answer that stopped
// for a refusal (Anthropic stop_reason "refusal", Responses incomplete
// with reason content_filter, MAPPING.md §3.3), not a truncation.
//
// Empties that say neither (chatChoices.nothing) are an upstream that
// answered nothing: a truncation (Truncated), failed with its own message.
func (d *chatStreamDecoder) blocked() {
	cs := d.cs
	if cs.finished || cs.closed {
		return
	}
	switch {
	case d.choices.blocked():
		cs.finish(stopRefusal, "")
	case d.choices.nothing():
		cs.t.truncated = true
		cs.fail(ErrUpstreamUnavailable, msgNoChoices, io.ErrUnexpectedEOF)
	}
}

// hasElements reports whether r is a JSON array with at least one
// element (its first byte after '[' and any white space is not ']');
// false for an empty array and for anything that is not an array (an
// object, a scalar, null, nothing). Unlike a walk of the array (gjson's
// ForEach, which scans the first element to its end), it reads no
// element: a Chat chunk's choices is checked once per chunk on the
// translated path.
func hasElements(r gjson.Result) bool {
	if !r.IsArray() {
		return false
	}
	for i := 1; i < len(r.Raw); i++ {
		switch r.Raw[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case ']':
			return false
		}
		return true
	}
	return false
}
