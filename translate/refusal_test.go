package translate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	ossestream "github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// chatRefusalStream is an OpenAI Chat stream of a refusal as OpenAI sends
// it (the role chunk with "refusal":"", delta.refusal fragments,
// finish_reason "stop"; openai-python's refusal.stream.sse fixture).
const chatRefusalStream = `data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":""},"finish_reason":null}]}

data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"refusal":"I'm sorry,"},"finish_reason":null}]}

data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"refusal":" I can't."},"finish_reason":null}]}

data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}

data: [DONE]

`

// TestRefusalStaysARefusal: the model's refusal reaches an OpenAI client
// as a refusal, not as answer text: a Chat upstream's message.refusal /
// delta.refusal becomes a Responses client's refusal content part
// (response.refusal.delta / .done in a stream), and a Responses
// upstream's refusal part a Chat client's message.refusal /
// delta.refusal (OpenAI API reference: the chat completion message's
// "refusal", the Responses output message's refusal content, the
// response.refusal.delta and response.refusal.done events). An Anthropic
// client, whose dialect has no refusal block, still gets the text with
// stop_reason "refusal".
func TestRefusalStaysARefusal(t *testing.T) {
	const refusal = "I'm sorry, I can't."

	t.Run("whole chat to responses", func(t *testing.T) {
		body := `{"id":"chatcmpl-r","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I'm sorry, I can't."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}`
		out, _, err := TranslateResponse(OpenAIChat, OpenAIResponses, []byte(body), "m")
		if err != nil {
			t.Fatal(err)
		}
		var r responses.Response
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Output) != 1 || len(r.Output[0].Content) != 1 {
			t.Fatalf("output %s", out)
		}
		c := r.Output[0].Content[0]
		if c.Type != "refusal" || c.Refusal != refusal || r.OutputText() != "" {
			t.Errorf("content part %s, output_text %q; want a refusal part %q", c.RawJSON(), r.OutputText(), refusal)
		}
	})

	t.Run("whole responses to chat", func(t *testing.T) {
		body := `{"id":"resp_r","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[{"id":"msg_r","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"I'm sorry, I can't."}]}],"usage":{"input_tokens":5,"output_tokens":4,"total_tokens":9}}`
		out, _, err := TranslateResponse(OpenAIResponses, OpenAIChat, []byte(body), "m")
		if err != nil {
			t.Fatal(err)
		}
		var cc openai.ChatCompletion
		if err := json.Unmarshal(out, &cc); err != nil {
			t.Fatal(err)
		}
		m := cc.Choices[0].Message
		if m.Refusal != refusal || m.Content != "" || gjson.GetBytes(out, "choices.0.message.content").Type != gjson.Null {
			t.Errorf("message %s; want refusal %q and content null", m.RawJSON(), refusal)
		}
	})

	t.Run("whole reasoning and refusal to chat", func(t *testing.T) {
		body := `{"id":"resp_r","object":"response","created_at":1,"status":"completed","model":"o3","output":[{"id":"rs_r","type":"reasoning","summary":[{"type":"summary_text","text":"Not allowed."}]},{"id":"msg_r","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"No."}]}]}`
		out, _, err := TranslateResponse(OpenAIResponses, OpenAIChat, []byte(body), "m")
		if err != nil {
			t.Fatal(err)
		}
		m := gjson.GetBytes(out, "choices.0.message")
		if m.Get("content").Type != gjson.Null || m.Get("refusal").Str != "No." || m.Get("reasoning_content").Str != "Not allowed." || !json.Valid(out) {
			t.Errorf("message %s", m.Raw)
		}
	})

	t.Run("whole text and refusal to chat", func(t *testing.T) {
		body := `{"id":"resp_r","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[{"id":"msg_r","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Well.","annotations":[]},{"type":"refusal","refusal":"No."}]}]}`
		out, _, err := TranslateResponse(OpenAIResponses, OpenAIChat, []byte(body), "m")
		if err != nil {
			t.Fatal(err)
		}
		if c, rf := gjson.GetBytes(out, "choices.0.message.content").Str, gjson.GetBytes(out, "choices.0.message.refusal").Str; c != "Well." || rf != "No." {
			t.Errorf("content %q refusal %q in %s", c, rf, out)
		}
	})

	t.Run("whole chat to anthropic", func(t *testing.T) {
		body := `{"id":"chatcmpl-r","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I'm sorry, I can't."},"finish_reason":"stop"}]}`
		out, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(body), "m")
		if err != nil {
			t.Fatal(err)
		}
		if txt, sr := gjson.GetBytes(out, "content.0.text").Str, gjson.GetBytes(out, "stop_reason").Str; txt != refusal || sr != "refusal" {
			t.Errorf("text %q stop_reason %q in %s", txt, sr, out)
		}
	})

	t.Run("stream chat to responses", func(t *testing.T) {
		out, _, _, err := collect(t, OpenAIChat, OpenAIResponses, "m", strings.NewReader(chatRefusalStream))
		if err != nil {
			t.Fatal(err)
		}
		st := ossestream.NewStream[responses.ResponseStreamEventUnion](ossestream.NewDecoder(sseResponse(out)), nil)
		var deltas, done, partAdded, partDone string
		var final *responses.Response
		for st.Next() {
			ev := st.Current()
			switch ev.Type {
			case "response.output_text.delta", "response.output_text.done":
				t.Errorf("refusal relayed as output_text: %s", ev.RawJSON())
			case "response.refusal.delta":
				deltas += ev.Delta
			case "response.refusal.done":
				done = ev.Refusal
			case "response.content_part.added":
				partAdded = ev.Part.Type
			case "response.content_part.done":
				partDone = ev.Part.Type + ":" + ev.Part.Refusal
			case "response.completed", "response.incomplete":
				r := ev.Response
				final = &r
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if deltas != refusal || done != refusal || partAdded != "refusal" || partDone != "refusal:"+refusal {
			t.Errorf("deltas %q done %q part added %q done %q", deltas, done, partAdded, partDone)
		}
		if final == nil || len(final.Output) != 1 || len(final.Output[0].Content) != 1 || final.Output[0].Content[0].Type != "refusal" || final.Output[0].Content[0].Refusal != refusal {
			t.Errorf("terminal response without the refusal part:\n%s", out)
		}
	})

	t.Run("stream responses to chat", func(t *testing.T) {
		body, err := os.ReadFile(filepath.Join(testdataDir(t), "openai-responses", "refusal.sse"))
		if err != nil {
			t.Fatal(err)
		}
		out, _, _, err := collect(t, OpenAIResponses, OpenAIChat, "m", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		st := ossestream.NewStream[openai.ChatCompletionChunk](ossestream.NewDecoder(sseResponse(out)), nil)
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			ch := st.Current()
			acc.AddChunk(ch)
			if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
				t.Errorf("refusal relayed as delta.content: %s", ch.RawJSON())
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if m := acc.Choices[0].Message; m.Refusal != "I'm sorry, but I can't help with that." || m.Content != "" {
			t.Errorf("accumulated refusal %q content %q:\n%s", m.Refusal, m.Content, out)
		}
	})

	t.Run("stream chat to anthropic", func(t *testing.T) {
		out, _, _, err := collect(t, OpenAIChat, AnthropicMessages, "m", strings.NewReader(chatRefusalStream))
		if err != nil {
			t.Fatal(err)
		}
		s := anthropicSummary(t, out)
		if s.text != refusal || s.stop != "refusal" {
			t.Errorf("text %q stop %q", s.text, s.stop)
		}
	})
}

// TestRefusalEndsAsOpenAIEndsIt: an answer that carries its refusal as a
// refusal part ends between the OpenAI dialects as OpenAI ends one, a
// normal finish: a Chat refusal (finish_reason "stop") reaches a Responses
// client as status "completed" with no incomplete_details (streamed:
// response.completed), and a Responses refusal (status "completed") a
// Chat client with finish_reason "stop" (MAPPING.md §3.3: CC stop → RS
// completed, RS completed → CC stop; OpenAI Structured Outputs guide,
// "Refusals"). An Anthropic refusal, which has no refusal part, still
// ends as content_filter for both.
func TestRefusalEndsAsOpenAIEndsIt(t *testing.T) {
	chatWhole := `{"id":"chatcmpl-r","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"No."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}`
	rsWhole := `{"id":"resp_r","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[{"id":"msg_r","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"No."}]}],"usage":{"input_tokens":5,"output_tokens":4,"total_tokens":9}}`
	amWhole := `{"id":"msg_r","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"I can't."}],"stop_reason":"refusal","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":4}}`

	status := func(out []byte) string {
		return gjson.GetBytes(out, "status").Str + "/" + gjson.GetBytes(out, "incomplete_details.reason").Str
	}
	for _, c := range []struct {
		name     string
		from, to Dialect
		body     string
		get      func([]byte) string
		want     string
	}{
		{"chat refusal to responses", OpenAIChat, OpenAIResponses, chatWhole, status, "completed/"},
		{"responses refusal to chat", OpenAIResponses, OpenAIChat, rsWhole, func(b []byte) string { return gjson.GetBytes(b, "choices.0.finish_reason").Str }, "stop"},
		{"anthropic refusal to responses", AnthropicMessages, OpenAIResponses, amWhole, status, "incomplete/content_filter"},
		{"anthropic refusal to chat", AnthropicMessages, OpenAIChat, amWhole, func(b []byte) string { return gjson.GetBytes(b, "choices.0.finish_reason").Str }, "content_filter"},
	} {
		out, _, err := TranslateResponse(c.from, c.to, []byte(c.body), "m")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := c.get(out); got != c.want {
			t.Errorf("whole %s: %q, want %q:\n%s", c.name, got, c.want, out)
		}
	}

	// streamed: the terminal event and the finish_reason chunk
	out, _, _, err := collect(t, OpenAIChat, OpenAIResponses, "m", strings.NewReader(chatRefusalStream))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "event: response.completed\n") || strings.Contains(string(out), "response.incomplete") || strings.Contains(string(out), "content_filter") {
		t.Errorf("stream chat refusal to responses: want response.completed without content_filter:\n%s", out)
	}
	body, err := os.ReadFile(filepath.Join(testdataDir(t), "openai-responses", "refusal.sse"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, _, err = collect(t, OpenAIResponses, OpenAIChat, "m", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"finish_reason":"stop"`) || strings.Contains(string(out), "content_filter") {
		t.Errorf("stream responses refusal to chat: want finish_reason stop:\n%s", out)
	}
}
