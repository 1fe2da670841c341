package translate

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestCheckObjectHostile: the check of passed-through bodies refuses, with
// ParseRequest's messages, what would crash or mislead before any parse.
func TestCheckObjectHostile(t *testing.T) {
	for _, c := range []struct{ body, msg string }{
		{`{"model":"a","input":` + strings.Repeat("[", 1<<20), "request body nests objects and arrays more than 256 levels deep"},
		{`{"model":"a","input":"x","model":"b"}`, `request body has the field "model" more than once`},
		{`{"model":"a","\u006dodel":"b"}`, `request body has the field "model" more than once`},
		{`[1]`, "request body must be a JSON object"},
		{`{"model":"a"`, "request body is not valid JSON"},
		{" \n", "request body is empty; expected a JSON object"},
	} {
		e := CheckObject([]byte(c.body))
		if e == nil || e.Class != ErrInvalidRequest || e.Message != c.msg {
			t.Errorf("%.40q: %+v", c.body, e)
		}
	}
	if e := CheckObject([]byte(`{"model":"a","input":[[1,2],[3]]}`)); e != nil {
		t.Fatalf("a good body refused: %v", e)
	}
	if ValidJSON(bytes.Repeat([]byte("["), 1<<20)) || !ValidJSON([]byte(`{"a":[[1]]}`)) || ValidJSON([]byte(`{"a":`)) {
		t.Fatal("ValidJSON")
	}
}

// TestResponsesPassthroughAnswerChecked: a Responses answer relayed to a
// Responses client is an answer only when it is one (completed or
// incomplete), as for a translated client; its bytes are then unchanged.
func TestResponsesPassthroughAnswerChecked(t *testing.T) {
	for _, c := range []struct{ body, msg string }{
		{`{"object":"response","status":"failed","output":[],"error":{"code":"server_error","message":"The model failed"}}`, "The model failed"},
		{`{"object":"response","status":"queued","output":[]}`, `upstream response has status "queued", not an answer`},
		{`{"error":{"message":"proxy says no"}}`, "upstream response is not an OpenAI Responses response object"},
		{`{}`, "upstream response is not an OpenAI Responses response object"},
	} {
		_, _, err := TranslateResponse(OpenAIResponses, OpenAIResponses, []byte(c.body), "")
		var e *Error
		if !errors.As(err, &e) || e.Message != c.msg {
			t.Errorf("%s: %v", c.body, err)
		}
	}
	for _, body := range []string{
		`{"id":"r","object":"response","status":"completed","model":"m","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}`,
		`{"id":"r","object":"response","status":"incomplete","model":"m","output":[],"incomplete_details":{"reason":"max_output_tokens"}}`,
	} {
		out, _, err := TranslateResponse(OpenAIResponses, OpenAIResponses, []byte(body), "")
		if err != nil || string(out) != body {
			t.Errorf("%s: %v %s", body, err, out)
		}
	}
}
