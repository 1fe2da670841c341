package translate

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// decodeResponsesRequest decodes an OpenAI Responses request (OpenAI API
// reference, "Create a model response") into the canonical form. The
// gateway is stateless, so previous_response_id, conversation and
// item_reference inputs are rejected with a clear message.
func decodeResponsesRequest(body []byte) (*canonRequest, *Error) {
	root := fieldsOf(gjson.Parse(view(body)))
	r := &canonRequest{}
	if err := decodeCommonTop(root, r); err != nil {
		return nil, err
	}
	if p := root.get("previous_response_id"); p.Type == gjson.String && p.Str != "" {
		return nil, unsupported("previous_response_id", "previous_response_id: not supported by this gateway (it keeps no state); send the whole conversation in input")
	}
	if c := root.get("conversation"); c.Exists() && c.Type != gjson.Null {
		return nil, unsupported("conversation", "conversation: not supported by this gateway (it keeps no state); send the whole conversation in input")
	}
	if ins := root.get("instructions"); ins.Type == gjson.String && ins.Str != "" {
		r.system = []canonPart{{kind: partText, text: ins.Str}}
	}
	input := root.get("input")
	leading := true
	switch {
	case input.Type == gjson.String:
		r.addMessage("user", canonPart{kind: partText, text: input.Str})
	case input.IsArray():
		var err *Error
		i := 0
		var isc objFields
		input.ForEach(func(_, it gjson.Result) bool {
			p := "input[" + strconv.Itoa(i) + "]"
			i++
			if !it.IsObject() {
				err = invalid(p, "%s: must be an object", p)
				return false
			}
			isc = fieldsInto(isc, it)
			itf := isc
			typ := itf.get("type").String()
			if typ == "" && itf.get("role").Exists() {
				typ = "message"
			}
			switch typ {
			case "message":
				role := itf.get("role").String()
				parts, e := responsesContent(itf.get("content"), p+".content")
				if e != nil {
					err = e
					return false
				}
				switch role {
				case "system", "developer":
					if leading {
						r.system = append(r.system, parts...)
					} else {
						r.messages = append(r.messages, canonMessage{role: "system", parts: parts})
					}
					return true
				case "user", "assistant":
					r.addMessage(role, parts...)
				default:
					err = unsupported(p+".role", "%s.role: unknown role %q", p, role)
					return false
				}
			case "function_call":
				callID := itf.get("call_id").String()
				if callID == "" {
					err = invalid(p+".call_id", "%s.call_id: required", p)
					return false
				}
				args := itf.get("arguments")
				if args.Exists() && args.Type != gjson.String {
					err = invalid(p+".arguments", "%s.arguments: must be a JSON string", p)
					return false
				}
				r.addMessage("assistant", canonPart{kind: partToolCall, id: callID, name: itf.get("name").String(), args: args.Str})
			case "function_call_output":
				callID := itf.get("call_id").String()
				if callID == "" {
					err = invalid(p+".call_id", "%s.call_id: required", p)
					return false
				}
				out := itf.get("output")
				var content []canonPart
				if out.Type == gjson.String {
					content = []canonPart{{kind: partText, text: out.Str}}
				} else if out.IsArray() {
					c, e := responsesContent(out, p+".output")
					if e != nil {
						err = e
						return false
					}
					content = c
				} else {
					err = invalid(p+".output", "%s.output: must be a string or an array", p)
					return false
				}
				r.addMessage("user", canonPart{kind: partToolResult, id: callID, content: content})
			case "reasoning":
				var text string
				n := 0
				itf.get("summary").ForEach(func(_, x gjson.Result) bool {
					if n > 0 {
						text += "\n\n"
					}
					n++
					text += x.Get("text").String()
					return true
				})
				if text == "" {
					itf.get("content").ForEach(func(_, x gjson.Result) bool {
						text += x.Get("text").String()
						return true
					})
				}
				enc := itf.get("encrypted_content").String()
				switch {
				case strings.HasPrefix(enc, sigPrefixThinking):
					// an Anthropic thinking block that went out as this item
					sig := enc[len(sigPrefixThinking):]
					raw := appendString([]byte(`{"type":"thinking","thinking":`), text)
					raw = append(appendStrField(raw, "signature", sig), '}')
					r.addMessage("assistant", canonPart{kind: partThinking, text: text, signature: sig, raw: string(raw)})
				case strings.HasPrefix(enc, sigPrefixRedacted):
					data := enc[len(sigPrefixRedacted):]
					raw := append(appendString([]byte(`{"type":"redacted_thinking","data":`), data), '}')
					r.addMessage("assistant", canonPart{kind: partRedactedThinking, data: data, raw: string(raw)})
				case text != "":
					// OpenAI encrypted_content is only valid for OpenAI; the
					// readable text is kept for upstreams that want it echoed.
					r.addMessage("assistant", canonPart{kind: partThinking, text: text})
				}
			case "item_reference":
				err = unsupported(p+".type", "%s: item_reference is not supported by this gateway (it keeps no state); send the items themselves", p)
				return false
			default:
				// hosted tool calls and their outputs (web_search_call,
				// file_search_call, computer_call, …) have no counterpart
				return true
			}
			leading = false
			return true
		})
		if err != nil {
			return nil, err
		}
	default:
		return nil, invalid("input", "input: must be a string or an array of input items")
	}

	var err *Error
	i := 0
	tools := root.get("tools")
	if tools.Exists() && !tools.IsArray() {
		return nil, invalid("tools", "tools: must be an array")
	}
	var tsc objFields
	tools.ForEach(func(_, t gjson.Result) bool {
		p := "tools[" + strconv.Itoa(i) + "]"
		i++
		tsc = fieldsInto(tsc, t)
		tf := tsc
		if tf.get("type").String() != "function" {
			return true // hosted tools have no counterpart: dropped
		}
		name := tf.get("name").String()
		if name == "" {
			err = invalid(p+".name", "%s.name: required", p)
			return false
		}
		r.tools = append(r.tools, canonTool{name: name, description: tf.get("description").String(),
			schema: rawOrEmpty(tf.get("parameters")), strict: rawOrEmpty(tf.get("strict"))})
		return true
	})
	if err != nil {
		return nil, err
	}
	if r.toolChoice, r.toolChoiceName, err = openAIToolChoice(root.get("tool_choice"), "name", "mode"); err != nil {
		return nil, err
	}
	if p := root.get("parallel_tool_calls"); p.IsBool() {
		b := p.Bool()
		r.parallel = &b
	}
	if v := root.get("max_output_tokens"); v.Type == gjson.Number {
		r.maxTokens = v.Int()
	}
	r.user = root.get("user").String()
	if r.user == "" {
		r.user = root.get("safety_identifier").String()
	}
	r.effort = root.get("reasoning").Get("effort").String()
	if f := root.get("text").Get("format"); f.IsObject() {
		r.formatType = f.Get("type").String()
		if r.formatType == "json_schema" {
			r.formatName = f.Get("name").String()
			r.formatSchema = rawOrEmpty(f.Get("schema"))
			r.formatStrict = rawOrEmpty(f.Get("strict"))
		}
	}
	return r, nil
}

// responsesContent reads Responses message content: a string or an array
// of input_text / output_text / refusal / input_image / input_file parts.
func responsesContent(c gjson.Result, param string) ([]canonPart, *Error) {
	if c.Type == gjson.String {
		return []canonPart{{kind: partText, text: c.Str}}, nil
	}
	if !c.IsArray() {
		return nil, invalid(param, "%s: must be a string or an array of content parts", param)
	}
	var parts []canonPart
	var err *Error
	j := 0
	c.ForEach(func(_, p gjson.Result) bool {
		pp := param + "[" + strconv.Itoa(j) + "]"
		j++
		switch typ := p.Get("type").String(); typ {
		case "input_text", "output_text", "text":
			t := p.Get("text")
			if t.Type != gjson.String {
				err = invalid(pp+".text", "%s.text: must be a string", pp)
				return false
			}
			parts = append(parts, canonPart{kind: partText, text: t.Str})
		case "refusal":
			parts = append(parts, canonPart{kind: partText, text: p.Get("refusal").String()})
		case "input_image":
			if p.Get("file_id").String() != "" && p.Get("image_url").String() == "" {
				err = unsupported(pp+".file_id", "%s.file_id: file references cannot be translated; send image_url", pp)
				return false
			}
			part, e := imagePartFromURL(p.Get("image_url").String(), p.Get("detail").String(), pp+".image_url")
			if e != nil {
				err = e
				return false
			}
			parts = append(parts, part)
		case "input_file":
			if u := p.Get("file_url").String(); u != "" {
				parts = append(parts, canonPart{kind: partDocument, url: u, filename: p.Get("filename").String()})
				return true
			}
			mt, data, ok := parseDataURL(p.Get("file_data").String())
			if !ok {
				err = unsupported(pp, "%s: only inline file_data (a base64 data URL) or file_url can be translated", pp)
				return false
			}
			if !validBase64(data) {
				err = invalid(pp+".file_data", "%s.file_data: not valid base64", pp)
				return false
			}
			parts = append(parts, canonPart{kind: partDocument, mediaType: mt, data: data, filename: p.Get("filename").String()})
		default:
			err = unsupported(pp+".type", "%s.type: unsupported content part type %q", pp, typ)
			return false
		}
		return true
	})
	return parts, err
}
