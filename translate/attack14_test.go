package translate

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
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

// heldOpen yields a stream's bytes and then blocks until closed, as an
// upstream that keeps the connection open after its terminator.
type heldOpen struct {
	data []byte
	done chan struct{}
}

func (h *heldOpen) Read(p []byte) (int, error) {
	if len(h.data) > 0 {
		n := copy(p, h.data)
		h.data = h.data[n:]
		return n, nil
	}
	<-h.done
	return 0, io.EOF
}

// TestPassthroughStopsAtTerminator: a passthrough stream ends at its
// terminator ([DONE], message_stop, response.completed) even when the
// upstream holds the connection open, so a complete answer is never
// booked as a timeout.
func TestPassthroughStopsAtTerminator(t *testing.T) {
	for _, c := range []struct {
		d      Dialect
		stream string
	}{
		{OpenAIChat, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"},
		{AnthropicMessages, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
		{OpenAIResponses, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"m\",\"output\":[]}}\n\n" +
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"i1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\"}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"m\",\"output\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1,\"total_tokens\":2}}}\n\n"},
	} {
		t.Run(c.d.String(), func(t *testing.T) {
			up := &heldOpen{data: []byte(c.stream), done: make(chan struct{})}
			defer close(up.done)
			var out bytes.Buffer
			st := NewStreamTranslator(c.d, c.d, "", EventWriterFunc(func(p []byte) error { out.Write(p); return nil }))
			ended := make(chan error, 1)
			go func() { ended <- st.Run(up) }()
			select {
			case err := <-ended:
				if err != nil || st.Truncated() || out.String() != c.stream {
					t.Fatalf("err %v truncated %v, out:\n%s", err, st.Truncated(), out.String())
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run still reading after the terminator")
			}
		})
	}
}

// TestStreamErrorTypeFromStatus: an OpenAI error event with a code and no
// type is relayed with OpenAI's type for its status, the code kept as the
// code.
func TestStreamErrorTypeFromStatus(t *testing.T) {
	e := newStreamError(OpenAIResponses, "", "context_length_exceeded", "too long", "")
	if e.Status != 400 || gjson.GetBytes(e.Body, "error.type").Str != "invalid_request_error" || gjson.GetBytes(e.Body, "error.code").Str != "context_length_exceeded" {
		t.Fatalf("%d %s", e.Status, e.Body)
	}
	e = newStreamError(OpenAIChat, "server_error", "", "boom", "")
	if gjson.GetBytes(e.Body, "error.type").Str != "server_error" {
		t.Fatalf("%s", e.Body)
	}
}
