package translate

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// decodeChatRequest decodes an OpenAI Chat Completions request (OpenAI API
// reference, "Create chat completion") into the canonical form.
func decodeChatRequest(body []byte) (*canonRequest, *Error) {
	root := fieldsOf(gjson.Parse(view(body)))
	r := &canonRequest{}
	if err := decodeCommonTop(root, r); err != nil {
		return nil, err
	}
	msgs := root.get("messages")
	if !msgs.IsArray() {
		return nil, invalid("messages", "messages: must be an array")
	}
	var err *Error
	i := 0
	leading := true
	var msc objFields
	msgs.ForEach(func(_, m gjson.Result) bool {
		param := "messages[" + strconv.Itoa(i) + "]"
		i++
		if !m.IsObject() {
			err = invalid(param, "%s: must be an object", param)
			return false
		}
		msc = fieldsInto(msc, m)
		mf := msc
		role := mf.get("role").String()
		switch role {
		case "system", "developer":
			parts, e := chatTextParts(mf.get("content"), param+".content")
			if e != nil {
				err = e
				return false
			}
			if leading {
				r.system = append(r.system, parts...)
			} else {
				r.messages = append(r.messages, canonMessage{role: "system", parts: parts})
			}
			return true
		case "user":
			parts, e := chatUserParts(mf.get("content"), param+".content")
			if e != nil {
				err = e
				return false
			}
			r.addMessage("user", parts...)
		case "assistant":
			var parts []canonPart
			if rc := chatReasoning(mf.get("reasoning_content"), mf.get("reasoning"), mf.get("reasoning_details")); rc != "" {
				parts = append(parts, canonPart{kind: partThinking, text: rc})
			}
			c := mf.get("content")
			switch {
			case c.Type == gjson.String:
				if c.Str != "" {
					parts = append(parts, canonPart{kind: partText, text: c.Str})
				}
			case c.IsArray():
				j := 0
				c.ForEach(func(_, p gjson.Result) bool {
					pp := param + ".content[" + strconv.Itoa(j) + "]"
					j++
					switch p.Get("type").String() {
					case "text", "output_text":
						parts = append(parts, canonPart{kind: partText, text: p.Get("text").String()})
					case "refusal":
						parts = append(parts, canonPart{kind: partText, text: p.Get("refusal").String()})
					default:
						err = unsupported(pp, "%s: unsupported assistant content part type %q", pp, p.Get("type").String())
						return false
					}
					return true
				})
				if err != nil {
					return false
				}
			case c.Exists() && c.Type != gjson.Null:
				err = invalid(param+".content", "%s.content: must be a string, an array or null", param)
				return false
			}
			if rf := mf.get("refusal"); rf.Type == gjson.String && rf.Str != "" && !c.Exists() {
				parts = append(parts, canonPart{kind: partText, text: rf.Str})
			}
			tcs := mf.get("tool_calls")
			if tcs.Exists() && tcs.Type != gjson.Null && !tcs.IsArray() {
				err = invalid(param+".tool_calls", "%s.tool_calls: must be an array", param)
				return false
			}
			j := 0
			tcs.ForEach(func(_, tc gjson.Result) bool {
				tp := param + ".tool_calls[" + strconv.Itoa(j) + "]"
				j++
				if typ := tc.Get("type").String(); typ != "" && typ != "function" {
					err = unsupported(tp, "%s: tool call type %q cannot be translated", tp, typ)
					return false
				}
				args := tc.Get("function.arguments")
				if args.Exists() && args.Type != gjson.String && args.Type != gjson.Null {
					err = invalid(tp+".function.arguments", "%s.function.arguments: must be a JSON string", tp)
					return false
				}
				parts = append(parts, canonPart{kind: partToolCall, id: tc.Get("id").String(), name: tc.Get("function.name").String(), args: args.Str})
				return true
			})
			if err != nil {
				return false
			}
			if fc := mf.get("function_call"); fc.IsObject() && !tcs.Exists() {
				err = unsupported(param+".function_call", "%s.function_call: the deprecated function_call form is not supported; use tool_calls", param)
				return false
			}
			r.addMessage("assistant", parts...)
		case "tool":
			id := mf.get("tool_call_id")
			if id.Type != gjson.String || id.Str == "" {
				err = invalid(param+".tool_call_id", "%s.tool_call_id: required for role \"tool\"", param)
				return false
			}
			content, e := chatUserParts(mf.get("content"), param+".content")
			if e != nil {
				err = e
				return false
			}
			r.addMessage("user", canonPart{kind: partToolResult, id: id.Str, content: content})
		case "function":
			err = unsupported(param+".role", "%s.role: the deprecated \"function\" role is not supported; use \"tool\"", param)
			return false
		case "":
			err = invalid(param+".role", "%s.role: field required", param)
			return false
		default:
			err = unsupported(param+".role", "%s.role: unknown role %q", param, role)
			return false
		}
		leading = false
		return true
	})
	if err != nil {
		return nil, err
	}

	// tools
	tools := root.get("tools")
	if tools.Exists() && tools.Type != gjson.Null && !tools.IsArray() {
		return nil, invalid("tools", "tools: must be an array")
	}
	i = 0
	var tsc objFields
	tools.ForEach(func(_, t gjson.Result) bool {
		param := "tools[" + strconv.Itoa(i) + "]"
		i++
		tsc = fieldsInto(tsc, t)
		tf := tsc
		typ := tf.get("type").String()
		if typ != "function" && typ != "" {
			return true // hosted/custom tools have no counterpart: dropped
		}
		f := tf.get("function")
		name := f.Get("name").String()
		if name == "" {
			err = invalid(param+".function.name", "%s.function.name: required", param)
			return false
		}
		r.tools = append(r.tools, canonTool{name: name, description: f.Get("description").String(),
			schema: rawOrEmpty(f.Get("parameters")), strict: rawOrEmpty(f.Get("strict"))})
		return true
	})
	if err != nil {
		return nil, err
	}
	if r.toolChoice, r.toolChoiceName, err = openAIToolChoice(root.get("tool_choice"), "function.name", "allowed_tools.mode"); err != nil {
		return nil, err
	}
	if p := root.get("parallel_tool_calls"); p.IsBool() {
		b := p.Bool()
		r.parallel = &b
	}
	if v := root.get("max_completion_tokens"); v.Type == gjson.Number {
		r.maxTokens = v.Int()
	} else if v := root.get("max_tokens"); v.Type == gjson.Number {
		r.maxTokens = v.Int()
	}
	switch st := root.get("stop"); {
	case st.Type == gjson.String:
		r.stop = []string{st.Str}
	case st.IsArray():
		st.ForEach(func(_, s gjson.Result) bool {
			r.stop = append(r.stop, s.String())
			return true
		})
	}
	r.user = root.get("user").String()
	if r.user == "" {
		r.user = root.get("safety_identifier").String()
	}
	r.effort = root.get("reasoning_effort").String()
	if rf := root.get("response_format"); rf.IsObject() {
		r.formatType = rf.Get("type").String()
		if r.formatType == "json_schema" {
			js := rf.Get("json_schema")
			r.formatName = js.Get("name").String()
			r.formatSchema = rawOrEmpty(js.Get("schema"))
			r.formatStrict = rawOrEmpty(js.Get("strict"))
		}
	}
	if n := root.get("n"); n.Type == gjson.Number {
		r.n = n.Int()
	}
	return r, nil
}

// decodeCommonTop reads the fields every dialect names the same way.
func decodeCommonTop(root objFields, r *canonRequest) *Error {
	m := root.get("model")
	if m.Type != gjson.String || m.Str == "" {
		return invalid("model", "model: must be a non-empty string")
	}
	r.model = m.Str
	switch s := root.get("stream"); s.Type {
	case gjson.True:
		r.stream = true
	case gjson.False, gjson.Null:
	default:
		if s.Exists() {
			return invalid("stream", "stream: must be a boolean")
		}
	}
	for _, f := range [...]struct {
		name string
		dst  *string
	}{{"temperature", &r.temperature}, {"top_p", &r.topP}, {"top_k", &r.topK}} {
		v := root.get(f.name)
		if !v.Exists() || v.Type == gjson.Null {
			continue
		}
		if v.Type != gjson.Number {
			return invalid(f.name, "%s: must be a number", f.name)
		}
		*f.dst = v.Raw
	}
	return nil
}

// chatReasoningText returns the reasoning text of an assistant message in
// the forms OpenAI-compatible upstreams use: reasoning_content (DeepSeek,
// GLM), reasoning (OpenRouter, vLLM) or reasoning_details[].text.
func chatReasoningText(m gjson.Result) string {
	return chatReasoning(m.Get("reasoning_content"), m.Get("reasoning"), m.Get("reasoning_details"))
}

// chatReasoning picks the reasoning text from the three fields.
func chatReasoning(content, reasoning, details gjson.Result) string {
	if content.Type == gjson.String && content.Str != "" {
		return content.Str
	}
	if reasoning.Type == gjson.String && reasoning.Str != "" {
		return reasoning.Str
	}
	var s strings.Builder
	details.ForEach(func(_, d gjson.Result) bool {
		s.WriteString(d.Get("text").String())
		return true
	})
	return s.String()
}

// chatTextParts reads system/developer content: a string or text parts.
func chatTextParts(c gjson.Result, param string) ([]canonPart, *Error) {
	switch {
	case c.Type == gjson.String:
		return []canonPart{{kind: partText, text: c.Str}}, nil
	case c.IsArray():
		var parts []canonPart
		var err *Error
		c.ForEach(func(_, p gjson.Result) bool {
			if p.Get("type").String() != "text" {
				err = unsupported(param, "%s: system messages may only contain text parts", param)
				return false
			}
			parts = append(parts, canonPart{kind: partText, text: p.Get("text").String()})
			return true
		})
		return parts, err
	}
	return nil, invalid(param, "%s: must be a string or an array of text parts", param)
}

// chatUserParts reads user or tool content: a string or an array of text,
// image_url and file parts.
func chatUserParts(c gjson.Result, param string) ([]canonPart, *Error) {
	switch {
	case c.Type == gjson.String:
		return []canonPart{{kind: partText, text: c.Str}}, nil
	case c.IsArray():
		var parts []canonPart
		var err *Error
		j := 0
		c.ForEach(func(_, p gjson.Result) bool {
			pp := param + "[" + strconv.Itoa(j) + "]"
			j++
			switch typ := p.Get("type").String(); typ {
			case "text":
				t := p.Get("text")
				if t.Type != gjson.String {
					err = invalid(pp+".text", "%s.text: must be a string", pp)
					return false
				}
				parts = append(parts, canonPart{kind: partText, text: t.Str})
			case "image_url":
				iu := p.Get("image_url")
				u := iu.Get("url").String()
				if iu.Type == gjson.String {
					u = iu.Str
				}
				part, e := imagePartFromURL(u, iu.Get("detail").String(), pp+".image_url.url")
				if e != nil {
					err = e
					return false
				}
				parts = append(parts, part)
			case "file":
				f := p.Get("file")
				fd := f.Get("file_data").String()
				mt, data, ok := parseDataURL(fd)
				if !ok {
					err = unsupported(pp+".file", "%s.file: only inline file_data (a base64 data URL) can be translated", pp)
					return false
				}
				if !validBase64(data) {
					err = invalid(pp+".file.file_data", "%s.file.file_data: not valid base64", pp)
					return false
				}
				parts = append(parts, canonPart{kind: partDocument, mediaType: mt, data: data, filename: f.Get("filename").String()})
			case "input_audio":
				err = unsupported(pp, "%s: audio input cannot be translated to this upstream", pp)
				return false
			default:
				err = unsupported(pp+".type", "%s.type: unsupported content part type %q", pp, typ)
				return false
			}
			return true
		})
		return parts, err
	case !c.Exists() || c.Type == gjson.Null:
		return nil, nil
	}
	return nil, invalid(param, "%s: must be a string or an array of content parts", param)
}

// addMessage appends parts to the conversation, merging into the previous
// message when it has the same role (Anthropic merges consecutive same-role
// turns server-side; OpenAI tool messages become one user turn of results).
func (r *canonRequest) addMessage(role string, parts ...canonPart) {
	if n := len(r.messages); n > 0 && r.messages[n-1].role == role && role != "system" {
		r.messages[n-1].parts = append(r.messages[n-1].parts, parts...)
		return
	}
	r.messages = append(r.messages, canonMessage{role: role, parts: parts})
}

// decodeChatResponse decodes an OpenAI "chat.completion" object; only
// choices[0] is used.
func decodeChatResponse(body []byte) (*canonResponse, *Error) {
	root := gjson.Parse(view(body))
	c := root.Get("choices.0")
	if !c.Exists() {
		return nil, &Error{Class: ErrAPI, Message: "upstream response has no choices"}
	}
	resp := &canonResponse{id: root.Get("id").String(), model: root.Get("model").String(), created: root.Get("created").Int()}
	m := c.Get("message")
	if rc := chatReasoningText(m); rc != "" {
		resp.parts = append(resp.parts, canonPart{kind: partThinking, text: rc})
	}
	if t := m.Get("content"); t.Type == gjson.String && t.Str != "" {
		resp.parts = append(resp.parts, canonPart{kind: partText, text: t.Str})
	} else if t.IsArray() {
		t.ForEach(func(_, p gjson.Result) bool {
			if s := p.Get("text").String(); s != "" {
				resp.parts = append(resp.parts, canonPart{kind: partText, text: s})
			}
			return true
		})
	}
	refused := false
	if rf := m.Get("refusal"); rf.Type == gjson.String && rf.Str != "" {
		resp.parts = append(resp.parts, canonPart{kind: partText, text: rf.Str})
		refused = true
	}
	m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		resp.parts = append(resp.parts, canonPart{kind: partToolCall, id: tc.Get("id").String(),
			name: tc.Get("function.name").String(), args: tc.Get("function.arguments").String()})
		return true
	})
	resp.stop = stopFromChat(c.Get("finish_reason").String())
	if refused && resp.stop == stopEndTurn {
		resp.stop = stopRefusal
	}
	if u := root.Get("usage"); u.IsObject() {
		resp.usage = chatUsage(u)
	}
	return resp, nil
}

// stopFromChat maps an OpenAI finish_reason to the canonical stop reason
// (MAPPING.md §3.3, "CC → AM").
func stopFromChat(fr string) string {
	switch fr {
	case "length":
		return stopMaxTokens
	case "tool_calls", "function_call":
		return stopToolUse
	case "content_filter":
		return stopRefusal
	}
	return stopEndTurn
}

// chatFinish maps a canonical stop reason to an OpenAI finish_reason
// (MAPPING.md §3.3, "AM → CC").
func chatFinish(stop string) string {
	switch stop {
	case stopMaxTokens, stopContextLimit:
		return "length"
	case stopToolUse:
		return "tool_calls"
	case stopRefusal:
		return "content_filter"
	}
	return "stop"
}

// openAIToolChoice decodes an OpenAI tool_choice (Chat Completions and
// Responses differ only in where the named tool and the allowed_tools mode
// sit: namePath and modePath) into the canonical choice ("", "auto",
// "none", "any" or "tool") and the named tool.
func openAIToolChoice(tc gjson.Result, namePath, modePath string) (choice, name string, err *Error) {
	switch {
	case tc.Type == gjson.String:
		switch tc.Str {
		case "auto", "none":
			return tc.Str, "", nil
		case "required":
			return "any", "", nil
		}
		return "", "", unsupported("tool_choice", "tool_choice: unknown value %q", tc.Str)
	case tc.IsObject():
		switch tc.Get("type").String() {
		case "function":
			if name = tc.Get(namePath).String(); name == "" {
				return "", "", invalid("tool_choice."+namePath, "tool_choice.%s: required", namePath)
			}
			return "tool", name, nil
		case "allowed_tools":
			if tc.Get(modePath).String() == "required" {
				return "any", "", nil
			}
			return "auto", "", nil
		}
	}
	return "", "", nil
}
