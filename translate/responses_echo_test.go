package translate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestResponsesEchoToolsAndChoice: a translated answer's response object
// echoes the Responses request's "tools" and "tool_choice" as sent (the
// Responses API does), whole and streamed (response.created and
// response.completed); without them it says "tools":[] and
// "tool_choice":"auto"; other dialects' requests echo nothing.
func TestResponsesEchoToolsAndChoice(t *testing.T) {
	body := []byte(`{"model":"m","store":false,"input":"hi","tools":[{"type":"custom","name":"apply_patch"},{"type":"function","name":"shell","parameters":{"type":"object"}}],"tool_choice":{"type":"custom","name":"apply_patch"}}`)
	r, err := ParseRequestFor(OpenAIResponses, body, OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	tools, choice := r.ResponsesEcho()
	if string(tools) != `[{"type":"custom","name":"apply_patch"},{"type":"function","name":"shell","parameters":{"type":"object"}}]` || string(choice) != `{"type":"custom","name":"apply_patch"}` {
		t.Fatalf("ResponsesEcho %s %s", tools, choice)
	}
	if c, err := ParseRequestFor(OpenAIChat, []byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[]}`), OpenAIChat); err != nil {
		t.Fatal(err)
	} else if a, b := c.ResponsesEcho(); a != nil || b != nil {
		t.Fatalf("a Chat request echoes %s %s", a, b)
	}
	answer := []byte(`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	o := ResponseOptions{Tools: tools, ToolChoice: choice}
	out, _, err := TranslateResponseWith(OpenAIChat, OpenAIResponses, answer, "m", o)
	if err != nil || gjson.GetBytes(out, "tools").Raw != string(tools) || gjson.GetBytes(out, "tool_choice").Raw != string(choice) || !gjson.ValidBytes(out) {
		t.Fatalf("whole answer %v %s", err, out)
	}
	out, _, err = TranslateResponseWith(OpenAIChat, OpenAIResponses, answer, "m", ResponseOptions{})
	if err != nil || gjson.GetBytes(out, "tools").Raw != "[]" || gjson.GetBytes(out, "tool_choice").Raw != `"auto"` {
		t.Fatalf("whole answer without echo %v %s", err, out)
	}
	stream := "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	var got bytes.Buffer
	st := NewStreamTranslator(OpenAIChat, OpenAIResponses, "m", EventWriterFunc(func(p []byte) error { got.Write(p); return nil }))
	st.SetOptions(o)
	if err := st.Run(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, line := range strings.Split(got.String(), "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch gjson.Get(d, "type").Str {
		case "response.created", "response.completed":
			seen++
			if gjson.Get(d, "response.tools").Raw != string(tools) || gjson.Get(d, "response.tool_choice").Raw != string(choice) {
				t.Fatalf("stream event %s", d)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("%d response.created/completed events in %s", seen, got.String())
	}
}
