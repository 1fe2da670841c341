package translate

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Stream benchmarks per event (issue 15). Two kinds, each for passthrough
// (BenchmarkPassthroughStream{Chat,Anthropic,Responses}) and translated
// streams (BenchmarkTranslatedStream):
//
//   - fixtures: every healthy recorded stream of the dialect (testdata/
//     and, when present, ../shared/fixtures) run once per op, as the
//     gateway runs them: a new StreamTranslator per stream. allocs/event
//     and B/event divide the process's allocations (runtime.MemStats) by
//     the upstream events relayed, so they include the per-stream setup
//     (the translator, the usage figures, the model splice of the first
//     event); ns/event likewise.
//   - steady: one stream whose content events (text deltas) repeat, b.N
//     content events in all: ns/op, B/op and allocs/op are exactly the
//     cost of one more content event in a long stream.
//
// Both run with a client model that differs from the upstream's (the model
// is spliced into every event that carries one) and, for OpenAI Chat,
// with and without HideUsageChunk (the gateway's own include_usage).

// streamBench is one benchmarked stream direction.
type streamBench struct {
	name     string
	from, to Dialect
	hide     bool
	stops    []string // emulated stop strings (ResponseOptions.EmulateStops)
}

// newBenchTranslator returns the translator the gateway would use.
func (c streamBench) translator(w EventWriter) *StreamTranslator {
	tr := NewStreamTranslator(c.from, c.to, "client-model", w)
	tr.HoldPreamble()
	if c.hide {
		tr.HideUsageChunk()
	}
	if c.stops != nil {
		tr.SetOptions(ResponseOptions{EmulateStops: c.stops})
	}
	return tr
}

// benchBodies returns the healthy streams of dialect d: testdata/ always,
// ../shared/fixtures when present (a message says when it is not).
func benchBodies(b *testing.B, d Dialect) [][]byte {
	dirs := []string{testdataDir(b)}
	if dir := sharedFixturesDir(); dir != "" {
		dirs = append(dirs, dir)
	} else {
		b.Logf("%s absent: benchmarking testdata/ streams only", sharedFixturesRel)
	}
	var out [][]byte
	for _, fx := range streamsIn(b, dirs, d) {
		out = append(out, fx.body)
	}
	if len(out) == 0 {
		b.Skipf("no %s streams", d)
	}
	return out
}

// sseEventCount counts the SSE blocks of body.
func sseEventCount(b testing.TB, body []byte) int {
	n := 0
	r := NewSSEReader(bytes.NewReader(body))
	for {
		if _, err := r.Next(); err != nil {
			break
		}
		n++
	}
	return n
}

// allocMeter measures the process's allocations and CPU time over a
// benchmark loop.
type allocMeter struct {
	mallocs, bytes uint64
	cpu            time.Duration
}

func startAllocs() allocMeter {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return allocMeter{ms.Mallocs, ms.TotalAlloc, streamProcessCPU()}
}

// report adds allocs/event, B/event, ns/event and cpu-ns/event for events
// per op.
func (m allocMeter) report(b *testing.B, events int) {
	cpu := streamProcessCPU() - m.cpu
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	n := float64(events) * float64(b.N)
	b.ReportMetric(float64(ms.Mallocs-m.mallocs)/n, "allocs/event")
	b.ReportMetric(float64(ms.TotalAlloc-m.bytes)/n, "B/event")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/event")
}

// streamProcessCPU is the process's user+system CPU time (getrusage): on
// a busy machine the CPU time of an event is a steadier figure than its
// wall time, which includes waiting for a core.
func streamProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchFixtureStreams runs every body of c.from through c once per op.
func benchFixtureStreams(b *testing.B, c streamBench, bodies [][]byte) {
	events, size := 0, 0
	for _, body := range bodies {
		events += sseEventCount(b, body)
		size += len(body)
	}
	w := &discardWriter{}
	rd := bytes.NewReader(nil)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	m := startAllocs()
	for i := 0; i < b.N; i++ {
		for _, body := range bodies {
			rd.Reset(body)
			tr := c.translator(w)
			if err := tr.Run(rd); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	m.report(b, events)
}

// repeatingStream is an upstream that sends head, then n copies of mid,
// then tail, in reads of up to 16 KiB (what a busy upstream connection
// delivers).
type repeatingStream struct {
	head, mid, tail []byte
	n               int
	cur             []byte
	stage           int
}

func (r *repeatingStream) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		switch {
		case r.stage == 0:
			r.cur, r.stage = r.head, 1
		case r.stage == 1 && r.n > 0:
			r.cur = r.mid
			r.n--
		case r.stage == 1:
			r.cur, r.stage = r.tail, 2
		default:
			return 0, io.EOF
		}
	}
	n := copy(p[:min(len(p), 16<<10)], r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// contentMarker marks an upstream event of dialect d that carries a text
// delta.
func contentMarker(d Dialect) string {
	switch d {
	case OpenAIChat:
		return `"delta":{"content":"`
	case AnthropicMessages:
		return `"type":"text_delta"`
	}
	return `"type":"response.output_text.delta"`
}

// splitForRepeat cuts body into the events before its first text delta,
// that delta, and the rest.
func splitForRepeat(b *testing.B, d Dialect, body []byte) (head, mid, tail []byte) {
	mark := []byte(contentMarker(d))
	off := 0
	r := NewSSEReader(bytes.NewReader(body))
	for {
		ev, err := r.Next()
		if err != nil {
			b.Fatalf("no %s text delta in the stream", d)
		}
		if bytes.Contains(ev.Data, mark) {
			return body[:off], bytes.Clone(ev.Raw), body[off+len(ev.Raw):]
		}
		off += len(ev.Raw)
	}
}

// benchSteady runs one stream with b.N text deltas.
func benchSteady(b *testing.B, c streamBench, body []byte) {
	head, mid, tail := splitForRepeat(b, c.from, body)
	if !bytes.HasPrefix(body[len(head):], mid) {
		b.Fatal("the stream's framing is not its events' concatenation")
	}
	w := &discardWriter{}
	tr := c.translator(w)
	b.SetBytes(int64(len(mid)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := streamProcessCPU()
	if err := tr.Run(&repeatingStream{head: head, mid: mid, tail: tail, n: b.N}); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64((streamProcessCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
	if tr.Truncated() || tr.UpstreamError() != nil || w.n < b.N*len(mid)/4 {
		b.Fatalf("stream not relayed: truncated %v, error %v, %d bytes", tr.Truncated(), tr.UpstreamError(), w.n)
	}
}

// steadyBody returns the stream of dialect d the steady benchmarks repeat:
// a plain text stream of testdata/.
func steadyBody(b *testing.B, d Dialect) []byte {
	for _, fx := range streamsIn(b, []string{testdataDir(b)}, d) {
		if fx.name == "text.sse" {
			return fx.body
		}
	}
	b.Fatalf("no testdata %s text.sse", d)
	return nil
}

func benchDirection(b *testing.B, c streamBench) {
	b.Run("fixtures", func(b *testing.B) { benchFixtureStreams(b, c, benchBodies(b, c.from)) })
	b.Run("steady", func(b *testing.B) { benchSteady(b, c, steadyBody(b, c.from)) })
}

// BenchmarkPassthroughStreamChat: OpenAI Chat upstream to an OpenAI Chat
// client, with the gateway's own include_usage hidden (hide) or the
// client's (keep).
func BenchmarkPassthroughStreamChat(b *testing.B) {
	for _, hide := range []bool{true, false} {
		name := map[bool]string{true: "hide_usage", false: "keep_usage"}[hide]
		b.Run(name, func(b *testing.B) { benchDirection(b, streamBench{name, OpenAIChat, OpenAIChat, hide, nil}) })
	}
}

// BenchmarkPassthroughStreamAnthropic: Anthropic Messages to Anthropic
// Messages.
func BenchmarkPassthroughStreamAnthropic(b *testing.B) {
	benchDirection(b, streamBench{"anthropic", AnthropicMessages, AnthropicMessages, false, nil})
}

// BenchmarkPassthroughStreamResponses: OpenAI Responses to OpenAI
// Responses.
func BenchmarkPassthroughStreamResponses(b *testing.B) {
	benchDirection(b, streamBench{"responses", OpenAIResponses, OpenAIResponses, false, nil})
}

// BenchmarkTranslatedStream: the canonical path, Chat to Anthropic and
// back, and a Responses upstream to both.
func BenchmarkTranslatedStream(b *testing.B) {
	for _, c := range []streamBench{
		{from: OpenAIChat, to: AnthropicMessages},
		{from: AnthropicMessages, to: OpenAIChat},
		{from: AnthropicMessages, to: OpenAIResponses},
		{from: OpenAIResponses, to: OpenAIChat},
		{from: OpenAIResponses, to: AnthropicMessages},
	} {
		c.name = strings.ReplaceAll(c.from.String()+"_to_"+c.to.String(), "/", "_")
		b.Run(c.name, func(b *testing.B) { benchDirection(b, c) })
	}
}
