package translate

import (
	"testing"

	"github.com/tidwall/gjson"
)

// Tests for translation defects public gateway bug reports describe
// (LiteLLM, CLIProxyAPI, claude-code-router, new-api, Bifrost): each names
// the report it reproduces.

// An upstream that ends a turn with tool calls but finish_reason "stop"
// (Gemini's and Ollama's OpenAI-compatible endpoints do; LiteLLM
// issue 21041 and pull request 34718) or stop_reason "end_turn" must
// still tell the client to run the tools: Anthropic clients (Claude
// Code) run tool_use blocks only on stop_reason "tool_use", and OpenAI
// clients key off finish_reason "tool_calls".
func TestToolCallsWithStopFinishAreToolUse(t *testing.T) {
	call := `{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`
	in := ccChunk(call, "", "") + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n"
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		out, _, err := run(t, OpenAIChat, to, in)
		if err != nil {
			t.Fatal(err)
		}
		if s := parseOK(t, to, out); s.stop != "tool" || len(s.tools) != 1 || s.tools[0].args != `{"a":1}` {
			t.Errorf("Chat stream to %s: %+v", to, s)
		}
	}
	body := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}]}`
	out, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(body), "cm")
	if err != nil || gjson.GetBytes(out, "stop_reason").Str != "tool_use" {
		t.Errorf("Chat answer to Anthropic: %v %s", err, out)
	}

	// the same from an Anthropic-compatible upstream: end_turn after tool_use
	am := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	sout, _, err := run(t, AnthropicMessages, OpenAIChat, am)
	if err != nil {
		t.Fatal(err)
	}
	if s := parseOK(t, OpenAIChat, sout); s.stop != "tool" {
		t.Errorf("Anthropic stream to Chat: %+v", s)
	}
	amBody := `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":9}}`
	out, _, err = TranslateResponse(AnthropicMessages, OpenAIChat, []byte(amBody), "cm")
	if err != nil || gjson.GetBytes(out, "choices.0.finish_reason").Str != "tool_calls" {
		t.Errorf("Anthropic answer to Chat: %v %s", err, out)
	}
	// finish reasons that say something else are kept
	trunc := ccChunk(call, "", "") + ccChunk(`{}`, "length", "") + ccUsage + "data: [DONE]\n\n"
	out2, _, _ := run(t, OpenAIChat, AnthropicMessages, trunc)
	if s := parseOK(t, AnthropicMessages, out2); s.stop != "length" {
		t.Errorf("length with a tool call: %+v", s)
	}
}

// Anthropic takes only image/jpeg, image/png, image/gif and image/webp as
// an image's media_type and refuses data that does not match it ("Image
// does not match the provided media type"). OpenAI clients label JPEG
// data URLs image/jpg, or send another type than the bytes hold
// (NousResearch/hermes-agent issue 55432; anthropics/claude-code issues
// 12015, 13131): the type sent is the one the bytes show, else the label
// normalised.
func TestImageMediaTypeForAnthropic(t *testing.T) {
	const (
		png  = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGAAAAAFAAE="
		jpeg = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJ"
		gif  = "R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs="
		webp = "UklGRiQAAABXRUJQVlA4IBgAAAAwAQCdASoBAAEAAwA0JaQAA3AA/vuUAAA="
		text = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="
	)
	for _, c := range []struct{ label, data, want string }{
		{"image/jpg", jpeg, "image/jpeg"},
		{"image/png", jpeg, "image/jpeg"}, // the bytes win
		{"image/jpeg", png, "image/png"},
		{"application/octet-stream", gif, "image/gif"},
		{"", webp, "image/webp"},
		{"IMAGE/JPG", text, "image/jpeg"}, // unknown bytes: the label, normalised
		{"image/PNG", text, "image/png"},
		{"image/webp", webp, "image/webp"},
	} {
		for _, from := range []Dialect{OpenAIChat, OpenAIResponses} {
			url := "data:" + c.label + ";base64," + c.data
			body := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}}]}]}`
			if from == OpenAIResponses {
				body = `{"model":"claude-sonnet-4-5","input":[{"role":"user","content":[{"type":"input_image","image_url":"` + url + `"}]}]}`
			}
			out, err := TranslateRequest(from, AnthropicMessages, []byte(body), "")
			if err != nil {
				t.Fatalf("%s %s: %v", from, c.label, err)
			}
			src := gjson.GetBytes(out, "messages.0.content.0.source")
			if src.Get("media_type").Str != c.want || src.Get("data").Str != c.data {
				t.Errorf("%s %q: source %s, want media_type %s", from, c.label, src.Raw, c.want)
			}
		}
	}
}
