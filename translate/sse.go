package translate

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"sync"
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
// (comments), so a passthrough can forward keep-alives verbatim.
//
// Data and Raw returned by SSEReader.Next are slices of the reader's buffer
// (or, for multi-line data, of its join buffer): they are valid until the
// next call to Next or Release, and must not be modified. A caller that
// keeps an event longer keeps Clone(). Event and ID are ordinary strings.
type SSEEvent struct {
	Event string
	Data  []byte
	ID    string
	Retry int64
	Raw   []byte

	dataOff int // offset of Data in Raw, -1 when Data is not a slice of Raw
}

// Clone returns a copy of e whose Data and Raw are owned by the caller.
func (e SSEEvent) Clone() SSEEvent {
	c := e
	c.Raw = bytes.Clone(e.Raw)
	switch {
	case e.Data == nil:
	case e.dataOff >= 0:
		c.Data = c.Raw[e.dataOff : e.dataOff+len(e.Data) : e.dataOff+len(e.Data)]
	default:
		c.Data = bytes.Clone(e.Data)
	}
	return c
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
//
// Events are found in place: Next copies no event bytes (see SSEEvent).
// The read buffer comes from a pool shared by all readers and starts at
// 4 KiB; it grows to 32 KiB when the upstream fills it in one read (a fast
// upstream is then read in as few calls as reverse_proxy's 32 KiB copy
// buffer reads it, while a paced stream keeps 4 KiB), and doubles when an
// event does not fit, up to MaxSSEEventSize. Release gives it back.
type SSEReader struct {
	r     io.Reader
	buf   []byte
	s, e  int     // unconsumed bytes are buf[s:e]
	off   int     // offset, relative to s, of the first line not yet parsed
	err   error   // sticky read error
	bom   bool    // BOM check done
	burst bool    // the last read filled the buffer
	bufp  *[]byte // the pool's handle of buf, nil when buf is not pooled

	lastEvent, lastID string // reused while the next block repeats them
	eventBuf          [48]byte

	// state of the block being parsed (offsets relative to s)
	any      bool
	event    []byte
	id       []byte
	retry    int64
	dataOff  int
	dataLen  int
	dataN    int    // number of data lines
	dataJoin []byte // joined data when dataN > 1

	// cut: the last block Next returned was ended by the input's end or
	// error, not by a blank line (see dispatch)
	cut bool
}

// NewSSEReader returns a reader of the SSE stream r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: r, retry: -1}
}

// reset makes r a new reader of in, keeping nothing of a previous stream.
func (r *SSEReader) reset(in io.Reader) {
	*r = SSEReader{r: in, retry: -1}
	r.event = r.eventBuf[:0]
}

// Sizes of the SSE read buffer: a reader starts with sseInitialBuffer and
// grows to sseBurstBuffer when the upstream fills it in one read; buffers
// of these two sizes are pooled.
const (
	sseInitialBuffer = 4 << 10
	sseBurstBuffer   = 32 << 10
)

// sseBufPool and sseBurstPool hold read buffers (as *[]byte) of
// sseInitialBuffer and sseBurstBuffer bytes.
var (
	sseBufPool   = sync.Pool{New: func() any { b := make([]byte, sseInitialBuffer); return &b }}
	sseBurstPool = sync.Pool{New: func() any { b := make([]byte, sseBurstBuffer); return &b }}
)

// ssePoison makes Next overwrite the bytes of the events it returned
// before (tests: whatever kept a view of an old event sees garbage).
var ssePoison = false

func poison(b []byte) {
	for i := range b {
		b[i] = 0x7f
	}
}

// errSSEReleased is what Next returns after Release.
var errSSEReleased = errors.New("translate: SSE reader released")

// Release returns the reader's buffer to the pool. The events returned so
// far become invalid, and Next returns an error afterwards.
func (r *SSEReader) Release() {
	r.putBuf()
	r.s, r.e, r.off = 0, 0, 0
	r.any, r.dataN = false, 0
	r.err = errSSEReleased
}

// putBuf gives the buffer back to its pool (when it has a pooled size).
func (r *SSEReader) putBuf() {
	if p := r.bufp; p != nil {
		*p = r.buf[:cap(r.buf)]
		if len(*p) == sseBurstBuffer {
			sseBurstPool.Put(p)
		} else {
			sseBufPool.Put(p)
		}
	}
	r.buf, r.bufp = nil, nil
}

// Next returns the next block. It returns io.EOF at a clean end of input
// (after the last block was returned), or the underlying read error. The
// event's Data and Raw are valid until the next call (see SSEEvent).
func (r *SSEReader) Next() (SSEEvent, error) {
	if ssePoison && r.buf != nil {
		poison(r.buf[:r.s])
		poison(r.dataJoin)
	}
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
// Raw and Data are slices of the buffer (Data of dataJoin for multi-line
// data); a block cut off at EOF gets its missing terminators written after
// it in the buffer, which no read will overwrite any more.
func (r *SSEReader) dispatch(end int, atEOF bool) SSEEvent {
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
		if extra > 0 {
			if end+extra > len(r.buf) {
				r.grow(end + extra)
			}
			for k := 0; k < extra; k++ {
				r.buf[end+k] = '\n'
			}
		}
	}
	r.cut = atEOF
	full := end + extra
	raw := r.buf[r.s:full:full]
	ev := SSEEvent{Raw: raw, Retry: r.retry, dataOff: -1}
	if len(r.event) > 0 {
		if string(r.event) != r.lastEvent {
			r.lastEvent = internEvent(r.event)
		}
		ev.Event = r.lastEvent
	}
	if len(r.id) > 0 {
		if string(r.id) != r.lastID {
			r.lastID = string(r.id)
		}
		ev.ID = r.lastID
	}
	switch {
	case r.dataN == 1:
		ev.Data = raw[r.dataOff : r.dataOff+r.dataLen : r.dataOff+r.dataLen]
		ev.dataOff = r.dataOff
	case r.dataN > 1:
		ev.Data = r.dataJoin[:len(r.dataJoin):len(r.dataJoin)]
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

// grow replaces the buffer by one of at least n bytes (at least twice the
// current size; sseBurstBuffer after a read that filled the buffer),
// keeping buf[:e] at the same offsets.
func (r *SSEReader) grow(n int) {
	size := max(2*len(r.buf), sseInitialBuffer)
	if r.burst && size < sseBurstBuffer {
		size = sseBurstBuffer
	}
	for size < n {
		size *= 2
	}
	var nb []byte
	var np *[]byte
	if size == sseBurstBuffer {
		np = sseBurstPool.Get().(*[]byte)
		nb = *np
	} else {
		nb = make([]byte, size)
	}
	copy(nb, r.buf[:r.e])
	r.putBuf()
	r.buf, r.bufp = nb, np
}

// fill reads more input, compacting or growing the buffer as needed.
func (r *SSEReader) fill() error {
	if r.buf == nil {
		if r.err != nil {
			return r.err // released
		}
		r.bufp = sseBufPool.Get().(*[]byte)
		r.buf = *r.bufp
	}
	if r.s > 0 && (r.e == len(r.buf) || r.s >= len(r.buf)/2) {
		copy(r.buf, r.buf[r.s:r.e])
		r.e -= r.s
		r.s = 0
	}
	if r.e == len(r.buf) || (r.burst && len(r.buf) < sseBurstBuffer) {
		if len(r.buf) >= MaxSSEEventSize {
			return ErrSSETooLarge
		}
		copy(r.buf, r.buf[r.s:r.e])
		r.e -= r.s
		r.s = 0
		r.grow(2 * len(r.buf))
	}
	for tries := 0; tries < 100; tries++ {
		n, err := r.r.Read(r.buf[r.e:])
		if n < 0 || n > len(r.buf)-r.e {
			r.err = io.ErrNoProgress
			return nil
		}
		r.burst = n > 0 && n == len(r.buf)-r.e
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
