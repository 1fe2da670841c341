package translate

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// encodeChatRequest builds an OpenAI Chat Completions request from the
// canonical form.
func encodeChatRequest(r *canonRequest) ([]byte, error) {
	b := make([]byte, 0, outputSize(r))
	b = append(b, `{"model":`...)
	b = appendString(b, r.model)
	b = append(b, `,"messages":[`...)
	if len(r.system) > 0 {
		b = append(b, `{"role":"system","content":`...)
		b = appendTextOf(b, "", r.system, "\n")
		b = append(b, '}')
	}
	for i := range r.messages {
		b = appendChatMessages(b, &r.messages[i])
	}
	b = append(b, ']')
	b = appendOpenAITools(b, r, true)
	if r.maxTokens > 0 {
		b = appendIntField(b, "max_completion_tokens", r.maxTokens)
	}
	p := openAIRequestParams(r) // what a reasoning model refuses is left out
	if p.temperature != "" {
		b = appendRawField(b, "temperature", p.temperature)
	}
	if p.topP != "" {
		b = appendRawField(b, "top_p", p.topP)
	}
	if len(r.stop) > 0 && p.stop {
		b = append(b, `,"stop":[`...)
		for i, s := range r.stop {
			if i == 4 { // OpenAI accepts at most 4 stop sequences
				break
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		b = append(b, ']')
	}
	if r.user != "" && len(r.user) <= 64 {
		// longer ids (Claude Code's metadata.user_id) exceed OpenAI's limit
		b = appendStrField(b, "user", r.user)
	}
	if p.effort != "" {
		b = appendStrField(b, "reasoning_effort", p.effort)
	}
	switch r.formatType {
	case "json_object":
		b = append(b, `,"response_format":{"type":"json_object"}`...)
	case "json_schema":
		b = append(b, `,"response_format":{"type":"json_schema","json_schema":{`...)
		b = append(appendJSONSchemaMembers(b, r), "}}"...)
	}
	if r.stream {
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return append(b, '}'), nil
}

// chatEffort returns the reasoning_effort the request asks for ("max"
// becomes "xhigh"), or "" when it asked for none. openAIRequestParams
// leaves it out for the chat model families that reject the parameter
// (gpt-4*, gpt-3*, chatgpt-*, gpt-5-chat*: reasoningFamilies).
func chatEffort(r *canonRequest) string {
	if r.thinkingOff || r.effort == "" {
		return ""
	}
	if r.effort == "max" {
		return "xhigh"
	}
	return r.effort
}

// outputSize is the capacity to give a translated request's buffer: the
// size of the client's body plus a little, as a translation is about as
// long as its source (the same texts, escaped the same way), so the buffer
// is allocated once and seldom regrown. Measured on the package's test
// bodies, the recorded fixtures and the 50-80 KB multi-turn requests
// (TestOutputSizeFits), every translation between two dialects is at most
// 2.1 % longer than a large source and at most 1.4 KB longer than a small
// one (the members a dialect requires, max_tokens, the Chat tool messages
// becoming tool_result blocks): srcLen/16 + 512 covers them all, where the
// former srcLen/32 + 2048 gave the load harness's 2 KB request a buffer
// twice its translation.
func outputSize(r *canonRequest) int {
	return r.srcLen + r.srcLen/16 + 512
}

// appendChatMessages appends the OpenAI messages for one canonical message:
// a user turn with tool results becomes one "tool" message per result,
// followed by a user message for its other parts and for any images the
// results carried (a tool message can only hold text).
func appendChatMessages(b []byte, m *canonMessage) []byte {
	switch m.role {
	case "system":
		b = appendComma(b)
		b = append(b, `{"role":"system","content":`...)
		b = appendTextOf(b, "", m.parts, "\n")
		return append(b, '}')
	case "assistant":
		return appendChatAssistant(b, m.parts, false)
	}
	var extra []canonPart // user-visible parts: tool-result images, then the turn's own parts
	results := false
	for i := range m.parts {
		p := &m.parts[i]
		if p.kind != partToolResult {
			continue
		}
		results = true
		b = appendComma(b)
		b = append(b, `{"role":"tool","tool_call_id":`...)
		b = appendString(b, openAIToolID(p.id, chatToolIDMax))
		b = append(b, `,"content":`...)
		hasMedia, hasText := false, false
		for j := range p.content {
			if k := p.content[j].kind; k == partImage || k == partDocument {
				if !hasMedia {
					extra = append(extra, canonPart{kind: partText, text: "Attachments returned by tool call " + p.id + ":"})
					hasMedia = true
				}
				extra = append(extra, p.content[j])
			}
		}
		prefix := ""
		if p.isError {
			prefix = "Error: "
		}
		// the joined text is "" only with no text part or one empty one
		nText := 0
		for j := range p.content {
			if p.content[j].kind == partText {
				nText++
				hasText = hasText || p.content[j].text != "" || nText > 1
			}
		}
		if hasMedia && !hasText && !p.isError {
			b = appendString(b, "(see the attachments in the next message)")
		} else {
			b = appendTextOf(b, prefix, p.content, "\n")
		}
		b = append(b, '}')
	}
	if !results {
		extra = m.parts // no tool result: the turn's parts as they are, not a copy
	} else {
		for i := range m.parts {
			if m.parts[i].kind != partToolResult {
				extra = append(extra, m.parts[i])
			}
		}
	}
	if len(extra) == 0 {
		return b
	}
	b = appendComma(b)
	b = append(b, `{"role":"user","content":`...)
	if len(extra) == 1 && extra[0].kind == partText {
		b = appendString(b, extra[0].text)
		return append(b, '}')
	}
	b = append(b, '[')
	for i := range extra {
		b = appendChatPart(b, &extra[i])
	}
	return append(b, "]}"...)
}

// appendChatPart appends one OpenAI user content part.
func appendChatPart(b []byte, p *canonPart) []byte {
	b = appendComma(b)
	switch p.kind {
	case partText:
		b = append(b, `{"type":"text","text":`...)
		b = appendString(b, p.text)
		return append(b, '}')
	case partImage:
		b = append(b, `{"type":"image_url","image_url":{"url":`...)
		if p.url != "" {
			b = appendString(b, p.url)
		} else {
			b = appendDataURL(b, p.mediaType, p.data)
		}
		if p.detail != "" {
			b = appendStrField(b, "detail", p.detail)
		}
		return append(b, "}}"...)
	case partDocument:
		if p.data == "" {
			// text documents and document URLs travel as text
			b = append(b, `{"type":"text","text":`...)
			b = appendString(b, firstNonEmpty(p.text, p.url))
			return append(b, '}')
		}
		b = append(b, `{"type":"file","file":{"filename":`...)
		b = appendString(b, firstNonEmpty(p.filename, "document"))
		b = append(b, `,"file_data":`...)
		b = appendDataURL(b, p.mediaType, p.data)
		return append(b, "}}"...)
	}
	return b
}

// appendChatAssistant appends an assistant message: text joined into
// content, thinking text (signed or not) as reasoning_content (DeepSeek
// requires it back on tool-call turns in thinking mode), tool calls. With
// blocks (a response to a Chat client), signed thinking and redacted
// thinking also go out as LiteLLM's thinking_blocks
// [{type:"thinking",thinking,signature}|{type:"redacted_thinking",data}];
// without (a request to an OpenAI-compatible upstream), signatures and
// redacted thinking never leave Anthropic.
func appendChatAssistant(b []byte, parts []canonPart, blocks bool) []byte {
	nText, nReason, nBlocks := 0, 0, 0
	hasCalls := false
	for i := range parts {
		switch p := &parts[i]; p.kind {
		case partText:
			nText++
		case partThinking:
			if p.text != "" {
				nReason++
			}
			if p.signature != "" {
				nBlocks++
			}
		case partRedactedThinking:
			nBlocks++
		case partToolCall:
			hasCalls = true
		}
	}
	if !blocks {
		nBlocks = 0
	}
	hasText := nText > 0
	if !hasText && !hasCalls && nReason == 0 && nBlocks == 0 {
		return b
	}
	b = appendComma(b)
	b = append(b, `{"role":"assistant","content":`...)
	if hasText || !hasCalls {
		b = appendTextOf(b, "", parts, "")
	} else {
		b = append(b, "null"...)
	}
	if nReason > 0 {
		// every thinking text, joined
		b = append(appendKey(b, "reasoning_content"), '"')
		for i := range parts {
			if p := &parts[i]; p.kind == partThinking {
				b = appendEscaped(b, p.text)
			}
		}
		b = append(b, '"')
	}
	if nBlocks > 0 {
		b = append(appendKey(b, "thinking_blocks"), '[')
		for i := range parts {
			switch p := &parts[i]; {
			case p.kind == partThinking && p.signature != "":
				b = appendComma(b)
				b = append(b, `{"type":"thinking","thinking":`...)
				b = appendString(b, p.text)
				b = appendStrField(b, "signature", p.signature)
				b = append(b, '}')
			case p.kind == partRedactedThinking:
				b = appendComma(b)
				b = append(b, `{"type":"redacted_thinking","data":`...)
				b = appendString(b, p.data)
				b = append(b, '}')
			}
		}
		b = append(b, ']')
	}
	if hasCalls {
		b = append(b, `,"tool_calls":[`...)
		for i := range parts {
			p := &parts[i]
			if p.kind != partToolCall {
				continue
			}
			b = appendComma(b)
			if blocks && p.custom { // a Chat client's custom tool
				b = appendChatCustomToolCall(b, p.id, p.name, unwrapCustomInput(p.args))
				continue
			}
			b = append(b, `{"id":`...)
			if blocks {
				b = appendString(b, p.id) // an answer keeps the upstream's ids
			} else {
				b = appendString(b, openAIToolID(p.id, chatToolIDMax))
			}
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendString(b, p.name)
			b = append(b, `,"arguments":`...)
			b = appendString(b, compactArgs(p.args))
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// compactArgs returns tool arguments as a JSON text for OpenAI: "" becomes
// "{}"; anything else is kept as is.
func compactArgs(a string) string {
	if isBlank(a) {
		return "{}"
	}
	return a
}

// encodeChatResponse builds an OpenAI "chat.completion" object.
func encodeChatResponse(r *canonResponse) []byte {
	b := make([]byte, 0, answerSize(r))
	b = append(b, `{"id":`...)
	b = appendString(b, withPrefix("chatcmpl-", r.id))
	b = append(b, `,"object":"chat.completion","created":`...)
	created := r.created
	if created == 0 {
		created = nowUnix()
	}
	b = strconv.AppendInt(b, created, 10)
	b = appendStrField(b, "model", r.model)
	b = append(b, `,"choices":[{"index":0,"message":`...)
	// A Chat client gets thinking as reasoning_content, signed or not, as
	// in a stream; signed and redacted blocks also as thinking_blocks.
	// A refusal goes in message.refusal, as OpenAI sends it, with
	// content null when nothing else was said.
	parts, refusal := splitRefusal(r.parts)
	start := len(b)
	b = appendChatAssistant(b, parts, true)
	if empty := `{"role":"assistant","content":""`; refusal != "" && len(b) > start+len(empty) && string(b[start:start+len(empty)]) == empty {
		// reasoning beside the refusal, no text: content null all the same
		b = splice(b, start+len(empty)-2, 2, []byte("null"))
	}
	switch {
	case b[len(b)-1] == ':' && refusal != "": // a refusal alone
		b = append(b, `{"role":"assistant","content":null,"refusal":`...)
		b = appendString(b, refusal)
		b = append(b, '}')
	case b[len(b)-1] == ':': // no content at all
		b = append(b, `{"role":"assistant","content":"","refusal":null}`...)
	case refusal != "":
		b = insertBeforeLastBrace(b, `,"refusal":`+string(appendString(nil, refusal)))
	default:
		b = insertBeforeLastBrace(b, `,"refusal":null`)
	}
	b = append(b, `,"logprobs":null,"finish_reason":"`...)
	b = append(b, chatFinish(refusalStop(r.stop, refusal != ""))...)
	b = append(b, `"}]`...)
	if !r.usage.IsZero() {
		b = appendChatUsage(appendKey(b, "usage"), r.usage)
	}
	return append(b, '}')
}

// splitRefusal returns parts without their refusal text parts
// (canonPart.refusal) and the refusal text, joined; parts itself when it
// has none.
func splitRefusal(parts []canonPart) ([]canonPart, string) {
	n := 0
	for i := range parts {
		if parts[i].refusal && parts[i].kind == partText {
			n++
		}
	}
	if n == 0 {
		return parts, ""
	}
	rest := make([]canonPart, 0, len(parts)-n)
	var refusal strings.Builder
	for _, p := range parts {
		if p.refusal && p.kind == partText {
			refusal.WriteString(p.text)
			continue
		}
		rest = append(rest, p)
	}
	return rest, refusal.String()
}

func insertBeforeLastBrace(b []byte, s string) []byte {
	n := len(b)
	if n == 0 || b[n-1] != '}' {
		return b
	}
	b = append(b[:n-1], s...)
	return append(b, '}')
}

// validArgsObject reports whether a is a JSON object text.
func validArgsObject(a string) bool {
	return gjson.Valid(a) && gjson.Parse(a).IsObject()
}
