package mockupstream

import (
	"bytes"
	"encoding/json"
	"time"
)

// chatRequest is the part of an OpenAI Chat Completions request the mock
// looks at.
type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages        []message       `json:"messages"`
	Tools           []chatTool      `json:"tools"`
	ToolChoice      json.RawMessage `json:"tool_choice"`
	ReasoningEffort string          `json:"reasoning_effort"`
	// MaxCompletionTokens, or else the legacy MaxTokens, limits the answer
	// (finish_reason "length").
	MaxCompletionTokens int `json:"max_completion_tokens"`
	MaxTokens           int `json:"max_tokens"`
}

// chatTool is an OpenAI function tool (nested, or flat Responses style).
type chatTool struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
	Function   struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func (t *chatTool) name() string {
	if t.Function.Name != "" {
		return t.Function.Name
	}
	return t.Name
}

func (t *chatTool) params() json.RawMessage {
	if t.Function.Name != "" {
		return t.Function.Parameters
	}
	return t.Parameters
}

// toolChoice decodes tool_choice: "none", "auto", "required" or
// {"type":"function","function":{"name":...}}.
func (req *chatRequest) toolChoice() (none, forced bool, name string) {
	raw := bytes.TrimSpace(req.ToolChoice)
	if len(raw) == 0 {
		return false, false, ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s == "none", s == "required", ""
	}
	var v struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return false, false, ""
	}
	if v.Function.Name != "" {
		return false, true, v.Function.Name
	}
	if v.Name != "" {
		return false, true, v.Name
	}
	return v.Type == "none", v.Type == "required", ""
}

// decide computes the answer to a chat request.
func (req *chatRequest) decide(defModel string, b *KeyBehavior) answer {
	a := answer{model: req.Model, prompt: promptTokens(req.Messages, "")}
	if a.model == "" {
		a.model = defModel
	}
	user := lastUserText(req.Messages)
	// the last turn, ignoring trailing system messages (Claude Code sends
	// system messages in the middle and at the end of a conversation)
	var last *message
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if r := req.Messages[i].Role; r != "system" && r != "developer" {
			last = &req.Messages[i]
			break
		}
	}
	if (req.ReasoningEffort != "" && req.ReasoningEffort != "none") || isReasoningModel(a.model) || b.Vendor == VendorDeepSeek {
		a.reasoning = ReasoningText(user)
	}
	if last != nil && last.Role == "tool" {
		a.text = ToolText(last.Content.text)
		a.applyLimit(req.limit())
		return a
	}
	none, forced, name := req.toolChoice()
	if len(req.Tools) > 0 && !none && (forced || (last != nil && last.Role == "user" && wantsTool(last.Content.text, b))) {
		tool := &req.Tools[0]
		if name == "" && b != nil {
			name = b.ToolName
		}
		if name != "" {
			for i := range req.Tools {
				if req.Tools[i].name() == name {
					tool = &req.Tools[i]
					break
				}
			}
		}
		a.toolName = tool.name()
		if a.toolName == "" {
			a.toolName = name
		}
		a.toolArgs = toolArguments(tool.params())
		if b != nil && b.ToolArguments != "" && (b.ToolName == "" || b.ToolName == a.toolName) {
			a.toolArgs = b.ToolArguments
		}
		return a
	}
	a.text = Text(user)
	a.applyLimit(req.limit())
	return a
}

// limit is the requested output token limit (0 = none).
func (req *chatRequest) limit() int {
	if req.MaxCompletionTokens > 0 {
		return req.MaxCompletionTokens
	}
	return req.MaxTokens
}

// chatFinish is the finish_reason of an answer.
func chatFinish(a *answer) string {
	switch {
	case a.toolName != "":
		return "tool_calls"
	case a.truncated:
		return "length"
	}
	return "stop"
}

// serveChat answers POST /v1/chat/completions.
func (c *call) serveChat(req *chatRequest) {
	a := req.decide(c.s.model, c.b)
	if req.Stream {
		c.streamChat(req, &a)
		return
	}
	if !c.waitGeneration(a.completionTokens()) {
		c.ks.canceled.Add(1)
		return
	}
	buf := make([]byte, 0, 512+len(a.text)+len(a.reasoning))
	buf = append(buf, `{"id":"chatcmpl-mock`...)
	buf = appendInt(buf, int64(c.id))
	buf = append(buf, `","object":"chat.completion","created":`...)
	buf = appendInt(buf, time.Now().Unix())
	buf = append(buf, `,"model":`...)
	buf = appendString(buf, a.model)
	buf = append(buf, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	finish := chatFinish(&a)
	if a.toolName != "" {
		buf = append(buf, "null"...)
	} else {
		buf = appendString(buf, a.text)
	}
	if a.reasoning != "" {
		buf = append(buf, `,"reasoning_content":`...)
		buf = appendString(buf, a.reasoning)
	}
	if a.toolName != "" {
		buf = append(buf, `,"tool_calls":[{"id":"call_mock`...)
		buf = appendInt(buf, int64(c.id))
		buf = append(buf, `","type":"function","function":{"name":`...)
		buf = appendString(buf, a.toolName)
		buf = append(buf, `,"arguments":`...)
		buf = appendString(buf, a.toolArgs)
		buf = append(buf, "}}]"...)
	}
	buf = append(buf, `,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"`...)
	buf = append(buf, finish...)
	buf = append(buf, `"}],"usage":`...)
	buf = appendChatUsage(buf, &a)
	buf = append(buf, `,"system_fingerprint":"fp_mock"}`...)
	c.writeJSON(200, buf)
	c.ks.ok.Add(1)
}

// appendChatUsage appends the OpenAI usage object of an answer.
func appendChatUsage(buf []byte, a *answer) []byte {
	comp := a.completionTokens()
	buf = append(buf, `{"prompt_tokens":`...)
	buf = appendInt(buf, int64(a.prompt))
	buf = append(buf, `,"completion_tokens":`...)
	buf = appendInt(buf, int64(comp))
	buf = append(buf, `,"total_tokens":`...)
	buf = appendInt(buf, int64(a.prompt+comp))
	buf = append(buf, `,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":`...)
	buf = appendInt(buf, int64(wordCount(a.reasoning)))
	return append(buf, "}}"...)
}

// streamChat answers a chat request with stream:true, chunk by chunk.
func (c *call) streamChat(req *chatRequest, a *answer) {
	e := c.startSSE()
	includeUsage := req.StreamOptions.IncludeUsage

	// head is shared by every chunk: data: {"id":...,"system_fingerprint":"fp_mock",
	head := make([]byte, 0, 160)
	head = append(head, `data: {"id":"chatcmpl-mock`...)
	head = appendInt(head, int64(c.id))
	head = append(head, `","object":"chat.completion.chunk","created":`...)
	head = appendInt(head, time.Now().Unix())
	head = append(head, `,"model":`...)
	head = appendString(head, a.model)
	head = append(head, `,"system_fingerprint":"fp_mock","choices":`...)
	tail := `,"logprobs":null,"finish_reason":null}]}` + "\n\n"
	if includeUsage {
		tail = `,"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	}
	cs := chatStream{e: e, head: head, tail: tail}

	ok := func() bool {
		first := `{"role":"assistant","content":""}`
		if a.toolName != "" {
			first = `{"role":"assistant","content":null}`
		}
		if !cs.raw(first) {
			return false
		}
		for rest := a.reasoning; rest != ""; {
			var w string
			w, rest = nextWord(rest)
			if !e.pace() || !cs.str(`{"reasoning_content":`, w, `}`) {
				return false
			}
		}
		finish := chatFinish(a)
		if a.toolName != "" {
			open := append(make([]byte, 0, 128), `{"tool_calls":[{"index":0,"id":"call_mock`...)
			open = appendInt(open, int64(c.id))
			open = append(open, `","type":"function","function":{"name":`...)
			open = appendString(open, a.toolName)
			open = append(open, `,"arguments":""}}]}`...)
			if !cs.raw(string(open)) {
				return false
			}
			for _, frag := range argFragments(a.toolArgs) {
				if !e.pace() || !cs.str(`{"tool_calls":[{"index":0,"function":{"arguments":`, frag, `}}]}`) {
					return false
				}
			}
		} else {
			for rest := a.text; rest != ""; {
				var w string
				w, rest = nextWord(rest)
				if !e.pace() || !cs.str(`{"content":`, w, `}`) {
					return false
				}
			}
		}
		b := append(e.buf[:0], head...)
		b = append(b, `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"`...)
		b = append(b, finish...)
		b = append(b, `"}]`...)
		if includeUsage {
			b = append(b, `,"usage":null`...)
		}
		b = append(b, "}\n\n"...)
		e.buf = b
		if !e.send(b) {
			return false
		}
		if includeUsage {
			b = append(e.buf[:0], head...)
			b = append(b, `[],"usage":`...)
			b = appendChatUsage(b, a)
			b = append(b, "}\n\n"...)
			e.buf = b
			if !e.send(b) {
				return false
			}
		}
		return e.send(doneEvent)
	}()
	e.done(ok)
}

var doneEvent = []byte("data: [DONE]\n\n")

// chatStream builds chat.completion.chunk events for one stream.
type chatStream struct {
	e    *sseWriter
	head []byte // `data: {"id":...,"choices":`
	tail string // closes the choice and the chunk
}

// raw sends a chunk whose delta is the JSON object delta.
func (cs *chatStream) raw(delta string) bool {
	b := append(cs.e.buf[:0], cs.head...)
	b = append(b, `[{"index":0,"delta":`...)
	b = append(b, delta...)
	b = append(b, cs.tail...)
	cs.e.buf = b
	return cs.e.send(b)
}

// str sends a chunk whose delta is pre + JSON string val + post.
func (cs *chatStream) str(pre, val, post string) bool {
	b := append(cs.e.buf[:0], cs.head...)
	b = append(b, `[{"index":0,"delta":`...)
	b = append(b, pre...)
	b = appendString(b, val)
	b = append(b, post...)
	b = append(b, cs.tail...)
	cs.e.buf = b
	return cs.e.send(b)
}
