package translate

import (
	"bytes"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	assestream "github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
)

// anthropicAccumulate reads an Anthropic stream with anthropic-sdk-go:
// the usage of its message_start and the message Message.Accumulate
// builds from every event.
func anthropicAccumulate(t *testing.T, b []byte) (start anthropic.Usage, msg anthropic.Message) {
	t.Helper()
	st := assestream.NewStream[anthropic.MessageStreamEventUnion](assestream.NewDecoder(sseResponse(b)), nil)
	for st.Next() {
		ev := st.Current()
		if ev.Type == "message_start" {
			start = ev.Message.Usage
		}
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("Accumulate: %v", err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("anthropic-sdk-go stream error: %v", err)
	}
	return start, msg
}

// TestAnthropicStreamInputUsage: a Chat or Responses upstream reports
// usage only at its end. An Anthropic client's message_start carries the
// request's estimate (ResponseOptions.InputTokensEstimate; 0 without
// one) where Anthropic sends the prompt's input_tokens (clients that read
// it there showed an empty context: router-for-me/CLIProxyAPI#1700,
// BerriAI/litellm#41406), and the final message_delta the upstream's
// figures in Anthropic's terms, so that Message.Accumulate ends with the
// upstream's usage (1200 prompt tokens = 150 input + 1000 cache read + 50
// cache write); Usage is the upstream's, never the estimate. An upstream
// that reported its input before message_start is stated there, as
// reported.
func TestAnthropicStreamInputUsage(t *testing.T) {
	text := ccChunk(`{"role":"assistant","content":"hi"}`, "", "") + ccChunk(`{}`, "stop", "")
	chatUsage := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":7,"total_tokens":1207,"prompt_tokens_details":{"cached_tokens":1000,"cache_write_tokens":50}}}` + "\n\n"
	rsUsage := `"usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1000},"output_tokens":7,"total_tokens":1207}`
	cases := []struct {
		name                    string
		from                    Dialect
		in                      string
		startIn                 int64 // message_start input_tokens with the estimate 900
		in_, cacheRead, cacheWr int64
	}{
		{"chat", OpenAIChat, text + chatUsage + "data: [DONE]\n\n", 900, 150, 1000, 50},
		{"responses", OpenAIResponses, rsPreamble + rsContent +
			rsEv("response.completed", 4, `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"up","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"partial","annotations":[]}]}],`+rsUsage+`}`), 900, 200, 1000, 0},
		{"chat usage on every chunk", OpenAIChat, ccChunk(`{"role":"assistant","content":"hi"}`, "", `,"usage":{"prompt_tokens":1200,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":1000}}`) +
			ccChunk(`{}`, "stop", `,"usage":{"prompt_tokens":1200,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":1000}}`) + "data: [DONE]\n\n", 200, 200, 1000, 0},
	}
	for _, c := range cases {
		for _, est := range []int64{900, 0} {
			out, tr, err := collectOpts(t, c.from, AnthropicMessages, c.in, ResponseOptions{InputTokensEstimate: est})
			if err != nil {
				t.Fatal(c.name, err)
			}
			start, msg := anthropicAccumulate(t, []byte(out))
			wantStart := c.startIn
			if est == 0 && wantStart == 900 {
				wantStart = 0
			}
			if start.InputTokens != wantStart {
				t.Errorf("%s, estimate %d: message_start input_tokens %d, want %d", c.name, est, start.InputTokens, wantStart)
			}
			u := msg.Usage
			if u.InputTokens != c.in_ || u.CacheReadInputTokens != c.cacheRead || u.CacheCreationInputTokens != c.cacheWr || u.OutputTokens != 7 {
				t.Errorf("%s, estimate %d: accumulated usage in %d cache read %d write %d out %d", c.name, est, u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens)
			}
			if got := tr.Usage(); got.InputTokens == nil || *got.InputTokens != 1200 || *got.OutputTokens != 7 {
				t.Errorf("%s: Usage %v", c.name, got)
			}
			if !bytes.Contains([]byte(out), []byte(`"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":`)) {
				t.Errorf("%s: message_delta without input_tokens:\n%s", c.name, out)
			}
		}
	}
}
