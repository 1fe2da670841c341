package translate

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestBareFramesRead: a relay that streams the upstream's events as JSON
// objects without "data:" (new-api#6797, new-api#6798) no longer ends a
// translated stream as a truncation: each line that is a whole JSON
// object is read as a data event, with or without blank lines between
// them, for a Chat and an Anthropic upstream alike; the client gets the
// whole answer, its finish and usage. A passthrough relays those bytes
// as the upstream sent them.
func TestBareFramesRead(t *testing.T) {
	chunk := func(delta, finish string) string {
		return `{"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
	}
	chatFrames := []string{
		chunk(`{"role":"assistant","content":""}`, "null"),
		chunk(`{"content":"Hello"}`, "null"),
		chunk(`{"content":" there"}`, "null"),
		chunk(`{}`, `"stop"`),
		`{"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`,
	}
	anthropicFrames := []string{
		`{"type":"message_start","message":{"id":"msg_b","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"usage":{"input_tokens":7,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`,
		`{"type":"message_stop"}`,
	}
	for _, c := range []struct {
		name   string
		from   Dialect
		frames []string
		sep    string
	}{
		{"chat, blank lines", OpenAIChat, chatFrames, "\n\n"},
		{"chat, one line each", OpenAIChat, chatFrames, "\n"},
		{"chat, CRLF", OpenAIChat, chatFrames, "\r\n\r\n"},
		// a relay's bare end marker, in a block of its own or in the
		// frames' one block
		{"chat, blank lines, [DONE]", OpenAIChat, append(slices.Clone(chatFrames), "[DONE]"), "\n\n"},
		{"chat, one line each, [DONE]", OpenAIChat, append(slices.Clone(chatFrames), "[DONE]"), "\n"},
		{"anthropic, blank lines", AnthropicMessages, anthropicFrames, "\n\n"},
		{"anthropic, one line each", AnthropicMessages, anthropicFrames, "\n"},
		{"anthropic, one line each, [DONE]", AnthropicMessages, append(slices.Clone(anthropicFrames), "[DONE]"), "\n"},
	} {
		body := strings.Join(c.frames, c.sep) + c.sep
		for _, to := range allDialects {
			if to == c.from {
				continue
			}
			label := c.name + " -> " + to.String()
			out, _, tr, err := collectWith(c.from, to, "m", strings.NewReader(body), true)
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			if tr.Truncated() || tr.UpstreamError() != nil {
				t.Errorf("%s: truncated %v, upstream error %v:\n%s", label, tr.Truncated(), tr.UpstreamError(), out)
				continue
			}
			s := clientSummary(t, to, out)
			if s.text != "Hello there" || s.stop != "stop" {
				t.Errorf("%s: text %q stop %q:\n%s", label, s.text, s.stop, out)
			}
			if u := tr.Usage(); u.InputTokens == nil || *u.InputTokens != 7 || u.OutputTokens == nil || *u.OutputTokens != 2 {
				t.Errorf("%s: usage %v", label, u)
			}
		}
	}

	// passthrough: the upstream's bytes, as they came
	body := strings.Join(chatFrames, "\n\n") + "\n\n"
	out, _, _, err := collect(t, OpenAIChat, OpenAIChat, "", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, []byte(body)) {
		t.Errorf("passthrough changed the bare frames:\n%s", out)
	}

	// a block with a line that is no whole JSON object is not read as frames
	body = chatFrames[0] + "\n\n" + `{"id":"chatcmpl-b","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel` + "\n" + `lo"},"finish_reason":"stop"}]}` + "\n\n"
	_, _, tr, _ := collectWith(OpenAIChat, AnthropicMessages, "m", strings.NewReader(body), false)
	if !tr.Truncated() {
		t.Errorf("a JSON value cut over two lines was read as a frame")
	}
}
