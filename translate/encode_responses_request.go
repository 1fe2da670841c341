package translate

import (
	"strings"

	"github.com/tidwall/gjson"
)

// rsMinOutputTokens is the smallest max_output_tokens OpenAI Responses
// accepts ("integer_below_min_value" below it).
const rsMinOutputTokens = 16

// encodeResponsesRequest writes the canonical request as an OpenAI
// Responses request (OpenAI API reference, "Create a model response",
// POST /v1/responses):
//
//	{"model", "instructions", "input":[items], "tools":[{type:"function",…}],
//	 "tool_choice", "parallel_tool_calls", "max_output_tokens", "temperature",
//	 "top_p", "user", "reasoning":{effort,summary}, "include", "text":{format},
//	 "store":false, "stream"}
//
// The system prompt goes in instructions (always present, "" when there is
// none: some Responses backends require it). Input items: user and
// mid-conversation system messages ({type:"message"} with input_text /
// input_image / input_file parts), assistant messages (output_text),
// function_call and function_call_output items, and reasoning items for
// thinking that carries OpenAI encrypted_content (sigPrefixOpenAI).
// The gateway keeps no state, so store is false and, when reasoning is
// requested, include asks for reasoning.encrypted_content so the next turn
// can replay it. What Responses cannot express (stop sequences, top_k,
// Anthropic signatures, cache_control) is dropped, as
// docs/translation-dropped-fields.md lists, and so are the sampling
// parameters a reasoning model refuses (openAIRequestParams).
func encodeResponsesRequest(r *canonRequest) ([]byte, error) {
	b := make([]byte, 0, outputSize(r))
	b = append(b, `{"model":`...)
	b = appendString(b, r.model)
	b = append(b, `,"instructions":`...)
	b = appendTextOf(b, "", r.system, "\n")
	b = append(b, `,"input":[`...)
	for i := range r.messages {
		b = appendRSInputItems(b, &r.messages[i])
	}
	b = append(b, ']')
	b = appendOpenAITools(b, r, false)
	if r.maxTokens > 0 {
		b = appendIntField(b, "max_output_tokens", max(r.maxTokens, rsMinOutputTokens))
	}
	p := openAIRequestParams(r) // what a reasoning model refuses is left out
	if p.temperature != "" {
		b = appendRawField(b, "temperature", p.temperature)
	}
	if p.topP != "" {
		b = appendRawField(b, "top_p", p.topP)
	}
	if r.user != "" && len(r.user) <= 64 {
		b = appendStrField(b, "user", r.user)
	}
	if e := p.effort; e != "" {
		b = append(b, `,"reasoning":{"effort":`...)
		b = appendString(b, e)
		if e != "none" {
			b = append(b, `,"summary":"auto"`...)
		}
		b = append(b, '}')
		if e != "none" {
			b = append(b, `,"include":["reasoning.encrypted_content"]`...)
		}
	}
	switch r.formatType {
	case "json_object":
		b = append(b, `,"text":{"format":{"type":"json_object"}}`...)
	case "json_schema":
		b = append(b, `,"text":{"format":{"type":"json_schema"`...)
		b = append(appendJSONSchemaMembers(b, r), "}}"...)
	}
	b = append(b, r.openAIShared...)
	b = append(b, `,"store":false`...)
	if r.stream {
		b = append(b, `,"stream":true`...)
	}
	return append(b, '}'), nil
}

// appendRSInputItems appends the Responses input items for one canonical
// message: a user turn's tool results become function_call_output items
// followed by one user message with its other parts; an assistant turn
// becomes, in order, reasoning, message (its text) and function_call items.
func appendRSInputItems(b []byte, m *canonMessage) []byte {
	switch m.role {
	case "assistant":
		return appendRSAssistantItems(b, m.parts)
	case "system":
		return appendRSMessage(b, "system", m.parts)
	}
	for i := range m.parts {
		if p := &m.parts[i]; p.kind == partToolResult {
			b = appendRSToolOutput(b, p)
		}
	}
	n := 0
	for i := range m.parts {
		if m.parts[i].kind != partToolResult {
			n++
		}
	}
	if n == 0 {
		return b
	}
	return appendRSMessage(b, "user", m.parts)
}

// appendRSMessage appends {"type":"message","role":role,"content":[…]} with
// the user-visible parts of ps (tool results excluded).
func appendRSMessage(b []byte, role string, ps []canonPart) []byte {
	b = appendComma(b)
	b = append(b, `{"type":"message","role":"`...)
	b = append(b, role...)
	b = append(b, `","content":[`...)
	for i := range ps {
		b = appendRSInputPart(b, &ps[i])
	}
	return append(b, "]}"...)
}

// appendRSInputPart appends one input content part: input_text,
// input_image (URL or data URL; detail "auto" unless given) or input_file
// (file_url, or file_data as a data URL; a text document is input_text).
func appendRSInputPart(b []byte, p *canonPart) []byte {
	switch p.kind {
	case partText:
		b = appendComma(b)
		b = append(b, `{"type":"input_text","text":`...)
		b = appendString(b, p.text)
		return append(b, '}')
	case partImage:
		b = appendComma(b)
		b = append(b, `{"type":"input_image","image_url":`...)
		if p.url != "" {
			b = appendString(b, p.url)
		} else {
			b = appendDataURL(b, p.mediaType, p.data)
		}
		b = appendStrField(b, "detail", firstNonEmpty(p.detail, "auto"))
		return append(b, '}')
	case partDocument:
		b = appendComma(b)
		switch {
		case p.data != "":
			b = append(b, `{"type":"input_file","filename":`...)
			b = appendString(b, firstNonEmpty(p.filename, "document"))
			b = append(b, `,"file_data":`...)
			b = appendDataURL(b, p.mediaType, p.data)
		case p.url != "":
			b = append(b, `{"type":"input_file","file_url":`...)
			b = appendString(b, p.url)
			if p.filename != "" {
				b = appendStrField(b, "filename", p.filename)
			}
		default:
			b = append(b, `{"type":"input_text","text":`...)
			b = appendString(b, p.text)
		}
		return append(b, '}')
	}
	return b
}

// appendRSToolOutput appends a function_call_output item. Its output is the
// result's text (prefixed "Error: " for an error result, as Responses has
// no error flag), or an array of input_text / input_image / input_file
// parts when the result carries images or documents.
func appendRSToolOutput(b []byte, p *canonPart) []byte {
	b = appendComma(b)
	b = append(b, `{"type":"function_call_output","call_id":`...)
	b = appendString(b, openAIToolID(p.id, responsesToolIDMax))
	b = append(b, `,"output":`...)
	media := false
	for j := range p.content {
		if k := p.content[j].kind; k == partImage || k == partDocument {
			media = true
		}
	}
	if !media {
		prefix := ""
		if p.isError {
			prefix = "Error: "
		}
		b = appendTextOf(b, prefix, p.content, "\n")
		return append(b, '}')
	}
	b = append(b, '[')
	if p.isError {
		b = append(b, `{"type":"input_text","text":"Error:"}`...)
	}
	for j := range p.content {
		b = appendRSInputPart(b, &p.content[j])
	}
	return append(b, "]}"...)
}

// appendRSAssistantItems appends an assistant turn: runs of text as one
// assistant message with output_text, reasoning items for thinking that
// carries OpenAI encrypted_content, function_call items; order is kept.
// Thinking without OpenAI encrypted content (Anthropic signatures, readable
// reasoning of other upstreams) cannot be replayed to OpenAI and is left
// out.
func appendRSAssistantItems(b []byte, ps []canonPart) []byte {
	open := false // an assistant message item is open
	closeMsg := func() {
		if open {
			b = append(b, "]}"...)
			open = false
		}
	}
	for i := range ps {
		p := &ps[i]
		switch p.kind {
		case partText:
			if p.text == "" {
				continue
			}
			if !open {
				b = appendComma(b)
				b = append(b, `{"type":"message","role":"assistant","content":[`...)
				open = true
			}
			b = appendComma(b)
			b = append(b, `{"type":"output_text","text":`...)
			b = appendString(b, p.text)
			b = append(b, '}')
		case partThinking, partRedactedThinking:
			enc := p.signature
			if p.kind == partRedactedThinking {
				enc = p.data
			}
			enc, ok := strings.CutPrefix(enc, sigPrefixOpenAI)
			if !ok || enc == "" {
				continue
			}
			closeMsg()
			b = appendComma(b)
			b = append(b, `{"type":"reasoning","summary":[`...)
			if p.kind == partThinking && p.text != "" {
				b = appendRSSummaryPart(b, []byte(p.text))
			}
			b = append(b, ']')
			b = appendStrField(b, "encrypted_content", enc)
			b = append(b, '}')
		case partToolCall:
			closeMsg()
			b = appendComma(b)
			b = append(b, `{"type":"function_call","call_id":`...)
			b = appendString(b, openAIToolID(p.id, responsesToolIDMax))
			b = appendStrField(b, "name", p.name)
			b = appendStrField(b, "arguments", compactArgs(p.args))
			b = append(b, '}')
		}
	}
	closeMsg()
	return b
}

// openAISharedFields are the request members OpenAI Chat Completions and
// Responses share with the same meaning and shape (OpenAI API reference):
// a Chat client's values reach a Responses upstream unchanged.
var openAISharedFields = [...]string{"metadata", "prompt_cache_key", "prompt_cache_retention", "service_tier"}

// openAIShared returns the openAISharedFields of a checked Chat request as
// raw `,"key":value` members ("" when there is none); only an object
// metadata and string values are kept (nulls and other shapes are left
// out).
func openAIShared(root objFields) string {
	var b []byte
	for i, k := range openAISharedFields {
		if v := root.get(k); i == 0 && v.IsObject() || i > 0 && v.Type == gjson.String {
			b = appendRawField(append(b, ','), k, v.Raw)
		}
	}
	return string(b)
}
