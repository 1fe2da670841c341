package translate

import "strconv"

// responsesStreamEncoder writes OpenAI Responses stream events (OpenAI API
// reference, "Streaming events"), each with its event: line and a
// sequence_number counting from 0: response.created and
// response.in_progress (status "in_progress"); per text block
// response.output_item.added (message), response.content_part.added,
// response.output_text.delta…, response.output_text.done,
// response.content_part.done, response.output_item.done (a refusal block:
// a refusal part, response.refusal.delta…, response.refusal.done); per
// thinking block
// a reasoning item with response.reasoning_summary_part.added,
// response.reasoning_summary_text.delta…/.done,
// response.reasoning_summary_part.done; per tool call a function_call item
// with response.function_call_arguments.delta…/.done; then
// response.completed (or response.incomplete for max_output_tokens /
// content_filter) carrying every item in full and the usage. Errors and
// truncations become an error event followed by response.failed.
type responsesStreamEncoder struct {
	seq    int64
	buf    []byte
	respID string
	base   string
	outIdx int
	output []byte // completed items, JSON array body
	// response.failed held back after an upstream's in-band error until
	// the usage that may follow it is read (failed)
	failPending       bool
	failCode, failMsg string
	// refused: a refusal content part was sent (refusalStop)
	refused bool
}

func (e *responsesStreamEncoder) emit(cs *canonStream, name string, fill func(b []byte) []byte) {
	b := append(e.buf[:0], "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: {\"type\":\""...)
	b = append(b, name...)
	b = append(b, `","sequence_number":`...)
	b = strconv.AppendInt(b, e.seq, 10)
	e.seq++
	b = fill(b)
	b = append(b, "}\n\n"...)
	e.buf = b
	cs.t.write(b)
}

func (e *responsesStreamEncoder) response(cs *canonStream, b []byte, status, reason string, u Usage, errCode, errMsg string) []byte {
	var out []byte
	if len(e.output) > 0 {
		out = append(append(append(out, '['), e.output...), ']')
	}
	return appendRSResponseEcho(b, e.respID, cs.created, status, reason, cs.clientModel(), out, u, errCode, errMsg, cs.echoTools, cs.echoToolChoice, cs.echo)
}

func (e *responsesStreamEncoder) start(cs *canonStream) {
	e.respID = withPrefix("resp_", cs.id)
	e.base = trimIDPrefix(cs.id)
	for _, name := range [...]string{"response.created", "response.in_progress"} {
		e.emit(cs, name, func(b []byte) []byte {
			b = append(b, `,"response":`...)
			return e.response(cs, b, "in_progress", "", Usage{}, "", "")
		})
	}
}

func (e *responsesStreamEncoder) itemHead(b []byte, blk *streamBlock) []byte {
	b = append(b, `,"item_id":`...)
	b = appendString(b, blk.itemID)
	b = append(b, `,"output_index":`...)
	return strconv.AppendInt(b, int64(blk.outIdx), 10)
}

func (e *responsesStreamEncoder) blockStart(cs *canonStream, blk *streamBlock) {
	blk.outIdx = e.outIdx
	e.outIdx++
	idx := strconv.Itoa(blk.outIdx)
	switch blk.kind {
	case partText:
		blk.itemID = "msg_" + e.base + "_" + idx
	case partThinking, partRedactedThinking:
		blk.itemID = "rs_" + e.base + "_" + idx
	case partToolCall:
		if !e.customStart(cs, blk) {
			blk.itemID = withPrefix("fc_", blk.id)
		}
	}
	e.emit(cs, "response.output_item.added", func(b []byte) []byte {
		b = append(b, `,"output_index":`...)
		b = strconv.AppendInt(b, int64(blk.outIdx), 10)
		b = append(b, `,"item":`...)
		switch blk.kind {
		case partText:
			return appendRSMessageItem(b, blk.itemID, "in_progress", nil, false, false)
		case partThinking, partRedactedThinking:
			return appendRSReasoningItem(b, blk.itemID, nil, false, "")
		default:
			if blk.custom != nil {
				return appendRSCustomToolCallItem(b, blk.itemID, "in_progress", blk.id, blk.name, "")
			}
			return appendRSFunctionCallItem(b, blk.itemID, "in_progress", blk.id, blk.name, nil)
		}
	})
	switch blk.kind {
	case partText:
		e.emit(cs, "response.content_part.added", func(b []byte) []byte {
			b = e.itemHead(b, blk)
			b = append(b, `,"content_index":0,"part":`...)
			return appendRSContentPart(b, nil, blk.refusal)
		})
	case partThinking:
		e.emit(cs, "response.reasoning_summary_part.added", func(b []byte) []byte {
			b = e.itemHead(b, blk)
			b = append(b, `,"summary_index":0,"part":`...)
			return appendRSSummaryPart(b, nil)
		})
	}
}

func (e *responsesStreamEncoder) delta(cs *canonStream, blk *streamBlock, k deltaKind, s string) {
	if blk.outIdx < 0 || s == "" {
		return
	}
	switch k {
	case deltaText:
		if blk.refusal {
			e.emit(cs, "response.refusal.delta", func(b []byte) []byte {
				b = e.itemHead(b, blk)
				b = append(b, `,"content_index":0,"delta":`...)
				return appendString(b, s)
			})
			return
		}
		e.emit(cs, "response.output_text.delta", func(b []byte) []byte {
			b = e.itemHead(b, blk)
			b = append(b, `,"content_index":0,"delta":`...)
			b = appendString(b, s)
			return append(b, `,"logprobs":[]`...)
		})
	case deltaThinking:
		e.emit(cs, "response.reasoning_summary_text.delta", func(b []byte) []byte {
			b = e.itemHead(b, blk)
			b = append(b, `,"summary_index":0,"delta":`...)
			return appendString(b, s)
		})
	case deltaArgs:
		if blk.custom != nil {
			e.customDelta(cs, blk)
			return
		}
		e.emit(cs, "response.function_call_arguments.delta", func(b []byte) []byte {
			b = e.itemHead(b, blk)
			b = append(b, `,"delta":`...)
			return appendString(b, s)
		})
	}
}

func (e *responsesStreamEncoder) blockStop(cs *canonStream, blk *streamBlock) {
	if blk.outIdx < 0 {
		return
	}
	var item []byte
	switch blk.kind {
	case partText:
		if blk.refusal {
			e.refused = true
			e.emit(cs, "response.refusal.done", func(b []byte) []byte {
				b = e.itemHead(b, blk)
				b = append(b, `,"content_index":0,"refusal":`...)
				return appendString(b, view(blk.text))
			})
		} else {
			e.emit(cs, "response.output_text.done", func(b []byte) []byte {
				b = e.itemHead(b, blk)
				b = append(b, `,"content_index":0,"text":`...)
				b = appendString(b, view(blk.text))
				return append(b, `,"logprobs":[]`...)
			})
		}
		e.emit(cs, "response.content_part.done", func(b []byte) []byte {
			b = e.itemHead(b, blk)
			b = append(b, `,"content_index":0,"part":`...)
			return appendRSContentPart(b, blk.text, blk.refusal)
		})
		item = appendRSMessageItem(nil, blk.itemID, "completed", blk.text, true, blk.refusal)
	case partThinking:
		e.emit(cs, "response.reasoning_summary_text.done", func(b []byte) []byte {
			b = e.itemHead(b, blk)
			b = append(b, `,"summary_index":0,"text":`...)
			return appendString(b, view(blk.text))
		})
		e.emit(cs, "response.reasoning_summary_part.done", func(b []byte) []byte {
			b = e.itemHead(b, blk)
			b = append(b, `,"summary_index":0,"part":`...)
			return appendRSSummaryPart(b, blk.text)
		})
		item = appendRSReasoningItem(nil, blk.itemID, blk.text, true, reasoningEnc(blk.kind, blk.signature, ""))
	case partRedactedThinking:
		item = appendRSReasoningItem(nil, blk.itemID, nil, false, reasoningEnc(blk.kind, "", blk.data))
	case partToolCall:
		if blk.custom != nil {
			item = e.customStop(cs, blk)
			break
		}
		if len(blk.text) == 0 {
			// a tool without parameters (Anthropic's lone partial_json
			// "", MAPPING.md "Tools with no arguments"): the deltas say
			// "{}" as .done does, for clients that build the arguments
			// from the deltas
			blk.text = append(blk.text, "{}"...)
			e.emit(cs, "response.function_call_arguments.delta", func(b []byte) []byte {
				b = e.itemHead(b, blk)
				b = append(b, `,"delta":`...)
				return appendString(b, view(blk.text))
			})
		}
		e.emit(cs, "response.function_call_arguments.done", func(b []byte) []byte {
			b = e.itemHead(b, blk)
			b = append(b, `,"arguments":`...)
			return appendString(b, view(blk.text))
		})
		item = appendRSFunctionCallItem(nil, blk.itemID, "completed", blk.id, blk.name, blk.text)
	}
	e.emit(cs, "response.output_item.done", func(b []byte) []byte {
		b = append(b, `,"output_index":`...)
		b = strconv.AppendInt(b, int64(blk.outIdx), 10)
		b = append(b, `,"item":`...)
		return append(b, item...)
	})
	e.output = appendComma(e.output)
	e.output = append(e.output, item...)
	blk.text = nil
}

func (e *responsesStreamEncoder) finish(cs *canonStream) {}

func (e *responsesStreamEncoder) end(cs *canonStream) {
	status, reason := rsStatus(refusalStop(cs.stop, e.refused))
	name := "response.completed"
	if status == "incomplete" {
		name = "response.incomplete"
	}
	e.emit(cs, name, func(b []byte) []byte {
		b = append(b, `,"response":`...)
		return e.response(cs, b, status, reason, cs.usage(), "", "")
	})
}

// fail sends an error event (with the flat code/message/param of the API
// reference and the nested "error" object OpenAI sends on the wire, which
// the official SDKs raise) and then response.failed with the completed
// items; never response.completed.
func (e *responsesStreamEncoder) fail(cs *canonStream, class ErrorClass, msg string) {
	typ, code := class.openAIType()
	if code == "" {
		code = "server_error"
	}
	if e.respID == "" {
		e.respID = withPrefix("resp_", cs.id)
		if cs.created == 0 {
			cs.created = nowUnix()
		}
	}
	e.emit(cs, "error", func(b []byte) []byte {
		return appendRSErrorFields(b, typ, code, msg)
	})
	e.failPending, e.failCode, e.failMsg = true, code, msg
	if cs.t.upErr == nil || !cs.t.committed {
		// the gateway's own failure: nothing more is read
		e.failed(cs)
	}
}

// failed writes the response.failed that fail held back, with the usage
// known now (an upstream's in-band error: after the drain, afterDrain).
func (e *responsesStreamEncoder) failed(cs *canonStream) {
	if !e.failPending {
		return
	}
	e.failPending = false
	errEvent := cs.t.errEvent
	cs.t.errEvent = true
	e.emit(cs, "response.failed", func(b []byte) []byte {
		b = append(b, `,"response":`...)
		return e.response(cs, b, "failed", "", cs.usage(), e.failCode, e.failMsg)
	})
	cs.t.errEvent = errEvent
}
