package caddymodule

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// reasoningGateway serves "deepseek-*" from an OpenAI-dialect mock key that
// behaves like DeepSeek in thinking mode, and "claude-*" from an
// Anthropic-dialect key (the mock validates every Anthropic request).
func reasoningGateway(t *testing.T) (*mockupstream.Server, string) {
	t.Helper()
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"ds-key": {Vendor: mockupstream.VendorDeepSeek},
	}})
	root := strings.TrimSuffix(base, "/v1")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool ds {\n\t\t\tmodels deepseek-*\n\t\t\tkey ds-key "+base+" {\n\t\t\t\tid ds\n\t\t\t}\n\t\t}\n"+
		"\t\tpool an {\n\t\t\tmodels claude-*\n\t\t\tkey an-key "+root+" {\n\t\t\t\tid an\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n\t}\n")
	return m, gw
}

// claudeCodeHistory is an Anthropic Messages request shaped like Claude
// Code's with extended thinking: a signed thinking block, text and a
// tool_use in the assistant turn, then the tool_result.
func claudeCodeHistory(model string, stream bool) []byte {
	return []byte(`{"model":"` + model + `","max_tokens":4096,"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,
	 "thinking":{"type":"enabled","budget_tokens":2048},
	 "system":[{"type":"text","text":"You are a coding agent.","cache_control":{"type":"ephemeral"}}],
	 "tools":[{"name":"Bash","description":"run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}],
	 "messages":[
	  {"role":"user","content":[{"type":"text","text":"list the files"}]},
	  {"role":"assistant","content":[{"type":"thinking","thinking":"I should run ls.","signature":"EqQBCkYIBxgCKkBsig"},{"type":"text","text":"Listing."},{"type":"tool_use","id":"toolu_01A","name":"Bash","input":{"command":"ls"}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A","content":"a.go b.go"}]}]}`)
}

// TestClaudeCodeHistoryToDeepSeekKey: Claude Code's thinking + tool_use +
// tool_result history reaches a DeepSeek-style key with the thinking as
// reasoning_content on the assistant message that carries the tool call,
// so the key answers 200 (it refuses the turn without it), streamed and not.
func TestClaudeCodeHistoryToDeepSeekKey(t *testing.T) {
	m, gw := reasoningGateway(t)
	for _, stream := range []bool{false, true} {
		resp, b := post(t, gw+"/v1/messages", claudeCodeHistory("deepseek-reasoner", stream))
		if resp.StatusCode != 200 {
			t.Fatalf("stream=%v: %d %s", stream, resp.StatusCode, b)
		}
		seen := gjson.ParseBytes(m.Stats("ds-key").LastBody)
		var asst gjson.Result
		for _, msg := range seen.Get("messages").Array() {
			if msg.Get("role").Str == "assistant" {
				asst = msg
			}
		}
		if asst.Get("reasoning_content").Str != "I should run ls." || asst.Get("tool_calls.0.function.name").Str != "Bash" ||
			asst.Get("tool_calls.0.id").Str != "toolu_01A" || asst.Get("content").Str != "Listing." {
			t.Errorf("stream=%v: upstream saw assistant %s", stream, asst.Raw)
		}
		if bytes.Contains(m.Stats("ds-key").LastBody, []byte("EqQBCkYIBxgCKkBsig")) {
			t.Errorf("the thinking signature left Anthropic: %s", m.Stats("ds-key").LastBody)
		}
		want := mockupstream.ToolText("a.go b.go")
		if !stream {
			if got := gjson.GetBytes(b, `content.#(type=="text").text`).Str; got != want {
				t.Errorf("answer %q, want %q: %s", got, want, b)
			}
			// the upstream's reasoning comes back as unsigned thinking
			if th := gjson.GetBytes(b, `content.#(type=="thinking")`); th.Get("thinking").Str == "" {
				t.Errorf("no thinking block: %s", b)
			}
		} else if !bytes.Contains(b, []byte("event: message_stop")) || !bytes.Contains(b, []byte(`"output_tokens":`)) {
			t.Errorf("stream: %s", b)
		}
	}
}

// TestChatClientSeesAnthropicThinking: a Chat client of a thinking
// Anthropic key gets the thinking as reasoning_content (openai-go and a raw
// chunk reader), the signed block in thinking_blocks, the answer unchanged;
// echoing the message back replays the signed thinking to Anthropic, which
// the mock's Anthropic validator accepts.
func TestChatClientSeesAnthropicThinking(t *testing.T) {
	m, gw := reasoningGateway(t)
	c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	ctx := context.Background()
	const q = "why is the sky blue"
	params := openai.ChatCompletionNewParams{Model: "claude-sonnet-4-5", ReasoningEffort: shared.ReasoningEffortHigh,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)}}
	wantThinking, wantText := mockupstream.ReasoningText(q), mockupstream.Text(q)

	res, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	msg := res.Choices[0].Message
	var ext struct {
		ReasoningContent string `json:"reasoning_content"`
		ThinkingBlocks   []struct {
			Type, Thinking, Signature string
		} `json:"thinking_blocks"`
	}
	if err := json.Unmarshal([]byte(msg.RawJSON()), &ext); err != nil {
		t.Fatal(err)
	}
	if ext.ReasoningContent != wantThinking || msg.Content != wantText {
		t.Errorf("reasoning_content %q content %q", ext.ReasoningContent, msg.Content)
	}
	if len(ext.ThinkingBlocks) != 1 || ext.ThinkingBlocks[0].Signature == "" || ext.ThinkingBlocks[0].Thinking != wantThinking {
		t.Errorf("thinking_blocks %+v", ext.ThinkingBlocks)
	}

	// streamed: the openai-go stream and accumulator, reading
	// reasoning_content from each chunk's raw delta
	st := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	var reasoning strings.Builder
	var sig string
	for st.Next() {
		ch := st.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) > 0 {
			d := gjson.Parse(ch.Choices[0].Delta.RawJSON())
			reasoning.WriteString(d.Get("reasoning_content").Str)
			if s := d.Get("thinking_blocks.0.signature").Str; s != "" {
				sig = s
			}
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if reasoning.String() != wantThinking || acc.Choices[0].Message.Content != wantText || sig == "" {
		t.Errorf("stream: reasoning %q content %q signature %q", reasoning.String(), acc.Choices[0].Message.Content, sig)
	}

	// a raw chunk reader sees the same
	resp, b := post(t, gw+"/v1/chat/completions", []byte(`{"model":"claude-sonnet-4-5","reasoning_effort":"high","stream":true,"messages":[{"role":"user","content":"`+q+`"}]}`))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var raw strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok && line != "[DONE]" {
			raw.WriteString(gjson.Get(line, "choices.0.delta.reasoning_content").Str)
		}
	}
	if raw.String() != wantThinking {
		t.Errorf("raw reader reasoning %q", raw.String())
	}

	// the client echoes the whole assistant message (with thinking_blocks)
	// and the tool turn: the signed thinking goes back to Anthropic
	echo := `{"model":"claude-sonnet-4-5","reasoning_effort":"high","messages":[{"role":"user","content":"` + q + `"},` +
		msg.RawJSON() + `,{"role":"user","content":"and at sunset?"}]}`
	resp, b = post(t, gw+"/v1/chat/completions", []byte(echo))
	if resp.StatusCode != 200 {
		t.Fatalf("echo: %d %s", resp.StatusCode, b)
	}
	up := gjson.ParseBytes(m.Stats("an-key").LastBody)
	if th := up.Get(`messages.1.content.0`); th.Get("type").Str != "thinking" || th.Get("signature").Str != ext.ThinkingBlocks[0].Signature ||
		th.Get("thinking").Str != wantThinking {
		t.Errorf("replayed thinking %s", up.Get("messages.1").Raw)
	}
}

// TestChatCacheControlThroughGateway: cache_control on a Chat system part
// and on a tool reaches the Anthropic key on exactly those blocks.
func TestChatCacheControlThroughGateway(t *testing.T) {
	m, gw := reasoningGateway(t)
	body := `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[
	 {"role":"system","content":[{"type":"text","text":"rules"},{"type":"text","text":"long context","cache_control":{"type":"ephemeral"}}]},
	 {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
	 {"role":"tool","tool_call_id":"c1","content":"ok"},
	 {"role":"user","content":"hi"}],
	 "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}},"cache_control":{"type":"ephemeral"}}]}`
	resp, b := post(t, gw+"/v1/chat/completions", []byte(body))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	up := m.Stats("an-key").LastBody
	if n := bytes.Count(up, []byte(`"cache_control"`)); n != 2 ||
		gjson.GetBytes(up, "system.1.cache_control.type").Str != "ephemeral" ||
		gjson.GetBytes(up, "tools.0.cache_control.type").Str != "ephemeral" {
		t.Errorf("%d cache_control marks: %s", n, up)
	}
	if msg := mockupstream.ValidateAnthropicRequest(up); msg != "" {
		t.Errorf("validator: %s", msg)
	}
}

// TestReasoningContentOffAndBlankBlocks: a pool with reasoning_content off
// gives Chat clients the answer without reasoning_content or
// thinking_blocks; an Anthropic client's history with empty and
// whitespace-only text blocks passes through to an Anthropic key that
// rejects them, as Anthropic does (the mock validates every request).
func TestReasoningContentOffAndBlankBlocks(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool quiet {\n\t\t\tmodels claude-*\n\t\t\treasoning_content off\n\t\t\tkey an-key "+root+" {\n\t\t\t\tid an\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n\t}\n")
	const q = "why is the sky blue"
	for _, stream := range []bool{false, true} {
		body := []byte(`{"model":"claude-sonnet-4-5","reasoning_effort":"high","stream":` + fmt.Sprint(stream) + `,"messages":[{"role":"user","content":"` + q + `"}]}`)
		resp, out := post(t, gw+"/v1/chat/completions", body)
		if resp.StatusCode != 200 || strings.Contains(string(out), "reasoning_content") || strings.Contains(string(out), "thinking_blocks") ||
			!strings.Contains(string(out), "Mock") {
			t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, out)
		}
	}
	history := `{"model":"claude-x","max_tokens":50,"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"run it"},{"type":"text","text":""}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"  \n"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"},{"type":"text","text":" "}]}]}`
	resp, out := post(t, gw+"/v1/messages", []byte(history), "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != 200 {
		t.Fatalf("blank text blocks reached the Anthropic key: %d %s", resp.StatusCode, out)
	}
	sent := m.Stats("an-key").LastBody
	if strings.Contains(string(sent), `"text":""`) || strings.Contains(string(sent), `"text":"  \n"`) || strings.Contains(string(sent), `"text":" "`) {
		t.Fatalf("upstream got blank text blocks: %s", sent)
	}
}

// TestChatReasoningFieldToDeepSeekKey: a Chat client (OpenRouter-style)
// that echoes an assistant tool-call turn with `reasoning` reaches a
// DeepSeek-style key with it as `reasoning_content`, which the key
// requires; the rest of the body passes as it was.
func TestChatReasoningFieldToDeepSeekKey(t *testing.T) {
	m, gw := reasoningGateway(t)
	body := `{"model":"deepseek-reasoner","messages":[{"role":"user","content":"list the files"},` +
		`{"role":"assistant","content":"","reasoning":"I should run ls.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"a.go b.go"}],` +
		`"tools":[{"type":"function","function":{"name":"Bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}`
	resp, b := post(t, gw+"/v1/chat/completions", []byte(body))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	seen := m.Stats("ds-key").LastBody
	if gjson.GetBytes(seen, "messages.1.reasoning_content").Str != "I should run ls." || gjson.GetBytes(seen, "messages.1.reasoning").Exists() ||
		len(seen) != len(body)+len("_content") {
		t.Fatalf("upstream saw %s", seen)
	}
}
