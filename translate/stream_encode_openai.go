package translate

import "strconv"

// chatStreamEncoder writes OpenAI Chat Completions chunks
// (object "chat.completion.chunk", OpenAI API reference "Streaming"): a
// first chunk with delta {role:"assistant",content:""}, content and
// reasoning_content deltas, tool_calls deltas numbered 0..n-1 (id, type and
// name only on a call's first chunk, as openai-go's accumulator
// concatenates names), a finish chunk with finish_reason, one usage-only
// chunk with choices: [] (the only chunk carrying usage, as openai-go sums
// usage across chunks; left out with HideUsageChunk, for a client that did
// not ask for stream_options.include_usage), then data: [DONE]; or, on a failure, a final
// {"error":{…}} chunk and no [DONE].
type chatStreamEncoder struct {
	prefix []byte // {"id":…,"object":"chat.completion.chunk","created":…,"model":…,"choices":[
	buf    []byte
	tmp    []byte // scratch for a delta being built
	tools  int
	// refused: a delta.refusal was sent (refusalStop)
	refused bool
}

func (e *chatStreamEncoder) start(cs *canonStream) {
	p := append(e.prefix[:0], `{"id":`...)
	p = appendString(p, withPrefix("chatcmpl-", cs.id))
	p = append(p, `,"object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, cs.created, 10)
	p = append(p, `,"model":`...)
	p = appendString(p, cs.clientModel())
	e.prefix = append(p, `,"choices":[`...)
	e.choice(cs, `{"role":"assistant","content":""}`, "")
}

// choiceBytes is choice for a delta built in e.tmp.
func (e *chatStreamEncoder) choiceBytes(cs *canonStream, delta []byte) {
	e.tmp = delta[:0]
	e.choice(cs, view(delta), "")
}

// choice writes a chunk with one choice whose delta is the raw JSON delta.
func (e *chatStreamEncoder) choice(cs *canonStream, delta string, finish string) {
	b := append(e.buf[:0], "data: "...)
	b = append(b, e.prefix...)
	b = append(b, `{"index":0,"delta":`...)
	b = append(b, delta...)
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, finish)
	}
	b = append(b, "}]}\n\n"...)
	e.buf = b
	cs.t.write(b)
}

func (e *chatStreamEncoder) blockStart(cs *canonStream, blk *streamBlock) {
	if blk.kind == partRedactedThinking && !cs.t.omitReasoning {
		d := append(e.tmp[:0], `{"thinking_blocks":[{"type":"redacted_thinking","data":`...)
		d = appendString(d, blk.data)
		e.choiceBytes(cs, append(d, "}]}"...))
		return
	}
	if blk.kind != partToolCall {
		return
	}
	blk.outIdx = e.tools
	e.tools++
	if e.customStart(cs, blk) {
		return
	}
	d := append(e.tmp[:0], `{"tool_calls":[{"index":`...)
	d = strconv.AppendInt(d, int64(blk.outIdx), 10)
	d = append(d, `,"id":`...)
	d = appendString(d, blk.id)
	d = append(d, `,"type":"function","function":{"name":`...)
	d = appendString(d, blk.name)
	d = append(d, `,"arguments":""}}]}`...)
	e.choiceBytes(cs, d)
}

func (e *chatStreamEncoder) delta(cs *canonStream, blk *streamBlock, k deltaKind, s string) {
	if s == "" {
		return
	}
	b := append(e.buf[:0], "data: "...)
	b = append(b, e.prefix...)
	switch k {
	case deltaText:
		if blk.refusal {
			e.refused = true
			b = append(b, `{"index":0,"delta":{"refusal":`...)
		} else {
			b = append(b, `{"index":0,"delta":{"content":`...)
		}
		b = appendString(b, s)
		b = append(b, '}')
	case deltaThinking:
		if cs.t.omitReasoning {
			return
		}
		b = append(b, `{"index":0,"delta":{"reasoning_content":`...)
		b = appendString(b, s)
		b = append(b, '}')
	case deltaArgs:
		if blk.custom != nil {
			e.customInput(cs, blk, blk.custom.next(view(blk.text)))
			return
		}
		b = append(b, `{"index":0,"delta":{"tool_calls":[{"index":`...)
		b = strconv.AppendInt(b, int64(blk.outIdx), 10)
		b = append(b, `,"function":{"arguments":`...)
		b = appendString(b, s)
		b = append(b, "}}]}"...)
	default:
		return // signatures have no Chat Completions field
	}
	b = append(b, `,"logprobs":null,"finish_reason":null}]}`...)
	b = append(b, "\n\n"...)
	e.buf = b
	cs.t.write(b)
}

// blockStop gives a call that streamed no arguments "{}" (Anthropic sends
// tools without parameters as a single empty partial_json), so the client
// never sees an empty arguments string. A signed thinking block ends with
// one chunk carrying it whole in LiteLLM's form,
// delta.thinking_blocks [{type:"thinking",thinking,signature}], so a
// client that echoes the message can replay it to Anthropic.
func (e *chatStreamEncoder) blockStop(cs *canonStream, blk *streamBlock) {
	if blk.kind == partThinking && blk.signature != "" && !cs.t.omitReasoning {
		d := append(e.tmp[:0], `{"thinking_blocks":[{"type":"thinking","thinking":`...)
		d = appendString(d, view(blk.text))
		d = appendStrField(d, "signature", blk.signature)
		e.choiceBytes(cs, append(d, "}]}"...))
	}
	if blk.custom != nil {
		e.customStop(cs, blk)
		return
	}
	if blk.kind == partToolCall && !blk.argsSent {
		e.delta(cs, blk, deltaArgs, "{}")
	}
}

func (e *chatStreamEncoder) finish(cs *canonStream) {
	e.choice(cs, `{}`, chatFinish(refusalStop(cs.stop, e.refused)))
}

func (e *chatStreamEncoder) end(cs *canonStream) {
	if u := cs.usage(); !u.IsZero() && !cs.t.hideUsage {
		b := append(e.buf[:0], "data: "...)
		b = append(b, e.prefix...)
		b = append(b, `],"usage":`...)
		b = appendChatUsage(b, u)
		b = append(b, "}\n\n"...)
		e.buf = b
		cs.t.write(b)
	}
	cs.t.write([]byte("data: [DONE]\n\n"))
}

// fail sends a final chunk {"error":{…}} (OpenAI's mid-stream error form;
// openai-go and openai-python raise any event whose data has a top-level
// "error") and no data: [DONE], so no client takes the stream as complete.
func (e *chatStreamEncoder) fail(cs *canonStream, class ErrorClass, msg string) {
	cs.t.write(appendEvent(nil, "", errorBody(OpenAIChat, class, msg, "")))
}
