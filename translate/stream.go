package translate

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tidwall/gjson"
)

// EventWriter receives the client's stream, one complete SSE event (or
// event group that must stay together) per call, so the HTTP handler can
// write and flush after each call. p is only valid during the call.
type EventWriter interface {
	WriteEvent(p []byte) error
}

// EventWriterFunc adapts a function to EventWriter.
type EventWriterFunc func(p []byte) error

// WriteEvent calls f(p).
func (f EventWriterFunc) WriteEvent(p []byte) error { return f(p) }

// StreamTranslator converts an upstream SSE body in dialect From into the
// client's dialect To, event by event.
//
// When From == To it is a passthrough: every upstream SSE block is written
// verbatim (exact bytes, including comments/keep-alives, pings and
// "data: [DONE]"), except that the model field is rewritten to clientModel
// when clientModel != "" and differs (OpenAI Chat chunk "model", Anthropic
// message_start "message.model", Responses "response.model") and secrets
// are scrubbed from error messages; with HideUsageChunk, what the
// gateway's own include_usage added to an OpenAI Chat stream is removed.
// It still observes usage. Each event is found in place and relayed
// without a copy; it is parsed only where it can carry usage, an error or
// a finish (a byte test decides), and the model is spliced in only where
// it differs: a passthrough allocates nothing per event.
//
// Otherwise the upstream events are decoded into canonical stream events and
// re-encoded in the client's dialect, following the streaming sections of
// the OpenAI Chat Completions, Anthropic Messages and OpenAI Responses API
// references. Supported upstream dialects for translation are OpenAIChat and
// AnthropicMessages; client dialects are all three.
//
// A failure is never relayed as a normal finish. In every mode:
//   - an upstream that ends cleanly but without a finish reason (no Chat
//     finish_reason, no Anthropic message_delta stop_reason, no Responses
//     response.completed / response.incomplete), including a terminator
//     ([DONE], message_stop) that comes without one, is a truncation
//     (Truncated reports it); an upstream read error is an interruption.
//     Both are relayed as the client dialect's error form, with no finish
//     and no terminator: Chat a final data: {"error":{…}} chunk and no
//     data: [DONE]; Anthropic event: error with an "api_error" and no
//     message_stop; Responses an error event then response.failed, and no
//     response.completed. The official SDKs raise these as stream errors.
//   - an in-band error event from the upstream (Anthropic event: error, a
//     Chat chunk with a top-level "error", Responses error /
//     response.failed) is reported by UpstreamError and relayed (verbatim
//     in a passthrough, as the client dialect's error form otherwise), and
//     nothing after it is: an Anthropic client stream ends at the error
//     event, as Anthropic's own API does; a Chat stream at the error chunk;
//     a Responses stream at response.failed. The upstream is then read on
//     for the usage that may follow (see MaxDrainAfterError): booked in
//     Usage, relayed only as a Chat passthrough's usage-only chunk and in a
//     translated Responses client's response.failed.
//   - an OpenAI Chat stream of chunks with "choices": [] alone, one of
//     them with a block reason (promptFeedback.blockReason,
//     prompt_feedback.block_reason) or the usage (Gemini's stream of a
//     prompt its safety filter blocked), that ends cleanly is an answer,
//     not a truncation: relayed as is in a passthrough, an empty answer
//     that stopped for a refusal otherwise. Without either, the upstream
//     answered nothing: a truncation.
//   - an OpenAI Chat chunk whose "choices" is there but not an array (an
//     object, a scalar) is the upstream's failure, reported by
//     UpstreamError (server_error, 500) and relayed as the client
//     dialect's error form, never as it came (in a passthrough: wherever
//     the chunk is parsed, i.e. before the commit point and in chunks
//     that can carry usage, a finish or an error).
//   - a stream that ends normally without its terminator or final blank
//     line gets the terminator added.
//
// Commit point: after HoldPreamble, the preamble (Anthropic message_start
// and ping, a Chat chunk whose delta carries only the role, Responses
// response.created / response.in_progress, SSE comments) is held back, in
// memory and without timers, until the first event that carries content;
// a stream that fails before that writes nothing and Run returns an error
// wrapping ErrNotCommitted, so the handler can retry on another key.
//
// A StreamTranslator is for one stream and is not safe for concurrent use.
type StreamTranslator struct {
	from, to  Dialect
	model     string
	w         EventWriter
	events    int
	werr      error
	truncated bool

	usage Usage
	au    anthropicUsage

	// commit point
	hold        bool   // HoldPreamble was called
	committed   bool   // an event was handed to the EventWriter
	pre         bool   // the event being written is preamble
	held        []byte // preamble held back (hold && !committed)
	heldEnds    []int  // end offset in held of each held event
	heldEndsBuf [4]int
	failed      error // cause of a failure before the commit point (hold only)
	stopped     bool  // nothing more is relayed
	upErr       *StreamError

	// passthrough state
	pt            passState
	chunk         [numChunkMembers]gjson.Result // the members read of an OpenAI Chat chunk (chatChunkSet)
	modelAt       modelPlace                    // where the last OpenAI Chat chunk held its model
	chunkLead     chunkLead                     // the last OpenAI Chat chunk's bytes before its first member of note
	hideUsage     bool
	omitReasoning bool

	// translation state
	cs  *canonStream
	dec upstreamDecoder

	// per-event state: the upstream reader and the event being handled
	// (fields, so that neither escapes to the heap per stream or event),
	// the output scratch of the passthrough's in-place edits, and whether
	// the event being written is an error event (WritingErrorEvent).
	rd       SSEReader
	ev       SSEEvent
	out      []byte
	strBuf   []byte // an event's data with its strings made readable (lenientStrings)
	errEvent bool
}

// ErrUnsupportedStream is returned by Run for a translation direction that
// is not implemented. Every pair of the three dialects is implemented; it
// is kept for callers that test for it.
var ErrUnsupportedStream = errors.New("translate: unsupported stream direction")

// nowUnix is the clock for "created" timestamps; tests replace it.
var nowUnix = func() int64 { return time.Now().Unix() }

// NewStreamTranslator returns a translator from upstream dialect from to
// client dialect to. clientModel is the model name the client asked for; it
// is the one the client sees in every event ("" keeps the upstream's).
func NewStreamTranslator(from, to Dialect, clientModel string, w EventWriter) *StreamTranslator {
	t := &StreamTranslator{from: from, to: to, model: clientModel, w: w}
	if from != to {
		t.cs = newCanonStream(t, to, clientModel)
		switch from {
		case OpenAIChat:
			t.dec = newChatStreamDecoder(t.cs)
		case AnthropicMessages:
			t.dec = newAnthropicStreamDecoder(t.cs)
		case OpenAIResponses:
			t.dec = newResponsesStreamDecoder(t.cs)
		}
	}
	return t
}

// SetOptions applies o (see ResponseOptions) to a translated stream; call
// it before Run. An OpenAI Chat client then gets no delta.reasoning_content
// and no thinking_blocks when o.OmitReasoning is set.
func (t *StreamTranslator) SetOptions(o ResponseOptions) {
	t.omitReasoning = o.OmitReasoning
	if t.cs != nil {
		t.cs.keepThinking = t.to == OpenAIChat && !o.OmitReasoning
		t.cs.stops = o.StopSequences
		t.cs.inputEstimate = o.InputTokensEstimate
		t.cs.cut.set(o.EmulateStops)
		if t.to == OpenAIResponses || t.to == OpenAIChat {
			t.cs.customTools = o.CustomTools
		}
		if t.to == OpenAIResponses {
			t.cs.echoTools, t.cs.echoToolChoice = o.Tools, o.ToolChoice
			t.cs.echo = o.Echo
		}
	}
}

// HideUsageChunk makes an OpenAI Chat passthrough relay the stream the
// upstream would have sent without the stream_options.include_usage the
// gateway added for its own accounting (see AddStreamUsage): the
// usage-only chunk (choices: []) is observed (Usage) and dropped, and the
// top-level "usage":null member the option adds to every other chunk (OpenAI
// API reference, "The chat completion chunk object") is removed with its
// separating comma, wherever it sits, every other byte kept. On a stream
// translated to an OpenAI Chat client it leaves out the usage-only chunk
// the translation would end with, for a client that did not ask for
// stream_options.include_usage (StreamUsageAsked): OpenAI sends that chunk
// only when asked, and a client that reads choices[0] of every chunk
// fails on it. Usage reports the usage either way. It has no effect on
// other directions.
func (t *StreamTranslator) HideUsageChunk() { t.hideUsage = true }

// Usage returns the usage observed so far (complete after Run returns).
// Figures the upstream did not report are nil.
func (t *StreamTranslator) Usage() Usage {
	if t.from == AnthropicMessages {
		return t.au.usage()
	}
	return t.usage
}

// HoldPreamble sets the commit point; call it before Run. The stream's
// preamble (Anthropic message_start and ping; an OpenAI Chat chunk whose
// delta carries only the role and empty or absent content, with no
// tool_calls, finish_reason or usage; Responses response.created /
// response.in_progress / response.queued; SSE comments and keep-alives) is
// then held back until the first event that carries content (a text,
// thinking or tool delta, a content_block_start, a finish, usage), when the
// held events and that event are written, each by its own WriteEvent call,
// with the same bytes as without HoldPreamble. Holding costs no time: the
// first content event is written as soon as it is read.
//
// If the stream fails before the commit point (an in-band error event, a
// read error, a clean end with nothing but preamble, an empty stream),
// nothing at all is written to the EventWriter and Run returns an error for
// which errors.Is(err, ErrNotCommitted) holds and that wraps the cause: the
// *StreamError of the error event (also returned by UpstreamError), the
// read error, or io.ErrUnexpectedEOF.
func (t *StreamTranslator) HoldPreamble() { t.hold = true }

// Committed reports whether anything has been handed to the EventWriter.
// Without HoldPreamble that happens at the first event; with it, at the
// first event that carries content. While it is false the client has
// received nothing, and the request may be retried elsewhere.
func (t *StreamTranslator) Committed() bool { return t.committed }

// UpstreamError returns the upstream's in-band error event (see
// StreamError), nil when there was none. The first one wins. It is set
// whether or not the stream was committed; after Run, a non-nil value means
// the attempt failed even though Run may have returned nil (the error was
// relayed to the client).
func (t *StreamTranslator) UpstreamError() *StreamError { return t.upErr }

// Truncated reports, after Run, whether the upstream stream ended cleanly
// (no read error, no in-band error event) but without a finish reason: no
// Chat finish_reason, no Anthropic stop_reason, no Responses
// response.completed / response.incomplete, including an empty stream. The
// client received its dialect's error form (or nothing, before the commit
// point with HoldPreamble), never a normal finish. Typically a proxy or load
// balancer cut the connection; handlers should log it and count it as an
// upstream failure of the key.
func (t *StreamTranslator) Truncated() bool { return t.truncated }

// WritingErrorEvent reports, while the EventWriter's WriteEvent runs,
// whether the event it was given is an error event: an upstream's in-band
// error relayed (a Chat chunk with a top-level "error", Anthropic event:
// error, Responses error and response.failed; in a passthrough, verbatim
// but for ScrubSecrets) or the client dialect's error form of a failure
// (truncation, interruption, an upstream error translated). Those are the
// only events that can carry an upstream's error message, and so the only
// ones a writer needs to redact; content events never are. It is false
// outside WriteEvent.
func (t *StreamTranslator) WritingErrorEvent() bool { return t.errEvent }

// EventsWritten returns how many times WriteEvent was called successfully.
// Zero after Run means nothing reached the client, so the handler may still
// retry the request elsewhere or send an HTTP error.
func (t *StreamTranslator) EventsWritten() int { return t.events }

// Run reads the upstream SSE body until EOF, a read error or the end of
// what is relayed (its terminator; an in-band error event, after which it
// reads on at most MaxDrainAfterError bytes for the usage), writing client
// events as it goes. It returns:
//   - the first EventWriter error (the client went away; nothing more is
//     written);
//   - with HoldPreamble, when the stream failed before its first content
//     event: an error wrapping ErrNotCommitted and the cause (see
//     HoldPreamble); nothing was written;
//   - the upstream read error, after the client got the error form;
//   - nil otherwise, including for a truncated stream (see Truncated) and
//     an upstream error event (see UpstreamError) that were relayed to the
//     client as errors.
func (t *StreamTranslator) Run(upstream io.Reader) error {
	if t.from != t.to && t.dec == nil {
		return ErrUnsupportedStream
	}
	r := &t.rd
	r.reset(upstream)
	defer r.Release()
	var readErr error
	early := false // the loop ended before the upstream did
	for {
		var err error
		t.ev, err = r.Next()
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
		var bare *StreamError
		strayFirst := false
		if len(t.ev.Data) == 0 {
			bare = bareError(t.from, &t.ev) // a JSON error without data: (stream_bare_error.go)
		} else {
			bare, strayFirst = strayError(t.from, &t.ev) // one beside the data
		}
		if bare != nil && (len(t.ev.Data) == 0 || strayFirst) {
			t.bareErrorEvent(bare)
		} else if t.from == t.to {
			t.passEvent(&t.ev)
		} else if len(t.ev.Data) == 0 && t.bareFrames() {
			// JSON objects without data: (stream_bare_frames.go), read
		} else {
			t.decode()
		}
		if bare != nil && len(t.ev.Data) != 0 && !strayFirst && t.werr == nil && !t.stopped && !(t.from != t.to && t.cs.closed) && !(t.from == t.to && t.pt.done) {
			t.bareErrorEvent(bare) // after the block's data, as written
		}
		if t.werr != nil {
			return t.werr
		}
		if t.stopped || (t.from != t.to && t.cs.closed) || (t.from == t.to && t.pt.done) {
			// the stream is over (its terminator, an error): an upstream
			// that holds the connection open after it is not waited for
			// (after an error, only for its usage: afterError)
			early = true
			break
		}
	}
	t.afterError(r, early)
	t.ev = SSEEvent{}
	if t.from == t.to {
		t.passEnd(readErr)
	} else {
		t.dec.end(readErr)
	}
	if t.werr == nil && t.failed == nil && !t.committed && len(t.heldEnds) > 0 {
		t.commit() // not reached by the decoders; never lose held events
	}
	if t.werr != nil {
		return t.werr
	}
	if t.failed != nil {
		return fmt.Errorf("%w: %w", ErrNotCommitted, t.failed)
	}
	return readErr
}

// decode hands t.ev to the upstream decoder of a translated stream.
func (t *StreamTranslator) decode() {
	if d, copied := lenientStrings(t.ev.Data, t.strBuf); copied {
		t.strBuf, t.ev.Data, t.ev.dataOff = d, d, -1 // its text as the upstream wrote it (stream_strings.go)
	}
	t.dec.event(&t.ev)
}

// write sends one client event. While the commit point is not reached, a
// preamble event (t.pre) is held; any other event first releases the held
// ones.
func (t *StreamTranslator) write(p []byte) {
	if t.werr != nil || t.failed != nil {
		return
	}
	if !t.committed {
		if t.hold && t.pre {
			if len(t.heldEnds) >= MaxHeldPreambleEvents || len(t.held)+len(p) > MaxHeldPreamble {
				t.failBeforeCommit(ErrPreambleTooLarge)
				return
			}
			if t.held == nil {
				t.held = make([]byte, 0, max(len(p), 1<<10))
				t.heldEnds = t.heldEndsBuf[:0]
			}
			t.held = append(t.held, p...)
			t.heldEnds = append(t.heldEnds, len(t.held))
			return
		}
		t.commit()
		if t.werr != nil {
			return
		}
	}
	t.emit(p)
}

// MaxHeldPreambleEvents and MaxHeldPreamble bound the preamble (see
// HoldPreamble) a StreamTranslator holds back, in events and in bytes: a
// stream whose preamble grows past either before any content (an
// upstream sending comments or pings without end) fails before its
// commit point, as a stream that ends before content does, instead of
// holding every byte until the attempt times out. A vendor's preamble is
// a few events (a relay's keep-alive comments, one every few seconds,
// hundreds over a long wait); its bytes can be large, as a Responses
// response.created echoes the request's instructions and tools (the
// request body is at most 8 MiB by default), hence the byte bound of one
// SSE event (MaxSSEEventSize).
const (
	MaxHeldPreambleEvents = 4096
	MaxHeldPreamble       = MaxSSEEventSize
)

// ErrPreambleTooLarge is the cause Run's ErrNotCommitted error wraps
// when the held preamble grew past MaxHeldPreambleEvents or
// MaxHeldPreamble before any content.
var ErrPreambleTooLarge = errors.New("translate: stream sent more than 4096 preamble events (comments, pings, start events) or 64 MiB of them before its first content")

// commit writes the held preamble.
func (t *StreamTranslator) commit() {
	t.committed = true
	errEvent := t.errEvent
	t.errEvent = false // the held events are preamble, never errors
	defer func() { t.errEvent = errEvent }()
	start := 0
	for _, end := range t.heldEnds {
		t.emit(t.held[start:end])
		if t.werr != nil {
			return
		}
		start = end
	}
	t.held, t.heldEnds = nil, nil
}

func (t *StreamTranslator) emit(p []byte) {
	if err := t.w.WriteEvent(p); err != nil {
		t.werr = err
		return
	}
	t.events++
}

// failBeforeCommit is called before a failure is relayed. With HoldPreamble
// and nothing written yet it drops the held preamble, records the cause,
// stops the stream and returns true: the caller writes nothing.
func (t *StreamTranslator) failBeforeCommit(cause error) bool {
	if !t.hold || t.committed {
		return false
	}
	if t.failed == nil {
		t.failed = cause
	}
	t.held, t.heldEnds = nil, nil
	t.stopped = true
	return true
}

// setUpstreamError records the upstream's in-band error (first one wins).
func (t *StreamTranslator) setUpstreamError(e *StreamError) *StreamError {
	if t.upErr == nil {
		t.upErr = e
	}
	return t.upErr
}
