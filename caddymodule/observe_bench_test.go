package caddymodule

import (
	"bytes"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/translate"
)

// BenchmarkObserve measures the bookkeeping of one finished request (cost,
// usage series, recent list, metrics), as the bench harness's passthrough
// requests produce it: one successful attempt with usage, a model the price
// table does not know.
func BenchmarkObserve(b *testing.B) {
	h := &Handler{metrics: &metrics{}}
	in, out := int64(500), int64(120)
	start := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		rl := &requestLog{pool: "bench-pool", key: "bench-key", endpoint: "chat/completions", status: 200,
			dialect: translate.OpenAIChat, upstreamDialect: translate.OpenAIChat,
			clientModel: "mock-model", upstreamModel: "mock-model", start: start, ttfb: time.Millisecond,
			usage:    translate.Usage{InputTokens: &in, OutputTokens: &out},
			attempts: []attemptLog{{key: "bench-key", outcome: "success", status: 200, dur: time.Millisecond}}}
		h.observe(rl)
	}
}

// BenchmarkReadUpstreamBody compares reading a 1 KB non-streamed answer
// with its Content-Length (readUpstreamBody) and without (io.ReadAll's
// growth).
func BenchmarkReadUpstreamBody(b *testing.B) {
	answer := bytes.Repeat([]byte("x"), 1024)
	for _, c := range []struct {
		name string
		cl   int64
	}{{"content-length", int64(len(answer))}, {"unknown", -1}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := readUpstreamBody(bytes.NewReader(answer), c.cl)
				if err != nil || len(data) != len(answer) {
					b.Fatal(len(data), err)
				}
			}
		})
	}
}

// TestReadUpstreamBodyBoundsPrealloc: an answer that announces 60 MB and
// sends 5 bytes is read without allocating the announced size up front
// (at most twice maxAnswerPrealloc); a 3 MiB body within its
// Content-Length is read whole, past the preallocation.
func TestReadUpstreamBodyBoundsPrealloc(t *testing.T) {
	var data []byte
	var err error
	data, err = readUpstreamBody(bytes.NewReader([]byte("hello")), 60<<20)
	if err != nil || string(data) != "hello" || cap(data) > 2*maxAnswerPrealloc {
		t.Fatalf("lying Content-Length: %q %v, cap %d", data, err, cap(data))
	}
	big := bytes.Repeat([]byte("y"), 3<<20)
	if data, err = readUpstreamBody(bytes.NewReader(big), int64(len(big))); err != nil || !bytes.Equal(data, big) {
		t.Fatalf("3 MiB answer: %d bytes %v", len(data), err)
	}
}
