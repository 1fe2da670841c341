package translate

import (
	"io"
	"strings"
)

// Canonical stream events (DESIGN.md): message start, block start (text /
// thinking / redacted thinking / tool call), delta (text / thinking /
// signature / tool arguments), block stop, finish (normalised stop reason),
// end (terminator, with usage), error. Upstream decoders drive a
// canonStream, which enforces the ordering every client dialect needs
// (start first, one open block at a time, block indexes handed out in order
// with no gaps, blocks closed before the finish, finish before the end) and
// forwards to the client encoder.

// deltaKind is the kind of a canonical delta.
type deltaKind uint8

const (
	deltaText deltaKind = iota + 1
	deltaThinking
	deltaSignature
	deltaArgs
)

// streamBlock is one content block of the streamed message.
type streamBlock struct {
	idx       int      // canonical index, 0.. in order
	kind      partKind // partText, partThinking, partRedactedThinking, partToolCall
	id, name  string   // tool call id and name
	data      string   // redacted_thinking data
	text      []byte   // accumulated text / thinking / arguments (when the encoder needs it)
	signature string
	argsSent  bool        // a non-empty argument fragment was sent
	outIdx    int         // client-side index (encoder use)
	itemID    string      // client-side item id (encoder use)
	custom    *customArgs // a call of a client's custom tool (Responses and Chat encoders)
	// refusal marks a text block that carries the model's refusal (Chat
	// delta.refusal, Responses response.refusal.delta): Chat clients get
	// delta.refusal, Responses clients a refusal content part with
	// response.refusal.delta / .done, Anthropic clients text
	refusal bool
}

// streamEncoder writes one client dialect.
type streamEncoder interface {
	start(cs *canonStream)
	blockStart(cs *canonStream, b *streamBlock)
	delta(cs *canonStream, b *streamBlock, k deltaKind, s string)
	blockStop(cs *canonStream, b *streamBlock)
	finish(cs *canonStream)
	end(cs *canonStream)
	fail(cs *canonStream, class ErrorClass, msg string)
}

// upstreamDecoder reads one upstream dialect's events.
type upstreamDecoder interface {
	event(ev *SSEEvent)
	end(readErr error)
}

// canonStream is the canonical event sink between a decoder and an encoder.
type canonStream struct {
	t          *StreamTranslator
	enc        streamEncoder
	model      string // what the client sees
	id         string // upstream message id
	upModel    string
	created    int64
	started    bool
	finished   bool
	closed     bool
	stop       string
	stopSeq    string
	blocks     []*streamBlock
	open       *streamBlock
	sawTool    bool
	accumulate bool // keep block text (Responses needs it for .done events)
	// keepThinking keeps thinking text (Chat needs it for thinking_blocks)
	keepThinking bool
	// a high surrogate escape held back from the end of a delta of hiKind
	// to hiBlk (see deltaJSON)
	hiSur  rune
	hiBlk  *streamBlock
	hiKind deltaKind
	// echoTools, echoToolChoice are the client's Responses request's
	// tools and tool_choice, echoed in its response objects
	// (ResponseOptions.Tools, ToolChoice)
	echoTools, echoToolChoice []byte
	// echo is the rest the response objects restate (ResponseOptions.Echo)
	echo []byte
	// customTools are the client's custom tools (ResponseOptions.CustomTools)
	customTools []string
	// stops are the request's stop strings (ResponseOptions.StopSequences)
	stops []string
	// inputEstimate is ResponseOptions.InputTokensEstimate (Anthropic
	// clients' message_start)
	inputEstimate int64
	// cut emulates the stop strings the upstream was not sent
	// (ResponseOptions.EmulateStops; see stop_emulation.go)
	cut stopCutter
}

func newCanonStream(t *StreamTranslator, to Dialect, model string) *canonStream {
	cs := &canonStream{t: t, model: model}
	switch to {
	case OpenAIChat:
		cs.enc = &chatStreamEncoder{}
		cs.keepThinking = true
	case AnthropicMessages:
		cs.enc = &anthropicStreamEncoder{}
	default:
		cs.enc = &responsesStreamEncoder{}
		cs.accumulate = true
	}
	return cs
}

// clientModel is the model name written to the client.
func (cs *canonStream) clientModel() string {
	if cs.model != "" {
		return cs.model
	}
	return cs.upModel
}

func (cs *canonStream) usage() Usage { return cs.t.Usage() }

func (cs *canonStream) begin(id, model string, created int64) {
	if cs.started || cs.closed {
		return
	}
	cs.started = true
	// decoders pass views of the upstream event, valid only until the
	// next one (SSEEvent): what is kept is copied
	cs.id = strings.Clone(id)
	if cs.id == "" {
		cs.id = "gateway"
	}
	cs.upModel = strings.Clone(model)
	cs.created = created
	if cs.created == 0 {
		cs.created = nowUnix()
	}
	cs.t.pre = true // what start writes is the preamble (see HoldPreamble)
	cs.enc.start(cs)
	cs.t.pre = false
}

func (cs *canonStream) ensureStart() {
	if !cs.started {
		cs.begin("", "", 0)
	}
}

// openBlock closes the open block and opens a new one. Content that an
// upstream sends after its finish is ignored (nil).
func (cs *canonStream) openBlock(kind partKind, id, name, data string) *streamBlock {
	return cs.openBlockAs(kind, id, name, data, false)
}

// openText opens a text block, a refusal one when refusal is set, unless
// the open block is already such a block; it returns the open block (nil
// after the finish).
func (cs *canonStream) openText(refusal bool) *streamBlock {
	if b := cs.open; b != nil && b.kind == partText && b.refusal == refusal {
		return b
	}
	return cs.openBlockAs(partText, "", "", "", refusal)
}

// openBlockAs is openBlock; refusal marks a text block as a refusal
// (streamBlock.refusal) before the encoder starts it.
func (cs *canonStream) openBlockAs(kind partKind, id, name, data string, refusal bool) *streamBlock {
	if cs.finished || cs.closed {
		return nil
	}
	cs.ensureStart()
	cs.closeBlock()
	if cs.finished {
		return nil // closing the open block completed an emulated stop string
	}
	b := &streamBlock{idx: len(cs.blocks), kind: kind, id: strings.Clone(id), name: strings.Clone(name), data: strings.Clone(data), refusal: refusal && kind == partText}
	if kind == partToolCall {
		cs.sawTool = true
	}
	cs.blocks = append(cs.blocks, b)
	cs.open = b
	cs.enc.blockStart(cs, b)
	return b
}

// delta sends a delta to the open block.
func (cs *canonStream) delta(k deltaKind, s string) {
	b := cs.open
	if b == nil || cs.closed {
		return
	}
	if k == deltaText && cs.cut.stops != nil {
		cs.cutText(b, s) // stop strings emulated (stop_emulation.go)
		return
	}
	cs.send(b, k, s)
}

// send is delta past the stop-sequence emulation.
func (cs *canonStream) send(b *streamBlock, k deltaKind, s string) {
	if k == deltaArgs && s != "" {
		b.argsSent = true
	}
	if k == deltaSignature {
		if b.signature == "" {
			b.signature = strings.Clone(s) // s is a view of the event
		} else {
			b.signature += s
		}
	} else if cs.accumulate || (cs.keepThinking && b.kind == partThinking) || b.custom != nil {
		b.text = append(b.text, s...)
	}
	cs.enc.delta(cs, b, k, s)
}

func (cs *canonStream) closeBlock() {
	if cs.open == nil {
		return
	}
	cs.flushSurrogate()
	b := cs.open
	if b == nil {
		return // the flushed delta completed a stop string: closed by finish
	}
	cs.flushCut(b)
	cs.open = nil
	cs.enc.blockStop(cs, b)
}

// finish records the stop reason (first one wins); a turn that made tool
// calls and says only that it ended is a tool_use stop (see toolStop).
func (cs *canonStream) finish(stop, stopSeq string) {
	if cs.finished || cs.closed {
		return
	}
	cs.ensureStart()
	cs.closeBlock()
	if cs.finished {
		return // closing the open block completed an emulated stop string: it ended the turn
	}
	cs.finished = true
	cs.stop = strings.Clone(toolStop(stop, cs.sawTool)) // views of the event (see begin)
	cs.stopSeq = strings.Clone(stopSeq)
	cs.enc.finish(cs)
}

// end terminates the client stream after its finish. An upstream that
// ends without a finish reason is a truncation: the client gets its
// dialect's error form, never a synthesised finish.
func (cs *canonStream) end() {
	if cs.closed {
		return
	}
	if !cs.finished {
		cs.t.truncated = true
		cs.fail(ErrUpstreamUnavailable, msgTruncated, io.ErrUnexpectedEOF)
		return
	}
	cs.closed = true
	cs.enc.end(cs)
}

// fail sends the client dialect's error form, which ends the client stream
// (nothing follows it). cause is the error Run reports when the failure
// comes before the commit point (see HoldPreamble); then nothing is sent.
func (cs *canonStream) fail(class ErrorClass, msg string, cause error) {
	if cs.closed {
		return
	}
	if cs.cut.hit {
		// after an emulated stop string the client's answer is whole: an
		// upstream failure past it (still its UpstreamError) ends the
		// stream normally, as a read error does (endOrFail)
		cs.end()
		return
	}
	cs.closed = true
	if cs.t.failBeforeCommit(cause) {
		return
	}
	cs.t.errEvent = true
	cs.enc.fail(cs, class, ScrubSecrets(msg))
	cs.t.errEvent = false
}

// endOrFail is the decoders' common end-of-input handling: a read error
// or a stream that never started fails; otherwise end closes the client's
// stream (with its terminator after a finish reason, even when the
// upstream left its own terminal event out, as some OpenAI-compatible
// servers do with data: [DONE]; with the truncation error without one).
func (cs *canonStream) endOrFail(readErr error) {
	switch {
	case cs.closed:
	case readErr != nil:
		cs.fail(ErrUpstreamUnavailable, interruptedMsg(readErr), readErr)
	case !cs.started:
		cs.t.truncated = true
		cs.fail(ErrUpstreamUnavailable, msgEmpty, io.ErrUnexpectedEOF)
	default:
		cs.end()
	}
}
