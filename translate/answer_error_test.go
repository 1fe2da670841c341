package translate

import (
	"strings"
	"testing"
)

// TestAnswerError: a 2xx body that is an error object is found, with the
// status its structured type implies; answers and other JSON are not.
func TestAnswerError(t *testing.T) {
	cases := []struct {
		up     Dialect
		body   string
		status int // 0: not an error object
		typ    string
		msg    string
	}{
		{OpenAIChat, `{"error":{"message":"upstream says no","type":"server_error","param":null,"code":null}}`, 500, "server_error", "upstream says no"},
		{OpenAIChat, `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`, 400, "context_length_exceeded", "too long"},
		{OpenAIChat, `{"error":{"message":"slow","type":"requests","code":"rate_limit_exceeded"}}`, 429, "rate_limit_exceeded", "slow"},
		{OpenAIChat, `{"error":"upstream says no"}`, 500, "server_error", "upstream says no"},
		{OpenAIChat, `{"error":{"message":"key sk-abcdefghijklmnopqrstuvwx is bad","type":"server_error"}}`, 500, "server_error", "key [redacted] is bad"},
		{AnthropicMessages, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 529, "overloaded_error", "Overloaded"},
		{AnthropicMessages, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`, 400, "invalid_request_error", "prompt is too long"},
		{AnthropicMessages, `{"error":{"type":"authentication_error","message":"bad key"}}`, 401, "authentication_error", "bad key"},
		{OpenAIResponses, `{"error":{"message":"no","type":"server_error"}}`, 500, "server_error", "no"},
		// not error objects
		{OpenAIChat, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"error":null}`, 0, "", ""},
		{OpenAIChat, `{"error":""}`, 0, "", ""},
		{OpenAIChat, `{}`, 0, "", ""},
		{OpenAIChat, `{"choices":[{"message":{"content":"{\"error\":{\"type\":\"server_error\"}}"}}]}`, 0, "", ""},
		{OpenAIResponses, `{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"failed"}}`, 0, "", ""},
		{AnthropicMessages, `{"type":"message","content":[{"type":"text","text":"hi"}]}`, 0, "", ""},
	}
	for _, c := range cases {
		se := AnswerError(c.up, []byte(c.body))
		if c.status == 0 {
			if se != nil {
				t.Errorf("%s: found %+v", c.body, se)
			}
			continue
		}
		if se == nil || se.Status != c.status || se.Type != c.typ || se.Message != c.msg {
			t.Errorf("%s: %+v, want %d %s %q", c.body, se, c.status, c.typ, c.msg)
		}
	}
	// empty choices with a block reason or the usage: Gemini's answer to
	// a blocked prompt, an answer
	for _, b := range []string{`{"choices":[],"promptFeedback":{"blockReason":"SAFETY"}}`,
		`{"choices":[],"prompt_feedback":{"block_reason":"OTHER"}}`, `{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":0}}`} {
		if e := chatPassthroughError([]byte(b)); e != nil {
			t.Errorf("%s is an answer: %v", b, e)
		}
	}
	// empty choices that say nothing, a first choice that is not an
	// object: the upstream answered nothing
	for _, b := range []string{`{"choices":[]}`, `{"choices":[],"promptFeedback":{"safetyRatings":[]}}`, `{"choices":[],"usage":null}`,
		`{"choices":[null]}`, `{"choices":[5]}`, `{"choices":["x"]}`} {
		if e := chatPassthroughError([]byte(b)); e == nil || e.Class != ErrAPI {
			t.Errorf("%s: %v, want the upstream's failure", b, e)
		}
	}
	for _, b := range []string{`{}`, `{"choices":null}`, `{"choices":{}}`, `{"code":500,"message":"x"}`,
		`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Par"},"finish_reason":"error"}]}`} {
		if e := chatPassthroughError([]byte(b)); e == nil || e.Class != ErrAPI {
			t.Errorf("%s: %v", b, e)
		}
	}
	if e := anthropicPassthroughError([]byte(`{"code":500,"message":"x"}`)); e == nil || e.Class != ErrAPI {
		t.Errorf("not a message: %v", e)
	}
}

// TestFinishReasonError: OpenRouter's finish_reason "error" is an upstream
// error, never a finish: a passthrough relays the chunk and then the
// dialect's error form (no [DONE]); a translation ends with the client's
// error form; before the first content nothing is written and Run reports
// it (the caller moves to another key).
func TestFinishReasonError(t *testing.T) {
	chunk := func(delta, finish string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	role, text, fin := chunk(`{"role":"assistant","content":""}`, "null"), chunk(`{"content":"Partial"}`, "null"), chunk(`{}`, `"error"`)
	in := role + text + fin + "data: [DONE]\n\n"
	out, _, tr, err := collect(t, OpenAIChat, OpenAIChat, "", strings.NewReader(in))
	want := role + text + fin + "data: " + string(errorBody(OpenAIChat, ErrUpstreamUnavailable, msgFinishError, "")) + "\n\n"
	if err != nil || string(out) != want || tr.UpstreamError() == nil || tr.UpstreamError().Status != 500 {
		t.Errorf("passthrough: %v %+v\n%s\nwant\n%s", err, tr.UpstreamError(), out, want)
	}
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		out, _, tr, err := collect(t, OpenAIChat, to, "", strings.NewReader(in))
		if err != nil || !strings.Contains(string(out), "Partial") || !strings.Contains(string(out), msgFinishError) ||
			strings.Contains(string(out), "message_stop") || strings.Contains(string(out), "response.completed") || tr.UpstreamError() == nil {
			t.Errorf("%s: %v\n%s", to, err, out)
		}
	}
	for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
		out, _, tr, err := collectWith(OpenAIChat, to, "", strings.NewReader(role+fin+"data: [DONE]\n\n"), true)
		if err == nil || len(out) != 0 || tr.UpstreamError() == nil {
			t.Errorf("%s before content: %v %q", to, err, out)
		}
	}
}

// TestAnswerErrorNeedsAStatement: an "error" member that states nothing
// ({}, null, "", a zero code) is no error, and a body holding an answer
// (non-empty choices, content or output) is an answer whatever its
// "error" member holds; an error with only a message, a type or a code
// is still found.
func TestAnswerErrorNeedsAStatement(t *testing.T) {
	const choice = `"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]`
	answers := []struct {
		up   Dialect
		body string
	}{
		{OpenAIChat, `{"error":{}}`},
		{OpenAIChat, `{"error":null}`},
		{OpenAIChat, `{"error":{"message":"","type":"","code":null,"param":null}}`},
		{OpenAIChat, `{"error":{"code":0}}`},
		{OpenAIChat, `{"error":[]}`},
		{OpenAIChat, `{"id":"c",` + choice + `,"error":{}}`},
		{OpenAIChat, `{"id":"c",` + choice + `,"error":{"message":"relay warning: slow upstream","type":"server_error"}}`},
		{OpenAIChat, `{"id":"c",` + choice + `,"error":"relay warning"}`},
		{AnthropicMessages, `{"type":"message","content":[{"type":"text","text":"hi"}],"error":{"type":"overloaded_error","message":"x"}}`},
		{AnthropicMessages, `{"content":[{"type":"text","text":"hi"}],"error":{}}`},
		{OpenAIResponses, `{"output":[{"type":"message","content":[]}],"error":{"message":"x"}}`},
	}
	for _, c := range answers {
		if se := AnswerError(c.up, []byte(c.body)); se != nil {
			t.Errorf("%s: an answer or no error, found %+v", c.body, se)
		}
	}
	errs := []struct {
		body   string
		status int
		typ    string
		msg    string
	}{
		// an empty answer array does not make an error an answer
		{`{"choices":[],"error":{"message":"quota exhausted","type":"insufficient_quota"}}`, 429, "insufficient_quota", "quota exhausted"},
		{`{"content":[],"error":{"message":"no"}}`, 500, "server_error", "no"},
		{`{"error":{"message":"only a message"}}`, 500, "server_error", "only a message"},
		{`{"error":{"type":"rate_limit_error"}}`, 429, "rate_limit_error", ""},
		{`{"error":{"code":"rate_limit_exceeded"}}`, 429, "rate_limit_exceeded", ""},
		{`{"error":{"code":503}}`, 503, "503", ""},
	}
	for _, c := range errs {
		se := AnswerError(OpenAIChat, []byte(c.body))
		if se == nil || se.Status != c.status || se.Type != c.typ || se.Message != c.msg {
			t.Errorf("%s: %+v, want %d %q %q", c.body, se, c.status, c.typ, c.msg)
		}
	}
}
