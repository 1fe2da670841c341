package translate

import "strconv"

// anthropicStreamEncoder writes Anthropic Messages stream events (Anthropic
// "Streaming messages" docs), each with its event: line: message_start
// (content [], usage with the input figures known so far, else the
// request's estimate (ResponseOptions.InputTokensEstimate), placeholders 0
// otherwise), one ping, content_block_start / content_block_delta
// (text_delta, thinking_delta, signature_delta, input_json_delta) /
// content_block_stop with indexes 0..n-1 in order, message_delta with
// stop_reason, stop_sequence and the final usage, and message_stop; or, on
// a failure, event: error and nothing after it.
type anthropicStreamEncoder struct {
	buf []byte
	tmp []byte // scratch for the data of the event being built
}

func (e *anthropicStreamEncoder) emit(cs *canonStream, name string, data []byte) {
	b := appendEvent(e.buf[:0], name, data)
	e.buf = b
	if cap(data) > cap(e.tmp) {
		e.tmp = data[:0] // the scratch grew: keep it
	}
	cs.t.write(b)
}

func (e *anthropicStreamEncoder) start(cs *canonStream) {
	d := append(e.tmp[:0], `{"type":"message_start","message":{"id":`...)
	d = appendString(d, withPrefix("msg_", cs.id))
	d = append(d, `,"type":"message","role":"assistant","model":`...)
	d = appendString(d, cs.clientModel())
	d = append(d, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	u := cs.usage()
	if u.InputTokens == nil && u.CacheReadTokens == nil && u.CacheWriteTokens == nil && cs.inputEstimate > 0 {
		u.InputTokens = &cs.inputEstimate // ResponseOptions.InputTokensEstimate, message_start only
	}
	d = appendAnthropicUsage(d, u, true)
	d = append(d, "}}"...)
	e.emit(cs, "message_start", d)
	e.emit(cs, "ping", []byte(`{"type":"ping"}`))
}

func (e *anthropicStreamEncoder) blockStart(cs *canonStream, blk *streamBlock) {
	d := append(e.tmp[:0], `{"type":"content_block_start","index":`...)
	d = strconv.AppendInt(d, int64(blk.idx), 10)
	switch blk.kind {
	case partText:
		d = append(d, `,"content_block":{"type":"text","text":""}}`...)
	case partThinking:
		d = append(d, `,"content_block":{"type":"thinking","thinking":"","signature":""}}`...)
	case partRedactedThinking:
		d = append(d, `,"content_block":{"type":"redacted_thinking","data":`...)
		d = appendString(d, blk.data)
		d = append(d, "}}"...)
	case partToolCall:
		d = append(d, `,"content_block":{"type":"tool_use","id":`...)
		d = appendString(d, anthropicToolID(blk.id))
		d = appendStrField(d, "name", blk.name)
		d = append(d, `,"input":{}}}`...)
	}
	e.emit(cs, "content_block_start", d)
}

func (e *anthropicStreamEncoder) delta(cs *canonStream, blk *streamBlock, k deltaKind, s string) {
	d := append(e.buf[:0], "event: content_block_delta\ndata: "...)
	d = append(d, `{"type":"content_block_delta","index":`...)
	d = strconv.AppendInt(d, int64(blk.idx), 10)
	switch k {
	case deltaText:
		d = append(d, `,"delta":{"type":"text_delta","text":`...)
	case deltaThinking:
		d = append(d, `,"delta":{"type":"thinking_delta","thinking":`...)
	case deltaSignature:
		d = append(d, `,"delta":{"type":"signature_delta","signature":`...)
	case deltaArgs:
		d = append(d, `,"delta":{"type":"input_json_delta","partial_json":`...)
	}
	d = appendString(d, s)
	d = append(d, "}}\n\n"...)
	e.buf = d
	cs.t.write(d)
}

func (e *anthropicStreamEncoder) blockStop(cs *canonStream, blk *streamBlock) {
	d := append(e.tmp[:0], `{"type":"content_block_stop","index":`...)
	d = strconv.AppendInt(d, int64(blk.idx), 10)
	e.emit(cs, "content_block_stop", append(d, '}'))
}

func (e *anthropicStreamEncoder) finish(cs *canonStream) {}

func (e *anthropicStreamEncoder) end(cs *canonStream) {
	d := append(e.tmp[:0], `{"type":"message_delta","delta":{"stop_reason":`...)
	d = appendString(d, cs.stop)
	d = append(d, `,"stop_sequence":`...)
	if cs.stopSeq != "" {
		d = appendString(d, cs.stopSeq)
	} else {
		d = append(d, "null"...)
	}
	d = append(d, `},"usage":`...)
	d = appendAnthropicUsage(d, cs.usage(), false)
	e.emit(cs, "message_delta", append(d, '}'))
	e.emit(cs, "message_stop", []byte(`{"type":"message_stop"}`))
}

// fail sends event: error (Anthropic streaming docs, "Error events") and
// nothing after it: Anthropic's own API ends the stream at the error event
// (no message_stop), and the official SDKs raise it as an error.
func (e *anthropicStreamEncoder) fail(cs *canonStream, class ErrorClass, msg string) {
	e.emit(cs, "error", errorBody(AnthropicMessages, class, msg, ""))
}
