package translate

// The canonical form sits between every decoder and every encoder
// (DESIGN.md, "one canonical form in the middle"). Its vocabulary follows
// Anthropic Messages where the dialects differ (content blocks, tool_use /
// tool_result, stop reasons), because that is the richest of the three.

// partKind is the kind of a canonical content part.
type partKind uint8

const (
	partText             partKind = iota + 1 // text (Text, Cache)
	partImage                                // image: base64 (MediaType, Data) or URL
	partDocument                             // document/file: base64 (MediaType, Data), URL, or plain text (Text)
	partThinking                             // reasoning text (Text) with optional Signature; Raw set when from Anthropic
	partRedactedThinking                     // Anthropic redacted_thinking (Data), Raw set
	partToolCall                             // assistant tool call: ID, Name, Args (JSON text)
	partToolResult                           // tool result: ID (of the call), Content, IsError
)

// canonPart is one content part of a message.
type canonPart struct {
	kind      partKind
	text      string // text, thinking text, document text
	cache     string // raw cache_control JSON, "" when absent
	mediaType string // image/document media type
	data      string // base64 payload (image/document) or redacted_thinking data
	url       string // image/document URL
	detail    string // OpenAI image detail
	filename  string // document file name
	id        string // tool call id, or the call id a result answers
	name      string // tool name
	args      string // tool call arguments, JSON text ("" = none)
	isError   bool
	content   []canonPart // tool result content
	signature string      // thinking signature
	raw       string      // exact source bytes of an Anthropic thinking block (replayed unchanged)
	custom    bool        // a call of a custom (freeform) tool: args is {"input":…} (see custom_tools.go)
	// refusal marks an answer's text part that is the model's refusal
	// (Chat message.refusal, a Responses refusal content part): a Chat
	// client gets it as message.refusal, a Responses client as a refusal
	// part, an Anthropic client as text (Anthropic has no refusal block)
	refusal bool
}

// canonMessage is one conversation turn. role is "user", "assistant" or
// "system" (a system/developer message in the middle of the conversation).
// Tool results travel in user messages, as in Anthropic Messages.
type canonMessage struct {
	role  string
	parts []canonPart
}

// canonTool is a function tool definition.
type canonTool struct {
	name, description string
	schema            string // raw JSON Schema, "" when absent
	strict            string // raw "true"/"false", "" when absent
	cache             string // raw cache_control
	custom            bool   // a Responses custom tool, sent as a function tool (see custom_tools.go)
}

// canonRequest is a decoded request.
type canonRequest struct {
	model    string
	stream   bool
	system   []canonPart // leading system prompt, text parts
	messages []canonMessage
	tools    []canonTool

	toolChoice     string // "", "auto", "any", "none", "tool"
	toolChoiceName string
	parallel       *bool // parallel tool calls allowed

	maxTokens   int64  // 0 = not set
	temperature string // raw number, "" = not set
	topP        string
	topK        string
	stop        []string
	user        string

	effort         string // reasoning effort: minimal/low/medium/high/xhigh/max, "none" = off
	thinkingBudget int64  // Anthropic budget_tokens, 0 = unknown
	thinkingOff    bool   // thinking explicitly disabled

	formatType   string // "", "text", "json_object", "json_schema"
	formatName   string
	formatSchema string // raw
	formatStrict string // raw

	n int64 // OpenAI n, 0 = not set

	// openAIShared holds the members OpenAI Chat and Responses requests
	// share with one meaning (metadata, prompt_cache_key,
	// prompt_cache_retention, service_tier) as raw `,"key":value` JSON,
	// written as they came to a Responses upstream (see openAIShared)
	openAIShared string

	srcLen int // size of the client's body, to size the output buffer
}

// Canonical stop reasons use Anthropic's stop_reason vocabulary.
const (
	stopEndTurn      = "end_turn"
	stopMaxTokens    = "max_tokens"
	stopToolUse      = "tool_use"
	stopSequence     = "stop_sequence"
	stopRefusal      = "refusal"
	stopPauseTurn    = "pause_turn"
	stopContextLimit = "model_context_window_exceeded"
)

// canonResponse is a decoded whole (non-streamed) response.
type canonResponse struct {
	id, model string
	created   int64
	parts     []canonPart // text, thinking, redacted thinking, tool calls
	stop      string      // canonical stop reason
	stopSeq   string
	usage     Usage
}

// validate checks the cross-message rules every target needs: each tool
// result answers a tool call made earlier in the conversation.
func (r *canonRequest) validate() *Error {
	calls := map[string]bool{}
	for i := range r.messages {
		m := &r.messages[i]
		for j := range m.parts {
			if e := checkPairing(calls, i, &m.parts[j]); e != nil {
				return e
			}
		}
	}
	return nil
}

// checkPairing is validate's check of one part p of message i (an index
// in the merged messages), given the ids of the tool calls made before
// it (calls, which it extends).
func checkPairing(calls map[string]bool, i int, p *canonPart) *Error {
	switch p.kind {
	case partToolCall:
		if p.id == "" {
			return invalid("messages", "messages[%d]: tool call without an id", i)
		}
		if p.name == "" {
			return invalid("messages", "messages[%d]: tool call %q without a name", i, clip(p.id))
		}
		calls[p.id] = true
	case partToolResult:
		if p.id == "" {
			return invalid("messages", "messages[%d]: tool result without a tool call id", i)
		}
		if !calls[p.id] {
			return invalid("messages", "messages[%d]: tool result for %q has no matching tool call earlier in the conversation", i, clip(p.id))
		}
	}
	return nil
}
