package caddymodule

import (
	"bufio"
	"errors"
	"io"
	"math/bits"
	"strings"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// Compressed request bodies: clients compress what they send (Codex
// sends its Responses requests zstd-compressed at level 3 when signed in
// with ChatGPT; SDK users set gzip). The gateway decodes gzip, deflate and
// zstd (RFC 9110, section 8.4.1), with the decoded size held to
// max_request_body as any body is, and passes the decoded body on; the
// upstream request, built afresh, carries no Content-Encoding.

// maxBodyCodings bounds how many content codings one request may stack.
const maxBodyCodings = 2

// bodyCodings returns the content codings of a Content-Encoding header in
// the order they were applied, identity left out (nil when the body is
// not encoded), and the first coding the gateway cannot decode ("" when
// there is none). More than maxBodyCodings codings are refused as one
// that cannot be decoded.
func bodyCodings(header []string) (codings []string, unsupported string) {
	for _, h := range header {
		for _, c := range strings.Split(h, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			switch c {
			case "", "identity":
			case "gzip", "x-gzip", "deflate", "zstd":
				codings = append(codings, c)
			default:
				return nil, c
			}
		}
	}
	if len(codings) > maxBodyCodings {
		return nil, strings.Join(codings, ", ")
	}
	return codings, ""
}

// errWireTooLarge is the error of a wireReader past its limit.
var errWireTooLarge = errors.New("compressed request body larger than max_request_body")

// wireReader reads the request body as it came over the wire, at most
// limit bytes of it: a compressed body larger than the limit fails with
// errWireTooLarge (an endless run of empty gzip members decodes to
// nothing and must not be read for ever). err is the last error of the
// body itself, which tells a broken upload from a broken encoding.
type wireReader struct {
	r     io.Reader
	limit int64
	err   error
}

func (w *wireReader) Read(p []byte) (int, error) {
	if w.limit <= 0 {
		w.err = errWireTooLarge
		return 0, w.err
	}
	if int64(len(p)) > w.limit {
		p = p[:w.limit+1] // one byte more tells an exact fit from too much
	}
	n, err := w.r.Read(p)
	if int64(n) > w.limit {
		w.limit, w.err = 0, errWireTooLarge
		return 0, w.err
	}
	w.limit -= int64(n)
	if err != nil {
		w.err = err
	}
	return n, err
}

// errDecoderMemory is the error of a zstd decoder whose window does not
// fit in what is left of max_buffered_bytes.
var errDecoderMemory = errors.New("the zstd window of the request body does not fit in max_buffered_bytes")

// bodyDecoder is a request body's decoded bytes: the codings undone in
// reverse order over the wire bytes.
type bodyDecoder struct {
	io.Reader
	wire    *wireReader
	closers []func()
	// reserve books n bytes of decoder memory against
	// max_buffered_bytes, false when they do not fit; release gives back
	// what was booked (reserved bytes) at Close
	reserve  func(n int64) bool
	release  func(n int64)
	reserved int64
}

// newBodyDecoder returns the decoder of body for codings (as bodyCodings
// returns them), with at most limit wire bytes read. A zstd frame may ask
// for a window of at most the larger of 8 MiB and limit (rounded up to a
// power of two), so a hostile frame header cannot make the decoder
// allocate more; what its decoder allocates for the window the first
// frame asks for is booked with reserve (and given back with release at
// Close), and a later frame may not ask for more. Headers are read at the
// first Read, not here.
func newBodyDecoder(body io.Reader, codings []string, limit int64, reserve func(int64) bool, release func(int64)) *bodyDecoder {
	d := &bodyDecoder{wire: &wireReader{r: body, limit: limit}, reserve: reserve, release: release}
	var r io.Reader = d.wire
	for i := len(codings) - 1; i >= 0; i-- {
		r = &lazyDecoder{src: r, coding: codings[i], limit: limit, d: d}
	}
	d.Reader = r
	return d
}

// Close releases the decoders' resources and gives back the memory
// booked for them.
func (d *bodyDecoder) Close() {
	for _, c := range d.closers {
		c()
	}
	if d.reserved > 0 && d.release != nil {
		d.release(d.reserved)
		d.reserved = 0
	}
}

// brokenEncoding reports whether err, returned by Read, comes from the
// encoding (corrupt or truncated data) rather than from reading the
// request body.
func (d *bodyDecoder) brokenEncoding(err error) bool {
	return err != nil && err != io.EOF && d.wire.err != err && !errors.Is(err, d.wire.err)
}

// lazyDecoder starts its decoder at the first Read (gzip and zlib read
// their header when they are made).
type lazyDecoder struct {
	src    io.Reader
	coding string
	limit  int64
	d      *bodyDecoder
	r      io.Reader
}

func (l *lazyDecoder) Read(p []byte) (int, error) {
	if l.r == nil {
		r, err := l.start()
		if err != nil {
			return 0, err
		}
		l.r = r
	}
	return l.r.Read(p)
}

func (l *lazyDecoder) start() (io.Reader, error) {
	switch l.coding {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(l.src)
		if err != nil {
			return nil, err
		}
		l.d.closers = append(l.d.closers, func() { _ = zr.Close() })
		return zr, nil
	case "deflate":
		// RFC 9110's deflate is the zlib format (RFC 1950); some clients
		// send raw deflate (RFC 1951), told by the first two bytes
		br := bufio.NewReader(l.src)
		if h, err := br.Peek(2); err == nil && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
			zr, err := zlib.NewReader(br)
			if err != nil {
				return nil, err
			}
			l.d.closers = append(l.d.closers, func() { _ = zr.Close() })
			return zr, nil
		}
		fr := flate.NewReader(br)
		l.d.closers = append(l.d.closers, func() { _ = fr.Close() })
		return fr, nil
	}
	window := uint64(8 << 20)
	if l.limit > int64(window) {
		window = 1 << bits.Len64(uint64(l.limit-1))
	}
	window = min(window, zstd.MaxWindowSize)
	// the decoder allocates its window (and more) at the first block,
	// whatever the frame holds: a few bytes of header may ask for the
	// whole of it, so it is booked like a body buffer
	br := bufio.NewReaderSize(l.src, zstd.HeaderMaxSize)
	head, _ := br.Peek(zstd.HeaderMaxSize)
	var zh zstd.Header
	if zh.Decode(head) == nil && !zh.Skippable {
		w := zh.WindowSize
		if zh.SingleSegment {
			w = zh.FrameContentSize
		}
		window = min(window, max(w, zstd.MinWindowSize))
	}
	if need := zstdDecoderMemory(window); l.d.reserve != nil {
		if !l.d.reserve(need) {
			return nil, errDecoderMemory
		}
		l.d.reserved += need
	}
	zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(window))
	if err != nil {
		return nil, err
	}
	l.d.closers = append(l.d.closers, zr.Close)
	return zr, nil
}

// zstdDecoderMemory is what a low-memory zstd decoder allocates for a
// frame's window of window bytes: twice the window below a block's
// largest size (2 MiB), else the window and 1 MiB.
func zstdDecoderMemory(window uint64) int64 {
	if window < 2<<20 {
		return int64(2 * window)
	}
	return int64(window + 1<<20)
}
