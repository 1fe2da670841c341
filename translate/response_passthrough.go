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
