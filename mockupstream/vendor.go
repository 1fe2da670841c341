package mockupstream

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// VendorDeepSeek is the KeyBehavior.Vendor value for a key that behaves like
// DeepSeek's OpenAI-compatible API in thinking mode (DeepSeek API docs,
// "Thinking Mode" and its tool-call rules): every Chat answer starts with
// reasoning in reasoning_content, and a request whose assistant message
// carries tool_calls without its reasoning_content is refused with 400
// "Missing `reasoning_content` field in the assistant message at message
// index N" (ValidateDeepSeekRequest).
const VendorDeepSeek = "deepseek"

// ValidateAnthropicRequest checks an Anthropic Messages request body the way
// Anthropic's API does for the rules clients and gateways most often break,
// and returns the message of Anthropic's 400 invalid_request_error, or ""
// when the body passes:
//
//   - max_tokens is required ("max_tokens: Field required");
//   - a text block (in system, in a message, in a tool_result) must not be
//     empty ("text content blocks must be non-empty") or whitespace only
//     ("text content blocks must contain non-whitespace text");
//   - a message's content must not be empty (an empty string or array),
//     except for the final assistant message;
//   - a thinking block must carry a non-empty signature ("…signature: Field
//     required"): unsigned thinking cannot be replayed.
//
// Every POST /v1/messages request to the mock is checked with it before
// any other behaviour applies.
func ValidateAnthropicRequest(body []byte) string {
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return "Input should be a valid dictionary"
	}
	if mt := root.Get("max_tokens"); !mt.Exists() {
		return "max_tokens: Field required"
	} else if mt.Type != gjson.Number {
		return "max_tokens: Input should be a valid integer"
	}
	sys := root.Get("system")
	switch {
	case sys.Type == gjson.String && sys.Str != "" && isWhite(sys.Str):
		return "system: text content blocks must contain non-whitespace text"
	case sys.IsArray():
		i := 0
		var msg string
		sys.ForEach(func(_, b gjson.Result) bool {
			msg = textBlockError(b, "system."+strconv.Itoa(i))
			i++
			return msg == ""
		})
		if msg != "" {
			return msg
		}
	}
	msgs := root.Get("messages")
	if !msgs.IsArray() {
		return "messages: Field required"
	}
	all := msgs.Array()
	if len(all) == 0 {
		return "messages: at least one message is required"
	}
	for i, m := range all {
		at := "messages." + strconv.Itoa(i)
		c := m.Get("content")
		final := i == len(all)-1 && m.Get("role").Str == "assistant"
		switch {
		case c.Type == gjson.String:
			if c.Str == "" && !final {
				return at + ": all messages must have non-empty content except for the optional final assistant message"
			}
			if c.Str != "" && isWhite(c.Str) {
				return at + ".content: text content blocks must contain non-whitespace text"
			}
		case c.IsArray():
			blocks := c.Array()
			if len(blocks) == 0 && !final {
				return at + ": all messages must have non-empty content except for the optional final assistant message"
			}
			for j, b := range blocks {
				bat := at + ".content." + strconv.Itoa(j)
				if msg := textBlockError(b, bat); msg != "" {
					return msg
				}
				switch b.Get("type").Str {
				case "thinking":
					if s := b.Get("signature"); s.Type != gjson.String || s.Str == "" {
						return bat + ".thinking.signature: Field required"
					}
				case "tool_result":
					if tc := b.Get("content"); tc.IsArray() {
						for k, tb := range tc.Array() {
							if msg := textBlockError(tb, bat+".content."+strconv.Itoa(k)); msg != "" {
								return msg
							}
						}
					} else if tc.Type == gjson.String && tc.Str != "" && isWhite(tc.Str) {
						return bat + ".content: text content blocks must contain non-whitespace text"
					}
				}
			}
		default:
			return at + ".content: Field required"
		}
	}
	return ""
}

// textBlockError checks one block that may be a text block.
func textBlockError(b gjson.Result, at string) string {
	if b.Get("type").Str != "text" {
		return ""
	}
	t := b.Get("text")
	switch {
	case t.Type != gjson.String:
		return at + ".text: Field required"
	case t.Str == "":
		return "messages: text content blocks must be non-empty"
	case isWhite(t.Str):
		return "messages: text content blocks must contain non-whitespace text"
	}
	return ""
}

func isWhite(s string) bool { return strings.TrimSpace(s) == "" }

// ValidateDeepSeekRequest checks a Chat Completions body the way DeepSeek
// does in thinking mode: an assistant message with tool_calls must carry its
// reasoning_content. It returns the message of DeepSeek's 400
// invalid_request_error, or "".
func ValidateDeepSeekRequest(body []byte) string {
	i := 0
	var msg string
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").Str == "assistant" && len(m.Get("tool_calls").Array()) > 0 {
			if rc := m.Get("reasoning_content"); rc.Type != gjson.String {
				msg = "Missing `reasoning_content` field in the assistant message at message index " + strconv.Itoa(i)
				return false
			}
		}
		i++
		return true
	})
	return msg
}
