package mockupstream

import (
	"net/http"
	"time"
)

// sseWriter writes Server-Sent Events, one flush per event, pacing content
// events and noticing when the client goes away.
type sseWriter struct {
	c       *call
	rc      *http.ResponseController
	buf     []byte
	n       int // events written
	content int // content events announced through pace
	fault   streamFault
	delay   time.Duration
	timer   *time.Timer

	// seq is the sequence_number of the next Responses event; responses is
	// the answer a Responses stream carries (nil for other dialects).
	seq       int
	responses *responsesAnswer
}

// streamFault is a programmed way for a stream to end early.
type streamFault uint8

const (
	faultNone  streamFault = iota
	faultError             // in-band error event (StreamErrorAfter)
	faultCut               // connection dropped (StreamCutAfter)
)

// startSSE writes the stream headers (status 200) and returns the writer.
func (c *call) startSSE() *sseWriter {
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	c.setRequestID()
	c.w.WriteHeader(http.StatusOK)
	return newSSEWriter(c)
}

// newSSEWriter returns a writer for a response whose headers are set.
func newSSEWriter(c *call) *sseWriter {
	e := &sseWriter{c: c, rc: http.NewResponseController(c.w), buf: make([]byte, 0, 512)}
	if tps := c.b.TokensPerSecond; tps > 0 {
		e.delay = time.Duration(float64(time.Second) / tps)
	}
	return e
}

// pace waits before a content event; false means the stream must stop (the
// client went away, or a programmed fault fires).
func (e *sseWriter) pace() bool {
	e.content++
	if b := e.c.b; b.StreamHold && e.content > b.StreamHoldAfter {
		<-e.c.r.Context().Done() // held until the client goes away
		return false
	}
	if b := e.c.b; b.StreamCutAfter > 0 || b.StreamErrorAfter > 0 {
		switch {
		case b.StreamCutAfter > 0 && e.content > b.StreamCutAfter:
			e.fault = faultCut
			return false
		case b.StreamErrorAfter > 0 && e.content > b.StreamErrorAfter:
			e.fault = faultError
			return false
		}
	}
	ctx := e.c.r.Context()
	if e.delay <= 0 {
		return ctx.Err() == nil
	}
	if e.timer == nil {
		e.timer = time.NewTimer(e.delay)
	} else {
		e.timer.Reset(e.delay)
	}
	select {
	case <-ctx.Done():
		e.timer.Stop()
		return false
	case <-e.timer.C:
		return true
	}
}

// send writes one complete event and flushes it; false means the client went
// away.
func (e *sseWriter) send(frame []byte) bool {
	if e.c.r.Context().Err() != nil {
		return false
	}
	if _, err := e.c.w.Write(frame); err != nil {
		return false
	}
	if err := e.rc.Flush(); err != nil {
		return false
	}
	e.c.ks.eventSent(e.n == 0)
	e.n++
	return true
}

// done finishes the stream: bookkeeping for ok or canceled streams, and the
// programmed fault when one fired.
func (e *sseWriter) done(ok bool) {
	if e.timer != nil {
		e.timer.Stop()
	}
	switch {
	case ok:
		e.c.ks.ok.Add(1)
	case e.fault == faultError:
		e.c.ks.failed.Add(1)
		e.sendError()
	case e.fault == faultCut:
		e.c.ks.resets.Add(1)
		e.c.dropConn()
	default:
		e.c.ks.canceled.Add(1)
	}
}

// sendError writes the in-band error event of the call's dialect.
func (e *sseWriter) sendError() {
	c := e.c
	st := c.b.failStatus()
	b := e.buf[:0]
	if c.d == dialectResponses && e.responses != nil {
		b = e.appendResponsesError(b, openAIError(st, c.s.model, c.key))
	} else if c.d == dialectAnthropic {
		info := anthropicError(st, c.s.model, c.key)
		b = append(b, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"...)
		b = appendString(b, info.typ)
		b = append(b, `,"message":`...)
		b = appendString(b, info.msg)
		b = append(b, `},"request_id":`...)
		b = appendString(b, c.requestID())
		b = append(b, "}\n\n"...)
	} else {
		info := openAIError(st, c.s.model, c.key)
		b = append(b, `data: {"error":{"message":`...)
		b = appendString(b, info.msg)
		b = append(b, `,"type":`...)
		b = appendString(b, info.typ)
		b = append(b, `,"param":null,"code":`...)
		if info.code == "" {
			b = append(b, "null"...)
		} else {
			b = appendString(b, info.code)
		}
		b = append(b, "}}\n\n"...)
	}
	e.buf = b
	e.send(b)
}

// waitGeneration simulates the generation time of a non-streamed answer of
// n tokens under TokensPerSecond; false means the client went away.
func (c *call) waitGeneration(n int) bool {
	if c.b.TokensPerSecond <= 0 || n <= 0 {
		return true
	}
	d := time.Duration(float64(n) * float64(time.Second) / c.b.TokensPerSecond)
	return sleepCtx(c.r.Context(), d)
}
