package translate

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestResponseStopMapping(t *testing.T) {
	am := func(stop, content string) string {
		return `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":` + content + `,"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2}}`
	}
	cases := []struct {
		body       string
		chatFinish string
		rsStatus   string
		rsReason   string
	}{
		{am("end_turn", `[{"type":"text","text":"hi"}]`), "stop", "completed", ""},
		{am("stop_sequence", `[{"type":"text","text":"hi"}]`), "stop", "completed", ""},
		{am("max_tokens", `[{"type":"text","text":"hi"}]`), "length", "incomplete", "max_output_tokens"},
		{am("tool_use", `[{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}]`), "tool_calls", "completed", ""},
		{am("refusal", `[]`), "content_filter", "incomplete", "content_filter"},
		{am("pause_turn", `[{"type":"text","text":"hi"}]`), "stop", "completed", ""},
		{am("model_context_window_exceeded", `[{"type":"text","text":"hi"}]`), "length", "incomplete", "max_output_tokens"},
	}
	for _, c := range cases {
		out, _, err := TranslateResponse(AnthropicMessages, OpenAIChat, []byte(c.body), "m")
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(out, "choices.0.finish_reason").Str; got != c.chatFinish {
			t.Errorf("%s: finish_reason %s", c.body, got)
		}
		out, _, _ = TranslateResponse(AnthropicMessages, OpenAIResponses, []byte(c.body), "m")
		if s, r := gjson.GetBytes(out, "status").Str, gjson.GetBytes(out, "incomplete_details.reason").Str; s != c.rsStatus || r != c.rsReason {
			t.Errorf("%s: status %s %s", c.body, s, r)
		}
	}
	cc := func(fr string) string {
		msg := `{"role":"assistant","content":"x"}`
		if fr == "tool_calls" || fr == "function_call" {
			// a tool stop comes with its call (one without is an end_turn:
			// TestPeerToolStopWithoutToolCall)
			msg = `{"role":"assistant","content":"x","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
		}
		return `{"id":"chatcmpl-1","object":"chat.completion","created":3,"model":"g","choices":[{"index":0,"message":` + msg + `,"finish_reason":"` + fr + `"}]}`
	}
	for fr, want := range map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal", "function_call": "tool_use"} {
		out, u, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(cc(fr)), "m")
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(out, "stop_reason").Str; got != want {
			t.Errorf("%s: %s", fr, got)
		}
		if !u.IsZero() || gjson.GetBytes(out, "usage.cache_read_input_tokens").Exists() {
			t.Errorf("usage invented: %s", out)
		}
	}
	// a tool call cut off by max_tokens: arguments are not JSON, input stays an object
	trunc := `{"id":"chatcmpl-1","object":"chat.completion","created":3,"model":"g","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": \"unfin"}}]},"finish_reason":"length"}]}`
	out, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(trunc), "m")
	if err != nil || gjson.GetBytes(out, "content.0.input").Raw != "{}" || gjson.GetBytes(out, "stop_reason").Str != "max_tokens" {
		t.Errorf("%v %s", err, out)
	}
	if _, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(`<html>`), "m"); err == nil {
		t.Error("garbage accepted")
	}
	if _, _, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(`{"object":"chat.completion"}`), "m"); err == nil {
		t.Error("no choices accepted")
	}
	// an empty choices array (Gemini's answer to a prompt its safety filter
	// blocks) is an answer without content that stopped for a refusal (as
	// the streamed case), never the key's failure
	out, u, err := TranslateResponse(OpenAIChat, AnthropicMessages, []byte(`{"id":"x","object":"chat.completion","model":"gemini-2.5-pro","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}}`), "m")
	if err != nil || gjson.GetBytes(out, "content").Raw != "[]" || gjson.GetBytes(out, "stop_reason").Str != "refusal" || u.InputTokens == nil || *u.InputTokens != 9 {
		t.Errorf("empty choices: %v %s", err, out)
	}
}

func TestErrorParam(t *testing.T) {
	_, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,!!"}}]}]}`), "")
	e := err.(*Error)
	if got := gjson.GetBytes(e.Body(OpenAIChat), "error.param").Str; got != "messages[0].content[0].image_url.url" {
		t.Errorf("param %q", got)
	}
	if got := gjson.GetBytes(e.Body(AnthropicMessages), "error.type").Str; got != "invalid_request_error" {
		t.Errorf("type %q", got)
	}
}
