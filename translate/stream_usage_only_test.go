package translate

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestUsageOnlyStreamIsNoAnswer: a Chat stream of a usage chunk
// ("choices": [] with the usage, as stream_options.include_usage adds it)
// and [DONE], with no choice at all, is not a blocked prompt: neither
// vendor documents that shape for a filter (Azure OpenAI refuses a
// filtered prompt with a 400 whose code is content_filter, and its
// prompt_filter_results chunk says what the filter found; OpenAI sends no
// empty answer), only Gemini's promptFeedback.blockReason is one. So it is
// the upstream's failure: with HoldPreamble nothing is written and Run's
// error wraps ErrNotCommitted and io.ErrUnexpectedEOF (Truncated, no
// UpstreamError: the key's, not the client's), the usage still observed;
// without HoldPreamble the client gets its dialect's error form, never a
// finish. With a block reason beside the usage it stays the answer.
func TestUsageOnlyStreamIsNoAnswer(t *testing.T) {
	usage := `data: {"id":"c1","object":"chat.completion.chunk","created":7,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}}` + "\n\n"
	azure := `data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}` + "\n\n"
	for _, to := range allDialects {
		for name, in := range map[string]string{"usage": usage + "data: [DONE]\n\n", "usage, no [DONE]": usage, "Azure filter results, usage": azure + usage + "data: [DONE]\n\n"} {
			for _, hide := range []bool{false, true} {
				out, tr, err := runEnd(t, OpenAIChat, to, hide && to == OpenAIChat, strings.NewReader(in))
				if !errors.Is(err, ErrNotCommitted) || !errors.Is(err, io.ErrUnexpectedEOF) || !tr.Truncated() || tr.UpstreamError() != nil || len(out) != 0 {
					t.Errorf("%s → %s (hide %v): err %v truncated %v upstream error %v written %q", name, to, hide, err, tr.Truncated(), tr.UpstreamError(), out)
				}
				if u := tr.Usage(); u.InputTokens == nil || *u.InputTokens != 9 {
					t.Errorf("%s → %s: usage %+v not observed", name, to, u)
				}
			}
			var w []byte
			tr := NewStreamTranslator(OpenAIChat, to, "", EventWriterFunc(func(p []byte) error { w = append(w, p...); return nil }))
			err := tr.Run(strings.NewReader(in))
			if sdkErr, finished := sdkOutcome(to, w); err != nil || !tr.Truncated() || sdkErr == nil || finished {
				t.Errorf("%s → %s, no hold: err %v truncated %v SDK %v finished %v\n%s", name, to, err, tr.Truncated(), sdkErr, finished, w)
			}
		}
		blocked := `data: {"id":"g","object":"chat.completion.chunk","created":7,"model":"gemini-x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9},"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}` + "\n\n"
		out, tr, err := runEnd(t, OpenAIChat, to, false, strings.NewReader(blocked+"data: [DONE]\n\n"))
		if sdkErr, _ := sdkOutcome(to, out); err != nil || tr.Truncated() || sdkErr != nil || len(out) == 0 {
			t.Errorf("blocked → %s: err %v truncated %v SDK %v\n%s", to, err, tr.Truncated(), sdkErr, out)
		}
	}
}
