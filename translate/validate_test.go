package translate

import (
	"errors"
	"testing"
)

func TestValidateRequest(t *testing.T) {
	ok := []struct {
		d    Dialect
		body string
	}{
		// valid in their own dialect, untranslatable elsewhere: accepted for passthrough
		{OpenAIChat, `{"model":"m","n":3,"messages":[{"role":"user","content":"x"}]}`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"Zm9v","format":"wav"}}]}]}`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`},
		{AnthropicMessages, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_1"}}]}]}`},
		{AnthropicMessages, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"future_block","x":1}]}]}`},
		{OpenAIResponses, `{"model":"m","input":"x","previous_response_id":"resp_1"}`},
		{AnthropicMessages, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"x_new_field":true}`},
	}
	for _, c := range ok {
		if err := ValidateRequest(c.d, []byte(c.body)); err != nil {
			t.Errorf("%s %s: %v", c.d, c.body, err)
		}
		// but translation refuses them with a clear message, except the last
		if c.body != ok[len(ok)-1].body {
			to := OpenAIChat
			if c.d == OpenAIChat {
				to = AnthropicMessages
			}
			if _, err := TranslateRequest(c.d, to, []byte(c.body), ""); err == nil {
				t.Errorf("%s %s: translation should fail", c.d, c.body)
			}
		}
	}
	bad := []struct {
		d    Dialect
		body string
	}{
		{OpenAIChat, `{"model":"m","messages":[{"role":"tool","tool_call_id":"x","content":"r"}]}`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,***"}}]}]}`},
		{AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]}`},
		{AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":5}]}`},
		{OpenAIResponses, `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"r"}]}`},
		{OpenAIResponses, `{"model":5,"input":"x"}`},
		{0, `{"model":"m"}`},
	}
	for _, c := range bad {
		err := ValidateRequest(c.d, []byte(c.body))
		var e *Error
		if !errors.As(err, &e) || e.Class != ErrInvalidRequest {
			t.Errorf("%s %s: got %v", c.d, c.body, err)
		}
	}
}

func TestDuplicateTopLevelKeysRejected(t *testing.T) {
	for _, body := range []string{
		`{"model":"a","model":"b","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"a","\u006dodel":"b","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"a","messages":[],"messages":[{"role":"user","content":"hi"}]}`,
	} {
		if _, _, err := RequestInfo(OpenAIChat, []byte(body)); err == nil {
			t.Errorf("RequestInfo accepted %s", body)
		}
		if err := ValidateRequest(OpenAIChat, []byte(body)); err == nil {
			t.Errorf("ValidateRequest accepted %s", body)
		}
	}
	if err := ValidateRequest(OpenAIChat, []byte(`{"model":"a","messages":[{"role":"user","content":"hi","x":{"model":1,"model":2}}]}`)); err != nil {
		t.Errorf("nested duplicates are not ours to judge: %v", err)
	}
}
