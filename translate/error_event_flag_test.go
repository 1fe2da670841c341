package translate

import (
	"bytes"
	"testing"

	"github.com/tidwall/gjson"
)

// isErrorEventBytes classifies a client event of dialect d without the
// translator: a Chat chunk with a top-level "error", an Anthropic
// event: error, a Responses error or response.failed event.
func isErrorEventBytes(t *testing.T, d Dialect, p []byte) bool {
	evs := readAllEvents(t, bytes.NewReader(p))
	if len(evs) != 1 {
		t.Fatalf("write of %d events: %q", len(evs), p)
	}
	data := evs[0].Data
	switch d {
	case OpenAIChat:
		e := gjson.GetBytes(data, "error")
		return e.IsObject() || e.Type == gjson.String && e.Str != ""
	case AnthropicMessages:
		return gjson.GetBytes(data, "type").Str == "error"
	}
	typ := gjson.GetBytes(data, "type").Str
	return typ == "error" || typ == "response.failed"
}

// TestWritingErrorEvent: over every healthy and failing recorded stream,
// in every direction, with and without HoldPreamble, WritingErrorEvent is
// true during exactly the writes of error events (an upstream error
// relayed, or the client dialect's error form of a truncation), and false
// outside WriteEvent.
func TestWritingErrorEvent(t *testing.T) {
	errs := 0
	for _, from := range allDialects {
		fxs := append(streamsIn(t, []string{testdataDir(t)}, from), streamFailureFixtures(t, from)...)
		for _, fx := range fxs {
			for _, to := range allDialects {
				for _, hold := range []bool{false, true} {
					var tr *StreamTranslator
					tr = NewStreamTranslator(from, to, "m", EventWriterFunc(func(p []byte) error {
						if got, want := tr.WritingErrorEvent(), isErrorEventBytes(t, to, p); got != want {
							t.Fatalf("%s -> %s (hold %v): WritingErrorEvent %v for %q", fx.name, to, hold, got, p)
						} else if got {
							errs++
						}
						return nil
					}))
					if hold {
						tr.HoldPreamble()
					}
					_ = tr.Run(bytes.NewReader(fx.body))
					if tr.WritingErrorEvent() {
						t.Fatalf("%s -> %s: WritingErrorEvent true after Run", fx.name, to)
					}
				}
			}
		}
	}
	if errs == 0 {
		t.Fatal("no error event written")
	}
}
