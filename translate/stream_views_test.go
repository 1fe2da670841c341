package translate

import (
	"bytes"
	"strconv"
	"testing"
)

// TestStreamEventViewsNotKept replays every recorded stream (healthy and
// failing) in every direction, passthrough included, with and without
// HoldPreamble and HideUsageChunk, one upstream event per read, once as
// is and once with the SSE reader overwriting the bytes of every event it
// returned before (ssePoison). The outputs, usage and upstream error must
// be the same: nothing keeps a view of an old event (SSEEvent's Data and
// Raw are valid only until the next Next).
func TestStreamEventViewsNotKept(t *testing.T) {
	run := func(from, to Dialect, body []byte, hold, hide bool) ([]byte, Usage, string) {
		var out []byte
		tr := NewStreamTranslator(from, to, "client-model", EventWriterFunc(func(p []byte) error {
			out = append(out, p...)
			return nil
		}))
		if hold {
			tr.HoldPreamble()
		}
		if hide {
			tr.HideUsageChunk()
		}
		_ = tr.Run(newEventReader(body))
		se := ""
		if e := tr.UpstreamError(); e != nil {
			se = e.Type + "|" + e.Message + "|" + string(e.Body)
		}
		return out, tr.Usage(), se
	}
	defer func() { ssePoison = false }()
	n := 0
	for _, from := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		fxs := append(streamFixtures(t, from), streamFailureFixtures(t, from)...)
		for _, fx := range fxs {
			for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
				for _, mode := range [][2]bool{{false, false}, {true, false}, {true, true}} {
					ssePoison = false
					want, wu, we := run(from, to, fx.body, mode[0], mode[1])
					ssePoison = true
					got, gu, ge := run(from, to, fx.body, mode[0], mode[1])
					label := fx.name + " -> " + to.String()
					if !bytes.Equal(got, want) {
						t.Fatalf("%s (hold %v, hide %v): output changed when old events are overwritten:\n%s\nwant\n%s", label, mode[0], mode[1], got, want)
					}
					if usageString(gu) != usageString(wu) || ge != we {
						t.Fatalf("%s: usage %s / error %q changed to %s / %q", label, usageString(wu), we, usageString(gu), ge)
					}
					if bytes.Contains(got, []byte{0x7f, 0x7f}) {
						t.Fatalf("%s: poisoned bytes reached the client", label)
					}
					n++
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d runs", n)
	}
}

// usageString renders u's figures ("-" for an unreported one).
func usageString(u Usage) string {
	s := ""
	for _, p := range []*int64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens} {
		if p == nil {
			s += "- "
		} else {
			s += strconv.FormatInt(*p, 10) + " "
		}
	}
	return s
}
