package mockupstream

import (
	"encoding/json"
)

// messagesRequest is the part of an Anthropic Messages (or count_tokens)
// request the mock looks at.
type messagesRequest struct {
	Model      string          `json:"model"`
	Stream     bool            `json:"stream"`
	System     content         `json:"system"`
	Messages   []message       `json:"messages"`
	Tools      []anthropicTool `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
	Thinking *struct {
		Type string `json:"type"`
	} `json:"thinking"`
	// MaxTokens limits the answer (stop_reason "max_tokens").
	MaxTokens int `json:"max_tokens"`
}

// anthropicTool is an Anthropic custom tool.
type anthropicTool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// promptTokens is the rough input token count (system + messages).
func (req *messagesRequest) promptTokens() int {
	return promptTokens(req.Messages, req.System.text)
}

// decide computes the answer to a Messages request.
func (req *messagesRequest) decide(defModel string, b *KeyBehavior) answer {
	a := answer{model: req.Model, prompt: req.promptTokens()}
	if a.model == "" {
		a.model = defModel
	}
	user := lastUserText(req.Messages)
	if req.Thinking != nil && (req.Thinking.Type == "enabled" || req.Thinking.Type == "adaptive") {
		a.reasoning = ReasoningText(user)
	}
	// the last turn, ignoring trailing system messages (Claude Code sends
	// system messages in the middle and at the end of a conversation)
	var last *message
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if r := req.Messages[i].Role; r != "system" && r != "developer" {
			last = &req.Messages[i]
			break
		}
	}
	if last != nil && last.Role == "user" && last.Content.toolResult {
		a.text = ToolText(last.Content.toolText)
		a.applyLimit(req.MaxTokens)
		return a
	}
	var none, forced bool
	var name string
	if tc := req.ToolChoice; tc != nil {
		none = tc.Type == "none"
		forced = tc.Type == "any" || tc.Type == "tool"
		if tc.Type == "tool" {
			name = tc.Name
		}
	}
	if len(req.Tools) > 0 && !none && (forced || (last != nil && last.Role == "user" && wantsTool(last.Content.text, b))) {
		tool := &req.Tools[0]
		if name == "" && b != nil {
			name = b.ToolName
		}
		for i := range req.Tools {
			if name != "" && req.Tools[i].Name == name {
				tool = &req.Tools[i]
				break
			}
		}
		a.toolName = tool.Name
		a.toolArgs = toolArguments(tool.InputSchema)
		if b != nil && b.ToolArguments != "" && (b.ToolName == "" || b.ToolName == a.toolName) {
			a.toolArgs = b.ToolArguments
		}
		return a
	}
	a.text = Text(user)
	a.applyLimit(req.MaxTokens)
	return a
}

// stopReason is the stop_reason of an answer.
func stopReason(a *answer) string {
	switch {
	case a.toolName != "":
		return "tool_use"
	case a.truncated:
		return "max_tokens"
	}
	return "end_turn"
}

// signature is the opaque thinking signature of an answer.
func (c *call) signature() string {
	return "mocksig_" + itoa(int64(c.id))
}

// serveMessages answers POST /v1/messages.
func (c *call) serveMessages(req *messagesRequest) {
	a := req.decide(c.s.model, c.b)
	if req.Stream {
		c.streamMessages(&a)
		return
	}
	if !c.waitGeneration(a.completionTokens()) {
		c.ks.canceled.Add(1)
		return
	}
	buf := make([]byte, 0, 512+len(a.text)+len(a.reasoning))
	buf = append(buf, `{"id":"msg_mock`...)
	buf = appendInt(buf, int64(c.id))
	buf = append(buf, `","type":"message","role":"assistant","model":`...)
	buf = appendString(buf, a.model)
	buf = append(buf, `,"content":[`...)
	if a.reasoning != "" {
		buf = append(buf, `{"type":"thinking","thinking":`...)
		buf = appendString(buf, a.reasoning)
		buf = append(buf, `,"signature":`...)
		buf = appendString(buf, c.signature())
		buf = append(buf, "},"...)
	}
	stop := stopReason(&a)
	if a.toolName != "" {
		buf = append(buf, `{"type":"tool_use","id":"toolu_mock`...)
		buf = appendInt(buf, int64(c.id))
		buf = append(buf, `","name":`...)
		buf = appendString(buf, a.toolName)
		buf = append(buf, `,"input":`...)
		buf = append(buf, a.toolArgs...)
		buf = append(buf, '}')
	} else {
		buf = append(buf, `{"type":"text","text":`...)
		buf = appendString(buf, a.text)
		buf = append(buf, '}')
	}
	buf = append(buf, `],"stop_reason":"`...)
	buf = append(buf, stop...)
	buf = append(buf, `","stop_sequence":null,"usage":{"input_tokens":`...)
	buf = appendInt(buf, int64(a.prompt))
	buf = append(buf, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":`...)
	buf = appendInt(buf, int64(a.completionTokens()))
	buf = append(buf, "}}"...)
	c.writeJSON(200, buf)
	c.ks.ok.Add(1)
}

// messagesStream builds Anthropic SSE frames.
type messagesStream struct {
	e *sseWriter
}

// event sends "event: <name>\ndata: <data>\n\n".
func (ms *messagesStream) event(name string, data []byte) bool {
	b := append(ms.e.buf[:0], "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	ms.e.buf = b
	return ms.e.send(b)
}

// delta sends a content_block_delta whose delta is
// {"type":<typ>,<field>:<val>}.
func (ms *messagesStream) delta(scratch []byte, index int, typ, field, val string) ([]byte, bool) {
	d := append(scratch[:0], `{"type":"content_block_delta","index":`...)
	d = appendInt(d, int64(index))
	d = append(d, `,"delta":{"type":"`...)
	d = append(d, typ...)
	d = append(d, `","`...)
	d = append(d, field...)
	d = append(d, `":`...)
	d = appendString(d, val)
	d = append(d, "}}"...)
	return d, ms.event("content_block_delta", d)
}

func blockEvent(scratch []byte, typ string, index int, block string) []byte {
	d := append(scratch[:0], `{"type":"`...)
	d = append(d, typ...)
	d = append(d, `","index":`...)
	d = appendInt(d, int64(index))
	if block != "" {
		d = append(d, `,"content_block":`...)
		d = append(d, block...)
	}
	return append(d, '}')
}

var pingData = []byte(`{"type": "ping"}`)

// streamMessages answers a Messages request with stream:true.
func (c *call) streamMessages(a *answer) {
	e := c.startSSE()
	ms := &messagesStream{e: e}
	d := make([]byte, 0, 256)

	ok := func() bool {
		d = append(d[:0], `{"type":"message_start","message":{"id":"msg_mock`...)
		d = appendInt(d, int64(c.id))
		d = append(d, `","type":"message","role":"assistant","model":`...)
		d = appendString(d, a.model)
		d = append(d, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
		d = appendInt(d, int64(a.prompt))
		d = append(d, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`...)
		if !ms.event("message_start", d) {
			return false
		}
		index := 0
		var sent bool
		startBlock := func(block string) bool {
			d = blockEvent(d, "content_block_start", index, block)
			if !ms.event("content_block_start", d) {
				return false
			}
			if index == 0 {
				return ms.event("ping", pingData)
			}
			return true
		}
		stopBlock := func() bool {
			d = blockEvent(d, "content_block_stop", index, "")
			index++
			return ms.event("content_block_stop", d)
		}
		if a.reasoning != "" {
			if !startBlock(`{"type":"thinking","thinking":"","signature":""}`) {
				return false
			}
			for rest := a.reasoning; rest != ""; {
				var w string
				w, rest = nextWord(rest)
				if !e.pace() {
					return false
				}
				if d, sent = ms.delta(d, index, "thinking_delta", "thinking", w); !sent {
					return false
				}
			}
			if d, sent = ms.delta(d, index, "signature_delta", "signature", c.signature()); !sent {
				return false
			}
			if !stopBlock() {
				return false
			}
		}
		stop := stopReason(a)
		if a.toolName != "" {
			blk := append(make([]byte, 0, 96), `{"type":"tool_use","id":"toolu_mock`...)
			blk = appendInt(blk, int64(c.id))
			blk = append(blk, `","name":`...)
			blk = appendString(blk, a.toolName)
			blk = append(blk, `,"input":{}}`...)
			if !startBlock(string(blk)) {
				return false
			}
			if d, sent = ms.delta(d, index, "input_json_delta", "partial_json", ""); !sent {
				return false
			}
			for _, frag := range argFragments(a.toolArgs) {
				if !e.pace() {
					return false
				}
				if d, sent = ms.delta(d, index, "input_json_delta", "partial_json", frag); !sent {
					return false
				}
			}
		} else {
			if !startBlock(`{"type":"text","text":""}`) {
				return false
			}
			for rest := a.text; rest != ""; {
				var w string
				w, rest = nextWord(rest)
				if !e.pace() {
					return false
				}
				if d, sent = ms.delta(d, index, "text_delta", "text", w); !sent {
					return false
				}
			}
		}
		if !stopBlock() {
			return false
		}
		d = append(d[:0], `{"type":"message_delta","delta":{"stop_reason":"`...)
		d = append(d, stop...)
		d = append(d, `","stop_sequence":null},"usage":{"output_tokens":`...)
		d = appendInt(d, int64(a.completionTokens()))
		d = append(d, "}}"...)
		if !ms.event("message_delta", d) {
			return false
		}
		return ms.event("message_stop", []byte(`{"type":"message_stop"}`))
	}()
	e.done(ok)
}
