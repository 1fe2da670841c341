package translate

import (
	"strings"

	"github.com/tidwall/gjson"
)

// decodeAnthropicRequest decodes an Anthropic Messages request (Anthropic API
// reference, "Create a Message") into the canonical form, with the field
// checks of c (see ValidateRequest).
func decodeAnthropicRequest(body []byte, c *checker) (*canonRequest, *Error) {
	root := c.rootFields(body)
	r := c.newCanon()
	if err := decodeCommonTop(root, r, c); err != nil {
		return nil, err
	}
	if err := anthropicSystem(root.get("system"), r, c); err != nil {
		return nil, err
	}
	msgs := root.get("messages")
	if !present(msgs) {
		return nil, c.missing(top("messages"))
	}
	if !msgs.IsArray() {
		return nil, c.typeErr(top("messages"), wantArr, msgs)
	}
	var err *Error
	msc := c.take()
	msgsPath := top("messages")
	err = eachObject(msgs, msgsPath, c, func(idx int, m gjson.Result) *Error {
		param := msgsPath.at(idx)
		msc = fieldsInto(msc, m)
		c.noteSeed(msc, m)
		role, e := c.reqStr(msc.get("role"), param.dot("role"))
		if e != nil {
			return e
		}
		if role != "user" && role != "assistant" && role != "system" {
			return roleErr(c, param.dot("role"), role, []string{"user", "assistant"}, `: must be "user" or "assistant"`)
		}
		parts, e := anthropicBlocks(msc.get("content"), param.dot("content"), c)
		if e != nil {
			return e
		}
		if c.checkOnly {
			c.pair(role, parts)
			c.parts.give(parts)
			return nil
		}
		if role == "system" {
			r.messages = append(r.messages, canonMessage{role: "system", parts: parts})
			return nil
		}
		r.addMessage(role, parts...)
		return nil
	})
	c.give(msc)
	if err != nil {
		return nil, err
	}
	if r.tools, err = anthropicTools(root.get("tools"), c); err != nil {
		return nil, err
	}
	if err := anthropicToolChoice(root.get("tool_choice"), r, c); err != nil {
		return nil, err
	}
	if err := anthropicScalars(root, r, c); err != nil {
		return nil, err
	}
	return r, nil
}

// anthropicSystem reads system: a string or an array of text blocks.
func anthropicSystem(sys gjson.Result, r *canonRequest, c *checker) *Error {
	switch {
	case sys.Type == gjson.String:
		if isBlank(sys.Str) {
			c.dirty = true // SanitizeAnthropicRequest removes it
		}
		if sys.Str != "" && !c.checkOnly {
			r.system = c.cutParts(canonPart{kind: partText, text: sys.Str})
		}
	case sys.IsArray():
		var err *Error
		bsc := c.take()
		sysPath := top("system")
		err = eachObject(sys, sysPath, c, func(idx int, b gjson.Result) *Error {
			p := sysPath.at(idx)
			bsc = fieldsInto(bsc, b)
			typ, e := c.reqStr(bsc.get("type"), p.dot("type"))
			if e != nil {
				return e
			}
			if typ != "text" {
				return unsupportedAt(p.dot("type"), ": system blocks must be text")
			}
			text, e := c.reqStr(bsc.get("text"), p.dot("text"))
			if e == nil {
				e = c.object(bsc.get("cache_control"), p.dot("cache_control"))
			}
			if e != nil {
				return e
			}
			if isBlank(text) {
				c.dirty = true
			}
			if !c.checkOnly {
				r.system = append(r.system, canonPart{kind: partText, text: text, cache: rawOrEmpty(bsc.get("cache_control"))})
			}
			return nil
		})
		c.give(bsc)
		return err
	case present(sys):
		return c.typeErr(top("system"), wantStrOrArr, sys)
	}
	return nil
}

// anthropicTools reads custom tools; server tools (web_search_…, bash_…,
// …) have no counterpart and are dropped.
func anthropicTools(tools gjson.Result, c *checker) ([]canonTool, *Error) {
	if e := c.array(tools, top("tools")); e != nil || !tools.IsArray() {
		return nil, e
	}
	var out []canonTool
	var err *Error
	tsc := c.take()
	toolsPath := top("tools")
	err = eachObject(tools, toolsPath, c, func(idx int, t gjson.Result) *Error {
		p := toolsPath.at(idx)
		tsc = fieldsInto(tsc, t)
		tf := tsc
		typ, e := c.str(tf.get("type"), p.dot("type"))
		if e != nil {
			return e
		}
		if typ != "" && typ != "custom" {
			return nil // server tools have no counterpart: dropped
		}
		name, e := c.reqNonEmpty(tf.get("name"), p.dot("name"))
		var desc string
		if e == nil {
			desc, e = c.str(tf.get("description"), p.dot("description"))
		}
		schema := tf.get("input_schema")
		if e == nil {
			if c.translate && !present(schema) {
				e = c.missing(p.dot("input_schema"))
			} else {
				e = c.object(schema, p.dot("input_schema"))
			}
		}
		if e == nil {
			_, _, e = c.boolean(tf.get("strict"), p.dot("strict"))
		}
		if e == nil {
			e = c.object(tf.get("cache_control"), p.dot("cache_control"))
		}
		if e != nil {
			return e
		}
		if !c.checkOnly {
			out = append(out, canonTool{name: name, description: desc,
				schema: rawOrEmpty(schema), strict: rawOrEmpty(tf.get("strict")), cache: rawOrEmpty(tf.get("cache_control"))})
		}
		return nil
	})
	c.give(tsc)
	return out, err
}

// anthropicToolChoice reads tool_choice {type: auto|any|tool|none, name,
// disable_parallel_tool_use}.
func anthropicToolChoice(tc gjson.Result, r *canonRequest, c *checker) *Error {
	if !present(tc) {
		return nil
	}
	if !tc.IsObject() {
		return c.typeErr(top("tool_choice"), wantObj, tc)
	}
	res := getMany(&[4]gjson.Result{}, tc.Raw, "type", "name", "disable_parallel_tool_use")
	typ, e := c.reqStr(res[0], top("tool_choice.type"))
	if e != nil {
		return e
	}
	switch typ {
	case "auto", "any", "none":
		r.toolChoice = typ
	case "tool":
		name, e := c.reqStr(res[1], top("tool_choice.name"))
		if e != nil {
			return e
		}
		if name == "" {
			return invalid("tool_choice.name", "tool_choice.name: required when type is \"tool\"")
		}
		r.toolChoice, r.toolChoiceName = "tool", name
	default:
		if c.translate || typ == "" {
			return c.badValue(top("tool_choice.type"), typ, []string{"auto", "any", "tool", "none"})
		}
		return unsupported("tool_choice.type", "tool_choice.type: unknown value %q", clip(typ))
	}
	d, set, e := c.boolean(res[2], top("tool_choice.disable_parallel_tool_use"))
	if set {
		b := !d
		r.parallel = &b
	}
	return e
}

// anthropicScalars reads and checks max_tokens, stop_sequences, metadata,
// thinking, output_config and service_tier.
func anthropicScalars(root objFields, r *canonRequest, c *checker) *Error {
	mt, set, e := c.integer(root.get("max_tokens"), top("max_tokens"), tokenBounds)
	if e != nil {
		return e
	}
	if set && mt == 0 && c.translate {
		return unsupported("max_tokens", "max_tokens: 0 (warming the prompt cache without generating) cannot be translated to another API dialect")
	}
	r.maxTokens = mt
	if r.stop, e = c.strList(root.get("stop_sequences"), top("stop_sequences"), false, 0); e != nil {
		return e
	}
	md := root.get("metadata")
	if e := c.object(md, top("metadata")); e != nil {
		return e
	}
	if md.IsObject() {
		var err *Error
		md.ForEach(func(k, v gjson.Result) bool {
			switch {
			case k.Str == "user_id":
				r.user, err = c.str(v, top("metadata.user_id"))
			case c.translate:
				err = c.fail("metadata."+clip(k.Str), "", "", "Extra inputs are not permitted")
			}
			return err == nil
		})
		if err != nil {
			return err
		}
	}
	th := root.get("thinking")
	if e := c.object(th, top("thinking")); e != nil {
		return e
	}
	if th.IsObject() {
		res := getMany(&[4]gjson.Result{}, th.Raw, "type", "budget_tokens")
		typ, e := c.reqStr(res[0], top("thinking.type"))
		if e == nil {
			e = c.enum(typ, top("thinking.type"), "enabled", "disabled", "adaptive")
		}
		if e != nil {
			return e
		}
		switch typ {
		case "enabled":
			if c.translate && !present(res[1]) {
				return c.missing(top("thinking.budget_tokens"))
			}
			if r.thinkingBudget, _, e = c.integer(res[1], top("thinking.budget_tokens"), tokenBounds.withVendor(1024, MaxTokenCount)); e != nil {
				return e
			}
			r.effort = effortForBudget(r.thinkingBudget)
		case "adaptive":
			r.effort = "medium"
		case "disabled":
			r.thinkingOff = true
		}
	}
	oc := root.get("output_config")
	if e := c.object(oc, top("output_config")); e != nil {
		return e
	}
	if oc.IsObject() {
		res := getMany(&[4]gjson.Result{}, oc.Raw, "effort", "format")
		effort, e := c.strEnum(res[0], top("output_config.effort"), "low", "medium", "high", "xhigh", "max")
		if e != nil {
			return e
		}
		if effort != "" && !r.thinkingOff {
			r.effort = effort
		}
		f := res[1]
		if e := c.object(f, top("output_config.format")); e != nil {
			return e
		}
		if f.IsObject() {
			fr := getMany(&[4]gjson.Result{}, f.Raw, "type", "schema")
			typ, e := c.reqStr(fr[0], top("output_config.format.type"))
			if e == nil {
				e = c.enum(typ, top("output_config.format.type"), "json_schema")
			}
			if e == nil {
				if c.translate && typ == "json_schema" && !present(fr[1]) {
					e = c.missing(top("output_config.format.schema"))
				} else {
					e = c.object(fr[1], top("output_config.format.schema"))
				}
			}
			if e != nil {
				return e
			}
			if typ == "json_schema" {
				r.formatType, r.formatName, r.formatSchema = "json_schema", "output", rawOrEmpty(fr[1])
			}
		}
	}
	if _, e = c.strEnum(root.get("service_tier"), top("service_tier"), "auto", "standard_only"); e != nil {
		return e
	}
	return nil
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

// anthropicBlocks reads message or tool_result content: a string or an
// array of blocks.
func anthropicBlocks(v gjson.Result, param fpath, c *checker) ([]canonPart, *Error) {
	if v.Type == gjson.String {
		if isBlank(v.Str) {
			c.dirty = true // a blank message or tool_result content: removed
		}
		return c.onePart(canonPart{kind: partText, text: v.Str}), nil
	}
	if !present(v) {
		return nil, c.missing(param)
	}
	if !v.IsArray() {
		return nil, c.typeErr(param, wantStrOrArr, v)
	}
	parts := c.parts.take()
	var err *Error
	bsc := c.take()
	err = eachObject(v, param, c, func(idx int, b gjson.Result) *Error {
		p := param.at(idx)
		bsc = fieldsInto(bsc, b)
		part, keep, e := anthropicBlock(b, bsc, p, c)
		if e != nil {
			return e
		}
		if keep {
			parts = append(parts, part)
		}
		return nil
	})
	c.give(bsc)
	return c.partsOut(parts), err
}

// anthropicBlock reads one content block (bf holds its fields); keep is
// false for server-side tool blocks, which have no counterpart.
func anthropicBlock(b gjson.Result, bf objFields, p fpath, c *checker) (part canonPart, keep bool, err *Error) {
	typ, err := c.reqStr(bf.get("type"), p.dot("type"))
	if err != nil {
		return part, false, err
	}
	cc := bf.get("cache_control")
	if err := c.object(cc, p.dot("cache_control")); err != nil {
		return part, false, err
	}
	cache := rawOrEmpty(cc)
	// required reads a string field the vendor requires: checked as
	// required when translating, by type otherwise
	required := func(name string) string {
		if err != nil {
			return ""
		}
		var s string
		if c.translate {
			s, err = c.reqStr(bf.get(name), p.dot(name))
		} else {
			s, err = c.str(bf.get(name), p.dot(name))
		}
		return s
	}
	switch typ {
	case "text":
		t, e := c.reqStr(bf.get("text"), p.dot("text"))
		if isBlank(t) {
			c.dirty = true
		}
		return canonPart{kind: partText, text: t, cache: cache}, true, e
	case "image", "document":
		part, e := anthropicSource(bf, p, typ, c)
		part.cache = cache
		return part, true, e
	case "tool_use":
		id, err := c.reqStr(bf.get("id"), p.dot("id"))
		var name string
		if err == nil {
			name, err = c.reqStr(bf.get("name"), p.dot("name"))
		}
		if err != nil {
			return part, false, err
		}
		in := bf.get("input")
		switch {
		case c.translate && !present(in):
			return part, false, c.missing(p.dot("input"))
		case present(in) && !in.IsObject():
			return part, false, c.typeErr(p.dot("input"), wantObj, in)
		}
		args := in.Raw
		if args == "" || in.Type == gjson.Null {
			args = "{}"
		}
		return canonPart{kind: partToolCall, id: id, name: name, args: args, cache: cache}, true, nil
	case "tool_result":
		id, e := c.reqNonEmpty(bf.get("tool_use_id"), p.dot("tool_use_id"))
		var isErr bool
		if e == nil {
			isErr, _, e = c.boolean(bf.get("is_error"), p.dot("is_error"))
		}
		if e != nil {
			return part, false, e
		}
		part = canonPart{kind: partToolResult, id: id, isError: isErr, cache: cache}
		if rc := bf.get("content"); present(rc) {
			if part.content, e = anthropicBlocks(rc, p.dot("content"), c); e != nil {
				return part, false, e
			}
			if c.checkOnly {
				c.parts.give(part.content) // checked; nothing is kept
				part.content = nil
			}
		}
		return part, true, nil
	case "thinking":
		text, sig := required("thinking"), required("signature")
		if isBlank(sig) || strings.HasPrefix(sig, sigPrefixOpenAI) {
			c.dirty = true // unsigned, or OpenAI reasoning: removed
		}
		return canonPart{kind: partThinking, text: text, signature: sig, raw: b.Raw}, true, err
	case "redacted_thinking":
		data := required("data")
		if strings.HasPrefix(data, sigPrefixOpenAI) {
			c.dirty = true
		}
		return canonPart{kind: partRedactedThinking, data: data, raw: b.Raw}, true, err
	case "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
		"bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result",
		"container_upload", "search_result":
		return part, false, nil // server-side tool blocks have no counterpart: dropped
	}
	return part, false, unsupportedAt(p.dot("type"), sprintf(": unsupported content block type %q", clip(typ)))
}

// anthropicSource reads the source of an image or document block.
func anthropicSource(bf objFields, p fpath, typ string, c *checker) (canonPart, *Error) {
	kind := partImage
	if typ == "document" {
		kind = partDocument
	}
	title, e := c.str(bf.get("title"), p.dot("title"))
	part := canonPart{kind: kind, filename: title}
	if e != nil {
		return part, e
	}
	src := bf.get("source")
	if !present(src) {
		return part, c.missing(p.dot("source"))
	}
	if !src.IsObject() {
		return part, c.typeErr(p.dot("source"), wantObj, src)
	}
	res := getMany(&[4]gjson.Result{}, src.Raw, "type", "media_type", "data", "url")
	st, e := c.reqStr(res[0], p.dot("source.type"))
	if e != nil {
		return part, e
	}
	switch st {
	case "base64":
		if part.mediaType, e = c.reqStr(res[1], p.dot("source.media_type")); e != nil {
			return part, e
		}
		if kind == partImage {
			if e = c.enum(part.mediaType, p.dot("source.media_type"), "image/jpeg", "image/png", "image/gif", "image/webp"); e != nil {
				return part, e
			}
		}
		if part.data, e = c.reqStr(res[2], p.dot("source.data")); e != nil {
			return part, e
		}
		if !c.checked && !validBase64(part.data) {
			return part, invalidAt(p.dot("source.data"), ": not valid base64")
		}
		if part.mediaType == "" {
			return part, invalidAt(p.dot("source.media_type"), ": required")
		}
	case "url":
		if part.url, e = c.reqStr(res[3], p.dot("source.url")); e != nil {
			return part, e
		}
		if part.url == "" {
			return part, invalidAt(p.dot("source.url"), ": required")
		}
	case "text":
		if kind != partDocument {
			return part, unsupportedAt(p.dot("source.type"), `: "text" is only valid for documents`)
		}
		if part.text, e = c.reqStr(res[2], p.dot("source.data")); e != nil {
			return part, e
		}
		part.mediaType = "text/plain"
	default:
		return part, unsupportedAt(p.dot("source.type"), sprintf(": unsupported source type %q", clip(st)))
	}
	return part, nil
}

// decodeAnthropicAnswer decodes an Anthropic "message" object whose
// top-level members a holds. Each content block is read in one walk of
// its members (the first of each name, as gjson's Get finds it).
func decodeAnthropicAnswer(a *answerRoot) (*canonResponse, *Error) {
	if a.typ.String() != "message" && !a.content.IsArray() {
		return nil, &Error{Class: ErrAPI, Message: "upstream response is not an Anthropic message"}
	}
	if e := anthropicAnsweredNothing(a.content, a.stopReason); e != nil {
		return nil, e
	}
	resp := &canonResponse{id: a.id.String(), model: a.model.String()}
	a.content.ForEach(func(_, b gjson.Result) bool {
		if !b.IsObject() {
			return true // no "type": nothing the old per-name lookups kept
		}
		var f anthropicAnswerBlock
		f.collect(b)
		switch f.typ.String() {
		case "text":
			resp.parts = append(resp.parts, canonPart{kind: partText, text: f.text.String()})
		case "thinking":
			resp.parts = append(resp.parts, canonPart{kind: partThinking, text: f.thinking.String(), signature: f.signature.String(), raw: b.Raw})
		case "redacted_thinking":
			resp.parts = append(resp.parts, canonPart{kind: partRedactedThinking, data: f.data.String(), raw: b.Raw})
		case "tool_use":
			args := f.input.Raw
			if args == "" {
				args = "{}"
			}
			resp.parts = append(resp.parts, canonPart{kind: partToolCall, id: f.id.String(), name: f.name.String(), args: args})
		}
		return true
	})
	resp.stop = a.stopReason.String()
	if resp.stop == "" {
		resp.stop = stopEndTurn
	}
	resp.stopSeq = a.stopSeq.String()
	var au anthropicUsage
	au.add(a.usage)
	resp.usage = au.usage()
	return resp, nil
}

// anthropicAnswerBlock holds the members of an answer's content block
// that decodeAnthropicAnswer reads, the first of each name.
type anthropicAnswerBlock struct {
	typ, text, thinking, signature, data, input, id, name gjson.Result
}

// collect fills f from the block object b in one walk.
func (f *anthropicAnswerBlock) collect(b gjson.Result) {
	b.ForEach(func(k, v gjson.Result) bool {
		var slot *gjson.Result
		switch k.Str {
		case "type":
			slot = &f.typ
		case "text":
			slot = &f.text
		case "thinking":
			slot = &f.thinking
		case "signature":
			slot = &f.signature
		case "data":
			slot = &f.data
		case "input":
			slot = &f.input
		case "id":
			slot = &f.id
		case "name":
			slot = &f.name
		default:
			return true
		}
		if !slot.Exists() {
			*slot = v
		}
		return true
	})
}
