package caddymodule

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// recordingWriter is an http.ResponseWriter (and http.Flusher) that
// records what reaches the client: the bytes, each Write call and each
// Flush.
type recordingWriter struct {
	out     bytes.Buffer
	writes  []int // length of each Write
	flushes int
	flushed int // len(out) at the last Flush
}

func (r *recordingWriter) Header() http.Header { return http.Header{} }
func (r *recordingWriter) WriteHeader(int)     {}
func (r *recordingWriter) Write(p []byte) (int, error) {
	r.writes = append(r.writes, len(p))
	return r.out.Write(p)
}
func (r *recordingWriter) Flush() { r.flushes++; r.flushed = r.out.Len() }

// checkingReader is an upstream body that, at each Read, checks that every
// event written so far has been written and flushed to the client and
// that the flushWriter holds no event buffer while it waits.
type checkingReader struct {
	t     *testing.T
	fw    *flushWriter
	rec   *recordingWriter
	want  *bytes.Buffer // the events written so far
	reads int
}

func (c *checkingReader) Read(p []byte) (int, error) {
	c.reads++
	if c.fw.buf != nil {
		c.t.Errorf("read %d: the flushWriter holds an event buffer while waiting for the upstream", c.reads)
	}
	if !bytes.Equal(c.rec.out.Bytes(), c.want.Bytes()) || c.rec.flushed != c.want.Len() {
		c.t.Errorf("read %d: client got %d bytes (%d flushed), want all %d events' bytes flushed", c.reads, c.rec.out.Len(), c.rec.flushed, c.want.Len())
	}
	return 0, io.EOF
}

// TestFlushWriterWritesEveryEventBeforeARead: the events of one upstream
// read leave in one write and one flush before the next read, in order;
// an event of clientWriteChunk or more goes out after the smaller ones
// gathered before it, in clientWriteChunk pieces; no buffer is held while
// the stream waits for the upstream.
func TestFlushWriterWritesEveryEventBeforeARead(t *testing.T) {
	rec := &recordingWriter{}
	fw := newFlushWriter(rec, &requestLog{}, 0, nil)
	want := &bytes.Buffer{}
	cr := &checkingReader{t: t, fw: fw, rec: rec, want: want}
	r := &flushBeforeRead{r: cr, fw: fw}
	write := func(ev string) {
		t.Helper()
		if err := fw.WriteEvent([]byte(ev)); err != nil {
			t.Fatal(err)
		}
		want.WriteString(ev)
	}
	buf := make([]byte, 64)

	write("data: 1\n\n")
	write("data: 2\n\n")
	write("data: 3\n\n")
	if rec.out.Len() != 0 {
		t.Fatalf("events written before the read: %q", rec.out.String())
	}
	_, _ = r.Read(buf)
	if len(rec.writes) != 1 || rec.writes[0] != 27 || rec.flushes != 1 {
		t.Fatalf("writes %v, flushes %d: want the three events in one write, one flush", rec.writes, rec.flushes)
	}

	big := "data: " + strings.Repeat("x", clientWriteChunk+100) + "\n\n"
	write("data: 4\n\n")
	write(big)
	write("data: 5\n\n")
	_, _ = r.Read(buf)
	if got, want := rec.writes[1:], []int{9, clientWriteChunk, len(big) - clientWriteChunk, 9}; !slices.Equal(got, want) {
		t.Fatalf("writes %v, want %v (the small event, the large one in pieces, the next one at the read)", got, want)
	}
	if rec.flushes != 2 {
		t.Fatalf("flushes = %d, want 2 (one per read)", rec.flushes)
	}

	_, _ = r.Read(buf) // nothing new: no write, no flush
	if len(rec.writes) != 5 || rec.flushes != 2 {
		t.Fatalf("an idle read wrote %v, flushed %d times", rec.writes[5:], rec.flushes-2)
	}
}

// TestIsEventStream: the media type decides, without case, with white
// space and parameters allowed (RFC 9110, section 8.3.1).
func TestIsEventStream(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/event-stream":                       true,
		"text/event-stream; charset=utf-8":        true,
		"Text/Event-Stream;charset=UTF-8":         true,
		" text/event-stream ; charset=utf-8 ":     true,
		"text/event-stream;":                      true,
		"application/json":                        false,
		"text/event-streams":                      false,
		"text/event":                              false,
		"":                                        false,
		"application/x-ndjson; text/event-stream": false,
	} {
		if got := isEventStream(ct); got != want {
			t.Errorf("isEventStream(%q) = %v, want %v", ct, got, want)
		}
	}
}
