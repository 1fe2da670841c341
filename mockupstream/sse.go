package mockupstream

import (
	"net/http"
	"time"
)

// sseWriter writes Server-Sent Events, one flush per event, pacing content
// events and noticing when the client goes away.
type sseWriter struct {
	c     *call
	rc    *http.ResponseController
	buf   []byte
	n     int
	delay time.Duration
	timer *time.Timer
}

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

// pace waits before a content event; false means the client went away.
func (e *sseWriter) pace() bool {
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

// done finishes the stream bookkeeping: ok or canceled.
func (e *sseWriter) done(ok bool) {
	if e.timer != nil {
		e.timer.Stop()
	}
	if ok {
		e.c.ks.ok.Add(1)
	} else {
		e.c.ks.canceled.Add(1)
	}
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
