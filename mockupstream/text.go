package mockupstream

import (
	"strings"
	"unicode/utf8"
)

// Limits applied to the echoed part of an answer.
const (
	maxEchoWords = 24  // words of the user message echoed back
	maxEchoRunes = 160 // runes of the user message echoed back
)

// Text returns the deterministic answer the mock gives to a conversation whose
// last user message has the text lastUserMessage (for array content, the text
// parts joined with a single space).
//
// The result is "Mock answer to: " followed by the message with every run of
// white space collapsed to one space, cut to at most 24 words and 160 runes
// ("..." is appended when something was cut). An empty or blank message gives
// "Mock answer.". Streams deliver this exact text, split into word chunks (see
// Words).
func Text(lastUserMessage string) string {
	s := echo(lastUserMessage)
	if s == "" {
		return "Mock answer."
	}
	return "Mock answer to: " + s
}

// ToolText returns the answer the mock gives when the last message is a tool
// result (an OpenAI role "tool" message or an Anthropic tool_result block)
// with the text content: "Tool said: " followed by content shortened like in
// Text. An empty result gives "Tool said: (empty)".
func ToolText(content string) string {
	s := echo(content)
	if s == "" {
		s = "(empty)"
	}
	return "Tool said: " + s
}

// ReasoningText returns the reasoning the mock streams before its answer when
// reasoning or thinking was requested (OpenAI reasoning_content deltas,
// Anthropic thinking_delta events): "Thinking about: " followed by the last
// user message shortened like in Text, or "Thinking." for an empty message.
func ReasoningText(lastUserMessage string) string {
	s := echo(lastUserMessage)
	if s == "" {
		return "Thinking."
	}
	return "Thinking about: " + s
}

// Words splits text into the chunks the mock streams: each chunk is one word
// followed by the white space after it, so the chunks concatenate back to text
// exactly. "Mock answer to: hi" gives ["Mock ", "answer ", "to: ", "hi"].
// Leading white space, if any, is part of the first chunk. The number of
// chunks is the completion token count the mock reports for text.
func Words(text string) []string {
	var out []string
	for rest := text; rest != ""; {
		var w string
		w, rest = nextWord(rest)
		out = append(out, w)
	}
	return out
}

// nextWord cuts the first chunk (word plus trailing white space) off s.
func nextWord(s string) (word, rest string) {
	i := 0
	// leading white space (only possible for the first chunk)
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	for i < len(s) && !isSpace(s[i]) {
		i++
	}
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

// wordCount is len(Words(s)) without allocating.
func wordCount(s string) int {
	n := 0
	for rest := s; rest != ""; n++ {
		_, rest = nextWord(rest)
	}
	return n
}

// tokenCount is the rough token estimate used for prompts: white-space
// separated words.
func tokenCount(s string) int {
	n := 0
	in := false
	for i := 0; i < len(s); i++ {
		if isSpace(s[i]) {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// echo collapses white space and shortens s for inclusion in an answer.
func echo(s string) string {
	fields := strings.Fields(s)
	cut := false
	if len(fields) > maxEchoWords {
		fields = fields[:maxEchoWords]
		cut = true
	}
	out := strings.Join(fields, " ")
	if utf8.RuneCountInString(out) > maxEchoRunes {
		n := 0
		for i := range out {
			if n == maxEchoRunes {
				out = out[:i]
				break
			}
			n++
		}
		cut = true
	}
	if !utf8.ValidString(out) {
		out = strings.ToValidUTF8(out, "\uFFFD")
	}
	if cut {
		out += "..."
	}
	return out
}

// containsFold reports whether s contains the ASCII word sub, ignoring case.
func containsFold(s, sub string) bool {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if strings.EqualFold(s[i:i+n], sub) {
			return true
		}
	}
	return false
}
