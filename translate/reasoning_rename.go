package translate

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// ChatReasoningToContent renames, in an OpenAI Chat Completions request
// bound for an OpenAI-compatible upstream, the `reasoning` field of each
// assistant message (OpenRouter's and vLLM's name) to `reasoning_content`
// (DeepSeek's, GLM's and Kimi's), when the message carries no
// reasoning_content of its own: upstreams that follow DeepSeek's rule
// reject a tool-call turn of thinking mode without it ("Missing
// `reasoning_content` field in the assistant message"). Only the field's
// name changes; every other byte stays. A body without the byte sequence
// `"reasoning"` is returned as it is, without a parse.
func ChatReasoningToContent(body []byte) []byte {
	if !bytes.Contains(body, []byte(`"reasoning"`)) {
		return body
	}
	var at []int // offsets of the key tokens to rename
	msgs := gjson.Get(view(body), "messages")
	if msgs.Index == 0 || !msgs.IsArray() {
		return body // not located in the body: nothing to splice safely
	}
	// ForEach gives each member's key and value their offsets in the body
	// (msgs was read in place), so no search is needed
	msgs.ForEach(func(_, m gjson.Result) bool {
		if !m.IsObject() || m.Get("role").Str != "assistant" || m.Get("reasoning_content").Exists() {
			return true
		}
		m.ForEach(func(k, v gjson.Result) bool {
			if k.Raw == `"reasoning"` && v.Type == gjson.String {
				at = append(at, k.Index)
			}
			return true
		})
		return true
	})
	if len(at) == 0 {
		return body
	}
	const add = len(`_content`)
	out := make([]byte, 0, len(body)+add*len(at))
	last := 0
	for _, off := range at {
		end := off + len(`"reasoning`)
		out = append(out, body[last:end]...)
		out = append(out, "_content"...)
		last = end
	}
	return append(out, body[last:]...)
}
