package caddymodule

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmgateway/llm_gateway/translate"
)

// Bounded cost per request and per process (docs/operations.md, "Limits"):
// every /v1 request that carries a body takes an in-flight slot and
// reserves its body's bytes before reading it; beyond max_in_flight or
// max_buffered_bytes it gets 503 with Retry-After in its dialect and its
// body is never read.

// admission holds the process-wide counts the handler limits are checked
// against. They are shared by every llm_gateway handler of the process, so
// that the old and the new configuration of a reload, or two sites, cannot
// together exceed the limits one of them states.
var admission struct {
	inFlight atomic.Int64 // completion and count_tokens requests being served
	buffered atomic.Int64 // bytes reserved for request bodies
}

// DefaultInFlightPerCPU is the default of Handler.MaxInFlight per
// GOMAXPROCS: LLM requests mostly wait on upstreams, so the bound is about
// memory and goroutines, not CPU; 1024 per CPU is far above what one CPU
// translates but well below what exhausts a machine of that size.
const DefaultInFlightPerCPU = 1024

// DefaultBufferedBytesFallback is the default of Handler.MaxBufferedBytes
// when the process's memory limit cannot be learned.
const DefaultBufferedBytesFallback = 1 << 30

// defaultMaxInFlight is DefaultInFlightPerCPU x GOMAXPROCS.
func defaultMaxInFlight() int {
	return DefaultInFlightPerCPU * runtime.GOMAXPROCS(0)
}

// memoryLimit returns the memory the process may use, in bytes, and where
// that figure comes from: the Go memory limit (GOMEMLIMIT) when set, else
// the cgroup's memory limit (v2 memory.max, v1 memory.limit_in_bytes), else
// the machine's RAM (MemTotal); 0 when none can be read.
func memoryLimit() (int64, string) {
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return l, "GOMEMLIMIT"
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// "max" (v2) or a page-rounded MaxInt64 (v1) mean no limit
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && n < 1<<60 {
			return n, "cgroup"
		}
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if err == nil && kb > 0 {
					return kb << 10, "MemTotal"
				}
			}
		}
	}
	return 0, ""
}

// defaultMaxBufferedBytes is a quarter of memoryLimit (a translated
// request peaks at up to 4x its body, so the bodies' peak then fits the
// limit), DefaultBufferedBytesFallback when the limit is unknown, and at
// least twice maxBody so that two largest bodies always fit.
func defaultMaxBufferedBytes(maxBody int64) int64 {
	n := int64(DefaultBufferedBytesFallback)
	if l, _ := memoryLimit(); l > 0 {
		n = l / 4
	}
	return max(n, 2*maxBody)
}

// enter takes an in-flight slot for a request; ok is false, and nothing
// is held, when the handler's MaxInFlight requests are already being
// served. The caller must call release when the request ends.
func (h *Handler) enter() (release func(), ok bool) {
	if admission.inFlight.Add(1) > int64(h.MaxInFlight) {
		admission.inFlight.Add(-1)
		return nil, false
	}
	return func() { admission.inFlight.Add(-1) }, true
}

// reserve books n bytes of request body against MaxBufferedBytes.
func (h *Handler) reserve(n int64) bool {
	if admission.buffered.Add(n) > h.MaxBufferedBytes {
		admission.buffered.Add(-n)
		return false
	}
	return true
}

// overloadedRetryAfter is the Retry-After of a 503 for a full gateway:
// 1 to 3 s, spread so that the clients turned away together do not all
// come back in the same second.
func overloadedRetryAfter() time.Duration {
	return time.Second + rand.N(2*time.Second)
}

// failOverloaded answers 503 with Retry-After for a gateway at one of its
// process limits (what names the limit, e.g. "max_in_flight (2048
// requests)").
func (rl *requestLog) failOverloaded(w http.ResponseWriter, d translate.Dialect, what string) {
	rl.failWith(w, d, &loopFailure{status: http.StatusServiceUnavailable, class: translate.ErrOverloaded,
		msg: "the gateway is at its limit of " + what + "; retry shortly", retryAfter: overloadedRetryAfter()})
}

// chunkedBodyStart is the first buffer (and reservation) for a request
// body of unknown length; it doubles as the body grows.
const chunkedBodyStart = 32 << 10

// failTooLarge answers 413 for a request body over max_request_body.
func (h *Handler) failTooLarge(w http.ResponseWriter, rl *requestLog, d translate.Dialect) {
	rl.fail(w, d, http.StatusRequestEntityTooLarge, translate.ErrRequestTooLarge,
		"request body is larger than the gateway's limit of "+strconv.FormatInt(h.MaxRequestBody, 10)+" bytes (max_request_body)")
}

// failBuffersFull answers 503 with Retry-After for a request body that
// does not fit in what is left of max_buffered_bytes.
func (h *Handler) failBuffersFull(w http.ResponseWriter, rl *requestLog, d translate.Dialect) {
	rl.failOverloaded(w, d, "max_buffered_bytes ("+strconv.FormatInt(h.MaxBufferedBytes, 10)+" bytes of request bodies in memory)")
}

// readBody reads the request body into a single buffer and books its bytes
// against MaxBufferedBytes until release is called (the caller defers it
// once the request no longer needs the body).
//
// With a Content-Length the buffer is allocated once at that size, and a
// body over MaxRequestBody (413) or over what is left of
// MaxBufferedBytes (503 with Retry-After) is refused without reading a
// byte. Without one (chunked), the buffer and the reservation grow by
// doubling from 32 KiB as bytes arrive, up to MaxRequestBody. A body with
// a Content-Encoding of gzip, deflate or zstd is decoded
// (readEncodedBody); another coding is refused with 415. On failure the
// client has been answered (or has gone: 499) and ok is false.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, rl *requestLog, d translate.Dialect) (body []byte, release func(), ok bool) {
	limit := h.MaxRequestBody
	tooLarge := func() { h.failTooLarge(w, rl, d) }
	full := func() { h.failBuffersFull(w, rl, d) }
	var reserved int64
	release = func() {
		admission.buffered.Add(-reserved)
		reserved = 0
	}
	readErr := func(err error) {
		release()
		if r.Context().Err() != nil {
			rl.status = 499 // the client gave up while uploading
			return
		}
		rl.fail(w, d, http.StatusBadRequest, translate.ErrInvalidRequest, "could not read the request body")
	}
	if r.Body == nil || r.Body == http.NoBody {
		return []byte{}, release, true
	}
	codings, unsupported := bodyCodings(r.Header.Values("Content-Encoding"))
	if unsupported != "" {
		rl.fail(w, d, http.StatusUnsupportedMediaType, translate.ErrInvalidRequest,
			"request Content-Encoding "+quoteClient(unsupported)+" is not supported: send the body as is, or as gzip, deflate or zstd")
		return nil, nil, false
	}
	if codings != nil {
		return h.readEncodedBody(w, r, rl, d, codings)
	}
	if n := r.ContentLength; n >= 0 {
		if n > limit {
			tooLarge()
			return nil, nil, false
		}
		if !h.reserve(n) {
			full()
			return nil, nil, false
		}
		reserved = n
		rl.awaitsContinue = false
		body = make([]byte, n)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			readErr(err)
			return nil, nil, false
		}
		return body, release, true
	}
	return h.readGrowing(r.Context(), w, r.Body, rl, d)
}

// readEncodedBody is readBody for a body with content codings: its wire
// bytes (at most max_request_body of them, checked against a
// Content-Length before any is read) are decoded as they arrive into a
// buffer that grows as an unsized body's does, up to max_request_body of
// decoded bytes: a body that decodes to more (a decompression bomb) is
// refused with 413 once the limit is passed, having cost no more memory
// than a body of that size. Corrupt or truncated data is a 400 naming
// the coding.
func (h *Handler) readEncodedBody(w http.ResponseWriter, r *http.Request, rl *requestLog, d translate.Dialect, codings []string) (body []byte, release func(), ok bool) {
	if r.ContentLength > h.MaxRequestBody {
		h.failTooLarge(w, rl, d)
		return nil, nil, false
	}
	dec := newBodyDecoder(r.Body, codings, h.MaxRequestBody, h.reserve, func(n int64) { admission.buffered.Add(-n) })
	defer dec.Close()
	return h.readGrowing(r.Context(), w, dec, rl, d)
}

// readGrowing reads a body of unknown length (chunked, or decoded from
// its content codings) into a buffer that grows, and is booked against
// max_buffered_bytes, by doubling from 32 KiB up to max_request_body.
func (h *Handler) readGrowing(ctx context.Context, w http.ResponseWriter, src io.Reader, rl *requestLog, d translate.Dialect) (body []byte, release func(), ok bool) {
	limit := h.MaxRequestBody
	tooLarge := func() { h.failTooLarge(w, rl, d) }
	full := func() { h.failBuffersFull(w, rl, d) }
	var reserved int64
	release = func() {
		admission.buffered.Add(-reserved)
		reserved = 0
	}
	dec, _ := src.(*bodyDecoder)
	readErr := func(err error) {
		release()
		switch {
		case ctx.Err() != nil:
			rl.status = 499 // the client gave up while uploading
		case dec != nil && dec.wire.err == errWireTooLarge:
			tooLarge()
		case errors.Is(err, errDecoderMemory):
			full()
		case dec != nil && dec.brokenEncoding(err):
			rl.fail(w, d, http.StatusBadRequest, translate.ErrInvalidRequest,
				"could not decode the request body as its Content-Encoding says")
		default:
			rl.fail(w, d, http.StatusBadRequest, translate.ErrInvalidRequest, "could not read the request body")
		}
	}
	// grow by doubling up to limit; one byte more than limit tells that
	// the body is too large
	body = make([]byte, 0, min(chunkedBodyStart, limit))
	if !h.reserve(int64(cap(body))) {
		full()
		return nil, nil, false
	}
	reserved = int64(cap(body))
	rl.awaitsContinue = false
	for {
		if len(body) == cap(body) {
			if int64(len(body)) >= limit {
				var one [1]byte
				n, err := io.ReadAtLeast(src, one[:], 1)
				if n > 0 {
					release()
					tooLarge()
					return nil, nil, false
				}
				if err == io.EOF {
					break
				}
				readErr(err)
				return nil, nil, false
			}
			grow := min(int64(cap(body)), limit-int64(cap(body)))
			if !h.reserve(grow) {
				release()
				full()
				return nil, nil, false
			}
			reserved += grow
			nb := make([]byte, len(body), int64(cap(body))+grow)
			copy(nb, body)
			body = nb
		}
		n, err := src.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr(err)
			return nil, nil, false
		}
	}
	return body, release, true
}

// largeBody is the body size from which decoding a request (validating
// it, translating it) takes one of GOMAXPROCS decode slots.
const largeBody = 1 << 20

// decodeSlots bound how many large bodies are decoded at once. Decoding
// is CPU-bound, so running more at once than there are CPUs only adds up
// their transient memory (each holds a decoded copy of its body while it
// runs): 16 concurrent 6 MB translated requests on 2 CPUs grew RSS by
// 2.8-3.0x their bodies with the slots, 3.7-3.9x without
// (TestConcurrentLargeTranslatedRequestsRSS). Smaller bodies never wait.
var decodeSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// decodeSlot waits for a decode slot for a body of n bytes (at once when
// n < largeBody) and returns its release; it returns ctx's error when the
// client goes away first.
func decodeSlot(ctx context.Context, n int) (release func(), err error) {
	if n < largeBody {
		return func() {}, nil
	}
	select {
	case decodeSlots <- struct{}{}:
		return func() { <-decodeSlots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Bounds on what the client or an upstream can make the gateway write
// (client strings themselves are cut by clipClient, route.go).
const (
	// maxErrorMessage bounds an error message the gateway writes or logs:
	// its own (which may list every key of a pool) and an upstream's
	// relayed one.
	maxErrorMessage = 4 << 10
	// maxErrorBody bounds the whole error body the gateway writes: a
	// message full of characters that JSON escapes can grow up to six
	// times; such a message is cut further.
	maxErrorBody = 6 << 10
)

// ellipsis marks a cut string.
const ellipsis = "…"

// clipMessage returns s cut to at most n bytes (on a UTF-8 boundary), with an
// ellipsis and the number of bytes left out appended when it was cut:
// "abc… (8388352 more bytes)". The result is at most n + 32 bytes.
func clipMessage(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut > n-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis + " (" + strconv.Itoa(len(s)-cut) + " more bytes)"
}

// boundErrorBody cuts the message of an error body in either dialect
// (error.message, or a top-level message) to maxErrorMessage bytes, and
// further when the body is still over maxErrorBody because the message is
// full of characters that JSON escapes. Anything else is returned as is.
func boundErrorBody(body []byte) []byte {
	if len(body) <= maxErrorMessage {
		return body
	}
	path := "error.message"
	msg := gjson.GetBytes(body, path)
	if msg.Type != gjson.String {
		path = "message"
		if msg = gjson.GetBytes(body, path); msg.Type != gjson.String {
			return body
		}
	}
	s := msg.Str
	for n := maxErrorMessage; ; n /= 2 {
		out, err := sjson.SetBytes(body, path, clipMessage(s, n))
		if err != nil {
			return body
		}
		if len(out) <= maxErrorBody || n < 64 {
			return out
		}
	}
}

// retryable reports whether a client may retry an answer with this
// status, with the official SDKs' own rule (408, 409, 429 and 5xx) except
// that 501 and 505 cannot change on a retry.
func retryable(status int) bool {
	switch {
	case status == http.StatusNotImplemented, status == http.StatusHTTPVersionNotSupported:
		return false
	case status == http.StatusRequestTimeout, status == http.StatusConflict,
		status == http.StatusTooManyRequests, status >= 500:
		return true
	}
	return false
}

// setRetryHeaders tells the client whether retrying an error answer can
// help, with the x-should-retry header the official OpenAI and Anthropic
// SDKs honour over their own status rules: "false" for 4xx that a retry
// cannot change (400, 401, 403, 404, 405, 413, 422, ...), "true" for 408,
// 409, 429 and 5xx. With withRetryAfter (the gateway's own errors), a
// retryable answer without Retry-After gets "Retry-After: 1", unless it
// already says x-should-retry: false (no made-up wait beside it). Headers
// already set (a relayed upstream answer's) are kept.
func setRetryHeaders(hdr http.Header, status int, withRetryAfter bool) {
	if status < 400 {
		return
	}
	retry := retryable(status)
	if hdr.Get("X-Should-Retry") == "" {
		hdr.Set("X-Should-Retry", strconv.FormatBool(retry))
	}
	if retry && withRetryAfter && hdr.Get("Retry-After") == "" && hdr.Get("X-Should-Retry") != "false" {
		// a failure that says do not retry (every key out of rotation,
		// the request's own error) gets no made-up wait beside it
		hdr.Set("Retry-After", "1")
	}
}
