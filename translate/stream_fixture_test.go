package translate

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"
)

// assertSameUnderSplits checks that body, from upstream dialect from to a
// client of dialect to, gives the bytes whole when read one byte at a time
// and when split in two at up to points offsets.
func assertSameUnderSplits(t *testing.T, label string, from, to Dialect, body, whole []byte, points int) {
	t.Helper()
	one, _, _, _ := collect(t, from, to, "client-model", iotest.OneByteReader(bytes.NewReader(body)))
	if !bytes.Equal(one, whole) {
		t.Fatalf("%s: one-byte reads changed the output", label)
	}
	for _, at := range splitPoints(len(body), points) {
		got, _, _, _ := collect(t, from, to, "client-model", &splitReader{chunks: [][]byte{body[:at], body[at:]}})
		if !bytes.Equal(got, whole) {
			t.Fatalf("%s: split at %d changed the output", label, at)
		}
	}
}

// TestStreamFixturesAllDirections replays every recorded upstream stream
// (OpenAI Chat and Anthropic Messages) into every client dialect, whole and
// split at many byte boundaries, checks the output is identical for every
// split, parses it with the client dialect's official SDK, and compares
// text, thinking, tool names and arguments, stop reason and usage with the
// source as parsed by its own SDK.
func TestStreamFixturesAllDirections(t *testing.T) {
	for _, from := range []Dialect{OpenAIChat, AnthropicMessages} {
		for _, fx := range streamFixtures(t, from) {
			src := clientSummary(t, from, fx.body)
			for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
				label := fx.name + " -> " + to.String()
				whole, _, tr, err := collect(t, from, to, "client-model", bytes.NewReader(fx.body))
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				if from == to {
					continue // passthrough is covered by TestPassthroughStreams
				}
				assertSameUnderSplits(t, label, from, to, fx.body, whole, 120)
				if strings.Contains(string(whole), `"model":`) && !strings.Contains(string(whole), `"model":"client-model"`) {
					t.Errorf("%s: client model not used", label)
				}
				compareSummaries(t, label, src, clientSummary(t, to, whole), to)
				u := tr.Usage()
				if src.in != nil && (u.InputTokens == nil || *u.InputTokens != *src.in) {
					t.Errorf("%s: translator usage %v", label, u)
				}
			}
		}
	}
}
