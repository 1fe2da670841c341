package translate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// TestAttackSessionEchoOddTypes: a Responses request whose settings have
// the wrong types (temperature a string, metadata an array, reasoning a
// string, a setting twice, once under an escaped name) is refused before
// anything is echoed; one it accepts is echoed as valid JSON that the SDK
// reads, invalid UTF-8 in its strings written as U+FFFD (a translated
// answer's strings are, and RFC 8259 requires UTF-8).
func TestAttackSessionEchoOddTypes(t *testing.T) {
	for _, b := range []string{
		`{"model":"m","input":"hi","temperature":"hot"}`,
		`{"model":"m","input":"hi","metadata":["a"]}`,
		`{"model":"m","input":"hi","reasoning":"x"}`,
		`{"model":"m","input":"hi","metadata":{"a":1}}`,
		`{"model":"m","input":"hi","temperature":0.3,"temperatur\u0065":"hot"}`,
		`{"model":"m","input":"hi","metad\u0061ta":["a"]}`,
		`{"model":"m","input":"hi","text":{"format":5}}`,
		`{"model":"m","input":"hi","temperature":1e999}`,
	} {
		for _, to := range []Dialect{AnthropicMessages, OpenAIChat} {
			if _, err := ParseRequestFor(OpenAIResponses, []byte(b), to); err == nil {
				t.Errorf("%s to %s: accepted (%v)", b, to, err)
			}
		}
	}
	answer := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"up","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	for _, c := range []struct{ body, key, want string }{
		{`{"model":"m","input":"hi","metadata":{"a":"x` + "\xff" + `y"}}`, "metadata.a", "x\ufffdy"},
		{`{"model":"m","input":"hi","instructions":"` + "\xc3" + `"}`, "instructions", "\ufffd"},
		{`{"model":"m","input":"hi","user":"a\u0000b"}`, "user", "a\x00b"},
	} {
		r, err := ParseRequestFor(OpenAIResponses, []byte(c.body), AnthropicMessages)
		if err != nil {
			t.Fatalf("%q: %v", c.body, err)
		}
		out, _, err := TranslateResponseWith(AnthropicMessages, OpenAIResponses, answer, "m", ResponseOptions{Echo: r.ResponsesEchoMembers()})
		if err != nil || !utf8.Valid(out) || !gjson.ValidBytes(out) {
			t.Fatalf("%q: %v, not valid UTF-8 JSON: %q", c.body, err, out)
		}
		if got := gjson.GetBytes(out, c.key).Str; got != c.want {
			t.Errorf("%q: %s = %q, want %q", c.body, c.key, got, c.want)
		}
		var sdk responses.Response
		if err := json.Unmarshal(out, &sdk); err != nil || sdk.Status != "completed" {
			t.Errorf("%q: SDK: %v %q", c.body, err, sdk.Status)
		}
	}
}

// TestAttackSessionCustomInputHostile: an Anthropic upstream's tool_use
// for a client's custom tool whose input is not {"input": "<string>"} (a
// number, nothing, a bare string, an array, an object, "input" twice, a
// lone surrogate, invalid UTF-8, null), whole and streamed as
// input_json_delta, reaches Chat and Responses clients as a custom tool
// call in valid UTF-8 JSON, every event valid JSON.
func TestAttackSessionCustomInputHostile(t *testing.T) {
	opts := ResponseOptions{CustomTools: []string{"apply_patch"}}
	for _, in := range []string{`{"input":5}`, `{}`, `"str"`, `[1]`, `{"input":{"a":1}}`, `{"input":"x","input":"y"}`, `{"input":"\ud800"}`, `null`, `{"input":"` + "\xff" + `"}`} {
		anth := `{"id":"msg_9","type":"message","role":"assistant","model":"up","content":[{"type":"tool_use","id":"toolu_a","name":"apply_patch","input":` + in + `}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":2}}`
		ev := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"apply_patch\",\"input\":{}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":" + string(appendString(nil, in)) + "}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		for _, to := range []Dialect{OpenAIChat, OpenAIResponses} {
			out, _, err := TranslateResponseWith(AnthropicMessages, to, []byte(anth), "m", opts)
			typ := gjson.GetBytes(out, "choices.0.message.tool_calls.0.type").Str + gjson.GetBytes(out, "output.0.type").Str
			if err != nil || !gjson.ValidBytes(out) || !utf8.Valid(out) || (typ != "custom" && typ != "custom_tool_call") {
				t.Errorf("%s to %s: %v %q", in, to, err, out)
			}
			var got bytes.Buffer
			st := NewStreamTranslator(AnthropicMessages, to, "m", EventWriterFunc(func(p []byte) error { got.Write(p); return nil }))
			st.SetOptions(opts)
			if err := st.Run(strings.NewReader(ev)); err != nil {
				t.Errorf("%s to %s, streamed: %v", in, to, err)
			}
			custom := false
			for _, e := range readAllEvents(t, &got) {
				if string(e.Data) != "[DONE]" && (!gjson.ValidBytes(e.Data) || !utf8.Valid(e.Data)) {
					t.Errorf("%s to %s, streamed: event %q", in, to, e.Data)
				}
				custom = custom || bytes.Contains(e.Data, []byte(`"custom`))
			}
			if !custom {
				t.Errorf("%s to %s, streamed: no custom tool call:\n%s", in, to, got.Bytes())
			}
		}
	}
}
