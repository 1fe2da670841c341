package translate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// TestResponsesEchoFields: a translated answer's response object states
// the request's own temperature, top_p, instructions, parallel_tool_calls,
// max_output_tokens, metadata, reasoning, text, truncation, store, user,
// safety_identifier, service_tier… (whole, and in response.created,
// response.in_progress and response.completed), as the Responses API
// does; fields the request left out (or set to null) get the API's
// documented default; without a request (zero ResponseOptions) all of
// them are the defaults.
func TestResponsesEchoFields(t *testing.T) {
	body := []byte(`{"model":"m","input":"hi","instructions":"be brief","temperature":0.3,"top_p":0.9,"parallel_tool_calls":false,` +
		`"max_output_tokens":300,"metadata":{"team":"a"},"reasoning":{"effort":"low","summary":"auto"},` +
		`"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}},"truncation":"auto","store":false,` +
		`"user":"u1","safety_identifier":"s1","service_tier":"flex","prompt_cache_key":"k1","top_logprobs":null}`)
	r, err := ParseRequestFor(OpenAIResponses, body, AnthropicMessages)
	if err != nil {
		t.Fatal(err)
	}
	echo := r.ResponsesEchoMembers()
	if e2 := r.ResponsesEchoMembers(); &e2[0] != &echo[0] {
		t.Error("ResponsesEchoMembers is not read once")
	}
	want := map[string]string{
		"instructions": `"be brief"`, "temperature": `0.3`, "top_p": `0.9`, "parallel_tool_calls": `false`,
		"max_output_tokens": `300`, "metadata": `{"team":"a"}`, "reasoning": `{"effort":"low","summary":"auto"}`,
		"text": `{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}}`, "truncation": `"auto"`,
		"store": `false`, "user": `"u1"`, "safety_identifier": `"s1"`, "service_tier": `"flex"`, "prompt_cache_key": `"k1"`,
		"previous_response_id": `null`, "top_logprobs": `0`, "background": `false`, "max_tool_calls": `null`,
	}
	defaults := map[string]string{
		"instructions": `null`, "temperature": `1`, "top_p": `1`, "parallel_tool_calls": `true`,
		"max_output_tokens": `null`, "metadata": `{}`, "reasoning": `{"effort":null,"summary":null}`,
		"text": `{"format":{"type":"text"}}`, "truncation": `"disabled"`, "store": `false`, "user": `null`,
		"safety_identifier": `null`, "service_tier": `"auto"`, "prompt_cache_key": `null`, "previous_response_id": `null`,
		"top_logprobs": `0`, "background": `false`, "max_tool_calls": `null`,
	}
	check := func(label string, resp gjson.Result, want map[string]string) {
		t.Helper()
		for k, v := range want {
			if got := resp.Get(k).Raw; got != v {
				t.Errorf("%s: %s = %s, want %s", label, k, got, v)
			}
		}
		seen := map[string]bool{}
		resp.ForEach(func(k, _ gjson.Result) bool {
			if seen[k.Str] {
				t.Errorf("%s: %s twice", label, k.Str)
			}
			seen[k.Str] = true
			return true
		})
		var sdk responses.Response
		if err := json.Unmarshal([]byte(resp.Raw), &sdk); err != nil {
			t.Fatalf("%s: SDK: %v", label, err)
		}
	}
	answer := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"up","content":[{"type":"text","text":"{}"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	o := ResponseOptions{Echo: echo}
	out, _, err := TranslateResponseWith(AnthropicMessages, OpenAIResponses, answer, "m", o)
	if err != nil || !gjson.ValidBytes(out) {
		t.Fatalf("%v %s", err, out)
	}
	check("whole", gjson.ParseBytes(out), want)
	var sdk responses.Response
	if json.Unmarshal(out, &sdk) != nil || sdk.Temperature != 0.3 || sdk.TopP != 0.9 || sdk.ParallelToolCalls || sdk.Instructions.OfString != "be brief" ||
		sdk.MaxOutputTokens != 300 || sdk.Metadata["team"] != "a" || sdk.Reasoning.Effort != "low" || sdk.Text.Format.Type != "json_schema" ||
		sdk.Truncation != "auto" || sdk.ServiceTier != "flex" || sdk.SafetyIdentifier != "s1" {
		t.Errorf("SDK reads %s", out)
	}
	out, _, _ = TranslateResponseWith(AnthropicMessages, OpenAIResponses, answer, "m", ResponseOptions{})
	check("whole, no request", gjson.ParseBytes(out), defaults)

	// a request that sets none: the defaults
	bare, err := ParseRequestFor(OpenAIResponses, []byte(`{"model":"m","input":"hi","temperature":null,"metadata":null}`), AnthropicMessages)
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ = TranslateResponseWith(AnthropicMessages, OpenAIResponses, answer, "m", ResponseOptions{Echo: bare.ResponsesEchoMembers()})
	check("whole, bare request", gjson.ParseBytes(out), defaults)
	// other dialects echo nothing
	if c, err := ParseRequestFor(OpenAIChat, []byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":0.5}`), OpenAIResponses); err != nil || c.ResponsesEchoMembers() != nil {
		t.Errorf("a Chat request echoes %v", err)
	}

	stream := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"up","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"{}"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	var got bytes.Buffer
	st := NewStreamTranslator(AnthropicMessages, OpenAIResponses, "m", EventWriterFunc(func(p []byte) error { got.Write(p); return nil }))
	st.SetOptions(o)
	if err := st.Run(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, ev := range readAllEvents(t, &got) {
		d := gjson.ParseBytes(ev.Data)
		switch d.Get("type").Str {
		case "response.created", "response.in_progress", "response.completed":
			seen++
			check(d.Get("type").Str, d.Get("response"), want)
		}
	}
	if seen != 3 {
		t.Fatalf("%d response events", seen)
	}
}

// TestResponsesEchoPrettyRequest: a pretty-printed Responses request (line
// breaks, CR LF too, in the whitespace of its tools, tool_choice and
// settings) is echoed without them: every event of the translated stream
// is whole JSON (a line break would end its data: line and cut it), and
// the response object states the request's values.
func TestResponsesEchoPrettyRequest(t *testing.T) {
	body := []byte("{\n  \"model\": \"m\",\n  \"input\": \"hi\",\n  \"stream\": true,\r\n  \"metadata\": {\r\n    \"team\": \"a b\"\r\n  },\n" +
		"  \"text\": {\n    \"format\": {\"type\": \"text\"}\n  },\n  \"tools\": [\n    {\"type\": \"function\", \"name\": \"f\", \"parameters\": {\n      \"type\": \"object\"}}\n  ],\n" +
		"  \"tool_choice\": {\n    \"type\": \"function\", \"name\": \"f\"\n  }\n}")
	r, err := ParseRequestFor(OpenAIResponses, body, AnthropicMessages)
	if err != nil {
		t.Fatal(err)
	}
	tools, choice := r.ResponsesEcho()
	o := ResponseOptions{Tools: tools, ToolChoice: choice, Echo: r.ResponsesEchoMembers()}
	stream := amStart + amText("hello") +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	var got bytes.Buffer
	st := NewStreamTranslator(AnthropicMessages, OpenAIResponses, "m", EventWriterFunc(func(p []byte) error { got.Write(p); return nil }))
	st.SetOptions(o)
	if err := st.Run(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(got.Bytes(), "\r") {
		t.Errorf("a CR in the stream:\n%q", got.Bytes())
	}
	seen := 0
	for _, ev := range readAllEvents(t, &got) {
		if !gjson.ValidBytes(ev.Data) {
			t.Fatalf("event data is not whole JSON: %q", ev.Data)
		}
		d := gjson.ParseBytes(ev.Data)
		switch d.Get("type").Str {
		case "response.created", "response.in_progress", "response.completed":
			seen++
			resp := d.Get("response")
			if resp.Get("metadata.team").Str != "a b" || resp.Get("text.format.type").Str != "text" ||
				resp.Get("tools.0.parameters.type").Str != "object" || resp.Get("tool_choice.name").Str != "f" {
				t.Errorf("%s: echo %s", d.Get("type").Str, resp.Raw)
			}
		}
	}
	if seen != 3 {
		t.Fatalf("%d response events:\n%s", seen, got.Bytes())
	}
	// invalid UTF-8 in the tools and tool_choice is echoed as \ufffd, as
	// in the settings (appendRawUTF8)
	odd := []byte("{\"model\":\"m\",\"input\":\"hi\",\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"description\":\"a\xffb\"}],\"tool_choice\":{\"type\":\"function\",\"name\":\"f\",\"x\":\"\xc3\"}}")
	if r, err := ParseRequestFor(OpenAIResponses, odd, AnthropicMessages); err != nil {
		t.Fatal(err)
	} else if tools, choice := r.ResponsesEcho(); gjson.GetBytes(tools, "0.description").Str != "a\ufffdb" || gjson.GetBytes(choice, "x").Str != "\ufffd" {
		t.Errorf("invalid UTF-8 echoed: %q %q", tools, choice)
	}
	// a compact request is echoed as a view of its body, not a copy
	compact := []byte(`{"model":"m","input":"hi","tools":[{"type":"function","name":"f"}]}`)
	if r, err := ParseRequestFor(OpenAIResponses, compact, AnthropicMessages); err != nil {
		t.Fatal(err)
	} else if tools, _ := r.ResponsesEcho(); len(tools) == 0 || &tools[0] != &compact[bytes.IndexByte(compact, '[')] {
		t.Errorf("tools echoed as a copy: %s", tools)
	}
}
