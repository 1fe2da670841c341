package translate

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// benchFixtures returns the two recorded streams BenchmarkStream uses: the
// vercel OpenAI Chat text stream and the pydantic-ai Anthropic thinking
// stream.
func benchFixtures(b *testing.B) (chat, anth []byte) {
	for _, fx := range streamFixtures(b, OpenAIChat) {
		if strings.HasPrefix(fx.name, "vercel__openai-text") {
			chat = fx.body
		}
	}
	for _, fx := range streamFixtures(b, AnthropicMessages) {
		if strings.Contains(fx.name, "thinking-stream") {
			anth = fx.body
		}
	}
	return chat, anth
}

// benchPair is one stream benchmark case: an upstream body in dialect from,
// translated (or passed through) to dialect to.
type benchPair struct {
	from, to Dialect
	body     []byte
}

// benchPairs are the passthrough and translated cases of the HoldPreamble
// benchmarks over the two benchFixtures streams.
func benchPairs(chat, anth []byte) []benchPair {
	return []benchPair{
		{OpenAIChat, OpenAIChat, chat}, {OpenAIChat, AnthropicMessages, chat},
		{AnthropicMessages, AnthropicMessages, anth}, {AnthropicMessages, OpenAIChat, anth},
	}
}

// BenchmarkStreamHoldPreamble is BenchmarkStream with HoldPreamble: the
// cost of the commit point on a healthy stream (passthrough and
// translated).
func BenchmarkStreamHoldPreamble(b *testing.B) {
	chat, anth := benchFixtures(b)
	for _, c := range benchPairs(chat, anth) {
		b.Run(c.from.String()+"_to_"+c.to.String(), func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				tr := NewStreamTranslator(c.from, c.to, "client-model", &discardWriter{})
				tr.HoldPreamble()
				if err := tr.Run(bytes.NewReader(c.body)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var errFirstContent = errors.New("first content written")

// BenchmarkFirstContent measures, with and without HoldPreamble, the time
// from the start of Run to the EventWriter receiving the first content
// event, with an upstream that delivers one SSE event per read (ns/op; the
// writer stops the stream there), and after how many upstream reads that
// happens (reads/op). Both must be the same with and without HoldPreamble:
// the preamble is held in bytes, never in time.
func BenchmarkFirstContent(b *testing.B) {
	chat, anth := benchFixtures(b)
	for _, c := range benchPairs(chat, anth) {
		evs := newEventReader(c.body).evs
		for _, hold := range []bool{false, true} {
			name := c.from.String() + "_to_" + c.to.String() + "/hold=" + map[bool]string{false: "no", true: "yes"}[hold]
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				reads := 0
				for i := 0; i < b.N; i++ {
					r := &eventReader{evs: evs}
					tr := NewStreamTranslator(c.from, c.to, "client-model", EventWriterFunc(func(p []byte) error {
						if isContentEvent(c.to, p) {
							return errFirstContent
						}
						return nil
					}))
					if hold {
						tr.HoldPreamble()
					}
					if err := tr.Run(r); err != errFirstContent {
						b.Fatalf("Run: %v", err)
					}
					reads += r.reads
				}
				b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
			})
		}
	}
}
