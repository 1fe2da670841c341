package translate_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/llmgateway/llm_gateway/translate"
	"github.com/tidwall/gjson"
)

// TestSanitizeAnthropicPassthrough: empty and whitespace text blocks in
// Messages history (system, assistant turns next to tool_use, tool_result
// content, a turn left empty) are removed before an Anthropic key sees
// them, and the mock's Anthropic validator accepts every result; the rest
// of the body is kept byte for byte.
func TestSanitizeAnthropicPassthrough(t *testing.T) {
	const tools = `"tools":[{"name":"ping","input_schema":{"type":"object","properties":{}}}]`
	cases := []struct{ name, body, want string }{
		{"blank text next to tool_use",
			`{"model":"c","max_tokens":64,` + tools + `,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"text","text":""},{"type":"tool_use","id":"t1","name":"ping","input":{"text":""}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`,
			`{"model":"c","max_tokens":64,` + tools + `,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ping","input":{"text":""}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`},
		{"whitespace with escapes",
			`{"model":"c","max_tokens":64,"messages":[{"role":"user","content":[{"type":"text","text":"q"},{"type":"text", "text": " \n\t "}]}]}`,
			`{"model":"c","max_tokens":64,"messages":[{"role":"user","content":[{"type":"text","text":"q"}]}]}`},
		{"blank system string and block",
			`{"model":"c","max_tokens":64,"system":"  ","messages":[{"role":"user","content":"q"}]}`,
			`{"model":"c","max_tokens":64,"messages":[{"role":"user","content":"q"}]}`},
		{"blank system block kept others",
			`{"model":"c","max_tokens":64,"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}},{"type":"text","text":"\n"}],"messages":[{"role":"user","content":"q"}]}`,
			`{"model":"c","max_tokens":64,"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"q"}]}`},
		{"turn left empty is dropped",
			`{"model":"c","max_tokens":64,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":" "}]},{"role":"user","content":"again"}]}`,
			`{"model":"c","max_tokens":64,"messages":[{"role":"user","content":"q"},{"role":"user","content":"again"}]}`},
		{"blank tool_result text",
			`{"model":"c","max_tokens":64,` + tools + `,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ping","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":""}]},{"type":"tool_result","tool_use_id":"t1","content":" "}]}]}`,
			`{"model":"c","max_tokens":64,` + tools + `,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ping","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"},{"type":"tool_result","tool_use_id":"t1"}]}]}`},
	}
	for _, c := range cases {
		if msg := mockupstream.ValidateAnthropicRequest([]byte(c.body)); msg == "" {
			t.Errorf("%s: the validator should refuse the original", c.name)
		}
		out, err := translate.TranslateRequest(translate.AnthropicMessages, translate.AnthropicMessages, []byte(c.body), "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(out) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, out, c.want)
		}
		if msg := mockupstream.ValidateAnthropicRequest(out); msg != "" {
			t.Errorf("%s: validator refuses %s: %s", c.name, out, msg)
		}
	}
	// the cheap check: a clean body, or one whose blank "text" is inside a
	// tool input, is returned as the same slice
	for _, clean := range []string{
		`{"model":"c","max_tokens":64,"messages":[{"role":"user","content":"q"}]}`,
		`{"model":"c","max_tokens":64,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ping","input":{"text":""}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`,
	} {
		b := []byte(clean)
		if out := translate.SanitizeAnthropicRequest(b); &out[0] != &b[0] || !bytes.Equal(out, b) {
			t.Errorf("clean body rewritten: %s", out)
		}
	}
}

// TestTranslatedAnthropicRequestsValidate: Chat history with content ""
// next to tool_calls, whitespace text, reasoning without a signature and no
// max_tokens translates into requests the Anthropic validator accepts.
func TestTranslatedAnthropicRequestsValidate(t *testing.T) {
	bodies := []string{
		`{"model":"m","messages":[{"role":"system","content":" "},{"role":"user","content":"go"},{"role":"assistant","content":"","reasoning_content":"unsigned","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":""},{"role":"user","content":"  "},{"role":"assistant","content":" "},{"role":"user","content":[{"type":"text","text":""},{"type":"text","text":"real"}]}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"\n"}],"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":""}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":" "}]}]}`,
	}
	for i, b := range bodies {
		out, err := translate.TranslateRequest(translate.OpenAIChat, translate.AnthropicMessages, []byte(b), "claude-sonnet-4-5")
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if msg := mockupstream.ValidateAnthropicRequest(out); msg != "" {
			t.Errorf("%d: validator refuses %s: %s", i, out, msg)
		}
		if strings.Contains(string(out), `"thinking"`) {
			t.Errorf("%d: unsigned thinking sent: %s", i, out)
		}
		if n := gjson.GetBytes(out, "max_tokens").Int(); n <= 0 {
			t.Errorf("%d: max_tokens %d", i, n)
		}
	}
}

// anthropicHistory is an Anthropic body of about size bytes: n turns of
// text and tool use; with blank, one assistant turn has a blank text block.
func anthropicHistory(size int, blank bool) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"c","max_tokens":64,"tools":[{"name":"ping","input_schema":{"type":"object","properties":{}}}],"messages":[`)
	para := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		id := "t" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		b.WriteString(`{"role":"user","content":[{"type":"text","text":"` + para + `"}]},`)
		text := para
		if blank && i == 3 {
			text = " \n"
		}
		b.WriteString(`{"role":"assistant","content":[{"type":"text","text":"` + text + `"},{"type":"tool_use","id":"` + id + `","name":"ping","input":{}}]},`)
		b.WriteString(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"ok"}]}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkSanitizeAnthropic: the cost of the blank-text check on an
// Anthropic passthrough body of 1 MB, clean (the cheap scan only) and with
// one blank block (scan and rewrite).
func BenchmarkSanitizeAnthropic(b *testing.B) {
	for _, c := range []struct {
		name  string
		blank bool
	}{{"clean", false}, {"one-blank", true}} {
		body := anthropicHistory(1<<20, c.blank)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				out := translate.SanitizeAnthropicRequest(body)
				if c.blank == (len(out) == len(body)) {
					b.Fatalf("blank %v: rewritten %v", c.blank, len(out) != len(body))
				}
			}
		})
	}
}

// TestSanitizeUnsignedThinking: an Anthropic passthrough whose history
// holds thinking with an empty signature (an assistant turn the gateway
// translated from an OpenAI-compatible upstream's reasoning) loses those
// blocks; thinking is turned off only when the last tool-call turn is then
// left without signed thinking, as Anthropic requires.
func TestSanitizeUnsignedThinking(t *testing.T) {
	const head = `{"model":"c","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},"tools":[{"name":"ping","input_schema":{"type":"object","properties":{}}}],"messages":[{"role":"user","content":"go"},`
	unsignedLast := head + `{"role":"assistant","content":[{"type":"thinking","thinking":"from deepseek","signature":""},{"type":"tool_use","id":"t1","name":"ping","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`
	out, err := translate.TranslateRequest(translate.AnthropicMessages, translate.AnthropicMessages, []byte(unsignedLast), "")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"c","max_tokens":2048,"tools":[{"name":"ping","input_schema":{"type":"object","properties":{}}}],"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ping","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`
	if string(out) != want {
		t.Errorf("unsigned last turn:\n got %s\nwant %s", out, want)
	}
	if msg := mockupstream.ValidateAnthropicRequest(out); msg != "" {
		t.Errorf("validator: %s", msg)
	}

	signedLast := head + `{"role":"assistant","content":[{"type":"thinking","thinking":"old","signature":""},{"type":"text","text":"a"}]},{"role":"user","content":"more"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"new","signature":"c2ln"},{"type":"tool_use","id":"t1","name":"ping","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`
	out = translate.SanitizeAnthropicRequest([]byte(signedLast))
	if !gjson.GetBytes(out, "thinking").Exists() || gjson.GetBytes(out, "messages.1.content.#").Int() != 1 ||
		gjson.GetBytes(out, "messages.3.content.0.signature").Str != "c2ln" {
		t.Errorf("signed last turn: %s", out)
	}
	if msg := mockupstream.ValidateAnthropicRequest(out); msg != "" {
		t.Errorf("validator: %s", msg)
	}

	// only a blank text block goes: no unsigned thinking was dropped, so
	// the client's thinking stays even though its last tool-call turn has
	// none (Anthropic answers that for itself)
	blankOnly := head + `{"role":"assistant","content":[{"type":"text","text":" "},{"type":"tool_use","id":"t1","name":"ping","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`
	want = strings.Replace(blankOnly, `{"type":"text","text":" "},`, "", 1)
	if got := string(translate.SanitizeAnthropicRequest([]byte(blankOnly))); got != want {
		t.Errorf("blank text only:\n got %s\nwant %s", got, want)
	}
}
