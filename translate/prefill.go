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
// (and so left out) until one with other text is cut. Earlier turns keep
// their white space. msgs is not modified: a copy is returned when
// something is cut, so the parsed request still encodes whole for other
// dialects.
func trimPrefill(msgs []canonMessage) []canonMessage {
	last := len(msgs) - 1
	for last >= 0 && msgs[last].role == "system" {
		last--
	}
	if last < 0 || msgs[last].role != "assistant" {
		return msgs
	}
	ps := msgs[last].parts
	var parts []canonPart
	for j := len(ps) - 1; j >= 0 && ps[j].kind == partText; j-- {
		t := strings.TrimRightFunc(ps[j].text, unicode.IsSpace)
		if t != ps[j].text {
			if parts == nil {
				parts = slices.Clone(ps)
			}
			parts[j].text = t
		}
		if t != "" {
			break
		}
	}
	if parts == nil {
		return msgs
	}
	out := slices.Clone(msgs)
	out[last].parts = parts
	return out
}
