package translate

import (
	"github.com/tidwall/gjson"
)

// anthropicStreamDecoder reads Anthropic Messages stream events (Anthropic
// "Streaming messages" docs): message_start, content_block_start / _delta
// (text_delta, thinking_delta, signature_delta, input_json_delta) / _stop,
// message_delta (stop_reason, cumulative usage), message_stop, ping, error.
// It dispatches on data.type, so a stream without event: lines works too.
// Server-tool blocks have no counterpart and are skipped.
type anthropicStreamDecoder struct {
	cs *canonStream
	// cur is the upstream index of the open block, -1 when none; skip is
	// the upstream index of a block being skipped.
	cur, skip int64
}

func newAnthropicStreamDecoder(cs *canonStream) upstreamDecoder {
	return &anthropicStreamDecoder{cs: cs, cur: -1, skip: -1}
}

func (d *anthropicStreamDecoder) event(ev *SSEEvent) {
	cs := d.cs
	if len(ev.Data) == 0 || cs.closed {
		return
	}
	data := view(ev.Data)
	typ := gjson.Get(data, "type").Str
	if typ == "" {
		typ = ev.Event
	}
	switch typ {
	case "message_start":
		m := gjson.Get(data, "message")
		cs.t.au.add(m.Get("usage"))
		cs.begin(m.Get("id").Str, m.Get("model").Str, 0)
	case "content_block_start":
		idx, blk := gjson.Get(data, "index").Int(), gjson.Get(data, "content_block")
		d.cur, d.skip = -1, -1
		switch blk.Get("type").Str {
		case "text":
			cs.openBlock(partText, "", "", "")
			if t := blk.Get("text").Str; t != "" {
				cs.delta(deltaText, t)
			}
		case "thinking":
			cs.openBlock(partThinking, "", "", "")
			if t := blk.Get("thinking").Str; t != "" {
				cs.delta(deltaThinking, t)
			}
			if s := blk.Get("signature").Str; s != "" {
				cs.delta(deltaSignature, s)
			}
		case "redacted_thinking":
			cs.openBlock(partRedactedThinking, "", "", blk.Get("data").Str)
		case "tool_use":
			cs.openBlock(partToolCall, blk.Get("id").Str, blk.Get("name").Str, "")
			if in := blk.Get("input"); in.IsObject() && in.Raw != "{}" && len(in.Map()) > 0 {
				cs.delta(deltaArgs, in.Raw)
			}
		default:
			cs.closeBlock()
			d.skip = idx
			return
		}
		d.cur = idx
	case "content_block_delta":
		// one lookup per member (GetMany would allocate its result)
		if gjson.Get(data, "index").Int() != d.cur || d.cur < 0 {
			return
		}
		delta := gjson.Get(data, "delta")
		switch delta.Get("type").Str {
		case "text_delta":
			cs.deltaJSON(deltaText, delta.Get("text"))
		case "thinking_delta":
			cs.deltaJSON(deltaThinking, delta.Get("thinking"))
		case "signature_delta":
			cs.delta(deltaSignature, delta.Get("signature").Str)
		case "input_json_delta":
			if s := delta.Get("partial_json"); s.Str != "" {
				cs.deltaJSON(deltaArgs, s)
			}
		}
	case "content_block_stop":
		if gjson.Get(data, "index").Int() == d.cur {
			cs.closeBlock()
			d.cur = -1
		}
	case "message_delta":
		delta := gjson.Get(data, "delta")
		cs.t.au.add(gjson.Get(data, "usage"))
		d.cur = -1
		stop := delta.Get("stop_reason").Str
		if stop == "" {
			stop = stopEndTurn
		}
		cs.finish(stop, delta.Get("stop_sequence").Str)
	case "message_stop":
		cs.end()
	case "error":
		e := gjson.Get(data, "error")
		typ := e.Get("type").Str
		se := cs.t.setUpstreamError(newStreamError(AnthropicMessages, typ, "", e.Get("message").String(), ""))
		cs.fail(classForErrorType(typ, ""), firstNonEmpty(se.Message, "upstream error"), se)
	}
}

func (d *anthropicStreamDecoder) end(readErr error) { d.cs.endOrFail(readErr) }
