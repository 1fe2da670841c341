package translate

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// chatRoles are the message roles OpenAI Chat Completions accepts.
var chatRoles = []string{"system", "assistant", "user", "function", "tool", "developer"}

// decodeChatRequest decodes an OpenAI Chat Completions request (OpenAI API
// reference, "Create chat completion") into the canonical form, with the
// field checks of c (see ValidateRequest).
func decodeChatRequest(body []byte, c *checker) (*canonRequest, *Error) {
	root := c.rootFields(body)
	r := c.newCanon()
	if err := decodeCommonTop(root, r, c); err != nil {
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
	leading := true
	msc := c.take()
	msgsPath := top("messages")
	err = eachObject(msgs, msgsPath, c, func(idx int, m gjson.Result) *Error {
		param := msgsPath.at(idx)
		msc = fieldsInto(msc, m)
		c.noteSeed(msc, m)
		mf := msc
		role, e := c.reqStr(mf.get("role"), param.dot("role"))
		if e == nil {
			_, e = c.str(mf.get("name"), param.dot("name"))
		}
		if e != nil {
			return e
		}
		switch role {
		case "system", "developer":
			parts, e := chatTextParts(mf.get("content"), param.dot("content"), c)
			if e == nil {
				e = messageCache(parts, mf, param, c)
			}
			if e != nil {
				return e
			}
			c.addSystem(r, leading, parts)
			return nil
		case "user":
			content := mf.get("content")
			if !present(content) && c.translate {
				return c.missing(param.dot("content"))
			}
			parts, e := chatUserParts(content, param.dot("content"), c)
			if e == nil {
				e = messageCache(parts, mf, param, c)
			}
			if e != nil {
				return e
			}
			c.addMessage(r, "user", parts)
		case "assistant":
			parts, e := chatAssistant(mf, param, c)
			if e == nil {
				e = messageCache(parts, mf, param, c)
			}
			if e != nil {
				return e
			}
			c.addMessage(r, "assistant", parts)
		case "tool":
			id, e := c.reqStr(mf.get("tool_call_id"), param.dot("tool_call_id"))
			if e == nil && id == "" {
				e = invalidAt(param.dot("tool_call_id"), `: required for role "tool"`)
			}
			if e != nil {
				return e
			}
			content, e := chatUserParts(mf.get("content"), param.dot("content"), c)
			if e != nil {
				return e
			}
			// cache_control on the message or on any of its parts marks the
			// tool_result block (Anthropic caches whole blocks)
			res := canonPart{kind: partToolResult, id: id, content: content}
			one := []canonPart{res}
			if e := messageCache(one, mf, param, c); e != nil {
				return e
			}
			if c.checkOnly {
				// only the pairing check reads it: content is not kept
				c.parts.give(content)
				c.addMessage(r, "user", c.onePart(res))
				break
			}
			res.cache = one[0].cache
			for k := range content {
				if content[k].cache != "" {
					res.cache = content[k].cache
					content[k].cache = ""
				}
			}
			r.addMessage("user", res)
		case "function":
			return unsupportedAt(param.dot("role"), `: the deprecated "function" role is not supported; use "tool"`)
		default:
			return roleErr(c, param.dot("role"), role, chatRoles, sprintf(": unknown role %q", clip(role)))
		}
		leading = false
		return nil
	})
	c.give(msc)
	if err != nil {
		return nil, err
	}
	if r.tools, err = chatTools(root.get("tools"), c); err != nil {
		return nil, err
	}
	if r.toolChoice, r.toolChoiceName, err = openAIToolChoice(root.get("tool_choice"), c, "function.name", "allowed_tools.mode"); err != nil {
		return nil, err
	}
	if err := chatScalars(root, r, c); err != nil {
		return nil, err
	}
	return r, nil
}

// chatAssistant reads an assistant message: reasoning (in the fields
// OpenAI-compatible upstreams use), content, refusal and tool_calls.
func chatAssistant(mf objFields, param fpath, c *checker) ([]canonPart, *Error) {
	if !mf.get("reasoning_content").Exists() {
		for i := range mf {
			if mf[i].key == "reasoning" && mf[i].val.Type == gjson.String {
				c.dirty = true // ChatReasoningToContent renames it
				break
			}
		}
	}
	tb, e := chatThinkingBlocks(mf.get("thinking_blocks"), param.dot("thinking_blocks"), c)
	if e != nil {
		return nil, e
	}
	parts := append(c.parts.take(), tb...) // kept with keepParts: one allocation, not one per doubling
	if len(parts) == 0 && !c.checkOnly {
		if rc := chatReasoning(mf.get("reasoning_content"), mf.get("reasoning"), mf.get("reasoning_details")); rc != "" {
			parts = append(parts, canonPart{kind: partThinking, text: rc})
		}
	}
	content := mf.get("content")
	switch {
	case content.Type == gjson.String:
		if content.Str != "" {
			parts = append(parts, canonPart{kind: partText, text: content.Str})
		}
	case content.IsArray():
		var err *Error
		contentPath := param.dot("content")
		err = eachObject(content, contentPath, c, func(idx int, p gjson.Result) *Error {
			pp := contentPath.at(idx)
			typ, e := c.reqStr(p.Get("type"), pp.dot("type"))
			if e != nil {
				return e
			}
			switch typ {
			case "text", "output_text":
				part, e := chatTextPart(p, pp, c)
				if e != nil {
					return e
				}
				parts = append(parts, part)
			case "refusal":
				t, e := c.reqStr(p.Get("refusal"), pp.dot("refusal"))
				if e != nil {
					return e
				}
				parts = append(parts, canonPart{kind: partText, text: t})
			default:
				return unsupportedAt(pp, sprintf(": unsupported assistant content part type %q", clip(typ)))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	case present(content):
		return nil, c.typeErr(param.dot("content"), wantStrOrArr, content)
	}
	refusal, e := c.str(mf.get("refusal"), param.dot("refusal"))
	if e != nil {
		return nil, e
	}
	if refusal != "" && !content.Exists() {
		parts = append(parts, canonPart{kind: partText, text: refusal})
	}
	tcs := mf.get("tool_calls")
	if e := c.array(tcs, param.dot("tool_calls")); e != nil {
		return nil, e
	}
	var err *Error
	if !tcs.IsArray() {
		tcs = gjson.Result{} // null: no calls
	}
	callsPath := param.dot("tool_calls")
	err = eachObject(tcs, callsPath, c, func(idx int, tc gjson.Result) *Error {
		tp := callsPath.at(idx)
		id, e := c.reqStr(tc.Get("id"), tp.dot("id"))
		var typ string
		if e == nil {
			typ, e = c.str(tc.Get("type"), tp.dot("type"))
		}
		if e != nil {
			return e
		}
		if typ == "custom" { // see chat_custom_tools.go
			part, e := chatCustomToolCall(tc, id, tp, c)
			if e == nil {
				parts = append(parts, part)
			}
			return e
		}
		if typ != "" && typ != "function" {
			return unsupportedAt(tp, sprintf(": tool call type %q cannot be translated", clip(typ)))
		}
		f := tc.Get("function")
		if !present(f) {
			return c.missing(tp.dot("function"))
		}
		if !f.IsObject() {
			return c.typeErr(tp.dot("function"), wantObj, f)
		}
		name, e := c.reqStr(f.Get("name"), tp.dot("function.name"))
		if e != nil {
			return e
		}
		args := f.Get("arguments")
		if present(args) && args.Type != gjson.String {
			return c.typeErr(tp.dot("function.arguments"), wantStr, args)
		}
		parts = append(parts, canonPart{kind: partToolCall, id: id, name: name, args: args.Str})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if fc := mf.get("function_call"); fc.IsObject() && !tcs.Exists() {
		return nil, unsupportedAt(param.dot("function_call"), ": the deprecated function_call form is not supported; use tool_calls")
	}
	return c.partsOut(parts), nil
}

// partCache reads a cache_control extension (the field OpenRouter and
// LiteLLM clients put on Chat content parts, messages and tools to get
// Anthropic prompt caching): an object, kept raw for the matching
// Anthropic block; "" when absent.
func partCache(v gjson.Result, param fpath, c *checker) (string, *Error) {
	if e := c.object(v, param.dot("cache_control")); e != nil {
		return "", e
	}
	return rawOrEmpty(v), nil
}

// messageCache applies a message-level cache_control to the message's last
// part that has none (LiteLLM's reading: a message with string content is
// one block, and the breakpoint is at its end).
func messageCache(parts []canonPart, mf objFields, param fpath, c *checker) *Error {
	cache, e := partCache(mf.get("cache_control"), param, c)
	if e != nil || cache == "" {
		return e
	}
	for i := len(parts) - 1; i >= 0; i-- {
		if k := parts[i].kind; k != partThinking && k != partRedactedThinking {
			if parts[i].cache == "" {
				parts[i].cache = cache
			}
			return nil
		}
	}
	return nil
}

// chatThinkingBlocks reads LiteLLM's thinking_blocks on an assistant
// message ([{type:"thinking",thinking,signature}|{type:"redacted_thinking",
// data}], as the gateway returns them to Chat clients): signed blocks
// become thinking parts replayable to Anthropic (raw set), redacted blocks
// redacted parts. Blocks without a signature are skipped (the message's
// reasoning_content carries that text). Anything but an array of objects
// is a type error.
func chatThinkingBlocks(v gjson.Result, param fpath, c *checker) ([]canonPart, *Error) {
	if !present(v) {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, c.typeErr(param, wantArr, v)
	}
	if c.checkOnly {
		// the blocks matter to a translation only: checked, not read
		return nil, eachObject(v, param, c, func(int, gjson.Result) *Error { return nil })
	}
	var parts []canonPart
	err := eachObject(v, param, c, func(_ int, b gjson.Result) *Error {
		res := getMany(&[4]gjson.Result{}, b.Raw, "type", "thinking", "signature", "data")
		switch res[0].Str {
		case "thinking":
			if res[2].Type != gjson.String || res[2].Str == "" || res[1].Type != gjson.String {
				return nil // unsigned: never replayed to Anthropic
			}
			raw := append([]byte(`{"type":"thinking","thinking":`), nil...)
			raw = appendString(raw, res[1].Str)
			raw = appendStrField(raw, "signature", res[2].Str)
			raw = append(raw, '}')
			parts = append(parts, canonPart{kind: partThinking, text: res[1].Str, signature: res[2].Str, raw: string(raw)})
		case "redacted_thinking":
			if res[3].Type != gjson.String || res[3].Str == "" {
				return nil
			}
			raw := append([]byte(`{"type":"redacted_thinking","data":`), nil...)
			raw = appendString(raw, res[3].Str)
			raw = append(raw, '}')
			parts = append(parts, canonPart{kind: partRedactedThinking, data: res[3].Str, raw: string(raw)})
		}
		return nil
	})
	return parts, err
}

// chatTools reads Chat function tools and (translating) custom tools;
// hosted tools have no counterpart and are dropped.
func chatTools(tools gjson.Result, c *checker) ([]canonTool, *Error) {
	if e := c.array(tools, top("tools")); e != nil || !tools.IsArray() {
		return nil, e
	}
	var out []canonTool
	var err *Error
	tsc := c.take()
	toolsPath := top("tools")
	err = eachObject(tools, toolsPath, c, func(idx int, t gjson.Result) *Error {
		param := toolsPath.at(idx)
		tsc = fieldsInto(tsc, t)
		typ, e := c.str(tsc.get("type"), param.dot("type"))
		if e != nil {
			return e
		}
		if typ == "custom" && c.translate { // see chat_custom_tools.go
			tool, e := chatCustomTool(tsc, param, c)
			if e == nil && !c.checkOnly {
				out = append(out, tool)
			}
			return e
		}
		if typ != "function" && typ != "" {
			return nil // hosted tools have no counterpart: dropped
		}
		f := tsc.get("function")
		if !present(f) {
			return c.missing(param.dot("function"))
		}
		if !f.IsObject() {
			return c.typeErr(param.dot("function"), wantObj, f)
		}
		tool, e := functionTool(f, param.dot("function"), "parameters", c)
		if e == nil {
			// LiteLLM's form puts cache_control on the tool; some clients
			// put it on the function
			tool.cache, e = partCache(tsc.get("cache_control"), param, c)
			if e == nil && tool.cache == "" {
				tool.cache, e = partCache(f.Get("cache_control"), param.dot("function"), c)
			}
		}
		if e != nil {
			return e
		}
		if !c.checkOnly {
			out = append(out, tool)
		}
		return nil
	})
	c.give(tsc)
	return out, err
}

// functionTool reads an OpenAI function definition (name, description,
// schema under schemaKey, strict) from the object f.
func functionTool(f gjson.Result, param fpath, schemaKey string, c *checker) (canonTool, *Error) {
	res := getMany(&[4]gjson.Result{}, f.Raw, "name", "description", schemaKey, "strict")
	name, e := c.reqNonEmpty(res[0], param.dot("name"))
	if e != nil {
		return canonTool{}, e
	}
	desc, e := c.str(res[1], param.dot("description"))
	if e == nil {
		e = c.object(res[2], param.dot(schemaKey))
	}
	if e == nil {
		_, _, e = c.boolean(res[3], param.dot("strict"))
	}
	if e != nil {
		return canonTool{}, e
	}
	return canonTool{name: name, description: desc, schema: rawOrEmpty(res[2]), strict: rawOrEmpty(res[3])}, nil
}

// chatScalars reads and checks the Chat Completions fields other than
// messages and tools (OpenAI API reference, "Create chat completion").
func chatScalars(root objFields, r *canonRequest, c *checker) *Error {
	if e := parallelToolCalls(root, r, c); e != nil {
		return e
	}
	mct, setC, e := c.integer(root.get("max_completion_tokens"), top("max_completion_tokens"), tokenBounds.withVendor(1, MaxTokenCount))
	if e != nil {
		return e
	}
	mt, setT, e := c.integer(root.get("max_tokens"), top("max_tokens"), tokenBounds.withVendor(1, MaxTokenCount))
	if e != nil {
		return e
	}
	if setC {
		r.maxTokens = mct
	} else if setT {
		r.maxTokens = mt
	}
	if r.stop, e = c.strList(root.get("stop"), top("stop"), true, 4); e != nil {
		return e
	}
	if e := readUser(root, r, c); e != nil {
		return e
	}
	if r.effort, e = c.strEnum(root.get("reasoning_effort"), top("reasoning_effort"), openAIEfforts...); e != nil {
		return e
	}
	chatThinking(root.get("thinking"), root.get("reasoning"), r)
	rf := root.get("response_format")
	if e := c.object(rf, top("response_format")); e != nil {
		return e
	}
	if rf.IsObject() {
		if r.formatType, e = c.reqStr(rf.Get("type"), top("response_format.type")); e != nil {
			return e
		}
		if e := c.enum(r.formatType, top("response_format.type"), "text", "json_object", "json_schema"); e != nil {
			return e
		}
		if r.formatType == "json_schema" {
			js := rf.Get("json_schema")
			if c.translate && !present(js) {
				return c.missing(top("response_format.json_schema"))
			}
			if e := c.object(js, top("response_format.json_schema")); e != nil {
				return e
			}
			if e := jsonSchemaFormat(js, top("response_format.json_schema"), r, c); e != nil {
				return e
			}
		}
	}
	if r.n, _, e = c.integer(root.get("n"), top("n"), bounds{1, MaxTokenCount, 1, 128}); e != nil {
		return e
	}
	if _, _, e = c.integer(root.get("seed"), top("seed"), int64Bounds); e != nil {
		return e
	}
	for _, f := range [...]string{"presence_penalty", "frequency_penalty"} {
		if _, e := c.number(root.get(f), top(f), noBounds.withVendor(-2, 2)); e != nil {
			return e
		}
	}
	if _, _, e = c.boolean(root.get("logprobs"), top("logprobs")); e != nil {
		return e
	}
	if _, _, e = c.integer(root.get("top_logprobs"), top("top_logprobs"), bounds{0, MaxTokenCount, 0, 20}); e != nil {
		return e
	}
	if _, _, e = c.boolean(root.get("store"), top("store")); e != nil {
		return e
	}
	if e := c.object(root.get("logit_bias"), top("logit_bias")); e != nil {
		return e
	}
	if _, e = c.str(root.get("service_tier"), top("service_tier")); e != nil {
		return e
	}
	if e := c.stringMap(root.get("metadata"), top("metadata")); e != nil {
		return e
	}
	if !c.checkOnly {
		r.openAIShared = openAIShared(root)
	}
	so := root.get("stream_options")
	if e := c.object(so, top("stream_options")); e != nil {
		return e
	}
	if so.IsObject() {
		if _, _, e = c.boolean(so.Get("include_usage"), top("stream_options.include_usage")); e != nil {
			return e
		}
		if e = repeatedUsageMember(so); e != nil {
			return e
		}
	}
	return nil
}

// jsonSchemaFormat reads an OpenAI json_schema response format (Chat
// response_format.json_schema or Responses text.format): name, schema,
// strict.
func jsonSchemaFormat(js gjson.Result, param fpath, r *canonRequest, c *checker) *Error {
	res := getMany(&[4]gjson.Result{}, js.Raw, "name", "schema", "strict")
	var e *Error
	if c.translate {
		r.formatName, e = c.reqStr(res[0], param.dot("name"))
	} else {
		r.formatName, e = c.str(res[0], param.dot("name"))
	}
	if e == nil {
		e = c.object(res[1], param.dot("schema"))
	}
	if e == nil {
		_, _, e = c.boolean(res[2], param.dot("strict"))
	}
	r.formatSchema, r.formatStrict = rawOrEmpty(res[1]), rawOrEmpty(res[2])
	return e
}

// parallelToolCalls reads OpenAI parallel_tool_calls.
func parallelToolCalls(root objFields, r *canonRequest, c *checker) *Error {
	p, set, e := c.boolean(root.get("parallel_tool_calls"), top("parallel_tool_calls"))
	if set {
		r.parallel = &p
	}
	return e
}

// readUser reads OpenAI user and safety_identifier (the end-user id).
func readUser(root objFields, r *canonRequest, c *checker) *Error {
	u, e := c.str(root.get("user"), top("user"))
	if e != nil {
		return e
	}
	s, e := c.str(root.get("safety_identifier"), top("safety_identifier"))
	r.user = firstNonEmpty(u, s)
	return e
}

// decodeCommonTop reads the fields every dialect names the same way:
// model, stream, temperature (OpenAI 0..2, Anthropic 0..1), top_p (0..1)
// and top_k (Anthropic: an integer >= 0; an extension elsewhere, where a
// value <= 0 means "off" and is dropped when translating).
func decodeCommonTop(root objFields, r *canonRequest, c *checker) *Error {
	m := root.get("model")
	if m.Type != gjson.String || m.Str == "" {
		return invalid("model", "model: must be a non-empty string")
	}
	r.model = m.Str
	var e *Error
	if r.stream, _, e = c.boolean(root.get("stream"), top("stream")); e != nil {
		return e
	}
	tmax := 2.0
	if c.d == AnthropicMessages {
		tmax = 1
	}
	if r.temperature, e = c.number(root.get("temperature"), top("temperature"), nonNegBounds.withVendor(0, tmax)); e != nil {
		return e
	}
	if r.topP, e = c.number(root.get("top_p"), top("top_p"), unitBounds); e != nil {
		return e
	}
	tk := root.get("top_k")
	if c.d == AnthropicMessages {
		if _, _, e = c.integer(tk, top("top_k"), nonNegBounds); e != nil {
			return e
		}
		r.topK = rawOrEmpty(tk)
		return nil
	}
	if r.topK, e = c.number(tk, top("top_k"), noBounds); e != nil || r.topK == "" || !c.translate {
		return e
	}
	if !isInt(r.topK) {
		return c.typeErr(top("top_k"), wantInt, tk)
	}
	if strings.HasPrefix(r.topK, "-") || r.topK == "0" {
		r.topK = "" // vLLM and others: -1 or 0 turns top-k off
	}
	return nil
}

// chatThinking reads the explicit thinking settings a Chat Completions
// request may carry for a reasoning upstream, beside reasoning_effort:
// LiteLLM's form, also taken by Anthropic's OpenAI SDK compatibility
// layer, "thinking": {"type":"enabled","budget_tokens":N} (or
// {"type":"disabled"}), and OpenRouter's "reasoning": {"max_tokens":N}.
// An explicit budget (N >= 1024, Anthropic's minimum) wins over the
// effort's mapping: an Anthropic upstream gets budget_tokens N (a Claude
// 4.6 or later model, which takes an effort instead, the effort N falls
// in: effortForBudget); reasoning_effort, when sent and not "none" or
// "minimal", is kept for OpenAI upstreams, else the budget's effort is
// used. "disabled" turns thinking off whatever the effort says. These are
// extensions: a malformed one is ignored, never an error.
func chatThinking(th, rs gjson.Result, r *canonRequest) {
	var budget int64
	if th.IsObject() {
		res := getMany(&[4]gjson.Result{}, th.Raw, "type", "budget_tokens")
		switch res[0].Str {
		case "enabled":
			if res[1].Type == gjson.Number {
				budget = res[1].Int()
			}
		case "disabled":
			r.thinkingOff = true
			return
		}
	}
	if budget == 0 && rs.IsObject() {
		if mt := rs.Get("max_tokens"); mt.Type == gjson.Number {
			budget = mt.Int()
		}
	}
	if budget < 1024 || budget > MaxTokenCount {
		return
	}
	r.thinkingBudget = budget
	if r.effort == "" || r.effort == "none" || r.effort == "minimal" {
		r.effort = effortForBudget(budget)
	}
}

// chatReasoning picks the reasoning text of an assistant message from
// the three fields OpenAI-compatible upstreams use: reasoning_content
// (DeepSeek, GLM), reasoning (OpenRouter, vLLM) or reasoning_details[].text.
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

// chatTextPart reads the text and cache_control of the Chat text part p
// (at path pp); the text is required.
func chatTextPart(p gjson.Result, pp fpath, c *checker) (canonPart, *Error) {
	t, e := c.reqStr(p.Get("text"), pp.dot("text"))
	var cache string
	if e == nil {
		cache, e = partCache(p.Get("cache_control"), pp, c)
	}
	return canonPart{kind: partText, text: t, cache: cache}, e
}

// chatTextParts reads system/developer content: a string or text parts.
func chatTextParts(v gjson.Result, param fpath, c *checker) ([]canonPart, *Error) {
	switch {
	case v.Type == gjson.String:
		return c.onePart(canonPart{kind: partText, text: v.Str}), nil
	case v.IsArray():
		// checkOnly: given back by the caller (addSystem)
		parts := c.parts.take()
		err := eachObject(v, param, c, func(idx int, p gjson.Result) *Error {
			pp := param.at(idx)
			typ, e := c.reqStr(p.Get("type"), pp.dot("type"))
			if e != nil {
				return e
			}
			if typ != "text" {
				return unsupportedAt(param, ": system messages may only contain text parts")
			}
			part, e := chatTextPart(p, pp, c)
			if e != nil {
				return e
			}
			parts = append(parts, part)
			return nil
		})
		return c.partsOut(parts), err
	case !present(v):
		return nil, c.missing(param)
	}
	return nil, c.typeErr(param, wantStrOrArr, v)
}

// chatUserParts reads user or tool content: a string or an array of text,
// image_url and file parts.
func chatUserParts(v gjson.Result, param fpath, c *checker) ([]canonPart, *Error) {
	switch {
	case v.Type == gjson.String:
		return c.onePart(canonPart{kind: partText, text: v.Str}), nil
	case v.IsArray():
		parts := c.parts.take()
		var err *Error
		psc := c.take()
		err = eachObject(v, param, c, func(idx int, p gjson.Result) *Error {
			pp := param.at(idx)
			psc = fieldsInto(psc, p)
			typ, e := c.reqStr(psc.get("type"), pp.dot("type"))
			var cache string
			if e == nil {
				cache, e = partCache(psc.get("cache_control"), pp, c)
			}
			if e != nil {
				return e
			}
			n := len(parts)
			defer func() {
				if len(parts) > n {
					parts[n].cache = cache
				}
			}()
			switch typ {
			case "text":
				t, e := c.reqStr(psc.get("text"), pp.dot("text"))
				if e != nil {
					return e
				}
				parts = append(parts, canonPart{kind: partText, text: t})
			case "image_url":
				part, e := chatImage(psc.get("image_url"), pp.dot("image_url"), c)
				if e != nil {
					return e
				}
				parts = append(parts, part)
			case "file":
				part, e := chatFile(psc.get("file"), pp.dot("file"), c)
				if e != nil {
					return e
				}
				parts = append(parts, part)
			case "input_audio":
				return unsupportedAt(pp, ": audio input cannot be translated to this upstream")
			default:
				return unsupportedAt(pp.dot("type"), sprintf(": unsupported content part type %q", clip(typ)))
			}
			return nil
		})
		c.give(psc)
		return c.partsOut(parts), err
	case !present(v):
		return nil, nil
	}
	return nil, c.typeErr(param, wantStrOrArr, v)
}

// chatImage reads an image_url part's image_url: an object with url and
// detail (a bare URL string is accepted too, as several OpenAI-compatible
// servers do).
func chatImage(iu gjson.Result, param fpath, c *checker) (canonPart, *Error) {
	var u, detail string
	switch {
	case iu.Type == gjson.String:
		u = iu.Str
	case iu.IsObject():
		res := getMany(&[4]gjson.Result{}, iu.Raw, "url", "detail")
		var e *Error
		if u, e = c.reqStr(res[0], param.dot("url")); e != nil {
			return canonPart{}, e
		}
		if detail, e = c.strEnum(res[1], param.dot("detail"), "auto", "low", "high"); e != nil {
			return canonPart{}, e
		}
	case !present(iu):
		return canonPart{}, c.missing(param)
	default:
		return canonPart{}, c.typeErr(param, wantObj, iu)
	}
	return imagePartFromURL(u, detail, param.dot("url"))
}

// chatFile reads a file part's file object; only inline file_data
// translates.
func chatFile(f gjson.Result, param fpath, c *checker) (canonPart, *Error) {
	if !present(f) {
		return canonPart{}, c.missing(param)
	}
	if !f.IsObject() {
		return canonPart{}, c.typeErr(param, wantObj, f)
	}
	res := getMany(&[4]gjson.Result{}, f.Raw, "file_data", "file_id", "filename")
	fd, e := c.str(res[0], param.dot("file_data"))
	if e == nil {
		_, e = c.str(res[1], param.dot("file_id"))
	}
	var name string
	if e == nil {
		name, e = c.str(res[2], param.dot("filename"))
	}
	if e != nil {
		return canonPart{}, e
	}
	mt, data, ok := parseDataURL(fd)
	if !ok {
		return canonPart{}, unsupportedAt(param, ": only inline file_data (a base64 data URL) can be translated")
	}
	if !validBase64(data) {
		return canonPart{}, invalidAt(param.dot("file_data"), ": not valid base64")
	}
	return canonPart{kind: partDocument, mediaType: mt, data: data, filename: name}, nil
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

// decodeChatAnswer decodes an OpenAI "chat.completion" object whose
// top-level members a holds; only choices[0] is used. The choice and its
// message are each read in one walk of their members (the first of each
// name, as gjson's Get finds it).
func decodeChatAnswer(a *answerRoot, stops []string) (*canonResponse, *Error) {
	choices := a.choices
	if !choices.IsArray() {
		return nil, &Error{Class: ErrAPI, Message: "upstream response has no choices"}
	}
	resp := &canonResponse{id: a.id.String(), model: a.model.String(), created: a.created.Int()}
	c := choices.Get("0")
	if !c.Exists() {
		// an answer without a choice (Gemini's, for a prompt its safety
		// filter blocks: see chatPassthroughError): no content, stopped
		// for the filter, as a stream of such chunks ends (content_filter
		// maps to refusal, MAPPING.md 3.3); without a block reason or
		// usage the upstream answered nothing
		if !answerSaysWhy(a.usage, a.feedback, a.feedbackSnake) {
			return nil, &Error{Class: ErrAPI, Message: msgNoChoiceAnswer}
		}
		resp.stop = stopRefusal
		if u := a.usage; u.IsObject() {
			resp.usage = chatUsage(u)
		}
		return resp, nil
	}
	if !c.IsObject() {
		return nil, &Error{Class: ErrAPI, Message: msgMalformedChoice}
	}
	var fr, m, sr gjson.Result
	{
		c.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "finish_reason":
				if !fr.Exists() {
					fr = v
				}
			case "message":
				if !m.Exists() {
					m = v
				}
			case "stop_reason":
				if !sr.Exists() {
					sr = v
				}
			}
			return true
		})
	}
	if fr.Type == gjson.String && fr.Str == "error" {
		// OpenRouter's failed generation: an upstream failure, as in a
		// stream (chatPassthroughError)
		return nil, &Error{Class: ErrAPI, Message: msgFinishError}
	}
	var mm chatAnswerMessage
	if m.IsObject() {
		mm.collect(m)
	}
	if rc := chatReasoning(mm.reasoningContent, mm.reasoning, mm.reasoningDetails); rc != "" {
		resp.parts = append(resp.parts, canonPart{kind: partThinking, text: rc})
	}
	if t := mm.content; t.Type == gjson.String && t.Str != "" {
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
	if rf := mm.refusal; rf.Type == gjson.String && rf.Str != "" {
		resp.parts = append(resp.parts, canonPart{kind: partText, text: rf.Str, refusal: true})
		refused = true
	}
	nCalls := 0
	mm.toolCalls.ForEach(func(_, tc gjson.Result) bool {
		id := tc.Get("id").String()
		if id == "" {
			id = chatCallID(resp.id, nCalls)
		}
		nCalls++
		resp.parts = append(resp.parts, canonPart{kind: partToolCall, id: id,
			name: tc.Get("function.name").String(), args: tc.Get("function.arguments").String()})
		return true
	})
	resp.stop = stopFromChat(fr.String())
	if refused && resp.stop == stopEndTurn {
		resp.stop = stopRefusal
	}
	resp.stop, resp.stopSeq = chatStopSequence(fr.String(), sr, resp.stop, hasToolCall(resp.parts), stops)
	if u := a.usage; u.IsObject() {
		resp.usage = chatUsage(u)
	}
	return resp, nil
}

// chatCallID is the id given to the n-th tool call (from 0) of a Chat
// answer or stream with id answerID when the upstream gave that call no id
// or "" (Gemini's OpenAI-compatible endpoint did): "call_<answer id>_<n>",
// distinct within the answer, as Anthropic tool_use ids and Responses
// call_ids must be. An answer without an id of its own ("", or the
// stream's stand-in "gateway": Gemini's endpoint sent none either,
// softwaremill/sttp-ai#338) gets 12 random hex digits in its place, so
// that the calls of one conversation's turns do not all share
// "call__0": Anthropic refuses a history that repeats a tool_use id,
// OpenAI one that repeats an item id.
func chatCallID(answerID string, n int) string {
	base := trimIDPrefix(answerID)
	if base == "" || answerID == "gateway" {
		base = idBase()
	}
	return "call_" + base + "_" + strconv.Itoa(n)
}

// idBase gives chatCallID the stand-in for an answer's missing id:
// randomIDBase. The package's tests fix it (TestMain), as they compare
// the outputs of two runs of one input.
var idBase = randomIDBase

// randomIDBase returns 12 random lower-case hex digits.
func randomIDBase() string {
	var r [6]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(r[:])
}

// chatAnswerMessage holds the members of a Chat answer's message that
// decodeChatAnswer reads, the first of each name.
type chatAnswerMessage struct {
	reasoningContent, reasoning, reasoningDetails, content, refusal, toolCalls gjson.Result
}

// collect fills mm from the message object m in one walk.
func (mm *chatAnswerMessage) collect(m gjson.Result) {
	m.ForEach(func(k, v gjson.Result) bool {
		var slot *gjson.Result
		switch k.Str {
		case "reasoning_content":
			slot = &mm.reasoningContent
		case "reasoning":
			slot = &mm.reasoning
		case "reasoning_details":
			slot = &mm.reasoningDetails
		case "content":
			slot = &mm.content
		case "refusal":
			slot = &mm.refusal
		case "tool_calls":
			slot = &mm.toolCalls
		default:
			return true
		}
		if !slot.Exists() {
			*slot = v
		}
		return true
	})
}

// stopFromChat maps an OpenAI finish_reason to the canonical stop reason
// (MAPPING.md §3.3, "CC → AM"). OpenAI-compatible upstreams also send
// values outside OpenAI's set, which keep their meaning:
// "model_context_window_exceeded" (ZhipuAI / z.ai, when the context window
// is full) and the Anthropic stop reasons Anthropic-backed servers pass
// through ("max_tokens", "tool_use", "refusal", "stop_sequence",
// "pause_turn"). Anything else is a plain end of turn.
func stopFromChat(fr string) string {
	switch fr {
	case "length", stopMaxTokens:
		return stopMaxTokens
	case "tool_calls", "function_call", stopToolUse:
		return stopToolUse
	case "content_filter", stopRefusal:
		return stopRefusal
	case stopContextLimit:
		return stopContextLimit
	case stopSequence:
		return stopSequence
	case stopPauseTurn:
		return stopPauseTurn
	}
	return stopEndTurn
}

// chatStopSequence reads the stop string vLLM's OpenAI-compatible server
// names in a choice's "stop_reason" when finish_reason is "stop" because a
// caller's stop string matched (an integer there is a stop token id; null,
// a natural end): that stop is canonical stop_sequence with the matched
// string, as Anthropic reports it (stop_reason "stop_sequence",
// stop_sequence "<the string>"). A turn that made tool calls (called)
// keeps its stop, which toolStop makes tool_use: a client runs the calls
// only on that stop reason. The string counts only when it is one of the
// request's stop strings (stops; see ResponseOptions.StopSequences: nil,
// not known, takes any string but a stop reason's name): another
// server's "end_turn" there is no stop sequence. Otherwise stop is
// returned unchanged with no sequence.
func chatStopSequence(fr string, stopReason gjson.Result, stop string, called bool, stops []string) (string, string) {
	if fr == "stop" && stop == stopEndTurn && !called && stopReason.Type == gjson.String && stopReason.Str != "" && isRequestStop(stopReason.Str, stops) {
		return stopSequence, stopReason.Str
	}
	return stop, ""
}

// isRequestStop reports whether s, a stop string an upstream says matched,
// is one of the request's stop strings; with stops nil (the request not
// known), whether s is not the name of a stop reason, which servers write
// in the same member.
func isRequestStop(s string, stops []string) bool {
	if stops == nil {
		switch s {
		case stopEndTurn, stopMaxTokens, stopToolUse, stopSequence, stopRefusal, stopPauseTurn,
			"stop", "length", "tool_calls", "content_filter", "eos", "eos_token", "abort":
			return false
		}
		return true
	}
	for _, x := range stops {
		if x == s {
			return true
		}
	}
	return false
}

// refusalStop is the stop reason an OpenAI client (Chat Completions or
// Responses) is told for an answer that stopped with stop, refusalPart
// saying whether the answer carries a refusal part (Chat's
// message.refusal, a Responses refusal content part): OpenAI ends such
// an answer as a normal finish (finish_reason "stop", status
// "completed": per the OpenAI Structured Outputs guide, "Refusals"), so
// the refusal the part already says is not told again as a content
// filter. A refusal without a part (Anthropic's stop_reason "refusal",
// a content filter) keeps stopRefusal.
func refusalStop(stop string, refusalPart bool) string {
	if stop == stopRefusal && refusalPart {
		return stopEndTurn
	}
	return stop
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
// "none", "any" or "tool") and the named tool. Hosted-tool choices have no
// counterpart and give "".
func openAIToolChoice(tc gjson.Result, c *checker, namePath, modePath string) (choice, name string, err *Error) {
	switch {
	case !present(tc):
		return "", "", nil
	case tc.Type == gjson.String:
		switch tc.Str {
		case "auto", "none":
			return tc.Str, "", nil
		case "required":
			return "any", "", nil
		}
		if c.translate {
			return "", "", c.badValue(top("tool_choice"), tc.Str, []string{"none", "auto", "required"})
		}
		return "", "", unsupported("tool_choice", "tool_choice: unknown value %q", clip(tc.Str))
	case tc.IsObject():
		typ, e := c.reqStr(tc.Get("type"), top("tool_choice.type"))
		if e != nil {
			return "", "", e
		}
		switch typ {
		case "function", "custom":
			if typ == "custom" && namePath != "name" {
				namePath = "custom.name" // Chat: {"type":"custom","custom":{"name"}}
			}
			// a custom tool goes out as a function tool (see
			// custom_tools.go)
			if name, e = c.reqStr(tc.Get(namePath), top("tool_choice."+namePath)); e != nil {
				return "", "", e
			}
			if name == "" {
				return "", "", invalid("tool_choice."+namePath, "tool_choice.%s: required", namePath)
			}
			return "tool", name, nil
		case "allowed_tools":
			mode, e := c.strEnum(tc.Get(modePath), top("tool_choice."+modePath), "auto", "required")
			if e != nil {
				return "", "", e
			}
			if mode == "required" {
				return "any", "", nil
			}
			return "auto", "", nil
		}
		return "", "", nil
	}
	return "", "", c.typeErr(top("tool_choice"), wantStrOrObj, tc)
}
