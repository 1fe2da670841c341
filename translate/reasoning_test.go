package translate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

const (
	thinkingText = "The user wants 17 × 23. 17 × 20 = 340, 17 × 3 = 51, so 391."
	thinkingSig  = "eUSoh6pZJGEC/197RqTPdbDdmTqOAKmfJfpwXilW5zUPk9EzE4Ov0VauZ8zXFgTrD9HqqYI5F/38bPJxHKls+CKKUOGfjin5suINjiuB0BVmm2urmHh6m2KKB6S5Ffcx+cmpQlvwXN2wYqxPHUA8VV1fgpLPw4AtB2HS224IhAY4rG0LYzTFmxrAjDgtE7JGCW5Gf1iao7kNg3VeNVZIdHmy9dt7PfT9KnbsjF0uMMS/OOmbAfJE6sXNVy09ywKACj+eHftc/4uAJwbtUuHJq9RHox46yIaAen2gWkOv8nHkvSlySp3fC0dU8dyDo7JxtMo2u0iFQQeuALEGIY7iRGsjPTM="
)

func readTestdata(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawChatStream reads a Chat stream chunk by chunk as a client without an
// SDK does: the reasoning_content deltas joined, the thinking_blocks
// deltas, the content joined.
func rawChatStream(t *testing.T, out []byte) (reasoning, content string, blocks []gjson.Result) {
	t.Helper()
	var r, c strings.Builder
	for _, ev := range readAllEvents(t, bytes.NewReader(out)) {
		if string(ev.Data) == "[DONE]" {
			continue
		}
		d := gjson.GetBytes(ev.Data, "choices.0.delta")
		r.WriteString(d.Get("reasoning_content").Str)
		c.WriteString(d.Get("content").Str)
		blocks = append(blocks, d.Get("thinking_blocks").Array()...)
	}
	return r.String(), c.String(), blocks
}

// TestChatReasoningFromAnthropicStream: a Chat client of a thinking
// Anthropic upstream gets the thinking as delta.reasoning_content (seen by
// openai-go and by a raw reader), the signed block once in thinking_blocks,
// and the answer unchanged; with OmitReasoning none of it.
func TestChatReasoningFromAnthropicStream(t *testing.T) {
	src := readTestdata(t, "anthropic-messages/thinking.sse")
	out, _, _, err := collect(t, AnthropicMessages, OpenAIChat, "m", bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	sdk := chatSummary(t, out)
	if sdk.thinking != thinkingText {
		t.Errorf("openai-go reasoning_content %q, want %q", sdk.thinking, thinkingText)
	}
	want := anthropicSummary(t, src)
	if sdk.text != want.text || sdk.text == "" {
		t.Errorf("answer %q, want %q", sdk.text, want.text)
	}
	r, c, blocks := rawChatStream(t, out)
	if r != thinkingText || c != want.text {
		t.Errorf("raw reader: reasoning %q content %q", r, c)
	}
	if len(blocks) != 1 || blocks[0].Get("type").Str != "thinking" || blocks[0].Get("thinking").Str != thinkingText ||
		blocks[0].Get("signature").Str != thinkingSig {
		t.Errorf("thinking_blocks %v", blocks)
	}

	var off []byte
	tr := NewStreamTranslator(AnthropicMessages, OpenAIChat, "m", EventWriterFunc(func(p []byte) error {
		off = append(off, p...)
		return nil
	}))
	tr.SetOptions(ResponseOptions{OmitReasoning: true})
	if err := tr.Run(bytes.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	r, c, blocks = rawChatStream(t, off)
	if r != "" || len(blocks) != 0 || c != want.text || bytes.Contains(off, []byte("reasoning_content")) {
		t.Errorf("reasoning_content off: reasoning %q blocks %d content %q", r, len(blocks), c)
	}
}

// TestChatReasoningRedactedStream: a redacted_thinking block reaches a Chat
// client in thinking_blocks as {type:"redacted_thinking",data}.
func TestChatReasoningRedactedStream(t *testing.T) {
	src := readTestdata(t, "anthropic-messages/redacted-thinking.sse")
	out, _, _, err := collect(t, AnthropicMessages, OpenAIChat, "m", bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	_, _, blocks := rawChatStream(t, out)
	var red, signed int
	for _, b := range blocks {
		switch b.Get("type").Str {
		case "redacted_thinking":
			if b.Get("data").Str == "" {
				t.Errorf("redacted block without data: %s", b.Raw)
			}
			red++
		case "thinking":
			if b.Get("signature").Str == "" {
				t.Errorf("thinking block without signature: %s", b.Raw)
			}
			signed++
		}
	}
	if red == 0 {
		t.Errorf("no redacted_thinking in thinking_blocks: %s", out)
	}
}

// TestChatReasoningFromAnthropicResponse: the same for a whole response.
func TestChatReasoningFromAnthropicResponse(t *testing.T) {
	src := readTestdata(t, "anthropic-messages/response-thinking.json")
	out, _, err := TranslateResponse(AnthropicMessages, OpenAIChat, src, "m")
	if err != nil {
		t.Fatal(err)
	}
	msg := gjson.GetBytes(out, "choices.0.message")
	wantThinking := gjson.GetBytes(src, `content.#(type=="thinking").thinking`).Str
	if msg.Get("reasoning_content").Str != wantThinking || wantThinking == "" {
		t.Errorf("reasoning_content %q, want %q", msg.Get("reasoning_content").Str, wantThinking)
	}
	if got := msg.Get("content").Str; got != "17 × 23 = **391**." {
		t.Errorf("content %q", got)
	}
	tb := msg.Get("thinking_blocks").Array()
	if len(tb) != 2 || tb[0].Get("signature").Str != gjson.GetBytes(src, `content.0.signature`).Str ||
		tb[0].Get("thinking").Str != wantThinking || tb[1].Get("type").Str != "redacted_thinking" ||
		tb[1].Get("data").Str != gjson.GetBytes(src, `content.1.data`).Str {
		t.Errorf("thinking_blocks %s", msg.Get("thinking_blocks").Raw)
	}
	off, _, err := TranslateResponseWith(AnthropicMessages, OpenAIChat, src, "m", ResponseOptions{OmitReasoning: true})
	if err != nil {
		t.Fatal(err)
	}
	if m := gjson.GetBytes(off, "choices.0.message"); m.Get("reasoning_content").Exists() || m.Get("thinking_blocks").Exists() ||
		m.Get("content").Str != "17 × 23 = **391**." {
		t.Errorf("reasoning_content off: %s", off)
	}
}
