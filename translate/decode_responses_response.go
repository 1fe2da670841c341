package translate

import (
	"strings"

	"github.com/tidwall/gjson"
)

// sigPrefixOpenAI marks OpenAI reasoning carried in another dialect: the
// encrypted_content of a Responses upstream's reasoning item becomes the
// signature of a thinking block (or the data of a redacted_thinking block,
// when the item has no readable summary) with this prefix, so a Chat
// client's thinking_blocks or an Anthropic client's thinking blocks,
// echoed back, give a Responses upstream its reasoning item again (as
// LiteLLM's responses adapter does, MAPPING.md §4.4). Anthropic signatures
// never have it.
const sigPrefixOpenAI = "openai.reasoning.v1:"

// decodeResponsesResponse reads an OpenAI Responses "response" object
// (OpenAI API reference, "The response object") into the canonical
// response: output message items (output_text and refusal parts) as text,
// function_call items as tool calls (id = call_id), reasoning items as
// thinking (summary text, else reasoning_text content; encrypted_content
// as a sigPrefixOpenAI signature, or as redacted thinking when there is no
// text). The stop reason follows MAPPING.md §3.3 (RS → CC / AM): completed
// is tool_use when a function_call is present, refusal when a refusal part
// is, else end_turn; incomplete is max_tokens (max_output_tokens) or
// refusal (content_filter). Usage is read with responsesUsage.
//
// A response whose status is failed is an upstream failure: the *Error has
// the class of response.error.code (ErrAPI when unknown) and its message;
// cancelled, queued and in_progress are not answers either (ErrAPI).
// Hosted-tool output items (web_search_call, …) have no counterpart and
// are skipped.
func decodeResponsesResponse(body []byte) (*canonResponse, *Error) {
	var a answerRoot
	if root := gjson.Parse(view(body)); root.IsObject() {
		a.collect(root)
	}
	return decodeResponsesAnswer(&a)
}

// decodeResponsesAnswer is decodeResponsesResponse given the body's
// top-level members. Each output item and each message content part is
// read in one walk of its members (the first of each name, as gjson's
// Get finds it).
func decodeResponsesAnswer(a *answerRoot) (*canonResponse, *Error) {
	output := a.output
	if a.object.Str != "response" && !output.IsArray() {
		return nil, &Error{Class: ErrAPI, Message: "upstream response is not an OpenAI Responses response object"}
	}
	status := a.status.Str
	switch status {
	case "failed":
		e := a.err
		code := sanitizeErrorName(errStr(e.Get("code")))
		msg := ScrubSecrets(e.Get("message").String())
		return nil, &Error{Class: classForErrorType("", code), Message: firstNonEmpty(msg, "upstream response failed"), Code: code}
	case "cancelled", "queued", "in_progress":
		return nil, &Error{Class: ErrAPI, Message: sprintf("upstream response has status %q, not an answer", clip(status))}
	}
	if e := responsesNoOutput(output); e != nil {
		return nil, e
	}
	resp := &canonResponse{id: a.id.String(), model: a.model.String(), created: a.createdAt.Int()}
	refused, called := false, false
	output.ForEach(func(_, it gjson.Result) bool {
		if !it.IsObject() {
			return true // no "type": skipped, as the per-name lookups did
		}
		var f rsAnswerItem
		f.collect(it)
		switch f.typ.Str {
		case "message":
			f.content.ForEach(func(_, c gjson.Result) bool {
				if !c.IsObject() {
					return true
				}
				var typ, text, refusal gjson.Result
				c.ForEach(func(k, v gjson.Result) bool {
					switch k.Str {
					case "type":
						if !typ.Exists() {
							typ = v
						}
					case "text":
						if !text.Exists() {
							text = v
						}
					case "refusal":
						if !refusal.Exists() {
							refusal = v
						}
					}
					return true
				})
				switch typ.Str {
				case "output_text", "text":
					if s := text.String(); s != "" {
						resp.parts = append(resp.parts, canonPart{kind: partText, text: s})
					}
				case "refusal":
					if s := refusal.String(); s != "" {
						resp.parts = append(resp.parts, canonPart{kind: partText, text: s, refusal: true})
						refused = true
					}
				}
				return true
			})
		case "function_call":
			called = true
			resp.parts = append(resp.parts, canonPart{kind: partToolCall, id: f.callID.String(),
				name: f.name.String(), args: f.arguments.String()})
		case "reasoning":
			if p, ok := rsReasoningPart(reasoningTextOf(f.summary, f.content), f.encrypted.String()); ok {
				resp.parts = append(resp.parts, p)
			}
		}
		return true
	})
	resp.stop = rsStopReason(status, a.incomplete.Get("reason").Str, called, refused)
	if u := a.usage; u.IsObject() {
		resp.usage = responsesUsage(u)
	}
	return resp, nil
}

// rsAnswerItem holds the members of a Responses output item that
// decodeResponsesAnswer reads, the first of each name.
type rsAnswerItem struct {
	typ, content, callID, name, arguments, summary, encrypted gjson.Result
}

// collect fills f from the item object it in one walk.
func (f *rsAnswerItem) collect(it gjson.Result) {
	it.ForEach(func(k, v gjson.Result) bool {
		var slot *gjson.Result
		switch k.Str {
		case "type":
			slot = &f.typ
		case "content":
			slot = &f.content
		case "call_id":
			slot = &f.callID
		case "name":
			slot = &f.name
		case "arguments":
			slot = &f.arguments
		case "summary":
			slot = &f.summary
		case "encrypted_content":
			slot = &f.encrypted
		default:
			return true
		}
		if !slot.Exists() {
			*slot = v
		}
		return true
	})
}

// rsStopReason maps a Responses status and incomplete_details.reason to
// the canonical stop reason (MAPPING.md §3.3).
func rsStopReason(status, reason string, called, refused bool) string {
	if status == "incomplete" {
		if reason == "content_filter" {
			return stopRefusal
		}
		return stopMaxTokens
	}
	switch {
	case called:
		return stopToolUse
	case refused:
		return stopRefusal
	}
	return stopEndTurn
}

// reasoningText is a reasoning item's readable text: its summary_text
// parts joined with a blank line, else its reasoning_text content.
func reasoningText(it gjson.Result) string {
	return reasoningTextOf(it.Get("summary"), it.Get("content"))
}

// reasoningTextOf is reasoningText given the item's summary and content
// members.
func reasoningTextOf(summary, content gjson.Result) string {
	var sb strings.Builder
	n := 0
	summary.ForEach(func(_, s gjson.Result) bool {
		if n > 0 {
			sb.WriteString("\n\n")
		}
		n++
		sb.WriteString(s.Get("text").String())
		return true
	})
	if sb.Len() == 0 {
		content.ForEach(func(_, s gjson.Result) bool {
			sb.WriteString(s.Get("text").String())
			return true
		})
	}
	return sb.String()
}

// rsReasoningPart is the canonical part of a reasoning item with readable
// text and encrypted_content enc: thinking (signature sigPrefixOpenAI+enc
// when enc is set), or redacted thinking carrying enc when there is no
// text; false when the item holds neither.
func rsReasoningPart(text, enc string) (canonPart, bool) {
	switch {
	case text != "":
		p := canonPart{kind: partThinking, text: text}
		if enc != "" {
			p.signature = sigPrefixOpenAI + enc
		}
		return p, true
	case enc != "":
		return canonPart{kind: partRedactedThinking, data: sigPrefixOpenAI + enc}, true
	}
	return canonPart{}, false
}

// anthropicReplayable reports whether a thinking or redacted thinking part
// can go to Anthropic: it came from an Anthropic block (raw), is signed,
// and is not OpenAI reasoning carried under sigPrefixOpenAI (which
// Anthropic would refuse as an invalid signature).
func anthropicReplayable(p *canonPart) bool {
	if p.raw == "" {
		return false
	}
	if p.kind == partRedactedThinking {
		return !strings.HasPrefix(p.data, sigPrefixOpenAI)
	}
	return p.signature != "" && !strings.HasPrefix(p.signature, sigPrefixOpenAI)
}
