package translate

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// malformedChoices are OpenAI Chat chunks whose "choices" is present but
// not an array (the chat.completion.chunk object's choices is an array):
// an object, a string, a number.
var malformedChoiceChunks = []string{
	`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":{"0":{"index":0,"delta":{"content":"x"}}},"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14}}` + "\n\n",
	`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":"none","usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14}}` + "\n\n",
	`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":1,"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14}}` + "\n\n",
}

// TestMalformedChoicesIsAFailure: an OpenAI Chat chunk whose "choices" is
// an object or a scalar is a malformed upstream chunk: the attempt fails
// as the upstream's (UpstreamError, server_error, 500) and the client
// gets its dialect's error form, never a finish, with or without
// HideUsageChunk; before the commit point nothing is written.
func TestMalformedChoicesIsAFailure(t *testing.T) {
	for i, bad := range malformedChoiceChunks {
		for _, to := range allDialects {
			for _, hide := range []bool{false, true} {
				in := ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + bad + "data: [DONE]\n\n"
				out, tr, err := runEnd(t, OpenAIChat, to, hide, strings.NewReader(in))
				se := tr.UpstreamError()
				if err != nil || se == nil || se.Type != "server_error" || se.Status != 500 || !strings.Contains(se.Message, "choices") {
					t.Errorf("%d → %s hide %v: err %v upstream error %+v\n%s", i, to, hide, err, se, out)
					continue
				}
				if sdkErr, finished := sdkOutcome(to, out); sdkErr == nil || finished {
					t.Errorf("%d → %s hide %v: SDK error %v finished %v\n%s", i, to, hide, sdkErr, finished, out)
				}
				if bytes.Contains(out, []byte("[DONE]")) || bytes.Contains(out, []byte("response.completed")) || bytes.Contains(out, []byte("message_stop")) {
					t.Errorf("%d → %s hide %v: a terminator after the malformed chunk\n%s", i, to, hide, out)
				}
				// before the commit point: nothing written, the cause wrapped
				out, tr, err = runEnd(t, OpenAIChat, to, hide, strings.NewReader(bad+"data: [DONE]\n\n"))
				var got *StreamError
				if !errors.Is(err, ErrNotCommitted) || !errors.As(err, &got) || got != tr.UpstreamError() || len(out) != 0 {
					t.Errorf("%d → %s hide %v, uncommitted: err %v written %q", i, to, hide, err, out)
				}
			}
		}
	}
}

// bareEmpty is a chunk with "choices": [] and nothing else of note: no
// usage, no promptFeedback.
const bareEmpty = `data: {"id":"gem-2","object":"chat.completion.chunk","created":7,"model":"gemini-x","choices":[]}` + "\n\n"

// TestEmptyStreamIsNotABlockedPrompt: a Chat stream of "choices": []
// chunks alone is a blocked prompt's answer only when one of them says so
// (promptFeedback.blockReason, prompt_feedback.block_reason) or carries
// the usage; with neither, the upstream answered nothing: a truncation
// (Truncated), before the commit point nothing written (the request may
// move on), after it the dialect's error form.
func TestEmptyStreamIsNotABlockedPrompt(t *testing.T) {
	for _, to := range allDialects {
		for _, end := range []string{"data: [DONE]\n\n", ""} {
			out, tr, err := runEnd(t, OpenAIChat, to, false, strings.NewReader(bareEmpty+end))
			if !errors.Is(err, ErrNotCommitted) || !errors.Is(err, io.ErrUnexpectedEOF) || !tr.Truncated() || tr.UpstreamError() != nil || len(out) != 0 {
				t.Errorf("→ %s end %q: err %v truncated %v written %q", to, end, err, tr.Truncated(), out)
			}
			// without HoldPreamble what was relayed is followed by the error form
			var w []byte
			tr = NewStreamTranslator(OpenAIChat, to, "", EventWriterFunc(func(p []byte) error { w = append(w, p...); return nil }))
			err = tr.Run(strings.NewReader(bareEmpty + end))
			if sdkErr, finished := sdkOutcome(to, w); err != nil || !tr.Truncated() || sdkErr == nil || finished {
				t.Errorf("→ %s end %q, no hold: err %v truncated %v SDK %v finished %v\n%s", to, end, err, tr.Truncated(), sdkErr, finished, w)
			}
		}
		for _, c := range []struct{ name, in string }{
			{"promptFeedback", `data: {"id":"g","object":"chat.completion.chunk","created":7,"model":"gemini-x","choices":[],"promptFeedback":{"blockReason":"SAFETY"}}` + "\n\n"},
			{"prompt_feedback", `data: {"id":"g","object":"chat.completion.chunk","created":7,"model":"gemini-x","choices":[],"prompt_feedback":{"block_reason":"OTHER"}}` + "\n\n"},
			{"usage", `data: {"id":"g","object":"chat.completion.chunk","created":7,"model":"gemini-x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}}` + "\n\n"},
			{"bare then reason", bareEmpty + `data: {"id":"g","object":"chat.completion.chunk","created":7,"model":"gemini-x","choices":[],"promptFeedback":{"blockReason":"SAFETY"}}` + "\n\n"},
		} {
			out, tr, err := runEnd(t, OpenAIChat, to, false, strings.NewReader(c.in+"data: [DONE]\n\n"))
			if sdkErr, _ := sdkOutcome(to, out); err != nil || tr.Truncated() || tr.UpstreamError() != nil || sdkErr != nil || len(out) == 0 {
				t.Errorf("%s → %s: err %v truncated %v SDK %v\n%s", c.name, to, err, tr.Truncated(), sdkErr, out)
			}
		}
		// a promptFeedback without a block reason says nothing was blocked
		in := `data: {"id":"g","object":"chat.completion.chunk","created":7,"model":"gemini-x","choices":[],"promptFeedback":{"safetyRatings":[]}}` + "\n\n"
		if _, tr, err := runEnd(t, OpenAIChat, to, false, strings.NewReader(in+"data: [DONE]\n\n")); !errors.Is(err, ErrNotCommitted) || !tr.Truncated() {
			t.Errorf("promptFeedback without blockReason → %s: err %v truncated %v", to, err, tr.Truncated())
		}
	}
}

// hostileReader counts the bytes a reader took from it after its prefix:
// n bytes of one event that never ends.
type hostileReader struct {
	prefix *strings.Reader
	n      int // bytes of the endless event still to give
	read   int // bytes of it given
}

func (h *hostileReader) Read(p []byte) (int, error) {
	if h.prefix.Len() > 0 {
		return h.prefix.Read(p)
	}
	if h.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), h.n)
	if h.read == 0 && k > 0 {
		copy(p, `data: {"big":"`)
		k = min(k, len(`data: {"big":"`))
	} else {
		for i := range p[:k] {
			p[i] = 'x'
		}
	}
	h.n -= k
	h.read += k
	return k, nil
}

// TestDrainReadsAtMostItsBudget: after an in-band error, one event far
// larger than MaxDrainAfterError (1 MiB, without end) is abandoned, not
// buffered: Run reads at most MaxDrainAfterError bytes past the error, in
// every direction (passthrough and translated), and the client's stream
// still ends at its error form.
func TestDrainReadsAtMostItsBudget(t *testing.T) {
	chatIn := ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + ccErrChunk
	amIn := amStart + amText("partial") + amErrEv
	rsIn := `event: response.created` + "\n" + `data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"up","output":[]}}` + "\n\n" +
		`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","sequence_number":1,"item_id":"m1","output_index":0,"content_index":0,"delta":"partial"}` + "\n\n" +
		`event: error` + "\n" + `data: {"type":"error","sequence_number":2,"code":"server_error","message":"boom","param":null}` + "\n\n"
	for _, from := range allDialects {
		for _, to := range allDialects {
			in := map[Dialect]string{OpenAIChat: chatIn, AnthropicMessages: amIn, OpenAIResponses: rsIn}[from]
			h := &hostileReader{prefix: strings.NewReader(in), n: 1 << 20}
			out, tr, err := runEnd(t, from, to, false, h)
			if err != nil || tr.UpstreamError() == nil || h.read > MaxDrainAfterError || h.read == 0 || bytes.Contains(out, []byte("xxxx")) {
				t.Errorf("%s → %s: err %v upstream error %v, read %d bytes of the endless event (bound %d)\n%s", from, to, err, tr.UpstreamError(), h.read, MaxDrainAfterError, out)
			}
			// a Responses passthrough relays the upstream's flat error
			// event as it came (which the SDK reads without raising)
			if sdkErr, finished := sdkOutcome(to, out); (sdkErr == nil && (from != to || to != OpenAIResponses)) || finished {
				t.Errorf("%s → %s: SDK error %v finished %v", from, to, sdkErr, finished)
			}
		}
	}
	// usage within the budget is still booked, after keep-alives
	in := ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + ccErrChunk + strings.Repeat(": keep-alive\n\n", 100) + ccLateUsage
	for _, to := range allDialects {
		_, tr, _ := runEnd(t, OpenAIChat, to, false, strings.NewReader(in))
		if in, out := tokens(tr.Usage()); in != 21 || out != 13 {
			t.Errorf("→ %s: usage after keep-alives %d / %d, want 21 / 13", to, in, out)
		}
	}
	_ = gjson.Valid
}
