package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDialectString(t *testing.T) {
	for d, s := range map[Dialect]string{OpenAIChat: "openai_chat", AnthropicMessages: "anthropic_messages", OpenAIResponses: "openai_responses", 0: "unknown"} {
		if d.String() != s {
			t.Errorf("%d: %q", d, d.String())
		}
		if d != 0 {
			if p, ok := ParseDialect(s); !ok || p != d {
				t.Errorf("ParseDialect(%q)", s)
			}
		}
	}
	if d, ok := DialectForPath("/v1/messages"); !ok || d != AnthropicMessages {
		t.Error("DialectForPath")
	}
}

func TestErrorBody(t *testing.T) {
	msg := "bad \"quote\" \n and \\ and \x01 and <html> \u2028"
	for _, d := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		for c := ErrInvalidRequest; c <= ErrAPI; c++ {
			b := ErrorBody(d, c, msg)
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatalf("%s %s: invalid JSON %s: %v", d, c, b, err)
			}
			e := v["error"].(map[string]any)
			if e["message"] != msg {
				t.Errorf("%s %s: message %q", d, c, e["message"])
			}
			if d == AnthropicMessages {
				if v["type"] != "error" || e["type"] == "" {
					t.Errorf("anthropic shape: %s", b)
				}
			} else if _, ok := e["code"]; !ok {
				t.Errorf("openai shape: %s", b)
			}
		}
	}
	if s := ErrOverloaded.Status(AnthropicMessages); s != 529 {
		t.Error(s)
	}
	if s := ErrOverloaded.Status(OpenAIChat); s != 503 {
		t.Error(s)
	}
	if !strings.Contains(string(ErrorBody(AnthropicMessages, ErrOverloaded, "x")), `"overloaded_error"`) {
		t.Error("overloaded type")
	}
}

func TestTranslateError(t *testing.T) {
	cases := []struct {
		from, to Dialect
		status   int
		body     string
		wantType string
		wantMsg  string
	}{
		{AnthropicMessages, OpenAIChat, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "service_unavailable_error", "Overloaded"},
		{OpenAIChat, AnthropicMessages, 401, `{"error":{"message":"Incorrect API key provided: sk-proj-abcdefghijklmnop1234. You can find your API key at https://platform.openai.com.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, "authentication_error", "Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com."},
		{OpenAIChat, AnthropicMessages, 502, `<html><body>Bad gateway</body></html>`, "api_error", "upstream error: HTTP 502"},
		{OpenAIChat, AnthropicMessages, 503, ``, "api_error", "upstream error: HTTP 503"},
		{OpenAIChat, OpenAIResponses, 400, `{"detail":"Instructions are required"}`, "invalid_request_error", "Instructions are required"},
		{OpenAIChat, AnthropicMessages, 429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, "rate_limit_error", "You exceeded your current quota"},
		{AnthropicMessages, AnthropicMessages, 500, `upstream said key=abcdef123456 failed`, "api_error", "upstream said [redacted] failed"},
	}
	for i, c := range cases {
		b := TranslateError(c.from, c.to, c.status, []byte(c.body))
		var v struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%d: %s", i, b)
		}
		if v.Error.Type != c.wantType || v.Error.Message != c.wantMsg {
			t.Errorf("%d: got %s", i, b)
		}
	}
	same := `{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"},"request_id":"req_1"}`
	if got := TranslateError(AnthropicMessages, AnthropicMessages, 404, []byte(same)); string(got) != same {
		t.Errorf("same-dialect error should pass: %s", got)
	}
}

func TestRequestInfo(t *testing.T) {
	m, s, err := RequestInfo(OpenAIChat, []byte(`{"model":"gpt-x","stream":true,"messages":[]}`))
	if err != nil || m != "gpt-x" || !s {
		t.Fatal(m, s, err)
	}
	bad := []struct {
		d    Dialect
		body string
		want string
	}{
		{OpenAIChat, `[]`, "JSON object"},
		{OpenAIChat, `{"model":1,"messages":[]}`, "model"},
		{OpenAIChat, `{"messages":[]}`, "model"},
		{OpenAIChat, `{"model":"m"}`, "messages"},
		{AnthropicMessages, `{"model":"m","messages":{}}`, "messages"},
		{OpenAIResponses, `{"model":"m"}`, "input"},
		{OpenAIResponses, `{"model":"m","input":5}`, "input"},
		{OpenAIChat, `{"model":"m","messages":[],"stream":"yes"}`, "stream"},
		{OpenAIChat, `{"model":"m",`, "valid JSON"},
		{OpenAIChat, ``, "empty"},
	}
	for _, c := range bad {
		_, _, err := RequestInfo(c.d, []byte(c.body))
		var e *Error
		if !errors.As(err, &e) || e.Class != ErrInvalidRequest || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v", c.d, c.body, err)
		}
	}
	huge := append([]byte(`{"model":"m","messages":[],"x":"`), bytes.Repeat([]byte("a"), MaxRequestSize)...)
	huge = append(huge, `"}`...)
	_, _, err = RequestInfo(OpenAIChat, huge)
	var e *Error
	if !errors.As(err, &e) || e.Class != ErrRequestTooLarge {
		t.Errorf("huge body: %v", err)
	}
}

func TestSetModelPassthrough(t *testing.T) {
	in := []byte(`{"model" : "a", "messages":[{"role":"user","content":"hi"}],"x_unknown":{"k":[1,2]}}`)
	out, err := TranslateRequest(OpenAIChat, OpenAIChat, in, "b")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"model" : "b", "messages":[{"role":"user","content":"hi"}],"x_unknown":{"k":[1,2]}}` {
		t.Errorf("got %s", out)
	}
	out, _ = TranslateRequest(OpenAIChat, OpenAIChat, in, "a")
	if !bytes.Equal(out, in) {
		t.Error("same model must not change bytes")
	}
}

func TestResponseUsageFixtures(t *testing.T) {
	u := ResponseUsage(AnthropicMessages, []byte(`{"usage":{"input_tokens":3,"cache_read_input_tokens":1111,"cache_creation_input_tokens":418,"output_tokens":9}}`))
	if *u.InputTokens != 1532 || *u.CacheReadTokens != 1111 || *u.CacheWriteTokens != 418 || *u.OutputTokens != 9 || u.ReasoningTokens != nil {
		t.Error(u)
	}
	u = ResponseUsage(OpenAIChat, []byte(`{"usage":{"prompt_tokens":10,"completion_tokens":87,"completion_tokens_details":{"reasoning_tokens":64}}}`))
	if *u.InputTokens != 10 || *u.ReasoningTokens != 64 || u.CacheReadTokens != nil {
		t.Error(u)
	}
	u = ResponseUsage(OpenAIResponses, []byte(`{"usage":{"input_tokens":4020,"input_tokens_details":{"cached_tokens":4012},"output_tokens":5}}`))
	if *u.InputTokens != 4020 || *u.CacheReadTokens != 4012 || u.CacheWriteTokens != nil {
		t.Error(u)
	}
	if !ResponseUsage(OpenAIChat, []byte(`{}`)).IsZero() {
		t.Error("no usage must be zero")
	}
}
