package translate

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tidwall/gjson"
)

// tokens returns the input and output figures of u (-1 when unreported).
func tokens(u Usage) (in, out int64) {
	in, out = -1, -1
	if u.InputTokens != nil {
		in = *u.InputTokens
	}
	if u.OutputTokens != nil {
		out = *u.OutputTokens
	}
	return in, out
}

// runEnd runs a translator with HoldPreamble (and HideUsageChunk when
// hide is set) over in and returns what the client got.
func runEnd(t *testing.T, from, to Dialect, hide bool, in io.Reader) ([]byte, *StreamTranslator, error) {
	t.Helper()
	var out []byte
	tr := NewStreamTranslator(from, to, "", EventWriterFunc(func(p []byte) error { out = append(out, p...); return nil }))
	tr.HoldPreamble()
	if hide {
		tr.HideUsageChunk()
	}
	err := tr.Run(in)
	return out, tr, err
}

const (
	ccErrChunk = `data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}` + "\n\n"
	// OpenAI's usage-only chunk (include_usage) after the error
	ccLateUsage = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[],"usage":{"prompt_tokens":21,"completion_tokens":13,"total_tokens":34}}` + "\n\n"
	amErrEv     = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	// Anthropic's message_delta with the cumulative usage after the error
	amLateUsage = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":17}}\n\n"
)

// TestUsageAfterInBandError: the usage an upstream sends after its
// in-band error event is read and booked (Usage); the attempt stays a
// failure (UpstreamError); a Chat passthrough relays the usage-only chunk
// as it came (dropped with HideUsageChunk), nothing that would show the
// stream whole follows the error, and a translated Responses client gets
// the usage in response.failed.
func TestUsageAfterInBandError(t *testing.T) {
	chatIn := ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + ccErrChunk + ccLateUsage + "data: [DONE]\n\n"
	amIn := amStart + amText("partial") + amErrEv + amLateUsage + amEv("message_stop", `{"type":"message_stop"}`)
	for _, c := range []struct {
		name    string
		from    Dialect
		to      Dialect
		hide    bool
		in      string
		want    string // the exact client stream ("" for not checked)
		in0, o0 int64  // the usage booked
	}{
		{"chat passthrough", OpenAIChat, OpenAIChat, false, chatIn, ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + ccErrChunk + ccLateUsage, 21, 13},
		{"chat passthrough, usage hidden", OpenAIChat, OpenAIChat, true, chatIn, ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + ccErrChunk, 21, 13},
		{"anthropic passthrough", AnthropicMessages, AnthropicMessages, false, amIn, amStart + amText("partial") + amErrEv, 3, 17},
		{"chat -> anthropic", OpenAIChat, AnthropicMessages, false, chatIn, "", 21, 13},
		{"chat -> responses", OpenAIChat, OpenAIResponses, false, chatIn, "", 21, 13},
		{"anthropic -> chat", AnthropicMessages, OpenAIChat, false, amIn, "", 3, 17},
		{"anthropic -> responses", AnthropicMessages, OpenAIResponses, false, amIn, "", 3, 17},
	} {
		out, tr, err := runEnd(t, c.from, c.to, c.hide, strings.NewReader(c.in))
		if err != nil || tr.UpstreamError() == nil || tr.Truncated() || !tr.Committed() {
			t.Fatalf("%s: err %v upstream error %v truncated %v committed %v", c.name, err, tr.UpstreamError(), tr.Truncated(), tr.Committed())
		}
		if in, o := tokens(tr.Usage()); in != c.in0 || o != c.o0 {
			t.Errorf("%s: usage %d in / %d out, want %d / %d", c.name, in, o, c.in0, c.o0)
		}
		if c.want != "" && string(out) != c.want {
			t.Errorf("%s: client stream\n%s\nwant\n%s", c.name, out, c.want)
		}
		if bytes.Contains(out, []byte("[DONE]")) || bytes.Contains(out, []byte("message_stop")) || bytes.Contains(out, []byte(`"stop_reason":"end_turn"`)) {
			t.Errorf("%s: a terminator or finish after the error:\n%s", c.name, out)
		}
		if sdkErr, finished := sdkOutcome(c.to, out); sdkErr == nil || finished {
			t.Errorf("%s: SDK error %v, finished %v: want an error and no finish", c.name, sdkErr, finished)
		}
		if c.from != c.to {
			switch last := lastEvent(t, out); c.to {
			case OpenAIResponses:
				// response.failed comes last, with the usage read after the error
				u := gjson.GetBytes(last.Data, "response.usage")
				if last.Event != "response.failed" || u.Get("input_tokens").Int() != c.in0 || u.Get("output_tokens").Int() != c.o0 {
					t.Errorf("%s: last event %s %s", c.name, last.Event, last.Data)
				}
			case OpenAIChat:
				if !gjson.GetBytes(last.Data, "error").IsObject() {
					t.Errorf("%s: last chunk is not the error: %s", c.name, last.Data)
				}
			case AnthropicMessages:
				if last.Event != "error" {
					t.Errorf("%s: last event %s", c.name, last.Event)
				}
			}
		}
	}
}

// TestDrainAfterErrorIsBounded: after an in-band error Run reads on at
// most MaxDrainAfterError bytes of an upstream that keeps sending (and then
// holds its connection open), and a read error then is not the outcome.
func TestDrainAfterErrorIsBounded(t *testing.T) {
	filler := strings.Repeat(": keep-alive\n\n", 2*MaxDrainAfterError/len(": keep-alive\n\n"))
	for _, c := range []struct {
		name string
		up   io.Reader
	}{
		{"held open", &heldOpen{data: []byte(ccChunk(`{"content":"partial"}`, "", "") + ccErrChunk + filler + ccLateUsage), done: make(chan struct{})}},
		{"read error", io.MultiReader(strings.NewReader(ccChunk(`{"content":"partial"}`, "", "")+ccErrChunk), iotest.ErrReader(errors.New("connection reset")))},
	} {
		ended := make(chan struct{})
		var out []byte
		var tr *StreamTranslator
		var err error
		go func() {
			out, tr, err = runEnd(t, OpenAIChat, OpenAIChat, false, c.up)
			close(ended)
		}()
		select {
		case <-ended:
		case <-time.After(5 * time.Second): // a bound on the test, not a measurement
			t.Fatalf("%s: Run still reading after the error", c.name)
		}
		if h, ok := c.up.(*heldOpen); ok {
			close(h.done)
		}
		if err != nil || tr.UpstreamError() == nil || bytes.Contains(out, []byte("keep-alive")) || bytes.Contains(out, []byte(`"usage"`)) {
			t.Errorf("%s: err %v upstream error %v:\n%s", c.name, err, tr.UpstreamError(), out)
		}
	}
}

// geminiBlocked is what Gemini's OpenAI-compatible endpoint streams for a
// prompt its safety filter blocks: chunks with "choices": [] (the prompt
// feedback, the usage) and no finish_reason.
const geminiBlocked = `data: {"id":"gem-1","object":"chat.completion.chunk","created":7,"model":"gemini-x","choices":[],"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}` + "\n\n" +
	`data: {"id":"gem-1","object":"chat.completion.chunk","created":7,"model":"gemini-x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}}` + "\n\n"

// TestBlockedPromptStream: a Chat stream that ends cleanly after chunks
// with "choices": [] alone is an answer, not a truncation: a passthrough
// relays it byte for byte (its usage chunk kept even with HideUsageChunk,
// as it is all there is), an Anthropic client gets an empty message that
// stopped for a refusal, a Responses client response.incomplete with
// reason content_filter. Cut by a read error, holding only Azure's
// prompt_filter_results chunk, or with neither a block reason nor the
// usage (a bare "choices": [] chunk), it is still a failure.
func TestBlockedPromptStream(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		hide bool
	}{
		{"with [DONE]", geminiBlocked + "data: [DONE]\n\n", false},
		{"without [DONE]", geminiBlocked, false},
		{"usage hidden", geminiBlocked + "data: [DONE]\n\n", true},
	} {
		out, tr, err := runEnd(t, OpenAIChat, OpenAIChat, c.hide, strings.NewReader(c.in))
		if err != nil || tr.Truncated() || tr.UpstreamError() != nil || !tr.Committed() || string(out) != c.in {
			t.Errorf("passthrough %s: err %v truncated %v committed %v, out\n%s", c.name, err, tr.Truncated(), tr.Committed(), out)
		}
		if sdkErr, _ := sdkOutcome(OpenAIChat, out); sdkErr != nil {
			t.Errorf("passthrough %s: SDK error %v", c.name, sdkErr)
		}
	}
	out, tr, err := runEnd(t, OpenAIChat, AnthropicMessages, false, strings.NewReader(geminiBlocked+"data: [DONE]\n\n"))
	var names []string
	for _, b := range bytes.SplitAfter(out, []byte("\n\n")) {
		if e, err := NewSSEReader(bytes.NewReader(b)).Next(); err == nil {
			names = append(names, e.Event)
		}
	}
	if err != nil || tr.Truncated() || strings.Join(names, ",") != "message_start,ping,message_delta,message_stop" ||
		gjson.Get(lastDelta(out), "delta.stop_reason").Str != "refusal" || gjson.Get(lastDelta(out), "usage.input_tokens").Int() != 9 {
		t.Errorf("anthropic client: err %v truncated %v %v\n%s", err, tr.Truncated(), names, out)
	}
	if sdkErr, finished := sdkOutcome(AnthropicMessages, out); sdkErr != nil || !finished {
		t.Errorf("anthropic client: SDK %v finished %v", sdkErr, finished)
	}
	out, tr, err = runEnd(t, OpenAIChat, OpenAIResponses, false, strings.NewReader(geminiBlocked))
	last := lastEvent(t, out)
	if err != nil || tr.Truncated() || last.Event != "response.incomplete" ||
		gjson.GetBytes(last.Data, "response.incomplete_details.reason").Str != "content_filter" || gjson.GetBytes(last.Data, "response.usage.input_tokens").Int() != 9 {
		t.Errorf("responses client: err %v truncated %v\n%s", err, tr.Truncated(), out)
	}
	// failures stay failures
	for _, to := range allDialects {
		_, tr, err = runEnd(t, OpenAIChat, to, false, io.MultiReader(strings.NewReader(geminiBlocked), iotest.ErrReader(errors.New("connection reset"))))
		if err == nil {
			t.Errorf("%s: a blocked stream cut by a read error ended without an error", to)
		}
		azure := `data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[]}` + "\n\n"
		_, tr, err = runEnd(t, OpenAIChat, to, false, strings.NewReader(azure+"data: [DONE]\n\n"))
		if !errors.Is(err, ErrNotCommitted) || !tr.Truncated() {
			t.Errorf("%s: Azure's prompt_filter_results alone: err %v truncated %v", to, err, tr.Truncated())
		}
		_, tr, err = runEnd(t, OpenAIChat, to, false, strings.NewReader(bareEmpty+"data: [DONE]\n\n"))
		if !errors.Is(err, ErrNotCommitted) || !tr.Truncated() {
			t.Errorf("%s: a bare \"choices\": [] chunk alone: err %v truncated %v", to, err, tr.Truncated())
		}
	}
}

// lastDelta returns the data of the last message_delta event of out.
func lastDelta(out []byte) string {
	i := bytes.LastIndex(out, []byte("event: message_delta\ndata: "))
	if i < 0 {
		return ""
	}
	rest := out[i+len("event: message_delta\ndata: "):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	return string(rest)
}
