package translate

import (
	"errors"
	"io"
	"time"
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
// message_start "message.model", Responses "response.model"). It still
// observes usage.
//
// Otherwise the upstream events are decoded into canonical stream events and
// re-encoded in the client's dialect, following the streaming sections of
// the OpenAI Chat Completions, Anthropic Messages and OpenAI Responses API
// references. Supported upstream dialects for translation are OpenAIChat and
// AnthropicMessages; client dialects are all three.
//
// In every mode the client stream is always terminated properly:
//   - an upstream that ends without a finish reason, without its terminator
//     ([DONE], message_stop, response.completed) or without the final blank
//     line is closed in the client's dialect: open blocks stopped, a stop
//     reason ("end_turn"/"stop", or the tool-call reason when a tool call was
//     streamed), then the terminator;
//   - an upstream read error, or an error event from the upstream, becomes
//     the client dialect's error event followed by its terminator (OpenAI
//     Chat: data: {"error":…} then data: [DONE]; Responses: error then
//     response.failed; Anthropic: event: error then message_stop; the
//     official SDKs stop at the error event).
//
// A StreamTranslator is for one stream and is not safe for concurrent use.
type StreamTranslator struct {
	from, to  Dialect
	model     string
	w         EventWriter
	events    int
	werr      error
	truncated bool
	buf       []byte

	usage Usage
	au    anthropicUsage

	// passthrough state
	pt        passState
	scratch   objFields
	hideUsage bool

	// translation state
	cs  *canonStream
	dec upstreamDecoder
}

// ErrUnsupportedStream is returned by Run for a translation direction that
// is not implemented (an OpenAIResponses upstream with a different client
// dialect).
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
		}
	}
	return t
}

// HideUsageChunk makes an OpenAI Chat passthrough drop the upstream's
// usage-only chunk (choices: []) after observing it; see AddStreamUsage.
// It has no effect on other directions.
func (t *StreamTranslator) HideUsageChunk() { t.hideUsage = true }

// Usage returns the usage observed so far (complete after Run returns).
// Figures the upstream did not report are nil.
func (t *StreamTranslator) Usage() Usage {
	if t.from == AnthropicMessages {
		return t.au.usage()
	}
	return t.usage
}

// Truncated reports, after Run, whether the upstream stream ended cleanly
// but without a finish reason (no finish_reason / stop_reason): the client
// stream was closed properly, but the answer may be incomplete, typically
// because a proxy or load balancer cut the connection. Handlers should log
// it and treat it as an upstream failure of the key.
func (t *StreamTranslator) Truncated() bool { return t.truncated }

// EventsWritten returns how many times WriteEvent was called successfully.
// Zero after Run means nothing reached the client, so the handler may still
// retry the request elsewhere or send an HTTP error.
func (t *StreamTranslator) EventsWritten() int { return t.events }

// Run reads the upstream SSE body until EOF or a read error, writing client
// events as it goes. It returns nil after a clean end (including an upstream
// that was cut short but could be closed properly), the upstream read error
// after it has been reported to the client, or the first EventWriter error
// (the client went away; nothing more is written).
func (t *StreamTranslator) Run(upstream io.Reader) error {
	if t.from != t.to && t.dec == nil {
		return ErrUnsupportedStream
	}
	r := NewSSEReader(upstream)
	var readErr error
	for {
		ev, err := r.Next()
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
		if t.from == t.to {
			t.passEvent(&ev)
		} else {
			t.dec.event(&ev)
		}
		if t.werr != nil {
			return t.werr
		}
		if t.from != t.to && t.cs.closed {
			break
		}
	}
	if t.from == t.to {
		t.passEnd(readErr)
	} else {
		t.dec.end(readErr)
	}
	if t.werr != nil {
		return t.werr
	}
	return readErr
}

// write sends one client event.
func (t *StreamTranslator) write(p []byte) {
	if t.werr != nil {
		return
	}
	if err := t.w.WriteEvent(p); err != nil {
		t.werr = err
		return
	}
	t.events++
}
