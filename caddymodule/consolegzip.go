package caddymodule

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// adminGzipMin is the smallest admin answer gzipAdmin compresses, in
// bytes: below it gzip saves too little to pay for itself.
const adminGzipMin = 4 << 10

// gzipAdmin wraps an admin route whose answers can be large (the pools
// view with many keys, the request log): the answer is built in memory
// and, when the client accepts gzip (RFC 9110 Accept-Encoding; browsers
// always do) and it is at least adminGzipMin bytes, sent gzip-compressed
// with Content-Encoding: gzip. Errors the handler returns are passed on
// untouched, for Caddy's admin server to write as usual.
func gzipAdmin(h caddy.AdminHandlerFunc) caddy.AdminHandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Add("Vary", "Accept-Encoding")
		if !acceptsGzip(r) {
			return h(w, r)
		}
		bw := &bufferedAnswer{header: http.Header{}}
		if err := h(bw, r); err != nil {
			return err
		}
		for k, v := range bw.header {
			w.Header()[k] = v
		}
		status := bw.status
		if status == 0 {
			status = http.StatusOK
		}
		if bw.body.Len() < adminGzipMin || w.Header().Get("Content-Encoding") != "" {
			w.Header().Set("Content-Length", strconv.Itoa(bw.body.Len()))
			w.WriteHeader(status)
			_, err := w.Write(bw.body.Bytes())
			return err
		}
		var zb bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&zb, gzip.BestSpeed)
		_, _ = zw.Write(bw.body.Bytes())
		if err := zw.Close(); err != nil {
			return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: err}
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(zb.Len()))
		w.WriteHeader(status)
		_, err := w.Write(zb.Bytes())
		return err
	}
}

// acceptsGzip reports whether r's Accept-Encoding lists gzip with a
// non-zero weight.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// bufferedAnswer is an http.ResponseWriter that keeps the answer in
// memory, for gzipAdmin.
type bufferedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header { return b.header }

func (b *bufferedAnswer) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedAnswer) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
