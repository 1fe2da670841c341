package translate

// Dialect names a wire format spoken by a client or an upstream.
type Dialect uint8

const (
	// OpenAIChat is OpenAI Chat Completions, POST /v1/chat/completions.
	OpenAIChat Dialect = iota + 1
	// AnthropicMessages is Anthropic Messages, POST /v1/messages.
	AnthropicMessages
	// OpenAIResponses is OpenAI Responses, POST /v1/responses, spoken by
	// clients and by upstreams alike: a Responses client to a Responses
	// upstream passes through byte for byte (model rewritten); other pairs
	// are translated, requests, whole responses and streams.
	OpenAIResponses
)

// String returns "openai_chat", "anthropic_messages", "openai_responses", or
// "unknown" for any other value. These names are stable and suitable for
// configuration, logs and metric labels.
func (d Dialect) String() string {
	switch d {
	case OpenAIChat:
		return "openai_chat"
	case AnthropicMessages:
		return "anthropic_messages"
	case OpenAIResponses:
		return "openai_responses"
	}
	return "unknown"
}

// ParseDialect is the inverse of String. It also accepts the short aliases
// "openai", "chat", "anthropic", "messages" and "responses". It returns 0 and
// false for anything else.
func ParseDialect(s string) (Dialect, bool) {
	switch s {
	case "openai_chat", "openai", "chat":
		return OpenAIChat, true
	case "anthropic_messages", "anthropic", "messages":
		return AnthropicMessages, true
	case "openai_responses", "responses":
		return OpenAIResponses, true
	}
	return 0, false
}

// DialectForPath returns the dialect served at an HTTP path:
// "/v1/chat/completions" is OpenAIChat, "/v1/messages" is AnthropicMessages,
// "/v1/responses" is OpenAIResponses. Any other path returns 0 and false.
// A trailing slash is tolerated.
func DialectForPath(path string) (Dialect, bool) {
	if n := len(path); n > 1 && path[n-1] == '/' {
		path = path[:n-1]
	}
	switch path {
	case "/v1/chat/completions":
		return OpenAIChat, true
	case "/v1/messages":
		return AnthropicMessages, true
	case "/v1/responses":
		return OpenAIResponses, true
	}
	return 0, false
}

// valid reports whether d is one of the three known dialects.
func (d Dialect) valid() bool { return d >= OpenAIChat && d <= OpenAIResponses }
