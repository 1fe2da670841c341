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
	switch r[2].Str {
	case "failed", "cancelled", "queued", "in_progress":
	default:
		if r[0].Str == "response" || r[1].IsArray() {
			return nil
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
	e := r[0]
	if r[1].Str == "response" || nonEmptyArray(r[2]) || nonEmptyArray(r[3]) || nonEmptyArray(r[4]) {
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
	return newStreamError(up, typ, code, msg, param)
}

// nonEmptyArray reports whether v is an array with at least one element.
func nonEmptyArray(v gjson.Result) bool {
	if !v.IsArray() {
		return false
	}
	n := false
	v.ForEach(func(_, _ gjson.Result) bool { n = true; return false })
	return n
}

// chatPassthroughError is what a Chat Completions answer passed through to
// a Chat client is checked for, as a translated one is
// (decodeChatResponse): a body without a "choices" array (an empty object,
// a relay's {"code":…,"message":…}) is not an answer. An empty array is
// one: Gemini's OpenAI-compatible endpoint answers a prompt its safety
// filter blocks with "choices": [] (what the client's prompt caused, not
// the key's failure). A first choice whose finish_reason is "error"
// (OpenRouter's, for a generation that failed) is the upstream's failure,
// as in a stream. nil for an answer.
func chatPassthroughError(body []byte) *Error {
	r := gjson.GetManyBytes(body, "choices", "choices.0.finish_reason")
	if !r[0].IsArray() {
		return &Error{Class: ErrAPI, Message: "upstream response has no choices"}
	}
	if r[1].Type == gjson.String && r[1].Str == "error" {
		return &Error{Class: ErrAPI, Message: msgFinishError}
	}
	return nil
}

// anthropicPassthroughError is what an Anthropic Messages answer passed
// through to an Anthropic client is checked for, as a translated one is
// (decodeAnthropicResponse): a message object or, at least, a content
// array. nil for an answer.
func anthropicPassthroughError(body []byte) *Error {
	r := gjson.GetManyBytes(body, "type", "content")
	if r[0].Str == "message" || r[1].IsArray() {
		return nil
	}
	return &Error{Class: ErrAPI, Message: "upstream response is not an Anthropic message"}
}
