package translate

import "github.com/tidwall/gjson"

// responsesPassthroughError is what a Responses answer passed through to
// a Responses client is checked for, as a translated one is
// (decodeResponsesResponse): a body that is not a response object, or a
// response whose status is failed, cancelled, queued or in_progress, is an
// upstream failure (the *Error decodeResponsesResponse gives), never a
// success relayed with its 2xx. nil for an answer (completed or
// incomplete). Only the top-level members are read.
func responsesPassthroughError(body []byte) *Error {
	r := gjson.GetManyBytes(body, "object", "output", "status")
	return responsesPassthroughErrorOf(body, r[0], r[1], r[2])
}

// responsesPassthroughErrorOf is responsesPassthroughError given the
// body's top-level object, output and status members.
func responsesPassthroughErrorOf(body []byte, object, output, status gjson.Result) *Error {
	switch status.Str {
	case "failed", "cancelled", "queued", "in_progress":
	default:
		if object.Str == "response" || output.IsArray() {
			return responsesNoOutput(output)
		}
	}
	_, e := decodeResponsesResponse(body)
	if e == nil {
		e = &Error{Class: ErrAPI, Message: "upstream response is not an OpenAI Responses answer"}
	}
	return e
}

// AnswerError reports whether a non-streamed 2xx body from an upstream of
// dialect up is an error object instead of an answer, as relays (and some
// upstreams behind a proxy) send with status 200: an OpenAI-shaped
// {"error":{"type","code","message","param"}} or {"error":"<message>"}
// (any dialect; a Responses object, "object":"response", is judged by
// its status instead, see TranslateResponseWith), or Anthropic's
// {"type":"error","error":{"type","message"}}. It returns the error as
// the same error in a stream would be (newStreamError: the type and code
// sanitised, the message scrubbed and bounded, Status from
// StreamErrorStatus), so that it is classified by its structured type,
// never as a success; nil when the body is not such an error object
// (an answer, or JSON that is neither). Only top-level members are read.
//
// An error object states something: a non-empty message, type or code
// ("error":{}, "error":null and "error":"" are no error). A body that
// holds an answer, a non-empty "choices", "content" or "output" array,
// is an answer whatever its "error" member says (relays add
// "error":null or "error":{} to answers, and a few copy a warning there).
func AnswerError(up Dialect, body []byte) *StreamError {
	r := gjson.GetManyBytes(body, "error", "object", "choices", "content", "output")
	return answerErrorOf(up, r[0], r[1], r[2], r[3], r[4])
}

// answerErrorOf is AnswerError given the body's top-level error, object,
// choices, content and output members.
func answerErrorOf(up Dialect, e, object, choices, content, output gjson.Result) *StreamError {
	if object.Str == "response" || nonEmptyArray(choices) || nonEmptyArray(content) || nonEmptyArray(output) {
		return nil
	}
	if e.Type == gjson.String {
		if e.Str == "" {
			return nil
		}
	} else if !e.IsObject() {
		return nil
	}
	typ, code, msg, param := openAIErrorFields(e) // Anthropic's error object has the same type and message
	if e.IsObject() && typ == "" && msg == "" && (code == "" || code == "0") {
		return nil // "error":{} (or only a param, or a zero code): states nothing
	}
	return keepErrorMetadata(newStreamError(up, typ, code, msg, param), e)
}

// nonEmptyArray reports whether v is an array with at least one element.
func nonEmptyArray(v gjson.Result) bool { return v.IsArray() && hasElements(v) }

// chatPassthroughError is what a Chat Completions answer passed through to
// a Chat client is checked for, as a translated one is
// (decodeChatResponse): a body without a "choices" array (an empty object,
// a relay's {"code":…,"message":…}) is not an answer, nor one whose
// first choice is not an object. An empty array is one when the answer
// says why: Gemini's OpenAI-compatible endpoint answers a prompt its
// safety filter blocks with "choices": [] and a block reason
// (promptFeedback.blockReason, prompt_feedback.block_reason) or the
// usage (what the client's prompt caused, not the key's failure); without
// either the upstream answered nothing, as for a stream of bare empties
// (chatChoices). A first choice whose finish_reason is "error"
// (OpenRouter's, for a generation that failed) is the upstream's failure,
// as in a stream. nil for an answer.
func chatPassthroughError(body []byte) *Error {
	r := gjson.GetManyBytes(body, "choices", "usage", "promptFeedback", "prompt_feedback")
	return chatPassthroughErrorFor(r[0], answerSaysWhy(r[1], r[2], r[3]))
}

// chatPassthroughErrorOf is chatPassthroughError given the body's
// top-level members (the first of each name).
func chatPassthroughErrorOf(m *answerRoot) *Error {
	return chatPassthroughErrorFor(m.choices, answerSaysWhy(m.usage, m.feedback, m.feedbackSnake))
}

// answerSaysWhy reports whether a Chat answer without a choice says why:
// a usage object, or a block reason (blockReasonOf).
func answerSaysWhy(usage, feedback, feedbackSnake gjson.Result) bool {
	return usage.IsObject() || blockReasonOf(feedback, feedbackSnake)
}

// chatPassthroughErrorFor judges choices, given whether the answer says
// why it has no choice (answerSaysWhy).
func chatPassthroughErrorFor(choices gjson.Result, saysWhy bool) *Error {
	if !choices.IsArray() {
		return &Error{Class: ErrAPI, Message: "upstream response has no choices"}
	}
	first := choices.Get("0")
	switch {
	case !first.Exists():
		if !saysWhy {
			return &Error{Class: ErrAPI, Message: msgNoChoiceAnswer}
		}
	case !first.IsObject():
		return &Error{Class: ErrAPI, Message: msgMalformedChoice}
	default:
		if fr := first.Get("finish_reason"); fr.Type == gjson.String && fr.Str == "error" {
			return &Error{Class: ErrAPI, Message: msgFinishError}
		}
	}
	return nil
}

// anthropicAnsweredNothing is the failure of an Anthropic message that is
// no answer: its content is not an array, or it is empty and the message
// has no stop_reason (in a whole message stop_reason is never null, per
// Anthropic's Messages API reference; a message cut before its end, or a
// relay's placeholder). nil for an answer (an empty content with a
// stop_reason is one: the model said nothing and stopped).
func anthropicAnsweredNothing(content, stopReason gjson.Result) *Error {
	switch {
	case !content.IsArray():
		return &Error{Class: ErrAPI, Message: "upstream message is malformed: its content is not an array"}
	case stopReason.Type != gjson.String || stopReason.Str == "":
		if !content.Get("0").Exists() {
			return &Error{Class: ErrAPI, Message: "upstream message has no content and no stop_reason: it answered nothing"}
		}
	}
	return nil
}

// responsesNoOutput is the failure of a Responses object whose output is
// not an array (absent, an object, a string): no answer, whatever its
// status says (a completed or incomplete response always lists its
// output items, per OpenAI's Responses API reference). nil otherwise.
func responsesNoOutput(output gjson.Result) *Error {
	if output.IsArray() {
		return nil
	}
	return &Error{Class: ErrAPI, Message: "upstream response object is malformed: its output is not an array"}
}

// anthropicPassthroughError is what an Anthropic Messages answer passed
// through to an Anthropic client is checked for, as a translated one is
// (decodeAnthropicResponse): a message object or, at least, a content
// array. nil for an answer.
func anthropicPassthroughError(body []byte) *Error {
	r := gjson.GetManyBytes(body, "type", "content", "stop_reason")
	return anthropicPassthroughErrorOf(r[0], r[1], r[2])
}

// anthropicPassthroughErrorOf is anthropicPassthroughError given the
// body's top-level type, content and stop_reason members.
func anthropicPassthroughErrorOf(typ, content, stopReason gjson.Result) *Error {
	if typ.Str == "message" || content.IsArray() {
		return anthropicAnsweredNothing(content, stopReason)
	}
	return &Error{Class: ErrAPI, Message: "upstream response is not an Anthropic message"}
}
