package translate

import (
	"slices"
	"strconv"
)

// Responses output items (OpenAI API reference, "The response object"):
//
//	message:       {"id":"msg_…","type":"message","status":…,"role":"assistant","content":[{"type":"output_text","text":…,"annotations":[],"logprobs":[]}]}
//	function_call: {"id":"fc_…","type":"function_call","status":…,"arguments":…,"call_id":…,"name":…}
//	reasoning:     {"id":"rs_…","type":"reasoning","summary":[{"type":"summary_text","text":…}]}

// appendRSMessageItem appends an assistant message item; withContent adds
// one content part holding text, a refusal part when refusal is set
// (appendRSContentPart).
func appendRSMessageItem(b []byte, id, status string, text []byte, withContent, refusal bool) []byte {
	b = appendRSMessageHead(b, id, status)
	if withContent {
		b = appendRSContentPart(b, text, refusal)
	}
	return append(b, `],"role":"assistant"}`...)
}

// appendRSMessageHead appends a message item up to its content array's
// first element; `],"role":"assistant"}` closes it.
func appendRSMessageHead(b []byte, id, status string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"type":"message","status":"`...)
	b = append(b, status...)
	return append(b, `","content":[`...)
}

// appendRSContentPart appends an output_text part, or with refusal a
// refusal part {"type":"refusal","refusal":…} (OpenAI API reference,
// "The response object", output message content).
func appendRSContentPart(b []byte, text []byte, refusal bool) []byte {
	if refusal {
		b = append(b, `{"type":"refusal","refusal":`...)
		b = appendString(b, string(text))
		return append(b, '}')
	}
	return appendRSTextPart(b, text)
}

func appendRSTextPart(b []byte, text []byte) []byte {
	b = append(b, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	b = appendString(b, string(text))
	return append(b, '}')
}

func appendRSFunctionCallItem(b []byte, id, status, callID, name string, args []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"type":"function_call","status":"`...)
	b = append(b, status...)
	b = append(b, `","arguments":`...)
	b = appendString(b, string(args))
	b = appendStrField(b, "call_id", callID)
	b = appendStrField(b, "name", name)
	return append(b, '}')
}

// Anthropic thinking signatures and redacted_thinking data ride in a
// reasoning item's encrypted_content with these prefixes, so a Responses
// client that replays its reasoning items (as Codex does with
// include: ["reasoning.encrypted_content"]) gives an Anthropic upstream its
// signed thinking back. OpenAI's own encrypted_content never has them.
const (
	sigPrefixThinking = "anthropic.thinking.v1:"
	sigPrefixRedacted = "anthropic.redacted_thinking.v1:"
)

// appendRSReasoningItem appends a reasoning item; withSummary adds one
// summary_text part holding text, enc (when not "") is the
// encrypted_content.
func appendRSReasoningItem(b []byte, id string, text []byte, withSummary bool, enc string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"type":"reasoning","summary":[`...)
	if withSummary {
		b = appendRSSummaryPart(b, text)
	}
	b = append(b, ']')
	if enc != "" {
		b = appendStrField(b, "encrypted_content", enc)
	}
	return append(b, '}')
}

// reasoningEnc returns the encrypted_content for a thinking or redacted
// thinking part ("" when there is nothing to carry).
func reasoningEnc(kind partKind, signature, data string) string {
	switch {
	case kind == partThinking && signature != "":
		return sigPrefixThinking + signature
	case kind == partRedactedThinking && data != "":
		return sigPrefixRedacted + data
	}
	return ""
}

func appendRSSummaryPart(b []byte, text []byte) []byte {
	b = append(b, `{"type":"summary_text","text":`...)
	b = appendString(b, string(text))
	return append(b, '}')
}

// rsStatus maps a canonical stop reason to the Responses status and
// incomplete_details.reason (MAPPING.md §3.3).
func rsStatus(stop string) (status, reason string) {
	switch stop {
	case stopMaxTokens, stopContextLimit:
		return "incomplete", "max_output_tokens"
	case stopRefusal:
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

// appendRSResponse appends a Responses "response" object. output is the
// raw JSON array of output items; usage is written when reported; the
// settings it restates are the defaults (see appendRSResponseEcho).
func appendRSResponse(b []byte, id string, created int64, status, reason, model string, output []byte, u Usage, errCode, errMsg string, tools, toolChoice []byte) []byte {
	return appendRSResponseEcho(b, id, created, status, reason, model, output, u, errCode, errMsg, tools, toolChoice, nil)
}

// encodeResponsesResponse builds a Responses "response" object.
func encodeResponsesResponse(r *canonResponse, tools, toolChoice, echo []byte) []byte {
	base := trimIDPrefix(r.id)
	if base == "" {
		base = "gateway"
	}
	out := make([]byte, 0, answerSize(r))
	out = append(out, '[')
	status, reason := rsStatus(refusalStop(r.stop, slices.ContainsFunc(r.parts, func(p canonPart) bool { return p.refusal && p.kind == partText })))
	itemStatus := "completed"
	if status == "incomplete" {
		itemStatus = "incomplete"
	}
	// the text parts in a row make one message item: their text joined
	// into one output_text part, then their refusal text into one refusal
	// part
	var text, refusal []byte
	nText, nRefusal := 0, 0
	items := 0 // output items written: each message and reasoning id is its prefix, base and itemSuffix(items)
	flushText := func() {
		if nText+nRefusal == 0 {
			return
		}
		out = appendComma(out)
		out = appendRSMessageHead(out, "msg_"+base+itemSuffix(items), itemStatus)
		items++
		if nText > 0 {
			out = appendRSContentPart(out, text, false)
		}
		if nRefusal > 0 {
			out = appendComma(out)
			out = appendRSContentPart(out, refusal, true)
		}
		out = append(out, `],"role":"assistant"}`...)
		text, refusal = text[:0], refusal[:0]
		nText, nRefusal = 0, 0
	}
	for i := range r.parts {
		p := &r.parts[i]
		switch p.kind {
		case partText:
			if p.refusal {
				refusal = append(refusal, p.text...)
				nRefusal++
				continue
			}
			text = append(text, p.text...)
			nText++
		case partThinking:
			flushText()
			out = appendComma(out)
			out = appendRSReasoningItem(out, "rs_"+base+itemSuffix(items), []byte(p.text), true, reasoningEnc(p.kind, p.signature, ""))
			items++
		case partRedactedThinking:
			flushText()
			out = appendComma(out)
			out = appendRSReasoningItem(out, "rs_"+base+itemSuffix(items), nil, false, reasoningEnc(p.kind, "", p.data))
			items++
		case partToolCall:
			flushText()
			out = appendComma(out)
			items++ // its id is the call's own
			if p.custom {
				out = appendRSCustomToolCallItem(out, withPrefix("ctc_", p.id), "completed", p.id, p.name, unwrapCustomInput(p.args))
				continue
			}
			out = appendRSFunctionCallItem(out, withPrefix("fc_", p.id), "completed", p.id, p.name, []byte(compactArgs(p.args)))
		}
	}
	flushText()
	out = append(out, ']')
	created := r.created
	if created == 0 {
		created = nowUnix()
	}
	return appendRSResponseEcho(make([]byte, 0, len(out)+len(tools)+len(toolChoice)+len(echo)+512), withPrefix("resp_", r.id), created, status, reason, r.model, out, r.usage, "", "", tools, toolChoice, echo)
}

// itemSuffix is the end of the id of the output item at index i of a
// whole Responses answer: none for the first, "_i" after, so that no two
// items share an id (per OpenAI's Responses API, an input that repeats an
// item id is refused: "Duplicate item found with id …").
func itemSuffix(i int) string {
	if i == 0 {
		return ""
	}
	return "_" + strconv.Itoa(i)
}
