package translate

import "github.com/tidwall/gjson"

// TranslateResponse converts a whole (non-streamed) successful response
// body from the upstream dialect `from` into the client's dialect `to`, and
// returns the usage it reports.
//
// The model the client sees is clientModel (when "" the upstream's is
// kept). When from == to the body passes through byte for byte except for
// the top-level "model" field. Otherwise it is decoded into the canonical
// form (content, tool calls, reasoning, stop reason, usage) and encoded
// for `to`: an OpenAI "chat.completion", an Anthropic "message", or a
// Responses "response" object. Every pair of OpenAIChat,
// AnthropicMessages and OpenAIResponses is supported. A Responses upstream
// answer whose status is "failed" (or not terminal) is an error, never a
// success; so is a body passed through that is no answer of its dialect
// (a Chat body without a first choice, an Anthropic body that is not a
// message), as the translation would find. An error object sent with a
// 2xx is for the caller to find first (AnswerError).
//
// Errors are *Error values (class ErrAPI for an upstream body that cannot
// be understood).
func TranslateResponse(from, to Dialect, body []byte, clientModel string) ([]byte, Usage, error) {
	return TranslateResponseWith(from, to, body, clientModel, ResponseOptions{})
}

// ResponseOptions adjusts what a translated response (whole or streamed)
// gives the client. The zero value is the default.
type ResponseOptions struct {
	// OmitReasoning drops the model's reasoning from translated OpenAI Chat
	// output: no message.reasoning_content / delta.reasoning_content and no
	// thinking_blocks (what a pool option `reasoning_content off` sets). By default
	// a Chat client gets an Anthropic upstream's thinking as
	// reasoning_content (the field DeepSeek, vLLM and LiteLLM use) and its
	// signed and redacted blocks in LiteLLM's thinking_blocks form. It has
	// no effect on passthrough or on other client dialects.
	OmitReasoning bool

	// CustomTools are the names of the custom (freeform) tools the
	// client's OpenAI Responses or Chat Completions request declared
	// (Request.CustomTools). A translated answer's calls of these tools,
	// which the upstream makes as function calls with {"input":"…"},
	// reach a Responses client as custom_tool_call items with that input
	// unwrapped (streamed as response.custom_tool_call_input.delta and
	// .done events), per the Responses API reference, and a Chat client
	// as tool_calls entries {"id","type":"custom","custom":{"name",
	// "input"}}, per the Chat Completions API reference (streamed: see
	// chat_custom_tools.go). No effect on Anthropic clients or on
	// passthrough.
	CustomTools []string

	// Tools and ToolChoice are the raw JSON of the "tools" array and the
	// "tool_choice" of the client's OpenAI Responses request
	// (Request.ResponsesEcho), echoed in a translated answer's response
	// object as the Responses API does (nil: "tools":[] and
	// "tool_choice":"auto"). No effect on other client dialects or on
	// passthrough.
	Tools, ToolChoice []byte

	// Echo is what a translated answer's response object restates of the
	// client's OpenAI Responses request (Request.ResponsesEchoMembers: its
	// temperature, top_p, instructions, max_output_tokens, metadata,
	// reasoning, text, truncation, store, user… as sent, the API's
	// defaults for the rest), whole and in response.created,
	// response.in_progress and response.completed, as the Responses API
	// does; nil: the defaults. No effect on other client dialects or on
	// passthrough.
	Echo []byte

	// InputTokensEstimate is the gateway's estimate of the request's
	// input tokens (0: none), for an Anthropic Messages client of a
	// translated stream whose upstream reports usage only at its end
	// (OpenAI Chat, OpenAI Responses). Anthropic sends the prompt's
	// input_tokens in message_start (Anthropic "Streaming messages"
	// docs), and clients read it there for a context meter while the
	// answer streams (Claude Code's task progress; a 0 there showed an
	// empty context, router-for-me/CLIProxyAPI#1700, BerriAI/litellm#41406);
	// message_start then carries this estimate in place of the
	// placeholder 0. The final message_delta carries the upstream's own
	// figures (input_tokens, cache_read_input_tokens,
	// cache_creation_input_tokens, output_tokens; cumulative, per the same
	// docs), which an accumulator (anthropic-sdk-go Message.Accumulate)
	// keeps over message_start's. Never part of Usage. No effect on other
	// client dialects, on passthrough or once the upstream reported its
	// input before message_start.
	InputTokensEstimate int64

	// (Request.StopSequences: never nil for a parsed request, empty when
	// it named none). A Chat upstream's choice "stop_reason" string
	// (vLLM's matched stop string beside finish_reason "stop") is read as
	// the stop sequence that ended the turn (Anthropic stop_reason
	// "stop_sequence" with the string) only when it is one of them; any
	// other string there (another server's "end_turn", say) is a plain
	// end of turn. nil means the request is not known: such a string is
	// then taken as a stop sequence unless it is a stop reason's name
	// (end_turn, stop, eos, ...). No effect on passthrough.
	StopSequences []string

	// EmulateStops are the stop strings of the client's request that the
	// upstream was not sent (Request.UnsentStopSequences for the
	// upstream's dialect and model: OpenAI Responses has no stop
	// parameter, OpenAI reasoning models refuse stop, Anthropic refuses
	// whitespace-only stop sequences, OpenAI Chat takes at most 4). The
	// gateway applies them itself: the answer's text is cut before the
	// first occurrence of any of them (the stop string itself left out,
	// as the vendors do), nothing after it (tool calls, reasoning, more
	// text) is relayed, and the turn ends as a stop sequence ends it in
	// the client's dialect: Anthropic stop_reason "stop_sequence" with
	// stop_sequence set to the string, Chat finish_reason "stop",
	// Responses status "completed". Only text is searched (not tool-call
	// arguments, not reasoning), each text block on its own. A stream
	// holds back only the tail of a text delta that may still begin a
	// stop string (fewer bytes than the longest one, cut on a UTF-8
	// boundary) and relays the rest at once; after a match it relays no
	// more content but reads the upstream to its end, so the usage the
	// client gets (and the gateway books) is what the upstream reports
	// for the whole generation. nil: nothing emulated. No effect on
	// passthrough.
	EmulateStops []string
}

// decodeResponse decodes a whole answer of upstream dialect from (a JSON
// object) into the canonical form; an *Error of class ErrAPI when body is
// not valid JSON, not an object, or not an answer of that dialect. It
// validates body; decodeAnswerOf is the decoder for a body already
// validated whose top-level members were collected (ReadAnswer).
func decodeResponse(from Dialect, body []byte, stops []string) (*canonResponse, *Error) {
	var a answerRoot
	if !gjson.ValidBytes(body) || !answerRootOf(body, &a) {
		return nil, &Error{Class: ErrAPI, Message: "upstream returned a response that is not valid JSON"}
	}
	return decodeAnswerOf(from, &a, stops)
}

// repeatsAnswerMember reports whether body is a JSON object that repeats
// one of the top-level members an answer is read by (answerRoot's: error,
// choices, content, output, status, model, usage...). No vendor sends
// one; relayed as it is, the gateway would judge and rename the first
// copy (gjson) while the client's JSON reader (encoding/json, JSON.parse,
// Python's json) takes the last: {"choices":[<the answer>],"choices":[]}
// would pass for an answer and reach the client as an empty one. A
// passthrough answer that repeats one is the upstream's failure.
func repeatsAnswerMember(body []byte) bool {
	var a answerRoot
	return answerRootOf(body, &a) && a.dup
}

// TranslateResponseWith is TranslateResponse with options. A passthrough
// answer (from == to) that repeats a top-level member it is read by is no
// answer (repeatsAnswerMember): an *Error of class ErrAPI.
func TranslateResponseWith(from, to Dialect, body []byte, clientModel string, o ResponseOptions) ([]byte, Usage, error) {
	if from == to {
		if repeatsAnswerMember(body) {
			return nil, Usage{}, &Error{Class: ErrAPI, Message: "upstream answer repeats a top-level member (choices, content, output, status, model...)"}
		}
		var e *Error
		switch from {
		case OpenAIResponses:
			e = responsesPassthroughError(body)
		case OpenAIChat:
			e = chatPassthroughError(body)
		case AnthropicMessages:
			e = anthropicPassthroughError(body)
		}
		if e != nil {
			return nil, Usage{}, e
		}
		u := ResponseUsage(from, body)
		if clientModel == "" {
			return body, u, nil
		}
		m := gjson.GetBytes(body, "model")
		if !m.Exists() || (m.Type == gjson.String && m.Str == clientModel) {
			return body, u, nil
		}
		out, err := SetModel(body, clientModel)
		if err != nil {
			return nil, u, &Error{Class: ErrAPI, Message: "upstream returned a response that is not a JSON object"}
		}
		return out, u, nil
	}
	resp, err := decodeResponse(from, body, o.StopSequences)
	if err != nil {
		return nil, Usage{}, err
	}
	return encodeAnswer(resp, to, clientModel, o)
}

// withoutReasoning returns ps without its thinking and redacted thinking
// parts.
func withoutReasoning(ps []canonPart) []canonPart {
	out := ps[:0:0]
	for i := range ps {
		if k := ps[i].kind; k != partThinking && k != partRedactedThinking {
			out = append(out, ps[i])
		}
	}
	return out
}

// toolStop is the canonical stop reason of a turn that made tool calls
// (called): an upstream that ends such a turn with a plain "stop" /
// "end_turn" (Gemini's and Ollama's OpenAI-compatible endpoints send
// finish_reason "stop" with tool_calls) is reported as tool_use, since
// Anthropic clients run tool_use blocks only on stop_reason "tool_use"
// and OpenAI clients look for finish_reason "tool_calls". The other way
// round, a turn that says tool_use (finish_reason "tool_calls") but made
// no tool call (an empty tool_calls array, or none at all) is an
// end_turn: a client told to run tools and given none ends the turn
// silently (Claude Code stalls). Every other stop reason (max_tokens,
// refusal, …) is kept.
func toolStop(stop string, called bool) string {
	switch {
	case called && stop == stopEndTurn:
		return stopToolUse
	case !called && stop == stopToolUse:
		return stopEndTurn
	}
	return stop
}

// hasToolCall reports whether ps holds a tool call.
func hasToolCall(ps []canonPart) bool {
	for i := range ps {
		if ps[i].kind == partToolCall {
			return true
		}
	}
	return false
}
