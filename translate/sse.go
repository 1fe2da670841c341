package translate

import (
	"bytes"
	"errors"
	"io"
	"strconv"
)

// SSEEvent is one Server-Sent Events block (WHATWG HTML "Server-sent events",
// §9.2 event stream interpretation).
//
// Event is the value of the last "event:" line ("" when absent). Data is the
// value of the "data:" lines joined with "\n", nil when the block had no data
// line (a block of comments such as ": keep-alive", or a stray "event:"
// line). ID is the last "id:" value, Retry the last valid "retry:" value in
// milliseconds (-1 when absent). Raw is the exact bytes of the block,
// including its terminating blank line; for a final block cut off at EOF the
// missing line terminators are appended ("\n"), so Raw is always a complete,
// well-formed block that can be forwarded as is.
//
// Unlike a browser EventSource, the reader also returns blocks without data
// (comments), so a passthrough can forward keep-alives verbatim. Data and Raw
// are owned by the caller.
type SSEEvent struct {
	Event string
	Data  []byte
	ID    string
	Retry int64
	Raw   []byte

	dataOff int // offset of Data in Raw, -1 when Data is not a slice of Raw
}

// MaxSSEEventSize is the largest SSE block an SSEReader accepts (64 MiB);
// a larger one makes Next return ErrSSETooLarge.
const MaxSSEEventSize = 64 << 20

// ErrSSETooLarge is returned by SSEReader.Next for a block larger than
// MaxSSEEventSize.
var ErrSSETooLarge = errors.New("translate: SSE event too large")

// SSEReader reads Server-Sent Events from an io.Reader. It handles any split
// of the input across reads (an event spread over several reads, several
// events in one read, a CRLF split between two reads), the three line
// terminators CRLF, LF and CR, comment lines (starting with ':'), multi-line
// data (joined with "\n"), the event/id/retry fields, a UTF-8 BOM at the
// start, and a final event without its trailing blank line at EOF.
type SSEReader struct {
	r    io.Reader
	buf  []byte
	s, e int   // unconsumed bytes are buf[s:e]
	off  int   // offset, relative to s, of the first line not yet parsed
	err  error // sticky read error
	bom  bool  // BOM check done

	// state of the block being parsed (offsets relative to s)
	any      bool
	event    []byte
	id       []byte
	retry    int64
	dataOff  int
	dataLen  int
	dataN    int    // number of data lines
	dataJoin []byte // joined data when dataN > 1
}

// NewSSEReader returns a reader of the SSE stream r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: r, retry: -1}
}

// Next returns the next block. It returns io.EOF at a clean end of input
// (after the last block was returned), or the underlying read error.
func (r *SSEReader) Next() (SSEEvent, error) {
	for {
		for {
			i := r.s + r.off
			if i >= r.e {
				break
			}
			j := lineEnd(r.buf[i:r.e])
			if j < 0 {
				break
			}
			le := i + j
			var next int
			if r.buf[le] == '\r' {
				if le+1 == r.e {
					if r.err == nil {
						break // need one more byte to tell CR from CRLF
					}
					next = le + 1
				} else if r.buf[le+1] == '\n' {
					next = le + 2
				} else {
					next = le + 1
				}
			} else {
				next = le + 1
			}
			lineOff := r.off
			r.off = next - r.s
			if le == i { // blank line: end of block
				if !r.any {
					r.s = next
					r.off = 0
					continue
				}
				return r.dispatch(next, false), nil
			}
			r.any = true
			r.line(lineOff, le-r.s)
		}
		if r.err != nil {
			if i := r.s + r.off; i < r.e {
				// unterminated last line
				r.any = true
				r.line(r.off, r.e-r.s)
				r.off = r.e - r.s
			}
			if r.any {
				return r.dispatch(r.e, true), nil
			}
			return SSEEvent{}, r.err
		}
		if err := r.fill(); err != nil {
			return SSEEvent{}, err
		}
	}
}

// line interprets one non-empty line at buf[s+from : s+to].
func (r *SSEReader) line(from, to int) {
	l := r.buf[r.s+from : r.s+to]
	if l[0] == ':' {
		return
	}
	name := l
	var val []byte
	valOff := to
	if k := bytes.IndexByte(l, ':'); k >= 0 {
		name = l[:k]
		val = l[k+1:]
		valOff = from + k + 1
		if len(val) > 0 && val[0] == ' ' {
			val = val[1:]
			valOff++
		}
	}
	switch string(name) {
	case "data":
		r.dataN++
		switch r.dataN {
		case 1:
			r.dataOff, r.dataLen = valOff, len(val)
		case 2:
			first := r.buf[r.s+r.dataOff : r.s+r.dataOff+r.dataLen]
			r.dataJoin = append(append(append(r.dataJoin[:0], first...), '\n'), val...)
		default:
			r.dataJoin = append(append(r.dataJoin, '\n'), val...)
		}
	case "event":
		r.event = append(r.event[:0], val...)
	case "id":
		if bytes.IndexByte(val, 0) < 0 {
			r.id = append(r.id[:0], val...)
		}
	case "retry":
		if n, err := strconv.ParseInt(string(val), 10, 64); err == nil && n >= 0 {
			r.retry = n
		}
	}
}

// dispatch builds the event for the block buf[s:end] and resets the state.
func (r *SSEReader) dispatch(end int, atEOF bool) SSEEvent {
	n := end - r.s
	extra := 0
	if atEOF {
		// make Raw a complete block: the last line gets a terminator and a
		// blank line follows.
		raw := r.buf[r.s:end]
		switch {
		case bytes.HasSuffix(raw, []byte("\n\n")), bytes.HasSuffix(raw, []byte("\r\n\r\n")), bytes.HasSuffix(raw, []byte("\r\r")):
		case len(raw) > 0 && (raw[len(raw)-1] == '\n' || raw[len(raw)-1] == '\r'):
			extra = 1
		default:
			extra = 2
		}
	}
	raw := make([]byte, n, n+extra)
	copy(raw, r.buf[r.s:end])
	for k := 0; k < extra; k++ {
		raw = append(raw, '\n')
	}
	ev := SSEEvent{Raw: raw, Retry: r.retry, dataOff: -1}
	if len(r.event) > 0 {
		ev.Event = internEvent(r.event)
	}
	if len(r.id) > 0 {
		ev.ID = string(r.id)
	}
	switch {
	case r.dataN == 1:
		ev.Data = raw[r.dataOff : r.dataOff+r.dataLen : r.dataOff+r.dataLen]
		ev.dataOff = r.dataOff
	case r.dataN > 1:
		ev.Data = bytes.Clone(r.dataJoin)
	}
	r.s = end
	if r.s > r.e {
		r.s = r.e
	}
	r.off = 0
	r.any = false
	r.event = r.event[:0]
	r.id = r.id[:0]
	r.retry = -1
	r.dataN = 0
	return ev
}

// fill reads more input, compacting or growing the buffer as needed.
func (r *SSEReader) fill() error {
	if r.buf == nil {
		r.buf = make([]byte, 16<<10)
	}
	if r.s > 0 && (r.e == len(r.buf) || r.s >= len(r.buf)/2) {
		copy(r.buf, r.buf[r.s:r.e])
		r.e -= r.s
		r.s = 0
	}
	if r.e == len(r.buf) {
		if len(r.buf) >= MaxSSEEventSize {
			return ErrSSETooLarge
		}
		nb := make([]byte, 2*len(r.buf))
		copy(nb, r.buf[r.s:r.e])
		r.e -= r.s
		r.s = 0
		r.buf = nb
	}
	for tries := 0; tries < 100; tries++ {
		n, err := r.r.Read(r.buf[r.e:])
		if n < 0 || n > len(r.buf)-r.e {
			r.err = io.ErrNoProgress
			return nil
		}
		if !r.bom && (r.e+n >= 3 || err != nil) {
			r.bom = true
			if bytes.HasPrefix(r.buf[r.s:r.e+n], []byte("\xEF\xBB\xBF")) {
				copy(r.buf[r.s:], r.buf[r.s+3:r.e+n])
				n -= 3
			}
		}
		r.e += n
		if err != nil {
			r.err = err
			return nil
		}
		if n > 0 {
			return nil
		}
	}
	r.err = io.ErrNoProgress
	return nil
}

// knownEvents holds the event names of the three dialects so the common ones
// do not allocate.
var knownEvents = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{
		"message_start", "content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop", "ping", "error",
		"response.created", "response.in_progress", "response.output_item.added", "response.output_item.done",
		"response.content_part.added", "response.content_part.done", "response.output_text.delta",
		"response.output_text.done", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.completed", "response.incomplete", "response.failed",
		"response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
		"response.reasoning_text.delta", "response.reasoning_text.done",
		"response.refusal.delta", "response.refusal.done", "response.output_text.annotation.added",
	} {
		m[s] = s
	}
	return m
}()

func internEvent(b []byte) string {
	if s, ok := knownEvents[string(b)]; ok {
		return s
	}
	return string(b)
}

// appendEvent appends one SSE block "event: name\ndata: data\n\n" (the event
// line is omitted when name is ""). Data holding newlines (an upstream's
// multi-line data field, which SSEEvent.Data joins with "\n") is written as
// one data: line per line, so the client reads the same data back.
func appendEvent(dst []byte, name string, data []byte) []byte {
	if name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		dst = append(dst, "data: "...)
		dst = append(dst, data[:i+1]...)
		data = data[i+1:]
	}
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}

// lineEnd returns the index of the first '\r' or '\n' in b, or -1. Two
// IndexByte scans are much faster than IndexAny on the usual LF-only input.
func lineEnd(b []byte) int {
	n := bytes.IndexByte(b, '\n')
	scope := b
	if n >= 0 {
		scope = b[:n]
	}
	if c := bytes.IndexByte(scope, '\r'); c >= 0 {
		return c
	}
	return n
}
