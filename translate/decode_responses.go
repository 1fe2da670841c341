package translate

import (
	"strings"

	"github.com/tidwall/gjson"
)

// responsesRoles are the message roles of Responses input messages.
var responsesRoles = []string{"user", "assistant", "system", "developer"}

// decodeResponsesRequest decodes an OpenAI Responses request (OpenAI API
// reference, "Create a model response") into the canonical form, with the
// field checks of c (see ValidateRequest). The gateway is stateless, so
// previous_response_id, conversation and item_reference inputs cannot be
// translated and are rejected with a clear message; they, built-in tools,
// hosted-tool items and file ids are untranslatable rather than invalid,
// so ValidateRequest accepts them for a Responses upstream, which gets the
// body as sent.
func decodeResponsesRequest(body []byte, c *checker) (*canonRequest, *Error) {
	root := c.rootFields(body)
	r := c.newCanon()
	if err := decodeCommonTop(root, r, c); err != nil {
		return nil, err
	}
	prev, err := c.str(root.get("previous_response_id"), top("previous_response_id"))
	if err != nil {
		return nil, err
	}
	if prev != "" {
		return nil, unsupported("previous_response_id", "previous_response_id: not supported by this gateway (it keeps no state); send the whole conversation in input")
	}
	if conv := root.get("conversation"); present(conv) {
		return nil, unsupported("conversation", "conversation: not supported by this gateway (it keeps no state); send the whole conversation in input")
	}
	switch ins := root.get("instructions"); {
	case ins.Type == gjson.String:
		if ins.Str != "" && !c.checkOnly {
			r.system = []canonPart{{kind: partText, text: ins.Str}}
		}
	case ins.IsArray():
		if c.translate {
			return nil, unsupported("instructions", "instructions: only a string can be translated; put the items in input")
		}
	case present(ins):
		return nil, c.typeErr(top("instructions"), wantStr, ins)
	}
	input := root.get("input")
	switch {
	case input.Type == gjson.String:
		c.addMessage(r, "user", c.onePart(canonPart{kind: partText, text: input.Str}))
	case input.IsArray():
		if err := responsesInput(input, r, c); err != nil {
			return nil, err
		}
	case !present(input):
		return nil, c.missing(top("input"))
	default:
		return nil, c.typeErr(top("input"), wantStrOrArr, input)
	}
	if r.tools, err = responsesTools(root.get("tools"), c); err != nil {
		return nil, err
	}
	if r.toolChoice, r.toolChoiceName, err = openAIToolChoice(root.get("tool_choice"), c, "name", "mode"); err != nil {
		return nil, err
	}
	if err := responsesScalars(root, r, c); err != nil {
		return nil, err
	}
	return r, nil
}

// responsesInput reads the input items.
func responsesInput(input gjson.Result, r *canonRequest, c *checker) *Error {
	leading := true
	var err *Error
	isc := c.take()
	inputPath := top("input")
	err = eachObject(input, inputPath, c, func(idx int, it gjson.Result) *Error {
		p := inputPath.at(idx)
		isc = fieldsInto(isc, it)
		c.noteSeed(isc, it)
		itf := isc
		typ, e := c.str(itf.get("type"), p.dot("type"))
		if e != nil {
			return e
		}
		if typ == "" && itf.get("role").Exists() {
			typ = "message"
		}
		switch typ {
		case "message":
			role, e := c.reqStr(itf.get("role"), p.dot("role"))
			if e != nil {
				return e
			}
			parts, e := responsesContent(itf.get("content"), p.dot("content"), c)
			if e != nil {
				return e
			}
			switch role {
			case "system", "developer":
				c.addSystem(r, leading, parts)
				return nil
			case "user", "assistant":
				c.addMessage(r, role, parts)
			default:
				return roleErr(c, p.dot("role"), role, responsesRoles, sprintf(": unknown role %q", clip(role)))
			}
		case "function_call":
			callID, e := c.reqNonEmpty(itf.get("call_id"), p.dot("call_id"))
			var name string
			if e == nil {
				name, e = c.reqStr(itf.get("name"), p.dot("name"))
			}
			args := itf.get("arguments")
			if e == nil {
				if c.translate && !present(args) {
					e = c.missing(p.dot("arguments"))
				} else if present(args) && args.Type != gjson.String {
					e = c.typeErr(p.dot("arguments"), wantStr, args)
				}
			}
			if e != nil {
				return e
			}
			c.addMessage(r, "assistant", c.onePart(canonPart{kind: partToolCall, id: callID, name: name, args: args.Str}))
		case "custom_tool_call":
			if !c.translate {
				return nil // the Responses upstream judges it
			}
			callID, e := c.reqNonEmpty(itf.get("call_id"), p.dot("call_id"))
			var name, input string
			if e == nil {
				name, e = c.reqNonEmpty(itf.get("name"), p.dot("name"))
			}
			if e == nil {
				input, e = c.reqStr(itf.get("input"), p.dot("input"))
			}
			if e != nil {
				return e
			}
			if c.checkOnly {
				c.addMessage(r, "assistant", c.onePart(canonPart{kind: partToolCall, id: callID, name: name}))
				break
			}
			r.addMessage("assistant", canonPart{kind: partToolCall, id: callID, name: name, args: wrapCustomInput(input), custom: true})
		case "custom_tool_call_output", "function_call_output":
			if typ == "custom_tool_call_output" && !c.translate {
				return nil
			}
			callID, e := c.reqNonEmpty(itf.get("call_id"), p.dot("call_id"))
			if e != nil {
				return e
			}
			out := itf.get("output")
			var content []canonPart
			switch {
			case out.Type == gjson.String:
				if !c.checkOnly {
					content = []canonPart{{kind: partText, text: out.Str}}
				}
			case out.IsArray():
				if content, e = responsesContent(out, p.dot("output"), c); e != nil {
					return e
				}
			case !present(out):
				return c.missing(p.dot("output"))
			default:
				return c.typeErr(p.dot("output"), wantStrOrArr, out)
			}
			if c.checkOnly {
				// only the pairing check reads it: content is not kept
				c.parts.give(content)
				c.addMessage(r, "user", c.onePart(canonPart{kind: partToolResult, id: callID}))
				break
			}
			r.addMessage("user", canonPart{kind: partToolResult, id: callID, content: content})
		case "reasoning":
			part, keep, e := responsesReasoning(itf, p, c)
			if e != nil {
				return e
			}
			if keep {
				c.addMessage(r, "assistant", c.onePart(part))
			}
		case "item_reference":
			return unsupportedAt(p, ": item_reference is not supported by this gateway (it keeps no state); send the items themselves")
		default:
			// hosted tool calls and their outputs (web_search_call,
			// file_search_call, computer_call, …) have no counterpart
			return nil
		}
		leading = false
		return nil
	})
	c.give(isc)
	return err
}

// responsesReasoning reads a reasoning item: its summary (or content)
// text and, when it carries an Anthropic signature or redacted thinking
// (see sigPrefixThinking), the block to replay; OpenAI encrypted_content
// is kept as rsReasoningPart describes.
func responsesReasoning(itf objFields, p fpath, c *checker) (canonPart, bool, *Error) {
	summary, content := itf.get("summary"), itf.get("content")
	if e := c.array(summary, p.dot("summary")); e != nil {
		return canonPart{}, false, e
	}
	if e := c.array(content, p.dot("content")); e != nil {
		return canonPart{}, false, e
	}
	enc, e := c.str(itf.get("encrypted_content"), p.dot("encrypted_content"))
	if e != nil {
		return canonPart{}, false, e
	}
	var sb strings.Builder
	var err *Error
	n := 0
	size := 0 // bytes sb holds, or would hold in checkOnly mode (where it stays empty)
	collect := func(arr gjson.Result, path fpath, sep string) {
		if !arr.IsArray() {
			return
		}
		err = eachObject(arr, path, c, func(idx int, x gjson.Result) *Error {
			xp := path.at(idx)
			t, e := c.str(x.Get("text"), xp.dot("text"))
			if e != nil {
				return e
			}
			if n > 0 {
				size += len(sep)
				if !c.checkOnly {
					sb.WriteString(sep)
				}
			}
			n++
			size += len(t)
			if !c.checkOnly {
				sb.WriteString(t)
			}
			return nil
		})
	}
	collect(summary, p.dot("summary"), "\n\n")
	if err == nil && size == 0 {
		n = 0
		collect(content, p.dot("content"), "")
	}
	if err != nil {
		return canonPart{}, false, err
	}
	if c.checkOnly {
		// whether the item becomes a message is all the pairing check
		// needs (rsReasoningPart keeps one with text or encrypted_content;
		// a signed one always has the latter)
		return canonPart{kind: partThinking}, size > 0 || enc != "", nil
	}
	text := sb.String()
	switch {
	case strings.HasPrefix(enc, sigPrefixThinking):
		// an Anthropic thinking block that went out as this item
		sig := enc[len(sigPrefixThinking):]
		raw := appendString([]byte(`{"type":"thinking","thinking":`), text)
		raw = append(appendStrField(raw, "signature", sig), '}')
		return canonPart{kind: partThinking, text: text, signature: sig, raw: string(raw)}, true, nil
	case strings.HasPrefix(enc, sigPrefixRedacted):
		data := enc[len(sigPrefixRedacted):]
		raw := append(appendString([]byte(`{"type":"redacted_thinking","data":`), data), '}')
		return canonPart{kind: partRedactedThinking, data: data, raw: string(raw)}, true, nil
	}
	// OpenAI encrypted_content is only valid for OpenAI: it is kept with
	// sigPrefixOpenAI, which only a Responses upstream reads back (the
	// Anthropic encoder replays only blocks that came from Anthropic, the
	// Chat encoder sends no signatures); the readable text is kept for
	// upstreams that want it echoed.
	part, ok := rsReasoningPart(text, enc)
	return part, ok, nil
}

// responsesTools reads function tools and (translating) custom tools;
// hosted tools have no counterpart and are dropped.
func responsesTools(tools gjson.Result, c *checker) ([]canonTool, *Error) {
	if e := c.array(tools, top("tools")); e != nil || !tools.IsArray() {
		return nil, e
	}
	var out []canonTool
	var err *Error
	toolsPath := top("tools")
	err = eachObject(tools, toolsPath, c, func(idx int, t gjson.Result) *Error {
		p := toolsPath.at(idx)
		typ, e := c.reqStr(t.Get("type"), p.dot("type"))
		if e != nil {
			return e
		}
		if typ == "custom" && c.translate {
			// a freeform tool (Codex's apply_patch): a function tool with
			// one string parameter (see custom_tools.go)
			tool, e := responsesCustomTool(t, p, c)
			if e != nil {
				return e
			}
			if !c.checkOnly {
				out = append(out, tool)
			}
			return nil
		}
		if typ != "function" {
			return nil // hosted tools have no counterpart: dropped
		}
		tool, e := functionTool(t, p, "parameters", c)
		if e == nil {
			tool.cache, e = partCache(t.Get("cache_control"), p, c)
		}
		if e != nil {
			return e
		}
		if !c.checkOnly {
			out = append(out, tool)
		}
		return nil
	})
	return out, err
}

// responsesScalars reads and checks the Responses fields other than
// input and tools (OpenAI API reference, "Create a model response").
func responsesScalars(root objFields, r *canonRequest, c *checker) *Error {
	if e := parallelToolCalls(root, r, c); e != nil {
		return e
	}
	var e *Error
	if r.maxTokens, _, e = c.integer(root.get("max_output_tokens"), top("max_output_tokens"), tokenBounds.withVendor(16, MaxTokenCount)); e != nil {
		return e
	}
	if e := readUser(root, r, c); e != nil {
		return e
	}
	rs := root.get("reasoning")
	if e := c.object(rs, top("reasoning")); e != nil {
		return e
	}
	if rs.IsObject() {
		res := getMany(&[4]gjson.Result{}, rs.Raw, "effort", "summary")
		if r.effort, e = c.strEnum(res[0], top("reasoning.effort"), openAIEfforts...); e != nil {
			return e
		}
		if _, e = c.strEnum(res[1], top("reasoning.summary"), "auto", "concise", "detailed"); e != nil {
			return e
		}
	}
	text := root.get("text")
	if e := c.object(text, top("text")); e != nil {
		return e
	}
	if text.IsObject() {
		res := getMany(&[4]gjson.Result{}, text.Raw, "format", "verbosity")
		if _, e = c.strEnum(res[1], top("text.verbosity"), "low", "medium", "high"); e != nil {
			return e
		}
		f := res[0]
		if e := c.object(f, top("text.format")); e != nil {
			return e
		}
		if f.IsObject() {
			if r.formatType, e = c.reqStr(f.Get("type"), top("text.format.type")); e != nil {
				return e
			}
			if e := c.enum(r.formatType, top("text.format.type"), "text", "json_schema", "json_object"); e != nil {
				return e
			}
			if r.formatType == "json_schema" {
				if c.translate && !f.Get("schema").Exists() {
					return c.missing(top("text.format.schema"))
				}
				if e := jsonSchemaFormat(f, top("text.format"), r, c); e != nil {
					return e
				}
			}
		}
	}
	for _, b := range [...]string{"store", "background"} {
		if _, _, e = c.boolean(root.get(b), top(b)); e != nil {
			return e
		}
	}
	if _, _, e = c.integer(root.get("top_logprobs"), top("top_logprobs"), bounds{0, MaxTokenCount, 0, 20}); e != nil {
		return e
	}
	if _, _, e = c.integer(root.get("max_tool_calls"), top("max_tool_calls"), bounds{0, MaxTokenCount, 1, MaxTokenCount}); e != nil {
		return e
	}
	if _, e = c.strList(root.get("include"), top("include"), false, 0); e != nil {
		return e
	}
	if _, e = c.strEnum(root.get("truncation"), top("truncation"), "auto", "disabled"); e != nil {
		return e
	}
	for _, s := range [...]string{"service_tier", "prompt_cache_key"} {
		if _, e = c.str(root.get(s), top(s)); e != nil {
			return e
		}
	}
	if e := c.stringMap(root.get("metadata"), top("metadata")); e != nil {
		return e
	}
	return c.object(root.get("stream_options"), top("stream_options"))
}

// responsesContent reads Responses message content: a string or an array
// of input_text / output_text / refusal / input_image / input_file parts.
func responsesContent(v gjson.Result, param fpath, c *checker) ([]canonPart, *Error) {
	if v.Type == gjson.String {
		if c.checkOnly {
			return c.onePart(canonPart{kind: partText, text: v.Str}), nil
		}
		return []canonPart{{kind: partText, text: v.Str}}, nil
	}
	if !present(v) {
		return nil, c.missing(param)
	}
	if !v.IsArray() {
		return nil, c.typeErr(param, wantStrOrArr, v)
	}
	parts := c.parts.take()
	var err *Error
	psc := c.take()
	err = eachObject(v, param, c, func(idx int, p gjson.Result) *Error {
		pp := param.at(idx)
		psc = fieldsInto(psc, p)
		part, e := responsesPart(psc, pp, c)
		if e == nil {
			part.cache, e = partCache(psc.get("cache_control"), pp, c)
		}
		if e != nil {
			return e
		}
		parts = append(parts, part)
		return nil
	})
	c.give(psc)
	return c.partsOut(parts), err
}

// responsesPart reads one content part (pf holds its fields).
func responsesPart(pf objFields, pp fpath, c *checker) (canonPart, *Error) {
	typ, e := c.reqStr(pf.get("type"), pp.dot("type"))
	if e != nil {
		return canonPart{}, e
	}
	switch typ {
	case "input_text", "output_text", "text":
		t, e := c.reqStr(pf.get("text"), pp.dot("text"))
		return canonPart{kind: partText, text: t}, e
	case "refusal":
		t, e := c.reqStr(pf.get("refusal"), pp.dot("refusal"))
		return canonPart{kind: partText, text: t}, e
	case "input_image":
		u, e := c.str(pf.get("image_url"), pp.dot("image_url"))
		var fileID, detail string
		if e == nil {
			fileID, e = c.str(pf.get("file_id"), pp.dot("file_id"))
		}
		if e == nil {
			detail, e = c.strEnum(pf.get("detail"), pp.dot("detail"), "auto", "low", "high")
		}
		if e != nil {
			return canonPart{}, e
		}
		if fileID != "" && u == "" {
			return canonPart{}, unsupportedAt(pp.dot("file_id"), ": file references cannot be translated; send image_url")
		}
		return imagePartFromURL(u, detail, pp.dot("image_url"))
	case "input_file":
		res := [...]gjson.Result{pf.get("file_url"), pf.get("file_data"), pf.get("filename"), pf.get("file_id")}
		var s [4]string
		for k, name := range [...]string{"file_url", "file_data", "filename", "file_id"} {
			if s[k], e = c.str(res[k], pp.dot(name)); e != nil {
				return canonPart{}, e
			}
		}
		if s[0] != "" {
			return canonPart{kind: partDocument, url: s[0], filename: s[2]}, nil
		}
		mt, data, ok := parseDataURL(s[1])
		if !ok {
			return canonPart{}, unsupportedAt(pp, ": only inline file_data (a base64 data URL) or file_url can be translated")
		}
		if !validBase64(data) {
			return canonPart{}, invalidAt(pp.dot("file_data"), ": not valid base64")
		}
		return canonPart{kind: partDocument, mediaType: mt, data: data, filename: s[2]}, nil
	}
	return canonPart{}, unsupportedAt(pp.dot("type"), sprintf(": unsupported content part type %q", clip(typ)))
}
