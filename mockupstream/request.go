package mockupstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// content is message content in either dialect: a string, null, or an array
// of parts/blocks.
type content struct {
	text       string // text parts joined with " "
	toolResult bool   // at least one Anthropic tool_result block
	toolText   string // text of the tool_result blocks joined with " "
}

// contentPart is one element of array content.
type contentPart struct {
	Type    string   `json:"type"`
	Text    string   `json:"text"`
	Content *content `json:"content"` // tool_result content
}

var errContent = errors.New("content must be a string or an array of content parts")

// UnmarshalJSON accepts a string, null or an array of parts.
func (c *content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '"':
		return json.Unmarshal(b, &c.text)
	case 'n':
		return nil
	case '[':
		var parts []contentPart
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		for i := range parts {
			p := &parts[i]
			switch p.Type {
			case "tool_result":
				c.toolResult = true
				if p.Content != nil {
					c.toolText = joinText(c.toolText, p.Content.text)
				}
			case "text", "input_text", "output_text", "":
				c.text = joinText(c.text, p.Text)
			}
		}
		return nil
	}
	return errContent
}

func joinText(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + " " + b
}

// message is one conversation turn in either dialect.
type message struct {
	Role    string  `json:"role"`
	Content content `json:"content"`
}

// lastUserText returns the text of the last user message.
func lastUserText(msgs []message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content.text
		}
	}
	return ""
}

// promptTokens is the rough input token count over all message text.
func promptTokens(msgs []message, extra string) int {
	n := tokenCount(extra)
	for i := range msgs {
		n += tokenCount(msgs[i].Content.text) + tokenCount(msgs[i].Content.toolText)
	}
	if n < 1 {
		n = 1
	}
	return n
}

// answer is what the mock decided to say.
type answer struct {
	model     string
	text      string // answer text (when no tool call)
	reasoning string // reasoning / thinking text, "" if none
	toolName  string // tool call when not empty
	toolArgs  string // tool arguments as a JSON object text
	prompt    int    // prompt tokens
	truncated bool   // cut by the request's output token limit
}

// applyLimit cuts the reasoning and text so that at most limit chunks are
// produced (reasoning first), as a model hitting max_tokens would. Tool calls
// are not cut. limit <= 0 means no limit.
func (a *answer) applyLimit(limit int) {
	if limit <= 0 || a.toolName != "" {
		return
	}
	r := wordCount(a.reasoning)
	if r >= limit {
		a.truncated = r > limit || a.text != ""
		a.reasoning = firstWords(a.reasoning, limit)
		a.text = ""
		return
	}
	if r+wordCount(a.text) > limit {
		a.text = firstWords(a.text, limit-r)
		a.truncated = true
	}
}

// firstWords returns the first n chunks of s (see Words).
func firstWords(s string, n int) string {
	rest := s
	for i := 0; i < n && rest != ""; i++ {
		_, rest = nextWord(rest)
	}
	return s[:len(s)-len(rest)]
}

// completionTokens is the number of content chunks the answer streams.
func (a *answer) completionTokens() int {
	n := wordCount(a.reasoning)
	if a.toolName != "" {
		n += len(argFragments(a.toolArgs))
	} else {
		n += wordCount(a.text)
	}
	return n
}

// wantsTool reports whether a user message asks for a tool: it contains
// the behavior's ToolTrigger (default "tool").
func wantsTool(text string, b *KeyBehavior) bool {
	trigger := "tool"
	if b != nil && b.ToolTrigger != "" {
		trigger = b.ToolTrigger
	}
	return containsFold(text, trigger)
}

// argFragments splits tool arguments into the pieces streamed, cut every
// few bytes (at rune boundaries) like real providers do.
func argFragments(args string) []string {
	const step = 6
	var out []string
	for len(args) > 0 {
		n := step
		if n >= len(args) {
			n = len(args)
		} else {
			for n < len(args) && !utf8.RuneStart(args[n]) {
				n++
			}
		}
		out = append(out, args[:n])
		args = args[n:]
	}
	return out
}

// toolArguments builds the arguments of a mock tool call from the tool's JSON
// schema: {"<first string property>":"mock"}, or {} when there is none.
func toolArguments(schema json.RawMessage) string {
	prop := firstStringProperty(schema)
	if prop == "" {
		return "{}"
	}
	b := append(make([]byte, 0, len(prop)+12), '{')
	b = appendString(b, prop)
	b = append(b, `:"mock"}`...)
	return string(b)
}

// firstStringProperty returns the name of the first property (in document
// order) of a JSON schema object whose type is or includes "string".
func firstStringProperty(schema json.RawMessage) string {
	if len(schema) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(schema))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		if k, _ := t.(string); k != "properties" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return ""
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return ""
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return ""
			}
			name, _ := t.(string)
			var prop struct {
				Type json.RawMessage `json:"type"`
			}
			if dec.Decode(&prop) != nil {
				return ""
			}
			if bytes.Contains(prop.Type, []byte(`"string"`)) {
				return name
			}
		}
		return ""
	}
	return ""
}

// isReasoningModel reports whether a model name asks for reasoning output.
func isReasoningModel(model string) bool {
	m := strings.ToLower(model)
	return strings.Contains(m, "reason") || strings.Contains(m, "think")
}
