package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// cacheMarks lists the paths of every object in r that carries
// cache_control, in document order.
func cacheMarks(r gjson.Result, path string, out *[]string) {
	switch {
	case r.IsObject():
		r.ForEach(func(k, v gjson.Result) bool {
			if k.Str == "cache_control" {
				*out = append(*out, path)
				return true
			}
			cacheMarks(v, strings.TrimPrefix(path+"."+k.Str, "."), out)
			return true
		})
	case r.IsArray():
		i := 0
		r.ForEach(func(_, v gjson.Result) bool {
			cacheMarks(v, strings.TrimPrefix(path+"."+sprintf("%d", i), "."), out)
			i++
			return true
		})
	}
}

// TestChatCacheControlToAnthropic: cache_control on a Chat system part and
// on a tool lands on exactly those Anthropic blocks, one block per part.
func TestChatCacheControlToAnthropic(t *testing.T) {
	body := `{"model":"m","messages":[
	 {"role":"system","content":[{"type":"text","text":"You are terse."},{"type":"text","text":"LONG RULES","cache_control":{"type":"ephemeral"}}]},
	 {"role":"user","content":"hi"}],
	 "tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{}}}},
	          {"type":"function","function":{"name":"b","parameters":{"type":"object","properties":{}}},"cache_control":{"type":"ephemeral","ttl":"1h"}}]}`
	r := mustTranslate(t, OpenAIChat, AnthropicMessages, body, "claude-sonnet-4-5")
	var marks []string
	cacheMarks(r, "", &marks)
	if strings.Join(marks, " ") != "system.1 tools.1" {
		t.Errorf("cache_control on %v, want [system.1 tools.1]\n%s", marks, r.Raw)
	}
	wantGet(t, r, "system", `[{"type":"text","text":"You are terse."},{"type":"text","text":"LONG RULES","cache_control":{"type":"ephemeral"}}]`)
	wantGet(t, r, "tools.1.cache_control", `{"type":"ephemeral","ttl":"1h"}`)
}

// TestChatCacheControlEveryRole: user, assistant and tool parts, and a
// message-level mark on string content, each mark on its own block.
func TestChatCacheControlEveryRole(t *testing.T) {
	body := `{"model":"m","messages":[
	 {"role":"user","content":[{"type":"text","text":"doc A"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + tinyPNG + `"},"cache_control":{"type":"ephemeral"}},{"type":"text","text":"q"}]},
	 {"role":"assistant","content":[{"type":"text","text":"ans","cache_control":{"type":"ephemeral"}}],"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
	 {"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"result","cache_control":{"type":"ephemeral"}}]},
	 {"role":"user","content":"next","cache_control":{"type":"ephemeral"}}],
	 "tools":[{"type":"function","function":{"name":"f"}}]}`
	r := mustTranslate(t, OpenAIChat, AnthropicMessages, body, "claude-sonnet-4-5")
	var marks []string
	cacheMarks(r, "", &marks)
	want := "messages.0.content.1 messages.1.content.0 messages.2.content.0 messages.2.content.1"
	if strings.Join(marks, " ") != want {
		t.Errorf("cache_control on %v, want %s\n%s", marks, want, r.Raw)
	}
	wantGet(t, r, "messages.0.content.#", "3")
	wantGet(t, r, "messages.2.content.0.type", `"tool_result"`)
	wantGet(t, r, "messages.2.content.1", `{"type":"text","text":"next","cache_control":{"type":"ephemeral"}}`)
}

// TestResponsesCacheControlToAnthropic: the same for Responses input parts
// and function tools.
func TestResponsesCacheControlToAnthropic(t *testing.T) {
	body := `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"big context","cache_control":{"type":"ephemeral"}},{"type":"input_text","text":"q"}]}],
	 "tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{}},"cache_control":{"type":"ephemeral"}}]}`
	r := mustTranslate(t, OpenAIResponses, AnthropicMessages, body, "claude-sonnet-4-5")
	var marks []string
	cacheMarks(r, "", &marks)
	if strings.Join(marks, " ") != "messages.0.content.0 tools.0" {
		t.Errorf("cache_control on %v\n%s", marks, r.Raw)
	}
}

// TestCacheControlBadType: a cache_control that is not an object is the
// client's 400, with the field's path.
func TestCacheControlBadType(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"x","cache_control":"yes"}]},{"role":"user","content":"hi"}]}`
	_, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(body), "m")
	e, ok := err.(*Error)
	if !ok || e.Class != ErrInvalidRequest || !strings.Contains(e.Message, "messages[0].content[0].cache_control") {
		t.Errorf("err %v", err)
	}
}

// TestCacheUsageInClientShape: Anthropic cache reads and writes come back
// as prompt_tokens_details.cached_tokens / cache_write_tokens (Chat) and
// input_tokens_details.cached_tokens (Responses, which has no write figure).
func TestCacheUsageInClientShape(t *testing.T) {
	src := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":5}}`)
	cc, _, err := TranslateResponse(AnthropicMessages, OpenAIChat, src, "m")
	if err != nil {
		t.Fatal(err)
	}
	if u := gjson.GetBytes(cc, "usage").Raw; u != `{"prompt_tokens":3210,"completion_tokens":5,"total_tokens":3215,"prompt_tokens_details":{"cached_tokens":3000,"cache_write_tokens":200}}` {
		t.Errorf("chat usage %s", u)
	}
	rs, _, err := TranslateResponse(AnthropicMessages, OpenAIResponses, src, "m")
	if err != nil {
		t.Fatal(err)
	}
	if u := gjson.GetBytes(rs, "usage").Raw; u != `{"input_tokens":3210,"input_tokens_details":{"cached_tokens":3000},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":3215}` {
		t.Errorf("responses usage %s", u)
	}
}

// TestReasoningInFromChatHistory: reasoning_content on a Chat assistant
// message reaches a Chat upstream as reasoning_content; an Anthropic
// upstream gets only signed thinking rebuilt from thinking_blocks, never
// unsigned thinking.
func TestReasoningInFromChatHistory(t *testing.T) {
	unsigned := `{"model":"m","messages":[{"role":"user","content":"q"},
	 {"role":"assistant","content":"","reasoning_content":"think A","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
	 {"role":"tool","tool_call_id":"c1","content":"ok"}],"tools":[{"type":"function","function":{"name":"f"}}]}`
	am := mustTranslate(t, OpenAIChat, AnthropicMessages, unsigned, "claude-sonnet-4-5")
	if strings.Contains(am.Raw, `"thinking"`) {
		t.Errorf("unsigned thinking sent to Anthropic: %s", am.Raw)
	}
	wantGet(t, am, "messages.1.content", `[{"type":"tool_use","id":"c1","name":"f","input":{}}]`)

	signed := `{"model":"m","reasoning_effort":"high","messages":[{"role":"user","content":"q"},
	 {"role":"assistant","content":null,"reasoning_content":"think A","thinking_blocks":[{"type":"thinking","thinking":"think A","signature":"SIG1"},{"type":"redacted_thinking","data":"RED"}],
	  "tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
	 {"role":"tool","tool_call_id":"c1","content":"ok"}],"tools":[{"type":"function","function":{"name":"f"}}]}`
	am = mustTranslate(t, OpenAIChat, AnthropicMessages, signed, "claude-sonnet-4-5")
	wantGet(t, am, "messages.1.content", `[{"type":"thinking","thinking":"think A","signature":"SIG1"},{"type":"redacted_thinking","data":"RED"},{"type":"tool_use","id":"c1","name":"f","input":{}}]`)
	wantGet(t, am, "thinking.type", `"enabled"`)
	ccx := mustTranslate(t, AnthropicMessages, OpenAIChat, am.Raw, "deepseek-reasoner")
	wantGet(t, ccx, "messages.1.reasoning_content", `"think A"`)
	if strings.Contains(ccx.Raw, "SIG1") || strings.Contains(ccx.Raw, "RED") {
		t.Errorf("signature or redacted data left Anthropic: %s", ccx.Raw)
	}
}
