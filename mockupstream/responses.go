package mockupstream

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"time"
)

// responsesRequest is the part of an OpenAI Responses request the mock looks
// at (per the OpenAI Responses API reference, "Create a model response").
type responsesRequest struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Instructions json.RawMessage `json:"instructions"`
	Input        responsesInput  `json:"input"`
	Tools        responsesTools  `json:"tools"`
	ToolChoice   json.RawMessage `json:"tool_choice"`
	Reasoning    *struct {
		Effort  string          `json:"effort"`
		Summary json.RawMessage `json:"summary"`
	} `json:"reasoning"`
	Include []string `json:"include"`
	// MaxOutputTokens limits the answer (status "incomplete",
	// incomplete_details.reason "max_output_tokens").
	MaxOutputTokens int `json:"max_output_tokens"`
}

// responsesInput is the input of a Responses request: a string (one user
// message) or an array of input items, read as conversation turns: messages
// (with or without "type":"message") keep their role, a function_call is an
// assistant turn, a function_call_output is a "tool" turn (its output is the
// tool result), and other items (reasoning, built-in tool calls) are skipped.
type responsesInput struct {
	msgs []message
}

// responsesTools is the tools array: the function tools (and any other
// tool with a name) as chatTool, and the array as sent, which the response
// object echoes.
type responsesTools struct {
	list []chatTool
	raw  json.RawMessage
}

// UnmarshalJSON keeps the raw array and decodes its tools.
func (t *responsesTools) UnmarshalJSON(b []byte) error {
	t.raw = append(t.raw[:0], b...)
	return json.Unmarshal(b, &t.list)
}

// responsesItem is one element of an input array.
type responsesItem struct {
	Type    string  `json:"type"`
	Role    string  `json:"role"`
	Content content `json:"content"`
	Output  content `json:"output"`
}

// UnmarshalJSON accepts a string, null or an array of input items.
func (in *responsesInput) UnmarshalJSON(b []byte) error {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] == 'n' {
		return nil
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		in.msgs = []message{{Role: "user", Content: content{text: s}}}
		return nil
	}
	var items []responsesItem
	if err := json.Unmarshal(b, &items); err != nil {
		return err
	}
	for i := range items {
		it := &items[i]
		switch it.Type {
		case "", "message":
			in.msgs = append(in.msgs, message{Role: it.Role, Content: it.Content})
		case "function_call":
			in.msgs = append(in.msgs, message{Role: "assistant"})
		case "function_call_output", "custom_tool_call_output":
			in.msgs = append(in.msgs, message{Role: "tool", Content: it.Output})
		}
	}
	return nil
}

// instructions is the text of the instructions field ("" when absent or not
// a string).
func (req *responsesRequest) instructions() string {
	var s string
	if len(req.Instructions) > 0 && req.Instructions[0] == '"' {
		_ = json.Unmarshal(req.Instructions, &s)
	}
	return s
}

// promptTokens is the rough input token count (instructions + input).
func (req *responsesRequest) promptTokens() int {
	return promptTokens(req.Input.msgs, req.instructions())
}

// effort is reasoning.effort ("" when absent).
func (req *responsesRequest) effort() string {
	if req.Reasoning == nil {
		return ""
	}
	return req.Reasoning.Effort
}

// includes reports whether the include list names v.
func (req *responsesRequest) includes(v string) bool {
	for _, s := range req.Include {
		if s == v {
			return true
		}
	}
	return false
}

// decide computes the answer with the Chat rules (see the package
// documentation): the input items as messages, the flat function tools,
// tool_choice ("none", "auto", "required", {"type":"function","name"}),
// reasoning.effort as reasoning_effort and max_output_tokens as the limit.
func (req *responsesRequest) decide(defModel string, b *KeyBehavior) answer {
	chat := chatRequest{
		Model:               req.Model,
		Messages:            req.Input.msgs,
		Tools:               req.Tools.list,
		ToolChoice:          req.ToolChoice,
		ReasoningEffort:     req.effort(),
		MaxCompletionTokens: req.MaxOutputTokens,
	}
	var vb KeyBehavior
	if b != nil {
		vb = *b
	}
	vb.Vendor = "" // vendor rules are Chat's
	a := chat.decide(defModel, &vb)
	a.prompt = req.promptTokens()
	return a
}

// responsesStatus is the response status of an answer and its
// incomplete_details ("null" unless cut by max_output_tokens).
func responsesStatus(a *answer) (status, details string) {
	if a.truncated {
		return "incomplete", `{"reason":"max_output_tokens"}`
	}
	return "completed", "null"
}

// responsesAnswer carries one Responses answer: its ids and the output
// items, built once and used by the JSON answer and the stream.
type responsesAnswer struct {
	c         *call
	req       *responsesRequest
	a         *answer
	created   int64
	encrypted string // encrypted_content of the reasoning item, "" if not asked
}

func (c *call) newResponsesAnswer(req *responsesRequest, a *answer) *responsesAnswer {
	ra := &responsesAnswer{c: c, req: req, a: a, created: time.Now().Unix()}
	if a.reasoning != "" && req.includes("reasoning.encrypted_content") {
		ra.encrypted = c.encryptedReasoning(a.reasoning)
	}
	return ra
}

// encryptedReasoning is the opaque encrypted_content of a reasoning item:
// "gAAAAAB" (the prefix of OpenAI's Fernet tokens) followed by the
// unpadded base64url of "rs_mock<id>:<reasoning text>", so it is
// deterministic and its origin can be checked.
func (c *call) encryptedReasoning(reasoning string) string {
	raw := "rs_mock" + itoa(int64(c.id)) + ":" + reasoning
	return "gAAAAAB" + base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func (ra *responsesAnswer) appendID(b []byte, prefix string) []byte {
	b = append(b, prefix...)
	b = append(b, "_mock"...)
	return appendInt(b, int64(ra.c.id))
}

// appendReasoningItem appends the reasoning item; done adds the summary.
func (ra *responsesAnswer) appendReasoningItem(b []byte, done bool) []byte {
	b = append(b, `{"id":"`...)
	b = ra.appendID(b, "rs")
	b = append(b, `","type":"reasoning"`...)
	if ra.encrypted != "" {
		b = append(b, `,"encrypted_content":`...)
		b = appendString(b, ra.encrypted)
	}
	b = append(b, `,"summary":[`...)
	if done {
		b = append(b, `{"type":"summary_text","text":`...)
		b = appendString(b, ra.a.reasoning)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendTextPart appends an output_text content part holding text.
func appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	b = appendString(b, text)
	return append(b, '}')
}

// appendMessageItem appends the assistant message item; done adds its
// text and marks it completed.
func (ra *responsesAnswer) appendMessageItem(b []byte, done bool) []byte {
	b = append(b, `{"id":"`...)
	b = ra.appendID(b, "msg")
	b = append(b, `","type":"message","status":"`...)
	if done {
		b = append(b, `completed","content":[`...)
		b = appendTextPart(b, ra.a.text)
	} else {
		b = append(b, `in_progress","content":[`...)
	}
	return append(b, `],"role":"assistant"}`...)
}

// appendFunctionCallItem appends the function_call item; done adds the
// arguments and marks it completed.
func (ra *responsesAnswer) appendFunctionCallItem(b []byte, done bool) []byte {
	b = append(b, `{"id":"`...)
	b = ra.appendID(b, "fc")
	b = append(b, `","type":"function_call","status":"`...)
	if done {
		b = append(b, `completed","arguments":`...)
		b = appendString(b, ra.a.toolArgs)
	} else {
		b = append(b, `in_progress","arguments":""`...)
	}
	b = append(b, `,"call_id":"`...)
	b = ra.appendID(b, "call")
	b = append(b, `","name":`...)
	b = appendString(b, ra.a.toolName)
	return append(b, '}')
}

// appendOutput appends the completed output items (reasoning, then the
// message or the function call).
func (ra *responsesAnswer) appendOutput(b []byte) []byte {
	b = append(b, '[')
	if ra.a.reasoning != "" {
		b = ra.appendReasoningItem(b, true)
		b = append(b, ',')
	}
	if ra.a.toolName != "" {
		b = ra.appendFunctionCallItem(b, true)
	} else {
		b = ra.appendMessageItem(b, true)
	}
	return append(b, ']')
}

// appendResponsesUsage appends the Responses usage object of an answer.
func appendResponsesUsage(b []byte, a *answer) []byte {
	comp := a.completionTokens()
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, int64(a.prompt))
	b = append(b, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
	b = appendInt(b, int64(comp))
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = appendInt(b, int64(wordCount(a.reasoning)))
	b = append(b, `},"total_tokens":`...)
	b = appendInt(b, int64(a.prompt+comp))
	return append(b, '}')
}

// appendResponse appends the response object in the field order of OpenAI's
// answers. status "in_progress" gives an empty output and null usage;
// "failed" sets error {code, message} from errCode and errMsg.
func (ra *responsesAnswer) appendResponse(b []byte, status, details, errCode, errMsg string) []byte {
	req, a := ra.req, ra.a
	final := status != "in_progress"
	b = append(b, `{"id":"`...)
	b = ra.appendID(b, "resp")
	b = append(b, `","object":"response","created_at":`...)
	b = appendInt(b, ra.created)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","background":false,"completed_at":`...)
	if status == "completed" {
		b = appendInt(b, time.Now().Unix())
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"error":`...)
	if errCode != "" {
		b = append(b, `{"code":`...)
		b = appendString(b, errCode)
		b = append(b, `,"message":`...)
		b = appendString(b, errMsg)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"incomplete_details":`...)
	if details == "" {
		details = "null"
	}
	b = append(b, details...)
	b = append(b, `,"instructions":`...)
	b = appendRaw(b, req.Instructions)
	b = append(b, `,"max_output_tokens":`...)
	if req.MaxOutputTokens > 0 {
		b = appendInt(b, int64(req.MaxOutputTokens))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"max_tool_calls":null,"model":`...)
	b = appendString(b, a.model)
	b = append(b, `,"output":`...)
	if final && status != "failed" {
		b = ra.appendOutput(b)
	} else {
		b = append(b, "[]"...)
	}
	b = append(b, `,"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":`...)
	if e := req.effort(); e != "" {
		b = appendString(b, e)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"summary":`...)
	if req.Reasoning != nil {
		b = appendRaw(b, req.Reasoning.Summary)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `},"service_tier":"default","store":false,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":`...)
	if len(req.ToolChoice) > 0 {
		b = append(b, req.ToolChoice...)
	} else {
		b = append(b, `"auto"`...)
	}
	b = append(b, `,"tools":`...)
	if raw := bytes.TrimSpace(req.Tools.raw); len(raw) > 0 && raw[0] == '[' {
		b = append(b, raw...)
	} else {
		b = append(b, "[]"...)
	}
	b = append(b, `,"top_p":1.0,"truncation":"disabled","usage":`...)
	if final {
		b = appendResponsesUsage(b, a)
	} else {
		b = append(b, "null"...)
	}
	return append(b, `,"user":null,"metadata":{}}`...)
}

// appendRaw appends a raw JSON value, or null when it is empty.
func appendRaw(b []byte, raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// serveResponses answers POST /v1/responses.
func (c *call) serveResponses(req *responsesRequest) {
	a := req.decide(c.s.model, c.b)
	ra := c.newResponsesAnswer(req, &a)
	if req.Stream {
		c.streamResponses(ra)
		return
	}
	if !c.waitGeneration(a.completionTokens()) {
		c.ks.canceled.Add(1)
		return
	}
	status, details := responsesStatus(&a)
	buf := ra.appendResponse(make([]byte, 0, 1024+len(a.text)+2*len(a.reasoning)), status, details, "", "")
	c.writeJSON(200, buf)
	c.ks.ok.Add(1)
}

// responsesStream builds the events of a Responses stream: each one is
// "event: <type>\ndata: {"type":<type>,<fields>,"sequence_number":N}\n\n",
// numbered from 0 in the order sent (per the OpenAI Responses streaming
// events reference).
type responsesStream struct {
	e  *sseWriter
	ra *responsesAnswer
	d  []byte // scratch for the fields
}

// event sends one event whose fields (after "type") are d, which starts
// with a comma.
func (rs *responsesStream) event(typ string, fields []byte) bool {
	b := append(rs.e.buf[:0], "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: {\"type\":\""...)
	b = append(b, typ...)
	b = append(b, '"')
	b = append(b, fields...)
	b = append(b, `,"sequence_number":`...)
	b = appendInt(b, int64(rs.e.seq))
	b = append(b, "}\n\n"...)
	rs.e.seq++
	rs.e.buf = b
	return rs.e.send(b)
}

// item sends output_item.added or output_item.done for the item at index.
func (rs *responsesStream) item(typ string, index int, appendItem func([]byte, bool) []byte, done bool) bool {
	d := append(rs.d[:0], `,"item":`...)
	d = appendItem(d, done)
	d = append(d, `,"output_index":`...)
	d = appendInt(d, int64(index))
	rs.d = d
	return rs.event(typ, d)
}

// head appends the item_id and output_index fields of item prefix.
func (rs *responsesStream) head(d []byte, prefix string, index int) []byte {
	d = append(d, `,"item_id":"`...)
	d = rs.ra.appendID(d, prefix)
	d = append(d, `","output_index":`...)
	return appendInt(d, int64(index))
}

// streamResponses answers a Responses request with stream:true.
func (c *call) streamResponses(ra *responsesAnswer) {
	e := c.startSSE()
	e.responses = ra
	rs := &responsesStream{e: e, ra: ra, d: make([]byte, 0, 512)}
	a := ra.a

	ok := func() bool {
		for _, typ := range [...]string{"response.created", "response.in_progress"} {
			d := append(rs.d[:0], `,"response":`...)
			d = ra.appendResponse(d, "in_progress", "null", "", "")
			rs.d = d
			if !rs.event(typ, d) {
				return false
			}
		}
		index := 0
		if a.reasoning != "" {
			if !rs.item("response.output_item.added", index, ra.appendReasoningItem, false) {
				return false
			}
			d := rs.head(rs.d[:0], "rs", index)
			d = append(d, `,"part":{"type":"summary_text","text":""},"summary_index":0`...)
			rs.d = d
			if !rs.event("response.reasoning_summary_part.added", d) {
				return false
			}
			for rest := a.reasoning; rest != ""; {
				var w string
				w, rest = nextWord(rest)
				if !e.pace() {
					return false
				}
				d = append(rs.d[:0], `,"delta":`...)
				d = appendString(d, w)
				d = rs.head(d, "rs", index)
				d = append(d, `,"summary_index":0`...)
				rs.d = d
				if !rs.event("response.reasoning_summary_text.delta", d) {
					return false
				}
			}
			d = rs.head(rs.d[:0], "rs", index)
			d = append(d, `,"summary_index":0,"text":`...)
			d = appendString(d, a.reasoning)
			rs.d = d
			if !rs.event("response.reasoning_summary_text.done", d) {
				return false
			}
			d = rs.head(rs.d[:0], "rs", index)
			d = append(d, `,"part":{"type":"summary_text","text":`...)
			d = appendString(d, a.reasoning)
			d = append(d, `},"summary_index":0`...)
			rs.d = d
			if !rs.event("response.reasoning_summary_part.done", d) {
				return false
			}
			if !rs.item("response.output_item.done", index, ra.appendReasoningItem, true) {
				return false
			}
			index++
		}
		if a.toolName != "" {
			if !rs.item("response.output_item.added", index, ra.appendFunctionCallItem, false) {
				return false
			}
			for _, frag := range argFragments(a.toolArgs) {
				if !e.pace() {
					return false
				}
				d := append(rs.d[:0], `,"delta":`...)
				d = appendString(d, frag)
				d = rs.head(d, "fc", index)
				rs.d = d
				if !rs.event("response.function_call_arguments.delta", d) {
					return false
				}
			}
			d := append(rs.d[:0], `,"arguments":`...)
			d = appendString(d, a.toolArgs)
			d = rs.head(d, "fc", index)
			rs.d = d
			if !rs.event("response.function_call_arguments.done", d) {
				return false
			}
			if !rs.item("response.output_item.done", index, ra.appendFunctionCallItem, true) {
				return false
			}
		} else {
			if !rs.item("response.output_item.added", index, ra.appendMessageItem, false) {
				return false
			}
			part := func(typ, text string) bool {
				d := append(rs.d[:0], `,"content_index":0`...)
				d = rs.head(d, "msg", index)
				d = append(d, `,"part":`...)
				d = appendTextPart(d, text)
				rs.d = d
				return rs.event(typ, d)
			}
			if !part("response.content_part.added", "") {
				return false
			}
			for rest := a.text; rest != ""; {
				var w string
				w, rest = nextWord(rest)
				if !e.pace() {
					return false
				}
				d := append(rs.d[:0], `,"content_index":0,"delta":`...)
				d = appendString(d, w)
				d = append(d, `,"item_id":"`...)
				d = ra.appendID(d, "msg")
				d = append(d, `","logprobs":[],"output_index":`...)
				d = appendInt(d, int64(index))
				rs.d = d
				if !rs.event("response.output_text.delta", d) {
					return false
				}
			}
			d := append(rs.d[:0], `,"content_index":0,"item_id":"`...)
			d = ra.appendID(d, "msg")
			d = append(d, `","logprobs":[],"output_index":`...)
			d = appendInt(d, int64(index))
			d = append(d, `,"text":`...)
			d = appendString(d, a.text)
			rs.d = d
			if !rs.event("response.output_text.done", d) {
				return false
			}
			if !part("response.content_part.done", a.text) {
				return false
			}
			if !rs.item("response.output_item.done", index, ra.appendMessageItem, true) {
				return false
			}
		}
		status, details := responsesStatus(a)
		typ := "response.completed"
		if status == "incomplete" {
			typ = "response.incomplete"
		}
		d := append(rs.d[:0], `,"response":`...)
		d = ra.appendResponse(d, status, details, "", "")
		rs.d = d
		return rs.event(typ, d)
	}()
	e.done(ok)
}

// appendResponsesError appends the in-band error of a Responses stream that
// fails (StreamErrorAfter): an error event (the flat code, message and param
// of the API reference, and the nested "error" object OpenAI also sends,
// which the official SDKs raise) and then response.failed with status "failed" and
// the error, numbered after the events already sent.
func (e *sseWriter) appendResponsesError(b []byte, info errorInfo) []byte {
	code := info.code
	if code == "" {
		code = info.typ
	}
	b = append(b, "event: error\ndata: {\"type\":\"error\",\"code\":"...)
	b = appendString(b, code)
	b = append(b, `,"message":`...)
	b = appendString(b, info.msg)
	b = append(b, `,"param":null,"error":{"type":`...)
	b = appendString(b, info.typ)
	b = append(b, `,"code":`...)
	b = appendString(b, code)
	b = append(b, `,"message":`...)
	b = appendString(b, info.msg)
	b = append(b, `,"param":null},"sequence_number":`...)
	b = appendInt(b, int64(e.seq))
	e.seq++
	b = append(b, "}\n\nevent: response.failed\ndata: {\"type\":\"response.failed\",\"response\":"...)
	b = e.responses.appendResponse(b, "failed", "null", code, info.msg)
	b = append(b, `,"sequence_number":`...)
	b = appendInt(b, int64(e.seq))
	e.seq++
	return append(b, "}\n\n"...)
}
