package mockupstream

import (
	"net/http"
	"strings"
	"testing"
)

// discardWriter is a minimal flushable ResponseWriter.
type discardWriter struct {
	h http.Header
	n int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { d.n += len(b); return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

func benchServe(b *testing.B, body string) {
	s := New(Config{})
	hdr := http.Header{"Authorization": {"Bearer bench"}, "Content-Type": {"application/json"}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, _ := http.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		r.Header = hdr
		w := &discardWriter{h: http.Header{}}
		s.ServeHTTP(w, r)
		if w.n == 0 {
			b.Fatal("no output")
		}
	}
}

func BenchmarkChatNonStream(b *testing.B) {
	benchServe(b, chatBody("What is the capital of France? Answer briefly.", ""))
}

func BenchmarkChatStream(b *testing.B) {
	benchServe(b, chatBody("What is the capital of France? Answer briefly.", `"stream":true,"stream_options":{"include_usage":true}`))
}

func BenchmarkMessagesStream(b *testing.B) {
	s := New(Config{})
	body := msgBody(`"stream":true`, userMsg("What is the capital of France? Answer briefly."))
	hdr := http.Header{"X-Api-Key": {"bench"}, "Content-Type": {"application/json"}}
	b.ReportAllocs()
	for b.Loop() {
		r, _ := http.NewRequest("POST", "/v1/messages", strings.NewReader(body))
		r.Header = hdr
		s.ServeHTTP(&discardWriter{h: http.Header{}}, r)
	}
}

func benchPath(b *testing.B, path, body string) {
	s := New(Config{})
	hdr := http.Header{"Authorization": {"Bearer bench"}, "Content-Type": {"application/json"}}
	b.ReportAllocs()
	for b.Loop() {
		r, _ := http.NewRequest("POST", path, strings.NewReader(body))
		r.Header = hdr
		w := &discardWriter{h: http.Header{}}
		s.ServeHTTP(w, r)
		if w.n == 0 {
			b.Fatal("no output")
		}
	}
}

func BenchmarkResponsesStream(b *testing.B) {
	benchPath(b, "/v1/responses", `{"model":"gpt-5","input":"What is the capital of France? Answer briefly.","reasoning":{"effort":"low"},"stream":true}`)
}

func BenchmarkEmbeddings(b *testing.B) {
	benchPath(b, "/v1/embeddings", `{"model":"text-embedding-3-small","input":["What is the capital of France?","Answer briefly."]}`)
}
