package translate

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func mustTranslate(t *testing.T, from, to Dialect, body, model string) gjson.Result {
	t.Helper()
	out, err := TranslateRequest(from, to, []byte(body), model)
	if err != nil {
		t.Fatalf("TranslateRequest(%s→%s): %v", from, to, err)
	}
	if !gjson.ValidBytes(out) {
		t.Fatalf("invalid JSON: %s", out)
	}
	return gjson.ParseBytes(out)
}

func wantGet(t *testing.T, r gjson.Result, path, want string) {
	t.Helper()
	if got := r.Get(path).Raw; got != want {
		t.Errorf("%s = %s, want %s\nin %s", path, got, want, r.Raw)
	}
}

const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

func TestChatToAnthropicRequest(t *testing.T) {
	body := `{"model":"gpt-x","messages":[
	 {"role":"system","content":"Be brief."},
	 {"role":"developer","content":[{"type":"text","text":"Use tools."}]},
	 {"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + tinyPNG + `"}},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},
	 {"role":"assistant","content":"","reasoning_content":"thinking about it"},
	 {"role":"assistant","content":"  ","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"call_2","type":"function","function":{"name":"g","arguments":""}}]},
	 {"role":"tool","tool_call_id":"call_1","content":"r1"},
	 {"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"r2"}]},
	 {"role":"user","content":"next"},
	 {"role":"system","content":"mid-conversation reminder"}
	],
	"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}},{"type":"function","function":{"name":"g","description":"d"}}],
	"tool_choice":"required","parallel_tool_calls":false,
	"max_completion_tokens":100,"temperature":1.5,"top_p":0.9,"stop":["END"," "],"user":"u1","stream":true}`
	r := mustTranslate(t, OpenAIChat, AnthropicMessages, body, "claude-sonnet-4-5")
	wantGet(t, r, "system", `[{"type":"text","text":"Be brief."},{"type":"text","text":"Use tools."},{"type":"text","text":"mid-conversation reminder"}]`)
	wantGet(t, r, "messages.#", "3")
	wantGet(t, r, "messages.0.content.1.source", `{"type":"base64","media_type":"image/png","data":"`+tinyPNG+`"}`)
	wantGet(t, r, "messages.0.content.2.source", `{"type":"url","url":"https://x/y.png"}`)
	// unsigned reasoning and blank text are dropped for Anthropic
	wantGet(t, r, "messages.1.content", `[{"type":"tool_use","id":"call_1","name":"f","input":{"a":1}},{"type":"tool_use","id":"call_2","name":"g","input":{}}]`)
	wantGet(t, r, "messages.2.content", `[{"type":"tool_result","tool_use_id":"call_1","content":"r1"},{"type":"tool_result","tool_use_id":"call_2","content":"r2"},{"type":"text","text":"next"}]`)
	wantGet(t, r, "tools.0.input_schema", `{"type":"object","properties":{}}`)
	wantGet(t, r, "tools.1.input_schema", `{"type":"object","properties":{}}`)
	wantGet(t, r, "tool_choice", `{"type":"any","disable_parallel_tool_use":true}`)
	wantGet(t, r, "max_tokens", "100")
	wantGet(t, r, "temperature", "1")
	wantGet(t, r, "top_p", "") // with temperature set, top_p is dropped (TestTemperatureAndTopPToAnthropic)
	wantGet(t, r, "stop_sequences", `["END"]`)
	wantGet(t, r, "metadata", `{"user_id":"u1"}`)
	wantGet(t, r, "stream", "true")
}

func TestChatToAnthropicThinking(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"high","temperature":0.2,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"max_tokens":1000}`
	r := mustTranslate(t, OpenAIChat, AnthropicMessages, body, "claude-opus-4-6")
	wantGet(t, r, "thinking", `{"type":"adaptive"}`)
	wantGet(t, r, "output_config", `{"effort":"high"}`)
	wantGet(t, r, "temperature", "")
	wantGet(t, r, "tool_choice", `{"type":"auto"}`)
	r = mustTranslate(t, OpenAIChat, AnthropicMessages, body, "claude-sonnet-4-5-20250929")
	wantGet(t, r, "thinking", `{"type":"enabled","budget_tokens":16384}`)
	wantGet(t, r, "max_tokens", "17384")
	// effort "none" and non-effort requests keep thinking off
	r = mustTranslate(t, OpenAIChat, AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"none"}`, "claude-opus-4-6")
	wantGet(t, r, "thinking", "")
	wantGet(t, r, "max_tokens", "8192")
}

func TestAnthropicToChatRequest(t *testing.T) {
	body := `{"model":"claude","max_tokens":512,"system":[{"type":"text","text":"S1","cache_control":{"type":"ephemeral"}},{"type":"text","text":"S2"}],
	"messages":[
	 {"role":"user","content":"q"},
	 {"role":"assistant","content":[{"type":"thinking","thinking":"signed thought","signature":"sig=="},{"type":"text","text":"calling"},{"type":"tool_use","id":"toolu_1","name":"shot","input":{"x":1}}]},
	 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"failed"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + tinyPNG + `"}}]},{"type":"text","text":"and?"}]},
	 {"role":"assistant","content":[{"type":"thinking","thinking":"plain reasoning","signature":""},{"type":"tool_use","id":"toolu_2","name":"shot","input":{}}]},
	 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"ok"}]}
	],
	"tools":[{"name":"shot","input_schema":{"type":"object","properties":{"x":{"type":"integer"}}}},{"type":"web_search_20250305","name":"web_search"}],
	"tool_choice":{"type":"any","disable_parallel_tool_use":true},
	"stop_sequences":["###"],"metadata":{"user_id":"u9"},"thinking":{"type":"enabled","budget_tokens":4000},"stream":true}`
	r := mustTranslate(t, AnthropicMessages, OpenAIChat, body, "deepseek-reasoner")
	wantGet(t, r, "messages.0", `{"role":"system","content":"S1\nS2"}`)
	wantGet(t, r, "messages.1", `{"role":"user","content":"q"}`)
	// signed thinking: its text goes back as reasoning_content (DeepSeek's
	// rule for tool-call turns), its signature never leaves Anthropic
	wantGet(t, r, "messages.2.reasoning_content", `"signed thought"`)
	if strings.Contains(r.Raw, "sig==") {
		t.Errorf("signature leaked: %s", r.Raw)
	}
	wantGet(t, r, "messages.2.content", `"calling"`)
	wantGet(t, r, "messages.2.tool_calls.0", `{"id":"toolu_1","type":"function","function":{"name":"shot","arguments":"{\"x\":1}"}}`)
	wantGet(t, r, "messages.3", `{"role":"tool","tool_call_id":"toolu_1","content":"Error: failed"}`)
	// the image from the tool result reaches the model as an image
	wantGet(t, r, "messages.4.role", `"user"`)
	wantGet(t, r, "messages.4.content.1.image_url.url", `"data:image/png;base64,`+tinyPNG+`"`)
	wantGet(t, r, "messages.4.content.2", `{"type":"text","text":"and?"}`)
	// unsigned reasoning is echoed (DeepSeek requires it on tool-call turns)
	wantGet(t, r, "messages.5.reasoning_content", `"plain reasoning"`)
	wantGet(t, r, "messages.5.content", `null`)
	wantGet(t, r, "messages.6", `{"role":"tool","tool_call_id":"toolu_2","content":"ok"}`)
	wantGet(t, r, "tools.#", "1")
	wantGet(t, r, "tool_choice", `"required"`)
	wantGet(t, r, "parallel_tool_calls", `false`)
	wantGet(t, r, "max_completion_tokens", "512")
	wantGet(t, r, "stop", `["###"]`)
	wantGet(t, r, "user", `"u9"`)
	wantGet(t, r, "reasoning_effort", `"medium"`)
	wantGet(t, r, "stream_options", `{"include_usage":true}`)
	r = mustTranslate(t, AnthropicMessages, OpenAIChat, body, "gpt-4o")
	wantGet(t, r, "reasoning_effort", "")
}

func TestResponsesToChatRequest(t *testing.T) {
	body := `{"model":"m","instructions":"Be terse.","input":[
	 {"role":"developer","content":"dev note"},
	 {"type":"message","role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"data:image/png;base64,` + tinyPNG + `","detail":"low"}]},
	 {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"plan"}],"encrypted_content":"gAAA"},
	 {"type":"function_call","id":"fc_1","call_id":"call_a","name":"f","arguments":"{}"},
	 {"type":"function_call","id":"fc_2","call_id":"call_b","name":"g","arguments":"{\"k\":2}"},
	 {"type":"function_call_output","call_id":"call_a","output":"A"},
	 {"type":"function_call_output","call_id":"call_b","output":[{"type":"input_text","text":"B"}]},
	 {"role":"user","content":"thanks"}
	],"tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{}}},{"type":"function","name":"g","parameters":{}},{"type":"web_search"}],
	"tool_choice":{"type":"function","name":"g"},"parallel_tool_calls":true,"max_output_tokens":300,"reasoning":{"effort":"low"},"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}},"stream":true}`
	r := mustTranslate(t, OpenAIResponses, OpenAIChat, body, "o4-mini")
	wantGet(t, r, "messages.0", `{"role":"system","content":"Be terse.\ndev note"}`)
	wantGet(t, r, "messages.1.content.1", `{"type":"image_url","image_url":{"url":"data:image/png;base64,`+tinyPNG+`","detail":"low"}}`)
	// consecutive function_call items: one assistant message, linked by call_id
	wantGet(t, r, "messages.2.tool_calls.#", "2")
	wantGet(t, r, "messages.2.tool_calls.#.id", `["call_a","call_b"]`)
	wantGet(t, r, "messages.2.reasoning_content", `"plan"`)
	wantGet(t, r, "messages.3", `{"role":"tool","tool_call_id":"call_a","content":"A"}`)
	wantGet(t, r, "messages.4", `{"role":"tool","tool_call_id":"call_b","content":"B"}`)
	wantGet(t, r, "messages.5", `{"role":"user","content":"thanks"}`)
	wantGet(t, r, "tools.1.function.parameters", `{"type":"object","properties":{}}`)
	wantGet(t, r, "tools.#", "2")
	wantGet(t, r, "tool_choice", `{"type":"function","function":{"name":"g"}}`)
	wantGet(t, r, "parallel_tool_calls", "true")
	wantGet(t, r, "max_completion_tokens", "300")
	wantGet(t, r, "reasoning_effort", `"low"`)
	wantGet(t, r, "response_format", `{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}}`)

	a := mustTranslate(t, OpenAIResponses, AnthropicMessages, body, "claude-haiku-4-5")
	wantGet(t, a, "system", `[{"type":"text","text":"Be terse."},{"type":"text","text":"dev note"}]`)
	wantGet(t, a, "messages.1.content.#.id", `["call_a","call_b"]`)
	wantGet(t, a, "messages.2.content.#.type", `["tool_result","tool_result","text"]`)
	wantGet(t, a, "output_config.format", `{"type":"json_schema","schema":{"type":"object"}}`)
	wantGet(t, a, "tool_choice", `{"type":"tool","name":"g"}`)
	wantGet(t, a, "thinking", "") // last assistant turn has tool calls without a signed thinking block
}

func TestSameDialectUntouched(t *testing.T) {
	signed := `{"model":"a","max_tokens":10,"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"EqQBCkYIBxgCKkD+/=="},{"type":"redacted_thinking","data":"Zm9v"}]}],"x_future_field":{"y":1}}`
	out, err := TranslateRequest(AnthropicMessages, AnthropicMessages, []byte(signed), "b")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(signed, `"model":"a"`, `"model":"b"`, 1); string(out) != want {
		t.Errorf("got %s", out)
	}
	stream := `{"model":"a","stream":true,"messages":[{"role":"user","content":"x"}]}`
	out, _ = TranslateRequest(OpenAIChat, OpenAIChat, []byte(stream), "")
	if string(out) != stream {
		t.Error("passthrough must not add fields")
	}
}

func TestBadRequests(t *testing.T) {
	cases := []struct {
		from Dialect
		body string
		want string
	}{
		{OpenAIChat, `{"model":"m"}`, "messages"},
		{OpenAIChat, `{"model":"m","messages":"hi"}`, "Invalid type for 'messages': expected an array, but got a string instead."},
		{OpenAIChat, `{"model":"m","messages":[{"role":"tool","tool_call_id":"x","content":"r"}]}`, "no matching tool call"},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,@@@"}}]}]}`, "not valid base64"},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":5}]}`, "messages[0].content"},
		{OpenAIChat, `{"model":"m","messages":[{"role":"wizard","content":"x"}]}`, "Invalid value: 'wizard'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'."},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"x"}],"n":3}`, "n=1"},
		{OpenAIChat, `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]}]}`, "not a JSON object"},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, "temperature"},
		{AnthropicMessages, `{"model":"m","max_tokens":5}`, "messages"},
		{AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"r"}]}]}`, "no matching tool call"},
		{AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"not base64!"}}]}]}`, "not valid base64"},
		{AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":[{"type":"hologram"}]}]}`, "unsupported content block"},
		{AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":"x"}],"system":5}`, "system"},
		{AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":"many"}`, "max_tokens"},
		{OpenAIResponses, `{"model":"m"}`, "input"},
		{OpenAIResponses, `{"model":"m","input":{}}`, "input"},
		{OpenAIResponses, `{"model":"m","input":"x","previous_response_id":"resp_1"}`, "previous_response_id"},
		{OpenAIResponses, `{"model":"m","input":[{"type":"function_call_output","call_id":"call_z","output":"r"}]}`, "no matching tool call"},
		{OpenAIResponses, `{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,%%%"}]}]}`, "not valid base64"},
		{OpenAIResponses, `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "item_reference"},
		{OpenAIResponses, `{"model":"m","input":[1]}`, "input[0]"},
	}
	for _, c := range cases {
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
			if to == c.from {
				continue
			}
			_, err := TranslateRequest(c.from, to, []byte(c.body), "")
			var e *Error
			if !errors.As(err, &e) || e.Class != ErrInvalidRequest || !strings.Contains(e.Message, c.want) {
				t.Errorf("%s→%s %s: got %v, want %q", c.from, to, c.body, err, c.want)
				continue
			}
			if b := e.Body(c.from); !gjson.ValidBytes(b) {
				t.Errorf("error body invalid: %s", b)
			}
		}
	}
	huge := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("a", MaxRequestSize) + `"}]}`)
	_, err := TranslateRequest(OpenAIChat, AnthropicMessages, huge, "")
	var e *Error
	if !errors.As(err, &e) || e.Class != ErrRequestTooLarge {
		t.Errorf("huge: %v", err)
	}
	// Responses is an upstream dialect too (issue 14): an empty
	// conversation translates as it does for Anthropic, and the upstream judges it
	if b, err := TranslateRequest(OpenAIChat, OpenAIResponses, []byte(`{"model":"m","messages":[]}`), ""); err != nil || gjson.GetBytes(b, "input").Raw != "[]" {
		t.Errorf("Chat to Responses: %s %v", b, err)
	}
}

func TestValidBase64(t *testing.T) {
	for s, want := range map[string]bool{tinyPNG: true, "Zm9v": true, "Zm9": true, "Z===": false, "": false, "Zm9v\nYmFy": true, "Zm9v!": false, strings.Repeat("QUJD", 1000): true} {
		if validBase64(s) != want {
			t.Errorf("validBase64(%.20q) != %v", s, want)
		}
	}
	_ = bytes.MinRead
}

func TestNormSchema(t *testing.T) {
	for in, want := range map[string]string{
		``:                        `{"type":"object","properties":{}}`,
		`{}`:                      `{"type":"object","properties":{}}`,
		`{"type":"object"}`:       `{"type":"object","properties":{}}`,
		`{"properties":{"a":{}}}`: `{"properties":{"a":{}},"type":"object"}`,
		`{"type":"object","properties":{"a":{}},"required":["a"]}`: `{"type":"object","properties":{"a":{}},"required":["a"]}`,
		`[1]`: `{"type":"object","properties":{}}`,
	} {
		if got := normSchema(in); got != want {
			t.Errorf("normSchema(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestAnthropicAdaptive(t *testing.T) {
	for m, want := range map[string]bool{
		"claude-opus-4-6": true, "claude-sonnet-4-6-20260101": true, "claude-opus-5-5": true, "claude-opus-5": true,
		"claude-sonnet-4-5-20250929": false, "claude-haiku-4-5": false, "claude-3-7-sonnet-latest": false,
		"claude-sonnet-4-20250514": false, "claude-opus-4-1": false, "glm-4.6": false, "deepseek-chat": false,
	} {
		if anthropicAdaptive(m) != want {
			t.Errorf("%s: want %v", m, want)
		}
	}
}

func TestAnthropicHistoryWithoutTools(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"a"},{"role":"tool","tool_call_id":"c2","content":"b"},{"role":"user","content":"summarise"}]}`
	r := mustTranslate(t, OpenAIChat, AnthropicMessages, body, "claude-haiku-4-5")
	wantGet(t, r, "tools", `[{"name":"f","input_schema":{"type":"object","properties":{}}}]`)
	wantGet(t, r, "tool_choice", `{"type":"none"}`)
}
