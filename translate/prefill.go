package translate

import (
	"slices"
	"strings"
	"unicode"
)

// trimPrefill returns msgs with the trailing white space cut from the
// text that ends a final assistant turn (a prefill, which the model
// continues): Anthropic refuses one that ends in white space with 400
// "messages: final assistant content cannot end with trailing
// whitespace". Trailing text parts that are white space only are emptied
// (and so left out) until one with other text is cut. The final turn is
// what the Anthropic encoder sends as one: the assistant messages after
// the last other turn, system messages between them left out (hoisted),
// merged (appendAnthropicMessages); so when a final assistant message's
// text is all white space, or it has no parts, the cut goes on into the
// assistant message before it. Earlier turns keep their white space. msgs
// is not modified: a copy is returned when something is cut, so the
// parsed request still encodes whole for other dialects.
func trimPrefill(msgs []canonMessage) []canonMessage {
	var out []canonMessage
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].role == "system" {
			continue
		}
		if msgs[i].role != "assistant" {
			break
		}
		ps := msgs[i].parts
		var parts []canonPart
		done := false
		for j := len(ps) - 1; j >= 0 && !done; j-- {
			if ps[j].kind != partText {
				done = true
				break
			}
			t := strings.TrimRightFunc(ps[j].text, unicode.IsSpace)
			if t != ps[j].text {
				if parts == nil {
					parts = slices.Clone(ps)
				}
				parts[j].text = t
			}
			done = t != ""
		}
		if parts != nil {
			if out == nil {
				out = slices.Clone(msgs)
			}
			out[i].parts = parts
		}
		if done {
			break
		}
	}
	if out == nil {
		return msgs
	}
	return out
}
