package translate

import (
	"strings"
	"testing"
)

// TestResponseAsStreamFixtures turns every recorded whole answer of each
// upstream dialect into the stream of every client dialect and reads it
// with that client's official SDK stream accumulator: text, thinking, tool
// calls, stop reason and usage equal the whole answer's; the stream ends
// with its dialect's terminator, and the model is the client's.
func TestResponseAsStreamFixtures(t *testing.T) {
	n := 0
	for _, from := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		for name, body := range wholeResponseFixtures(t, from) {
			if AnswerError(from, body) != nil {
				continue
			}
			n++
			src := wholeSummary(t, from, body)
			for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
				label := name + " -> " + to.String() + " stream"
				out, u, err := ResponseAsStream(from, to, body, "client-model", ResponseOptions{})
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				if want := ResponseUsage(from, body); u.String() != want.String() {
					t.Errorf("%s: usage %v, want %v", label, u, want)
				}
				got := clientSummary(t, to, out)
				compareSummaries(t, label, src, got, to)
				s := string(out)
				ended := map[Dialect]bool{
					OpenAIChat:        strings.HasSuffix(s, "data: [DONE]\n\n") && !strings.Contains(s, `data: {"error"`),
					AnthropicMessages: strings.HasSuffix(s, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") && !strings.Contains(s, "event: error"),
					OpenAIResponses:   (strings.Contains(s, "event: response.completed\n") || strings.Contains(s, "event: response.incomplete\n")) && !strings.Contains(s, "event: response.failed") && !strings.Contains(s, "event: error"),
				}[to]
				if !ended {
					t.Errorf("%s: not ended by its terminator, or an error:\n%s", label, out)
				}
				if !strings.Contains(string(out), `"model":"client-model"`) {
					t.Errorf("%s: model not the client's:\n%.400s", label, out)
				}
			}
		}
	}
	if n < 6 {
		t.Fatalf("only %d whole answers found", n)
	}
}
