package caddymodule

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/translate"
)

// maxAnswerPrealloc bounds the buffer readUpstreamBody allocates from a
// Content-Length before any byte arrived (1 MiB); a larger answer grows
// it as it comes.
const maxAnswerPrealloc = 1 << 20

// readUpstreamBody reads a whole upstream answer of at most
// maxUpstreamBody+1 bytes (more is the caller's error). With a
// Content-Length within the limit the buffer is allocated once at that
// size (plus bytes.MinRead for the read that sees EOF; at most
// maxAnswerPrealloc up front), instead of io.ReadAll's doubling from 512
// bytes; a Content-Length that lies only costs growth.
func readUpstreamBody(body io.Reader, contentLength int64) ([]byte, error) {
	r := io.LimitReader(body, maxUpstreamBody+1)
	if contentLength < 0 || contentLength > maxUpstreamBody {
		return io.ReadAll(r)
	}
	var buf bytes.Buffer
	// up front at most maxAnswerPrealloc: an upstream that announces a
	// large body and sends little must not cost that memory per request
	buf.Grow(int(min(contentLength, maxAnswerPrealloc)) + bytes.MinRead)
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// relayJSON reads a non-streamed 2xx answer (bounded by maxUpstreamBody),
// renders it in the client's dialect (upstream.readJSON; a passthrough
// endpoint's answer keeps its bytes, the model rewritten) and writes it.
// A 2xx that is not JSON, or that the gateway cannot read, is the
// upstream's fault (a server error booked to the key; the loop moves on);
// a 2xx that is an error object (translate.AnswerError) is that error, as
// with its HTTP status (settle: relayed when the request caused it).
// A token count is written as the upstream sent it.
func (x *exchange) relayJSON(resp *http.Response, body io.Reader) attemptResult {
	c, rl := x.c, x.rl
	data, err := readUpstreamBody(body, resp.ContentLength)
	if err == nil && len(data) > maxUpstreamBody {
		err = errors.New("upstream response larger than the gateway's limit")
	}
	if err == nil && !translate.ValidJSON(data) {
		// an HTML page, a proxy's banner or garbage with status 2xx:
		// a misconfigured or broken upstream, not an answer
		return x.fail(keypool.Outcome{Kind: keypool.ServerError, Status: resp.StatusCode, Message: "upstream answered " + strconv.Itoa(resp.StatusCode) + " with a body that is not JSON"})
	}
	if err != nil {
		return x.fail(x.classifyErr(err, resp.StatusCode))
	}
	// a whole answer is checked, counted and renamed or translated in one
	// walk over its top-level members (translate.ReadAnswer; ValidJSON
	// above is its only validation)
	onePass := c.kind == kindCompletion && !c.stream
	var pass passAnswer
	if onePass {
		pass = upstreamFor(x.d).readJSON(c, data, x.responseOptions())
	}
	if c.kind != kindCountTokens {
		if se := pass.answerError(onePass, x.d, data); se != nil {
			// an error object with a 2xx (a relay's habit): the error it
			// states, judged as with its HTTP status, never a success
			se.Body = x.uk.forms.redact(se.Body)
			o := streamErrorOutcome(c.upstreamModel, se, resp.Header)
			o.Message = "unreadable upstream response: an error body with status " + strconv.Itoa(resp.StatusCode) + ": " + o.Message
			return x.settle(o, se.Status, nil, se.Body)
		}
	}
	ct := resp.Header.Get("Content-Type")
	switch c.kind {
	case kindCountTokens:
		var ok bool
		if data, ok = translate.CountTokensAnswer(x.d, data); !ok {
			// not a count: the client gets the estimate instead
			return x.fail(keypool.Outcome{Kind: keypool.ClientError, Status: resp.StatusCode, Message: "token count answer without input_tokens"})
		}
		if x.d != c.dialect {
			ct = ""
		}
	case kindPassthrough:
		data, rl.usage, err = c.pass.readJSON(c, data)
	default:
		if c.stream {
			// the client asked for a stream and the upstream answered
			// whole (a server that ignores "stream" for some models):
			// the client gets the stream that answer makes, in its
			// dialect, never a JSON body its stream reader cannot read
			data, rl.usage, err = translate.ResponseAsStream(x.d, c.dialect, data, c.responseModel(x.d), x.responseOptions())
			if err == nil {
				ct, rl.streamOutcome = "text/event-stream", streamComplete
				x.w.Header().Set("Cache-Control", "no-cache")
			}
			break
		}
		data, rl.usage, err = pass.out, pass.usage, pass.err
		if x.d != c.dialect {
			ct = ""
		}
	}
	if err != nil {
		return x.fail(keypool.Outcome{Kind: keypool.ServerError, Status: resp.StatusCode, Message: "unreadable upstream response"})
	}
	if x.h.LogPayloads && c.kind != kindCountTokens {
		rl.respBody = data
	}
	x.finish(keypool.Outcome{Kind: keypool.Success, Status: resp.StatusCode})
	rl.key, rl.status = x.uk.id, resp.StatusCode
	rl.ttfb = time.Since(rl.start)
	hdr := x.w.Header()
	hdr.Set("X-Routed-Via", x.routedVia())
	if ct == "" {
		ct = "application/json"
	}
	hdr.Set("Content-Type", ct)
	hdr.Set("Content-Length", strconv.Itoa(len(data)))
	x.w.WriteHeader(resp.StatusCode)
	_, _ = x.w.Write(data)
	return attemptResult{done: true}
}

// relayStream relays a streamed answer through the upstream's stream
// translator. The client's response (status, headers, the stream's
// preamble) is committed only at the upstream's first content event: an
// upstream that fails before that (an error event after message_start, a
// reset, an empty or preamble-only stream, no content within
// attempt_timeout) is retried on another key and the client never sees
// it. The translator holds bytes, not time: a healthy stream's first
// content leaves as soon as it is read. After an in-band error that
// reached the client, the upstream is read on for the usage that may
// follow it (booked; the outcome stays the error), for at most
// drainWaitAfterError (within the request_timeout that was running).
func (x *exchange) relayStream(resp *http.Response, body *idleReader) attemptResult {
	c, rl := x.c, x.rl
	fw := newFlushWriter(x.w, rl, x.h.clientWriteTimeout(), x.uk.forms)
	cw := &commitWriter{fw: fw, x: x, status: resp.StatusCode}
	st := upstreamFor(x.d).newStream(c, cw)
	fw.errs = st
	st.SetOptions(x.responseOptions())
	if holdPreamble {
		st.HoldPreamble()
	}
	if c.hideUsage {
		st.HideUsageChunk()
	}
	// attempt_timeout runs until the first content; after an in-band
	// error, while the translator reads on for the usage that may follow
	// (translate.MaxDrainAfterError), the timeout running is not re-armed
	body.armed = st.Live
	body.sniff = true // an error object sent instead of events (settled below)
	body.dataAt, body.stalled = &x.lastData, &x.stalled
	defer x.stopStall()
	runErr := st.Run(&flushBeforeRead{r: body, fw: fw, st: st, x: x})
	fw.flush()
	rl.usage = st.Usage()
	se := st.UpstreamError()
	if se != nil {
		se.Body = x.uk.forms.redact(se.Body) // it feeds the outcome's message and the log
	}
	switch {
	case !st.Committed():
		// nothing reached the client: the attempt failed before its first
		// content event, and the request may move on
		what := "stream error event before content: "
		if se == nil && x.r.Context().Err() == nil && !x.timedOut.Load() {
			// no event at all: an error object sent as the stream (a
			// relay that set the stream's headers before it knew) is that
			// error, as with its HTTP status
			if se = translate.AnswerError(x.d, body.jsonHead()); se != nil {
				se.Body = x.uk.forms.redact(se.Body)
				what = "stream answered with an error object: "
			}
		}
		if se != nil && x.r.Context().Err() == nil && !x.timedOut.Load() {
			o := streamErrorOutcome(c.upstreamModel, se, resp.Header)
			o.Message = what + o.Message
			return x.settle(o, se.Status, nil, se.Body)
		}
		err := runErr
		if err == nil || errors.Is(err, io.ErrUnexpectedEOF) && !x.timedOut.Load() {
			err = io.ErrUnexpectedEOF
		}
		o := x.classifyErr(unwrapNotCommitted(err), resp.StatusCode)
		if o.Kind == keypool.NetworkError {
			o.Message = "stream ended before its first content"
			if errors.Is(err, translate.ErrPreambleTooLarge) {
				// translate's own words, which name both of its bounds
				// (events and bytes)
				o.Message = strings.TrimPrefix(translate.ErrPreambleTooLarge.Error(), "translate: ")
			}
		}
		return x.fail(o)
	case se == nil && (x.r.Context().Err() != nil || fw.err != nil):
		// the client went away, or stopped reading (its context may not
		// show it yet); one that leaves after an in-band error (while the
		// usage that follows it is read) leaves the error the outcome
		x.finish(keypool.Outcome{Kind: keypool.Canceled, Status: resp.StatusCode})
		rl.status = 499
		rl.streamOutcome = streamCanceled
	case se != nil:
		// an in-band error after content went out: relayed to the client
		// in its dialect, and the attempt's outcome is that error,
		// classified as the same error with an HTTP status would be
		o := streamErrorOutcome(c.upstreamModel, se, resp.Header)
		o.Message = "stream error event: " + o.Message
		x.finish(o)
		rl.streamError, rl.streamOutcome = o.Kind.String(), streamErrorEvent
	case runErr == nil && st.Truncated():
		// the upstream ended without a finish reason (one that finished
		// and then closed without [DONE] / message_stop is whole): the
		// client was told in its dialect that the answer is cut short,
		// the key is blamed
		o := keypool.Outcome{Kind: keypool.NetworkError, Status: resp.StatusCode, Message: "stream ended without a finish reason"}
		if x.exitLost(io.ErrUnexpectedEOF) {
			o = keypool.Outcome{Kind: keypool.Canceled, Status: resp.StatusCode, Message: "egress exit " + x.exit.name + " lost"}
		}
		x.finish(o)
		rl.streamError, rl.streamOutcome = "truncated", streamTruncated
	case x.stalled.Load():
		// only keep-alives for stream_idle_timeout: the client was told in
		// its dialect that the stream stalled; the key is not blamed (a
		// model may think that long; no answer says the key is at fault)
		x.finish(keypool.Outcome{Kind: keypool.Canceled, Status: resp.StatusCode,
			Message: "stream stalled: no data for " + x.p.streamIdle.String() + " (stream_idle_timeout), only keep-alives"})
		rl.streamError, rl.streamOutcome = "stream_idle_timeout", streamInterrupted
		rl.errMsg = "the upstream sent no data, only keep-alives, for " + x.p.streamIdle.String() + " (stream_idle_timeout); stream cut"
	case runErr != nil:
		// the upstream broke off mid-stream; the client got its dialect's
		// error, the key gets the blame
		o := x.classifyErr(runErr, resp.StatusCode)
		o.Message = "stream interrupted: " + o.Message
		x.finish(o)
		rl.streamError, rl.streamOutcome = o.Kind.String(), streamInterrupted
	default:
		x.finish(keypool.Outcome{Kind: keypool.Success, Status: resp.StatusCode})
		rl.streamOutcome = streamComplete
	}
	return attemptResult{done: true}
}

// commitStream commits the client's response of a stream at its first
// content event: from here on request_timeout runs between reads.
func (x *exchange) commitStream(status int) {
	x.upTTFB = time.Since(x.t0)
	x.rearmed.Store(true)
	x.timer.Reset(x.p.requestTimeout)
	x.lastData.Store(time.Now().UnixNano())
	x.stallTimer.Store(time.AfterFunc(x.p.streamIdle, x.checkStall))
	x.rl.key, x.rl.status = x.uk.id, status
	hdr := x.w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Set("X-Routed-Via", x.routedVia())
	hdr.Del("Content-Length")
	x.w.WriteHeader(http.StatusOK)
}

// checkStall ends a committed stream whose last data line is
// stream_idle_timeout old (its upstream sends only keep-alives, which
// re-arm request_timeout), else waits for the rest of that time. The
// stream's reads then fail with translate.ErrStreamStalled (idleReader).
func (x *exchange) checkStall() {
	idle := time.Since(time.Unix(0, x.lastData.Load()))
	if left := x.p.streamIdle - idle; left > 0 {
		x.stallTimer.Load().Reset(left)
		return
	}
	x.stalled.Store(true)
	x.cancel()
}

// stopStall stops the stream_idle_timeout of a stream that has ended.
func (x *exchange) stopStall() {
	if t := x.stallTimer.Load(); t != nil {
		t.Stop()
	}
}

// isEventStream reports whether a Content-Type is text/event-stream: its
// media type, before any parameters, compared without case and with
// white space around it ignored (RFC 9110, section 8.3.1). Parameters are
// not read, so unlike mime.ParseMediaType it allocates nothing.
func isEventStream(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// idleReader re-arms the attempt's timeout after every read that returns
// data, so request_timeout bounds each wait for the upstream, not the
// whole length of a stream. In a stream (armed set), a read of white
// space alone (blank lines) does not re-arm it: it carries nothing, not
// even a keep-alive (an SSE keep-alive is a comment line, per the HTML
// Living Standard, server-sent events), so an upstream that sends only
// blank lines after its content is stalled, and request_timeout ends it
// instead of holding the stream, and its key's slot, for as long as the
// upstream goes on. In a whole answer (armed nil) blank lines are the
// keep-alive: DeepSeek's API, busy, sends a non-streamed request's 200
// headers at once and then empty lines until the answer comes (DeepSeek
// API docs, "Rate Limit"), for minutes on a long generation.
// While armed is set and reports false (a stream before its first content
// event, or reading on after an in-band error), reads do not re-arm it:
// the wait that was running still runs.
//
// With sniff set (a stream), the body is also looked at for an upstream
// that answered with a JSON object instead of events (a relay that set
// the stream's headers before it knew the request would fail): when its
// first byte other than white space is '{' (never the first byte of an
// event), its first maxUpstreamErrorBody bytes are kept in head, to be
// judged as an error body (jsonHead). An event stream costs one byte test.
type idleReader struct {
	r     io.Reader
	timer *time.Timer
	d     time.Duration
	armed func() bool
	// rearmed, when set, is set once a read re-arms the timer: the
	// attempt's first wait (an answer awaited) is over
	rearmed *atomic.Bool
	sniff   bool   // look at the first byte for a JSON object
	head    []byte // the body's first bytes when it starts with '{'
	// dataAt, when set (a stream), is stamped with the time of every read
	// that carries a line other than a comment or a blank line
	// (stream_idle_timeout counts from it); midLine says the last read
	// ended inside a line. A read that fails once stalled is set fails
	// with translate.ErrStreamStalled.
	dataAt  *atomic.Int64
	stalled *atomic.Bool
	midLine bool
}

func (i *idleReader) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	if n > 0 && (i.armed == nil || !blank(p[:n]) && i.armed()) {
		if i.rearmed != nil {
			i.rearmed.Store(true)
		}
		i.timer.Reset(i.d)
	}
	if i.dataAt != nil {
		if n > 0 && i.carriesData(p[:n]) {
			i.dataAt.Store(time.Now().UnixNano())
		}
		if err != nil && err != io.EOF && i.stalled.Load() {
			err = translate.ErrStreamStalled
		}
	}
	if i.sniff && n > 0 {
		i.sniffed(p[:n])
	}
	return n, err
}

// carriesData reports whether a read of an event stream holds a line
// other than a comment (": ping", per the HTML Living Standard,
// server-sent events) or a blank line: a field (data, event, id, retry).
// A line split across reads is judged by its start; a read is usually
// told by its first byte.
func (i *idleReader) carriesData(b []byte) bool {
	last := b[len(b)-1]
	defer func() { i.midLine = last != '\n' && last != '\r' }()
	for len(b) > 0 {
		if i.midLine {
			k := bytes.IndexAny(b, "\r\n")
			if k < 0 {
				return false
			}
			b, i.midLine = b[k+1:], false
			continue
		}
		switch b[0] {
		case '\n', '\r':
			b = b[1:]
		case ':':
			i.midLine = true
		default:
			return true
		}
	}
	return false
}

// blank reports whether b is white space only (spaces, tabs, CR, LF).
// A read that carries events is told by its first byte (a field name).
func blank(b []byte) bool {
	for _, c := range b {
		if c != '\n' && c != '\r' && c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// sniffed looks at a read of the body while sniff is set: a body that
// opens with '{' is kept (up to maxUpstreamErrorBody); one that opens
// with anything else ends the sniffing.
func (i *idleReader) sniffed(b []byte) {
	if i.head == nil {
		t := bytes.TrimLeft(b, " \t\r\n")
		if len(t) == 0 {
			return // only white space so far
		}
		if t[0] != '{' {
			i.sniff = false
			return
		}
		b = t
	}
	i.head = append(i.head, b[:min(len(b), maxUpstreamErrorBody-len(i.head))]...)
	if len(i.head) >= maxUpstreamErrorBody {
		i.sniff = false
	}
}

// jsonHead returns the body's first bytes when the body opened with a
// JSON object instead of events (see sniff), else nil.
func (i *idleReader) jsonHead() []byte { return i.head }

// flushWriter gathers client events as the stream translator produces
// them; flushBeforeRead writes and flushes them to the client whenever the
// translator is about to wait for more upstream bytes. Every event
// therefore leaves as soon as the upstream bytes that carry it have been
// read, with no timer and no added delay, but the events of one upstream
// read share one write and one flush (one chunk, one syscall, one reset
// of Caddy's idle write deadline) instead of one each, as reverse_proxy
// writes once per upstream read. The events wait in a pooled buffer that
// is held only between a read's first event and its flush, so an idle
// open stream holds none.
//
// Slow readers: every write and flush runs under a write deadline of
// client_write_timeout from its start (http.ResponseController
// SetWriteDeadline; large events are written in 16 KiB pieces, each with
// its own deadline). A client that accepts no bytes for that long fails
// the write; the translator stops, so the upstream is no longer read, the
// attempt ends (the key's slot is released as "canceled", never counted
// against the key) and the upstream request is cancelled. Since the
// upstream is read only after the previous read's events were flushed,
// the gateway holds at most one upstream read (16 KiB, or one larger
// event) that the client has not accepted, besides the sockets' buffers.
//
// Upstream keys echoed in an in-band error event (Chat error chunks,
// Anthropic error events, Responses response.failed and error, and the
// client dialect's error form of a failure), in any form secretForms
// knows, are redacted before they leave. The stream translator says which
// events those are (translate.StreamTranslator.WritingErrorEvent); content
// events are not scanned, not even searched (a key reaches the stream only
// through an upstream's error message).
type flushWriter struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	rl       *requestLog
	timeout  time.Duration // client_write_timeout; 0: no deadline
	deadline time.Time     // the write deadline last set, zero when none
	secret   *secretForms  // nil: nothing to redact
	errs     errorEvents   // which events are error events; nil: every one may be
	buf      *[]byte       // events not yet written (eventBufs); nil when none
	pending  bool          // bytes written since the last flush
	err      error
}

// eventBufs holds the buffers in which a flushWriter gathers the events
// of one upstream read (at most clientWriteChunk bytes each).
var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// newFlushWriter returns the stream writer for one attempt: timeout is the
// client_write_timeout (0: none), forms the key's secret forms redacted
// from error events (nil for none; built once per key, upstreamKey.forms).
func newFlushWriter(w http.ResponseWriter, rl *requestLog, timeout time.Duration, forms *secretForms) *flushWriter {
	return &flushWriter{w: w, rc: http.NewResponseController(w), rl: rl, timeout: timeout, secret: forms}
}

// arm sets the write deadline for the next write or flush to
// client_write_timeout from now. It is moved only when it has aged by a
// sixteenth of the timeout (the effective bound is 15/16 to 16/16 of it),
// so that a stream of many small events does not pay for one deadline
// change each. A writer that cannot take deadlines (not a network
// connection) is left without one.
func (f *flushWriter) arm() {
	if f.timeout <= 0 {
		return
	}
	now := time.Now()
	if !f.deadline.IsZero() && f.deadline.Sub(now) > f.timeout-f.timeout/16 {
		return
	}
	d := now.Add(f.timeout)
	if err := f.rc.SetWriteDeadline(d); err != nil {
		f.timeout = 0
		return
	}
	f.deadline = d
}

// failed records a write error; one past the write deadline is the
// client's fault and is logged as client_write_timeout.
func (f *flushWriter) failed(err error) error {
	f.err = err
	if !f.deadline.IsZero() && !time.Now().Before(f.deadline) {
		f.rl.streamError = "client_write_timeout"
		f.rl.errMsg = "the client accepted no stream bytes for " + f.timeout.String() + " (client_write_timeout); stream cut"
	}
	return err
}

// WriteEvent implements translate.EventWriter.
func (f *flushWriter) WriteEvent(p []byte) error {
	if f.err != nil {
		return f.err
	}
	if f.secret != nil && (f.errs == nil || f.errs.WritingErrorEvent()) {
		p = f.secret.redactEvent(p)
	}
	if f.buf != nil && len(*f.buf)+len(p) > clientWriteChunk {
		if err := f.writeOut(); err != nil {
			return err
		}
	}
	if len(p) < clientWriteChunk {
		if f.buf == nil {
			f.buf = eventBufs.Get().(*[]byte)
		}
		*f.buf = append(*f.buf, p...)
		return nil
	}
	return f.write(p)
}

// write writes p to the client in pieces, each under a deadline of its
// own: a client that is slow but reading is not cut by one large event.
func (f *flushWriter) write(p []byte) error {
	for len(p) > 0 {
		n := min(len(p), clientWriteChunk)
		f.arm()
		if _, err := f.w.Write(p[:n]); err != nil {
			return f.failed(err)
		}
		p = p[n:]
		f.pending = true
	}
	return nil
}

// writeOut writes the gathered events and returns their buffer to
// eventBufs.
func (f *flushWriter) writeOut() error {
	b := f.buf
	if b == nil {
		return f.err
	}
	f.buf = nil
	err := f.write(*b)
	*b = (*b)[:0]
	if cap(*b) <= 2*clientWriteChunk {
		eventBufs.Put(b)
	}
	return err
}

// errorEvents tells a stream writer, while it writes an event, whether
// that event is an error event (*translate.StreamTranslator).
type errorEvents interface{ WritingErrorEvent() bool }

// clientWriteChunk is the most written to a client under one write
// deadline.
const clientWriteChunk = 16 << 10

// flush writes the gathered events and sends them to the client.
func (f *flushWriter) flush() {
	if f.err == nil {
		_ = f.writeOut()
	}
	if !f.pending || f.err != nil {
		return
	}
	f.pending = false
	if f.rl.ttfb == 0 {
		f.rl.ttfb = time.Since(f.rl.start)
	}
	f.arm()
	if err := f.rc.Flush(); err != nil {
		_ = f.failed(err)
	}
}

// flushBeforeRead flushes pending client events before each read of the
// upstream body (a read may block until the upstream sends more).
//
// At its first read after an in-band error that reached the client (the
// translator's drain, translate.StreamTranslator.Draining), it cuts the
// attempt's timer to drainWaitAfterError: the upstream's request is
// canceled then (the read fails, which ends the drain unreported) unless
// its stream ended first.
type flushBeforeRead struct {
	r       io.Reader
	fw      *flushWriter
	st      *translate.StreamTranslator // nil: no drain bound
	x       *exchange
	drainAt bool // the drain's time bound is set
}

// drainWaitAfterError bounds how long the upstream is read after an
// in-band error that reached the client (translate.MaxDrainAfterError
// bounds the bytes): long enough for the usage chunk or message_delta an
// upstream sends right after its error (it comes with the error or a few
// milliseconds after it, in the same response), short enough that a
// Responses client's response.failed (written after the drain, with the
// usage) and the end of every client's stream are not held back by an
// upstream that keeps the connection open: 300 ms, or request_timeout
// when that is shorter. Usage that comes later is not booked.
const drainWaitAfterError = 300 * time.Millisecond

func (f *flushBeforeRead) Read(p []byte) (int, error) {
	f.fw.flush()
	if f.fw.err != nil {
		return 0, f.fw.err // the client is gone: stop reading the upstream
	}
	if !f.drainAt && f.st != nil && f.st.Draining() {
		f.drainAt = true
		f.x.timer.Reset(min(drainWaitAfterError, f.x.p.requestTimeout))
	}
	return f.r.Read(p)
}
