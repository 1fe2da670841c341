package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	assestream "github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/openai/openai-go/v3"
	ossestream "github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

func init() { nowUnix = func() int64 { return 1700000000 } }

// summary is what a client ends up with, independent of dialect.
type summary struct {
	text     string
	thinking string
	tools    []toolSum
	stop     string // coarse: stop, length, tool, refusal
	in, out  *int64 // total input, output tokens
}

type toolSum struct{ name, args string }

func sseResponse(b []byte) *http.Response {
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(b)),
	}
}

func coarseStop(canon string) string {
	switch canon {
	case stopMaxTokens, stopContextLimit:
		return "length"
	case stopToolUse:
		return "tool"
	case stopRefusal:
		return "refusal"
	}
	return "stop"
}

// chatSummary parses an OpenAI Chat stream with openai-go and its
// ChatCompletionAccumulator.
func chatSummary(t testing.TB, b []byte) summary {
	t.Helper()
	st := ossestream.NewStream[openai.ChatCompletionChunk](ossestream.NewDecoder(sseResponse(b)), nil)
	var acc openai.ChatCompletionAccumulator
	var reasoning strings.Builder
	usageChunks := 0
	for st.Next() {
		c := st.Current()
		if !acc.AddChunk(c) {
			t.Fatalf("accumulator rejected chunk %s", c.RawJSON())
		}
		if c.JSON.Usage.Valid() && c.Usage.PromptTokens+c.Usage.CompletionTokens > 0 {
			usageChunks++
		}
		if len(c.Choices) > 0 {
			var d struct {
				R string `json:"reasoning_content"`
			}
			_ = json.Unmarshal([]byte(c.Choices[0].Delta.RawJSON()), &d)
			reasoning.WriteString(d.R)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("openai-go stream error: %v", err)
	}
	if usageChunks > 1 {
		t.Fatalf("usage reported on %d chunks", usageChunks)
	}
	var s summary
	if len(acc.Choices) == 0 {
		t.Fatalf("no choices")
	}
	ch := acc.Choices[0]
	s.text = ch.Message.Content + ch.Message.Refusal
	s.thinking = reasoning.String()
	for _, tc := range ch.Message.ToolCalls {
		s.tools = append(s.tools, toolSum{tc.Function.Name, tc.Function.Arguments})
	}
	st2 := stopFromChat(ch.FinishReason)
	if ch.Message.Refusal != "" && st2 == stopEndTurn {
		st2 = stopRefusal
	}
	s.stop = coarseStop(st2)
	if acc.JSON.Usage.Valid() || acc.Usage.PromptTokens > 0 {
		s.in, s.out = i64(acc.Usage.PromptTokens), i64(acc.Usage.CompletionTokens)
	}
	return s
}

// anthropicSummary parses an Anthropic stream with anthropic-sdk-go and
// Message.Accumulate.
func anthropicSummary(t testing.TB, b []byte) summary {
	t.Helper()
	st := assestream.NewStream[anthropic.MessageStreamEventUnion](assestream.NewDecoder(sseResponse(b)), nil)
	var msg anthropic.Message
	for st.Next() {
		if err := msg.Accumulate(st.Current()); err != nil {
			t.Fatalf("Accumulate: %v", err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("anthropic-sdk-go stream error: %v", err)
	}
	return anthropicMessageSummary(msg)
}

func anthropicMessageSummary(msg anthropic.Message) summary {
	var s summary
	for _, c := range msg.Content {
		switch c.Type {
		case "text":
			s.text += c.Text
		case "thinking":
			s.thinking += c.Thinking
		case "tool_use":
			s.tools = append(s.tools, toolSum{c.Name, string(c.Input)})
		}
	}
	s.stop = coarseStop(string(msg.StopReason))
	u := msg.Usage
	s.in = i64(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens)
	s.out = i64(u.OutputTokens)
	return s
}

// responsesSummary parses a Responses stream with openai-go's event union,
// checking sequence numbers and that the terminal event carries every item.
func responsesSummary(t testing.TB, b []byte) summary {
	t.Helper()
	st := ossestream.NewStream[responses.ResponseStreamEventUnion](ossestream.NewDecoder(sseResponse(b)), nil)
	var final *responses.Response
	var deltaText strings.Builder
	seq := int64(-1)
	for st.Next() {
		ev := st.Current()
		if ev.SequenceNumber != seq+1 {
			t.Fatalf("sequence_number %d after %d", ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		switch ev.Type {
		case "response.output_text.delta", "response.refusal.delta":
			deltaText.WriteString(ev.Delta)
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			final = &r
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("responses stream error: %v", err)
	}
	if final == nil {
		t.Fatalf("no terminal response event")
	}
	s := responsesObjectSummary(*final)
	if deltaText.String() != s.text {
		t.Fatalf("delta text %q != final text %q", deltaText.String(), s.text)
	}
	return s
}

func responsesObjectSummary(r responses.Response) summary {
	var s summary
	hasCall, refused := false, false
	for _, it := range r.Output {
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				s.text += c.Text + c.Refusal // a refusal part is the answer's text too
				refused = refused || c.Type == "refusal"
			}
		case "reasoning":
			for _, p := range it.Summary {
				s.thinking += p.Text
			}
		case "function_call":
			hasCall = true
			s.tools = append(s.tools, toolSum{it.Name, it.Arguments.OfString})
		}
	}
	switch {
	case r.Status == "incomplete" && r.IncompleteDetails.Reason == "content_filter":
		s.stop = "refusal"
	case r.Status == "incomplete":
		s.stop = "length"
	case hasCall:
		s.stop = "tool"
	case refused:
		// a completed answer with a refusal part, as OpenAI ends one
		// (the Chat summary reads message.refusal the same way)
		s.stop = "refusal"
	default:
		s.stop = "stop"
	}
	if r.JSON.Usage.Valid() && r.Usage.JSON.InputTokens.Valid() {
		s.in, s.out = i64(r.Usage.InputTokens), i64(r.Usage.OutputTokens)
	}
	return s
}

func clientSummary(t testing.TB, d Dialect, b []byte) summary {
	switch d {
	case OpenAIChat:
		return chatSummary(t, b)
	case AnthropicMessages:
		return anthropicSummary(t, b)
	}
	return responsesSummary(t, b)
}

func jsonEqual(a, b string) bool {
	if strings.TrimSpace(a) == "" {
		a = "{}" // the source side may be an Anthropic tool without input
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func compareSummaries(t testing.TB, label string, src, got summary, to Dialect) {
	t.Helper()
	if src.text != got.text {
		t.Errorf("%s: text %q, want %q", label, got.text, src.text)
	}
	// Chat clients see reasoning as reasoning_content, Responses clients as a
	// reasoning summary; Anthropic thinking is compared everywhere.
	if src.thinking != got.thinking {
		t.Errorf("%s: thinking %q, want %q", label, got.thinking, src.thinking)
	}
	if len(src.tools) != len(got.tools) {
		t.Fatalf("%s: %d tool calls, want %d", label, len(got.tools), len(src.tools))
	}
	for i := range src.tools {
		if src.tools[i].name != got.tools[i].name || !jsonEqual(src.tools[i].args, got.tools[i].args) {
			t.Errorf("%s: tool %d = %+v, want %+v", label, i, got.tools[i], src.tools[i])
		}
	}
	if src.stop != got.stop {
		t.Errorf("%s: stop %q, want %q", label, got.stop, src.stop)
	}
	eq := func(a, b *int64) bool {
		return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) || (a == nil && b != nil && *b == 0)
	}
	if !eq(src.in, got.in) || !eq(src.out, got.out) {
		t.Errorf("%s: usage in=%v out=%v, want in=%v out=%v", label, p(got.in), p(got.out), p(src.in), p(src.out))
	}
}

func p(x *int64) any {
	if x == nil {
		return nil
	}
	return *x
}
