package translate

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"

	"github.com/tidwall/gjson"
)

// seedStreams adds every fixture stream of the given dialects to the corpus
// (testdata/, and ../shared/fixtures when present).
func seedStreams(f *testing.F, ds ...Dialect) {
	f.Add([]byte("data: x\r\n\r\ndata: y\rdata: z\r\r: c\n\nevent: e\ndata"))
	for _, d := range ds {
		for _, fx := range streamFixtures(f, d) {
			f.Add(fx.body)
		}
	}
}

func seedRequests(f *testing.F, d Dialect) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"input":"hi"}`))
	for _, b := range requestFixtures(f, d) {
		f.Add(b)
	}
}

// FuzzSSEReader checks that the reader never panics or loops, that the
// events do not depend on how the input is split, and that Raw covers the
// input.
func FuzzSSEReader(f *testing.F) {
	seedStreams(f, OpenAIChat, AnthropicMessages, OpenAIResponses)
	f.Fuzz(func(t *testing.T, in []byte) {
		whole := readAllEvents(t, bytes.NewReader(in))
		one := readAllEvents(t, iotest.OneByteReader(bytes.NewReader(in)))
		if len(whole) != len(one) {
			t.Fatalf("%d events whole, %d one byte at a time", len(whole), len(one))
		}
		total := 0
		for i := range whole {
			if !bytes.Equal(whole[i].Raw, one[i].Raw) || !bytes.Equal(whole[i].Data, one[i].Data) || whole[i].Event != one[i].Event {
				t.Fatalf("event %d differs", i)
			}
			if len(whole[i].Raw) == 0 {
				t.Fatal("empty raw")
			}
			total += len(whole[i].Raw)
		}
		if total > len(in)+2 {
			t.Fatalf("raw bytes %d exceed input %d", total, len(in))
		}
	})
}

func fuzzRequest(f *testing.F, from Dialect) {
	seedRequests(f, from)
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _, _ = RequestInfo(from, in)
		verr := ValidateRequest(from, in)
		if _, ok := verr.(*Error); verr != nil && !ok {
			t.Fatalf("ValidateRequest error of type %T", verr)
		}
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
			out, err := TranslateRequest(from, to, in, "m")
			if err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("error of type %T", err)
				}
				continue
			}
			// translating checks more than passthrough, never less
			if from != to && verr != nil {
				t.Fatalf("translated to %s, but ValidateRequest refused: %v\n%s", to, verr, in)
			}
			if from != to && !gjson.ValidBytes(out) {
				t.Fatalf("invalid JSON output for valid input:\n%s\n->\n%s", in, out)
			}
		}
	})
}

// FuzzChatRequest fuzzes the OpenAI Chat request decoder and both encoders.
func FuzzChatRequest(f *testing.F) { fuzzRequest(f, OpenAIChat) }

// FuzzAnthropicRequest fuzzes the Anthropic request decoder and both encoders.
func FuzzAnthropicRequest(f *testing.F) { fuzzRequest(f, AnthropicMessages) }

// FuzzResponsesRequest fuzzes the Responses request decoder and both encoders.
func FuzzResponsesRequest(f *testing.F) { fuzzRequest(f, OpenAIResponses) }

// FuzzStreamTranslator feeds arbitrary upstream bytes to every translating
// direction: no panic, every write is one SSE block with JSON data, and the
// stream always ends with the client dialect's terminator or error form
// (Chat: [DONE] or an error chunk; Anthropic: message_stop or event: error).
func FuzzStreamTranslator(f *testing.F) {
	seedStreams(f, allDialects...)
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, from := range allDialects {
			for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
				if from == to {
					continue
				}
				var last []byte
				tr := NewStreamTranslator(from, to, "m", EventWriterFunc(func(p []byte) error {
					evs := readAllEvents(t, bytes.NewReader(p))
					if len(evs) != 1 {
						t.Fatalf("write of %d events", len(evs))
					}
					if d := evs[0].Data; !bytes.Equal(d, doneMarker) && !gjson.ValidBytes(d) {
						t.Fatalf("invalid JSON event: %q", p)
					}
					last = append(last[:0], p...)
					return nil
				}))
				if err := tr.Run(bytes.NewReader(in)); err != nil && err != io.EOF {
					t.Fatal(err)
				}
				ok := false
				switch to {
				case OpenAIChat:
					ok = bytes.Equal(last, []byte("data: [DONE]\n\n")) || bytes.HasPrefix(last, []byte(`data: {"error":{`))
				case AnthropicMessages:
					ok = bytes.Contains(last, []byte("message_stop")) || bytes.HasPrefix(last, []byte("event: error\n"))
				case OpenAIResponses:
					ok = bytes.Contains(last, []byte("response.completed")) || bytes.Contains(last, []byte("response.incomplete")) || bytes.Contains(last, []byte("response.failed"))
				}
				if !ok {
					t.Fatalf("%s→%s: stream not terminated, last event %q", from, to, last)
				}
			}
		}
	})
}
