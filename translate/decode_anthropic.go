package translate

import (
	"strconv"

	"github.com/tidwall/gjson"
)

// decodeAnthropicRequest decodes an Anthropic Messages request (Anthropic API
// reference, "Create a Message") into the canonical form.
func decodeAnthropicRequest(body []byte) (*canonRequest, *Error) {
	root := fieldsOf(gjson.Parse(view(body)))
	r := &canonRequest{}
	if err := decodeCommonTop(root, r); err != nil {
		return nil, err
	}
	switch sys := root.get("system"); {
	case sys.Type == gjson.String:
		if sys.Str != "" {
			r.system = []canonPart{{kind: partText, text: sys.Str}}
		}
	case sys.IsArray():
		var err *Error
		i := 0
		sys.ForEach(func(_, b gjson.Result) bool {
			p := "system[" + strconv.Itoa(i) + "]"
			i++
			if b.Get("type").String() != "text" {
				err = unsupported(p+".type", "%s.type: system blocks must be text", p)
				return false
			}
			r.system = append(r.system, canonPart{kind: partText, text: b.Get("text").String(), cache: rawOrEmpty(b.Get("cache_control"))})
			return true
		})
		if err != nil {
			return nil, err
		}
	case sys.Exists() && sys.Type != gjson.Null:
		return nil, invalid("system", "system: must be a string or an array of text blocks")
	}
	msgs := root.get("messages")
	if !msgs.IsArray() {
		return nil, invalid("messages", "messages: must be an array")
	}
	var err *Error
	i := 0
	var msc objFields
	msgs.ForEach(func(_, m gjson.Result) bool {
		param := "messages[" + strconv.Itoa(i) + "]"
		i++
		if !m.IsObject() {
			err = invalid(param, "%s: must be an object", param)
			return false
		}
		msc = fieldsInto(msc, m)
		role := msc.get("role").String()
		if role != "user" && role != "assistant" && role != "system" {
			err = unsupported(param+".role", "%s.role: must be \"user\" or \"assistant\"", param)
			return false
		}
		parts, e := anthropicBlocks(msc.get("content"), param+".content", role)
		if e != nil {
			err = e
			return false
		}
		if role == "system" {
			r.messages = append(r.messages, canonMessage{role: "system", parts: parts})
			return true
		}
		r.addMessage(role, parts...)
		return true
	})
	if err != nil {
		return nil, err
	}
	tools := root.get("tools")
	if tools.Exists() && !tools.IsArray() {
		return nil, invalid("tools", "tools: must be an array")
	}
	i = 0
	var tsc objFields
	tools.ForEach(func(_, t gjson.Result) bool {
		p := "tools[" + strconv.Itoa(i) + "]"
		i++
		tsc = fieldsInto(tsc, t)
		tf := tsc
		if typ := tf.get("type").String(); typ != "" && typ != "custom" {
			return true // server tools (web_search_…, bash_…, …) have no counterpart: dropped
		}
		name := tf.get("name").String()
		if name == "" {
			err = invalid(p+".name", "%s.name: required", p)
			return false
		}
		r.tools = append(r.tools, canonTool{name: name, description: tf.get("description").String(),
			schema: rawOrEmpty(tf.get("input_schema")), strict: rawOrEmpty(tf.get("strict")), cache: rawOrEmpty(tf.get("cache_control"))})
		return true
	})
	if err != nil {
		return nil, err
	}
	if tc := root.get("tool_choice"); tc.IsObject() {
		switch typ := tc.Get("type").String(); typ {
		case "auto", "any", "none":
			r.toolChoice = typ
		case "tool":
			r.toolChoice, r.toolChoiceName = "tool", tc.Get("name").String()
			if r.toolChoiceName == "" {
				return nil, invalid("tool_choice.name", "tool_choice.name: required when type is \"tool\"")
			}
		default:
			return nil, unsupported("tool_choice.type", "tool_choice.type: unknown value %q", typ)
		}
		if d := tc.Get("disable_parallel_tool_use"); d.IsBool() {
			b := !d.Bool()
			r.parallel = &b
		}
	} else if tc.Exists() && tc.Type != gjson.Null {
		return nil, invalid("tool_choice", "tool_choice: must be an object")
	}
	if v := root.get("max_tokens"); v.Exists() {
		if v.Type != gjson.Number {
			return nil, invalid("max_tokens", "max_tokens: must be an integer")
		}
		r.maxTokens = v.Int()
	}
	if st := root.get("stop_sequences"); st.Exists() {
		if !st.IsArray() {
			return nil, invalid("stop_sequences", "stop_sequences: must be an array of strings")
		}
		st.ForEach(func(_, s gjson.Result) bool {
			r.stop = append(r.stop, s.String())
			return true
		})
	}
	r.user = root.get("metadata").Get("user_id").String()
	th := root.get("thinking")
	switch th.Get("type").String() {
	case "enabled":
		r.thinkingBudget = th.Get("budget_tokens").Int()
		r.effort = effortForBudget(r.thinkingBudget)
	case "adaptive":
		r.effort = "medium"
	case "disabled":
		r.thinkingOff = true
	}
	if e := root.get("output_config").Get("effort").String(); e != "" && !r.thinkingOff {
		r.effort = e
	}
	if f := root.get("output_config").Get("format"); f.IsObject() && f.Get("type").String() == "json_schema" {
		r.formatType = "json_schema"
		r.formatName = "output"
		r.formatSchema = rawOrEmpty(f.Get("schema"))
	}
	return r, nil
}

// effortForBudget buckets an Anthropic budget_tokens into an OpenAI
// reasoning effort.
func effortForBudget(b int64) string {
	switch {
	case b <= 0:
		return "medium"
	case b <= 2048:
		return "low"
	case b <= 8192:
		return "medium"
	}
	return "high"
}

// anthropicBlocks reads message content: a string or an array of blocks.
func anthropicBlocks(c gjson.Result, param, role string) ([]canonPart, *Error) {
	if c.Type == gjson.String {
		return []canonPart{{kind: partText, text: c.Str}}, nil
	}
	if !c.IsArray() {
		return nil, invalid(param, "%s: must be a string or an array of content blocks", param)
	}
	var parts []canonPart
	var err *Error
	j := 0
	var bsc objFields
	c.ForEach(func(_, b gjson.Result) bool {
		p := param + "[" + strconv.Itoa(j) + "]"
		j++
		if !b.IsObject() {
			err = invalid(p, "%s: must be an object", p)
			return false
		}
		bsc = fieldsInto(bsc, b)
		bf := bsc
		cache := rawOrEmpty(bf.get("cache_control"))
		switch typ := bf.get("type").String(); typ {
		case "text":
			t := bf.get("text")
			if t.Type != gjson.String {
				err = invalid(p+".text", "%s.text: must be a string", p)
				return false
			}
			parts = append(parts, canonPart{kind: partText, text: t.Str, cache: cache})
		case "image", "document":
			part, e := anthropicSource(b, p, typ)
			if e != nil {
				err = e
				return false
			}
			part.cache = cache
			parts = append(parts, part)
		case "tool_use":
			in := bf.get("input")
			if in.Exists() && !in.IsObject() {
				err = invalid(p+".input", "%s.input: must be an object", p)
				return false
			}
			args := in.Raw
			if args == "" {
				args = "{}"
			}
			parts = append(parts, canonPart{kind: partToolCall, id: bf.get("id").String(), name: bf.get("name").String(), args: args, cache: cache})
		case "tool_result":
			id := bf.get("tool_use_id")
			if id.Type != gjson.String || id.Str == "" {
				err = invalid(p+".tool_use_id", "%s.tool_use_id: required", p)
				return false
			}
			part := canonPart{kind: partToolResult, id: id.Str, isError: bf.get("is_error").Bool(), cache: cache}
			if rc := bf.get("content"); rc.Exists() && rc.Type != gjson.Null {
				content, e := anthropicBlocks(rc, p+".content", role)
				if e != nil {
					err = e
					return false
				}
				part.content = content
			}
			parts = append(parts, part)
		case "thinking":
			parts = append(parts, canonPart{kind: partThinking, text: bf.get("thinking").String(), signature: bf.get("signature").String(), raw: b.Raw})
		case "redacted_thinking":
			parts = append(parts, canonPart{kind: partRedactedThinking, data: bf.get("data").String(), raw: b.Raw})
		case "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
			"bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result",
			"container_upload", "search_result":
			// server-side tool blocks have no counterpart: dropped
		default:
			err = unsupported(p+".type", "%s.type: unsupported content block type %q", p, typ)
			return false
		}
		return true
	})
	return parts, err
}

// anthropicSource reads the source of an image or document block.
func anthropicSource(b gjson.Result, p, typ string) (canonPart, *Error) {
	kind := partImage
	if typ == "document" {
		kind = partDocument
	}
	src := b.Get("source")
	part := canonPart{kind: kind, filename: b.Get("title").String()}
	switch st := src.Get("type").String(); st {
	case "base64":
		part.mediaType = src.Get("media_type").String()
		part.data = src.Get("data").String()
		if !validBase64(part.data) {
			return part, invalid(p+".source.data", "%s.source.data: not valid base64", p)
		}
		if part.mediaType == "" {
			return part, invalid(p+".source.media_type", "%s.source.media_type: required", p)
		}
	case "url":
		part.url = src.Get("url").String()
		if part.url == "" {
			return part, invalid(p+".source.url", "%s.source.url: required", p)
		}
	case "text":
		if kind != partDocument {
			return part, unsupported(p+".source.type", "%s.source.type: \"text\" is only valid for documents", p)
		}
		part.text = src.Get("data").String()
		part.mediaType = "text/plain"
	default:
		return part, unsupported(p+".source.type", "%s.source.type: unsupported source type %q", p, st)
	}
	return part, nil
}

// decodeAnthropicResponse decodes an Anthropic "message" object.
func decodeAnthropicResponse(body []byte) (*canonResponse, *Error) {
	root := gjson.Parse(view(body))
	if root.Get("type").String() != "message" && !root.Get("content").IsArray() {
		return nil, &Error{Class: ErrAPI, Message: "upstream response is not an Anthropic message"}
	}
	resp := &canonResponse{id: root.Get("id").String(), model: root.Get("model").String()}
	root.Get("content").ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").String() {
		case "text":
			resp.parts = append(resp.parts, canonPart{kind: partText, text: b.Get("text").String()})
		case "thinking":
			resp.parts = append(resp.parts, canonPart{kind: partThinking, text: b.Get("thinking").String(), signature: b.Get("signature").String(), raw: b.Raw})
		case "redacted_thinking":
			resp.parts = append(resp.parts, canonPart{kind: partRedactedThinking, data: b.Get("data").String(), raw: b.Raw})
		case "tool_use":
			args := b.Get("input").Raw
			if args == "" {
				args = "{}"
			}
			resp.parts = append(resp.parts, canonPart{kind: partToolCall, id: b.Get("id").String(), name: b.Get("name").String(), args: args})
		}
		return true
	})
	resp.stop = root.Get("stop_reason").String()
	if resp.stop == "" {
		resp.stop = stopEndTurn
	}
	resp.stopSeq = root.Get("stop_sequence").String()
	var au anthropicUsage
	au.add(root.Get("usage"))
	resp.usage = au.usage()
	return resp, nil
}
