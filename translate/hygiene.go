package translate

import (
	"bytes"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// SanitizeAnthropicRequest makes an Anthropic Messages request body safe
// from two rules Anthropic always enforces: "text content blocks must be
// non-empty" (a text block, a string content or a string system prompt that
// is empty or whitespace only is refused with a 400; clients produce such
// blocks next to tool_use, and after a cancelled turn), and thinking blocks
// must be signed (an assistant turn the gateway translated from an
// OpenAI-compatible upstream's reasoning carries "signature":"", which only
// Anthropic can produce). It removes:
//
//   - blank text blocks from messages[].content, from tool_result content
//     and from system;
//   - thinking blocks whose signature is empty, and thinking or
//     redacted_thinking blocks that carry OpenAI reasoning (signature or
//     data starting "openai.reasoning.v1:", as the gateway hands a
//     Responses upstream's reasoning to Anthropic clients); when thinking
//     is on and the last assistant turn is then left with tool calls but
//     no signed thinking, the top-level "thinking" goes too (Anthropic
//     requires such a turn to start with signed thinking; translation does
//     the same);
//   - a blank string content of a tool_result (the content field goes) and a
//     blank string system (the field goes);
//   - a message left with no content at all (Anthropic merges consecutive
//     turns of the same role, so dropping an empty turn does not change
//     what the model sees), unless that would leave no message, in which
//     case the body is returned unchanged and Anthropic's own 400 answers.
//
// A cheap byte scan runs first: a body without a blank "text", "content",
// "system" or "signature" string value and without the OpenAI reasoning
// marker is returned as is (same slice, no allocation). Otherwise the
// body is rewritten with only those removals (every other byte kept); it is
// returned unchanged when the scan's hit was not a content block (a tool
// input, say). The body is assumed to be a JSON object (see RequestInfo).
func SanitizeAnthropicRequest(body []byte) []byte {
	if !hasBlankString(body) && !carriesOpenAIReasoning(body) {
		return body
	}
	if !gjson.Valid(view(body)) {
		return body // not JSON: nothing to clean (only reached when a blank string was found)
	}
	root := gjson.Parse(view(body)) // in place: offsets are the body's
	if !root.IsObject() {
		return body
	}
	type edit struct {
		off, n int
		repl   string
	}
	var edits []edit
	unsignedDropped := false // unsigned thinking was removed from messages
	if sys := root.Get("system"); sys.Index > 0 {
		switch {
		case sys.Type == gjson.String && isBlank(sys.Str):
			edits = append(edits, edit{sys.Index, len(sys.Raw), `[]`}) // removed below
		case sys.IsArray():
			if kept, changed, _ := keptBlocks(sys); changed {
				edits = append(edits, edit{sys.Index, len(sys.Raw), kept})
			}
		}
	}
	if msgs := root.Get("messages"); msgs.IsArray() && msgs.Index > 0 {
		var repl *string
		if repl, unsignedDropped = sanitizedMessages(msgs); repl != nil {
			edits = append(edits, edit{msgs.Index, len(msgs.Raw), *repl})
		}
	}
	if len(edits) == 0 {
		return body
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].off > edits[j].off })
	out := body
	for _, e := range edits {
		out = splice(out, e.off, e.n, []byte(e.repl)) // a new slice: body is never written
	}
	if sys := gjson.GetBytes(out, "system"); sys.IsArray() && strings.TrimSpace(sys.Raw[1:len(sys.Raw)-1]) == "" {
		if o, err := sjson.DeleteBytes(out, "system"); err == nil {
			out = o
		}
	}
	if unsignedDropped && !lastToolTurnSigned(out) {
		if t := gjson.GetBytes(out, "thinking.type").Str; t == "enabled" || t == "adaptive" {
			if o, err := sjson.DeleteBytes(out, "thinking"); err == nil {
				out = o
			}
		}
	}
	return out
}

// lastToolTurnSigned reports whether the last assistant message of body
// either makes no tool call or holds a signed thinking or a
// redacted_thinking block.
func lastToolTurnSigned(body []byte) bool {
	var last gjson.Result
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").Str == "assistant" {
			last = m
		}
		return true
	})
	hasCall, signed := false, false
	last.Get("content").ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").Str {
		case "tool_use":
			hasCall = true
		case "thinking":
			sig := b.Get("signature").Str
			signed = signed || sig != "" && !strings.HasPrefix(sig, sigPrefixOpenAI)
		case "redacted_thinking":
			signed = signed || !strings.HasPrefix(b.Get("data").Str, sigPrefixOpenAI)
		}
		return true
	})
	return !hasCall || signed
}

// sanitizedMessages returns the messages array msgs with blank text
// blocks, unsigned thinking and empty turns removed, or nil when nothing
// needs to change (or every message would go); unsigned reports whether
// unsigned thinking was among the removals.
func sanitizedMessages(msgs gjson.Result) (_ *string, unsigned bool) {
	changed := false
	out := make([]byte, 0, len(msgs.Raw))
	out = append(out, '[')
	out, n := appendKept(out, msgs, func(m gjson.Result) (string, bool) {
		raw := m.Raw
		content := m.Get("content")
		switch {
		case !m.IsObject():
		case content.Type == gjson.String && isBlank(content.Str):
			changed = true
			return "", false // an empty turn: dropped
		case content.IsArray():
			kept, ch, u := keptBlocks(content)
			unsigned = unsigned || u
			if ch {
				changed = true
				if kept == "[]" {
					return "", false
				}
				if s, err := sjson.SetRaw(raw, "content", kept); err == nil {
					raw = s
				}
			}
		}
		return raw, true
	})
	if !changed || n == 0 {
		return nil, false
	}
	s := string(append(out, ']'))
	return &s, unsigned
}

// appendKept appends to out the elements of the JSON array arr, comma
// separated: each as the raw JSON keep returns for it, or left out when keep
// returns false. n is the number of elements written.
func appendKept(out []byte, arr gjson.Result, keep func(x gjson.Result) (raw string, ok bool)) (_ []byte, n int) {
	arr.ForEach(func(_, x gjson.Result) bool {
		raw, ok := keep(x)
		if !ok {
			return true
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, raw...)
		n++
		return true
	})
	return out, n
}

// keptBlocks returns the content array arr without its blank text blocks
// and unsigned thinking blocks (and with blank text removed inside
// tool_result blocks), whether anything was removed and whether unsigned
// thinking was.
func keptBlocks(arr gjson.Result) (_ string, changed, unsigned bool) {
	if !hasBlankString([]byte(arr.Raw)) && !carriesOpenAIReasoning([]byte(arr.Raw)) {
		return arr.Raw, false, false // the common case: nothing to remove
	}
	out := make([]byte, 0, len(arr.Raw))
	out = append(out, '[')
	out, _ = appendKept(out, arr, func(b gjson.Result) (string, bool) {
		raw := b.Raw
		if b.IsObject() {
			switch b.Get("type").Str {
			case "text":
				if t := b.Get("text"); t.Type == gjson.String && isBlank(t.Str) {
					changed = true
					return "", false
				}
			case "thinking":
				if sig := b.Get("signature"); sig.Type == gjson.String && (isBlank(sig.Str) || strings.HasPrefix(sig.Str, sigPrefixOpenAI)) {
					changed, unsigned = true, true // Anthropic refuses it
					return "", false
				}
			case "redacted_thinking":
				if strings.HasPrefix(b.Get("data").Str, sigPrefixOpenAI) {
					changed, unsigned = true, true // OpenAI reasoning: Anthropic refuses it
					return "", false
				}
			case "tool_result":
				c := b.Get("content")
				switch {
				case c.Type == gjson.String && isBlank(c.Str):
					if s, err := sjson.Delete(raw, "content"); err == nil {
						raw, changed = s, true
					}
				case c.IsArray():
					if kept, ch, _ := keptBlocks(c); ch {
						var s string
						var err error
						if kept == "[]" {
							s, err = sjson.Delete(raw, "content")
						} else {
							s, err = sjson.SetRaw(raw, "content", kept)
						}
						if err == nil {
							raw, changed = s, true
						}
					}
				}
			}
		}
		return raw, true
	})
	return string(append(out, ']')), changed, unsigned
}

// hasBlankString reports whether body has a "text", "content", "system" or
// "signature" member
// whose value is a string of only JSON whitespace (raw or escaped as \n,
// \r, \t): the cheap check before SanitizeAnthropicRequest parses.
func hasBlankString(body []byte) bool {
	for i := 0; i+6 < len(body); i++ {
		j := bytes.IndexByte(body[i:], '"') // jump to the next quote
		if j < 0 {
			return false
		}
		if i += j; i+6 >= len(body) {
			return false
		}
		var k int
		switch {
		case hasAt(body, i+1, `text"`):
			k = i + 6
		case hasAt(body, i+1, `content"`):
			k = i + 9
		case hasAt(body, i+1, `system"`):
			k = i + 8
		case hasAt(body, i+1, `signature"`):
			k = i + 11
		default:
			continue
		}
		for k < len(body) && isSpace(body[k]) {
			k++
		}
		if k >= len(body) || body[k] != ':' {
			continue
		}
		k++
		for k < len(body) && isSpace(body[k]) {
			k++
		}
		if k >= len(body) || body[k] != '"' {
			continue
		}
		k++
		for k < len(body) {
			switch c := body[k]; {
			case isSpace(c):
				k++
				continue
			case c == '\\' && k+1 < len(body) && (body[k+1] == 'n' || body[k+1] == 'r' || body[k+1] == 't'):
				k += 2
				continue
			case c == '"':
				return true
			}
			break
		}
	}
	return false
}

func hasAt(b []byte, i int, s string) bool {
	return len(b)-i >= len(s) && string(b[i:i+len(s)]) == s
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// carriesOpenAIReasoning reports whether body holds the sigPrefixOpenAI
// marker (a cheap byte search): OpenAI reasoning carried in a thinking or
// redacted_thinking block, which Anthropic refuses.
func carriesOpenAIReasoning(body []byte) bool {
	return bytes.Contains(body, openAIReasoningMarker)
}

var openAIReasoningMarker = []byte(sigPrefixOpenAI)
