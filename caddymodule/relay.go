package caddymodule

import (
	"errors"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/translate"
)

// Stream outcomes, the request log's stream_outcome and the
// stream_outcome label of llm_gateway_requests_total: how a streamed
// answer ended for the client once it had begun. Non-streamed requests
// have none ("").
const (
	// streamComplete: the upstream finished with a finish reason
	// (finish_reason, stop_reason, response.completed).
	streamComplete = "complete"
	// streamErrorEvent: the upstream sent an in-band error event after
	// content went out; the client got it in its dialect.
	streamErrorEvent = "error"
	// streamTruncated: the upstream ended without a finish reason; the
	// client got its dialect's error form, never a normal finish.
	streamTruncated = "truncated"
	// streamInterrupted: the upstream connection broke or stalled past
	// request_timeout mid-stream.
	streamInterrupted = "interrupted"
	// streamCanceled: the client went away or stopped reading.
	streamCanceled = "canceled"
)

// holdPreamble turns the stream commit point on (see attempt). It is
// always on; BenchmarkStreamCommitPoint turns it off to measure what
// holding the preamble costs a healthy stream's time to first byte.
var holdPreamble = true

// commitWriter commits the client's response (status and headers, via
// the exchange's commitStream) when the stream translator writes its
// first event, which with HoldPreamble is the first content event with the
// held preamble, and then passes every event on to the flushWriter.
type commitWriter struct {
	fw        *flushWriter
	x         *exchange
	status    int // the upstream's
	committed bool
}

// WriteEvent implements translate.EventWriter.
func (c *commitWriter) WriteEvent(p []byte) error {
	if !c.committed {
		c.committed = true
		c.x.commitStream(c.status)
	}
	return c.fw.WriteEvent(p)
}

// unwrapNotCommitted returns the cause of a stream that failed before its
// first content event (translate.ErrNotCommitted wraps it), err itself
// otherwise.
func unwrapNotCommitted(err error) error {
	if !errors.Is(err, translate.ErrNotCommitted) {
		return err
	}
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range u.Unwrap() {
			if e != translate.ErrNotCommitted {
				return e
			}
		}
	}
	return err
}

// failRequest writes a request the translate package refused (validation
// or translation) as the client's 4xx, with the param and code the
// vendor's own error would carry (OpenAI dialects), and records it.
func (rl *requestLog) failRequest(w http.ResponseWriter, d translate.Dialect, te *translate.Error) {
	status := te.Class.Status(d)
	rl.status, rl.errMsg = status, te.Message // cut where it is logged
	if rl.awaitsContinue {
		w.Header().Set("Connection", "close")
	}
	setRetryHeaders(w.Header(), status, true)
	writeJSON(w, status, te.Body(d))
}

// relayUpstreamError writes an upstream's error answer, already rendered
// in the client's dialect (body), as the client's answer: the status as
// the client's dialect has it, X-Routed-Via, and x-should-retry telling
// the official SDKs whether retrying can help (the upstream refused the
// request itself: no, except for the statuses the SDKs retry anyway; an
// X-Should-Retry the caller set first is kept).
func relayUpstreamError(w http.ResponseWriter, rl *requestLog, d translate.Dialect, routedVia string, status int, upstream http.Header, body []byte) {
	rl.status = translate.ClientStatus(d, status)
	hdr := w.Header()
	hdr.Set("X-Routed-Via", routedVia)
	if upstream != nil {
		if ra := upstream.Get("Retry-After"); ra != "" && (rl.status == http.StatusTooManyRequests || rl.status >= 500) {
			hdr.Set("Retry-After", ra)
		}
	}
	retry := "false"
	switch {
	case hdr.Get("X-Should-Retry") != "":
		retry = hdr.Get("X-Should-Retry") // the caller knows better (settle)
	case rl.status == http.StatusRequestTimeout, rl.status == http.StatusConflict,
		rl.status == http.StatusTooManyRequests, rl.status >= 500:
		retry = "true"
	}
	hdr.Set("X-Should-Retry", retry)
	rl.upstreamErr = relayedMessage(body)
	writeJSON(w, rl.status, body)
}

// relayedMessage returns the message of an error body in a client's
// dialect (error.message in the OpenAI and Anthropic forms), for the
// request log: the body is already redacted (scrubbedError); credentials
// are scrubbed again. The log cuts it to maxErrorMessage bytes (cutting
// here as well would cut the cut message again and misstate how many
// bytes were left out).
func relayedMessage(body []byte) string {
	m := gjson.GetBytes(body, "error.message")
	if m.Type != gjson.String || m.Str == "" {
		return ""
	}
	return translate.ScrubSecrets(m.Str)
}
