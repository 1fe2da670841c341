package translate

import "github.com/tidwall/gjson"

// answerRoot holds the top-level members of a whole upstream answer that
// the translated read needs (the error check, AnswerError's, and the
// decoders of the three dialects), collected in one walk over the
// object's members: gjson's Get scans the object from its start once per
// member, past every large value before it. Each holds the FIRST member
// of that name, as gjson's Get finds it; every member is then read with
// single-name lookups only, so a repeated name resolves exactly as the
// separate lookups resolved it. dup reports that one of them occurs
// twice: PassthroughAnswer, which looks some up by nested paths (such as
// "choices.0.finish_reason", which may resolve in a later copy), then
// takes the path-by-path sequence instead.
type answerRoot struct {
	err, object, typ, choices, content, output, status, usage      gjson.Result
	id, model, created, createdAt, stopReason, stopSeq, incomplete gjson.Result
	feedback, feedbackSnake                                        gjson.Result // promptFeedback, prompt_feedback
	dup                                                            bool
}

// collect fills a from root's members; root must be an object.
func (a *answerRoot) collect(root gjson.Result) {
	root.ForEach(func(k, v gjson.Result) bool {
		var slot *gjson.Result
		switch k.Str {
		case "error":
			slot = &a.err
		case "object":
			slot = &a.object
		case "type":
			slot = &a.typ
		case "choices":
			slot = &a.choices
		case "content":
			slot = &a.content
		case "output":
			slot = &a.output
		case "status":
			slot = &a.status
		case "usage":
			slot = &a.usage
		case "id":
			slot = &a.id
		case "model":
			slot = &a.model
		case "created":
			slot = &a.created
		case "created_at":
			slot = &a.createdAt
		case "stop_reason":
			slot = &a.stopReason
		case "stop_sequence":
			slot = &a.stopSeq
		case "incomplete_details":
			slot = &a.incomplete
		case "promptFeedback":
			slot = &a.feedback
		case "prompt_feedback":
			slot = &a.feedbackSnake
		default:
			return true
		}
		if slot.Exists() {
			a.dup = true
		} else {
			*slot = v
		}
		return true
	})
}

// answerRootOf parses body (valid JSON) and collects its members; false
// when body is not a JSON object. Value Index fields are offsets in body.
func answerRootOf(body []byte, a *answerRoot) bool {
	root := gjson.Parse(view(body))
	if !root.IsObject() {
		return false
	}
	root.Index = len(body) - len(root.Raw) // Parse skips leading space and leaves Index 0
	a.collect(root)
	return true
}

// ReadAnswer checks and renders a non-streamed 2xx answer of upstream
// dialect from for a client of dialect to, reading the answer's top level
// once. It returns exactly what the sequence AnswerError(from, body), then
// TranslateResponseWith(from, to, body, clientModel, o) returns, in one
// result:
//
//   - se: the error object the body is instead of an answer (AnswerError's
//     rules); out, u and err are then zero.
//   - err: an *Error of class ErrAPI when the body is no answer of from
//     (as TranslateResponseWith decides: not an object, no choices, not a
//     message, a failed or unfinished Responses object, finish_reason
//     "error"), or of the class of a failed Responses object's error code.
//   - out, u: the answer in the client's dialect and the usage it reports.
//
// When from == to it is PassthroughAnswer (o has no effect there). body
// must be valid JSON (ValidJSON, which the caller has run: a 2xx that is
// not JSON is the upstream's fault and is rejected before); unlike
// TranslateResponseWith, ReadAnswer does not validate it again. A body
// that is not a JSON object takes the separate lookups, so the result is
// the same for every body.
func ReadAnswer(from, to Dialect, body []byte, clientModel string, o ResponseOptions) (out []byte, u Usage, se *StreamError, err error) {
	if from == to {
		return PassthroughAnswer(from, body, clientModel)
	}
	var a answerRoot
	if !answerRootOf(body, &a) {
		if se = AnswerError(from, body); se != nil {
			return nil, Usage{}, se, nil
		}
		out, u, err = TranslateResponseWith(from, to, body, clientModel, o)
		return out, u, nil, err
	}
	if se = answerErrorOf(from, a.err, a.object, a.choices, a.content, a.output); se != nil {
		return nil, Usage{}, se, nil
	}
	resp, e := decodeAnswerOf(from, &a, o.StopSequences)
	if e != nil {
		return nil, Usage{}, nil, e
	}
	out, u, err = encodeAnswer(resp, to, clientModel, o)
	return out, u, nil, err
}

// decodeAnswerOf decodes a whole answer of dialect from, an object whose
// top-level members a holds, into the canonical form (see decodeResponse);
// stops are the request's stop strings (ResponseOptions.StopSequences).
func decodeAnswerOf(from Dialect, a *answerRoot, stops []string) (*canonResponse, *Error) {
	switch from {
	case OpenAIChat:
		return decodeChatAnswer(a, stops)
	case AnthropicMessages:
		return decodeAnthropicAnswer(a)
	case OpenAIResponses:
		return decodeResponsesAnswer(a)
	}
	return nil, &Error{Class: ErrAPI, Message: sprintf("translation of %s responses is not supported", from)}
}

// encodeAnswer renders the canonical answer resp for a client of dialect
// to (TranslateResponseWith's translated branch).
func encodeAnswer(resp *canonResponse, to Dialect, clientModel string, o ResponseOptions) ([]byte, Usage, error) {
	cutAnswer(resp, o.EmulateStops)
	resp.stop = toolStop(resp.stop, hasToolCall(resp.parts))
	if clientModel != "" {
		resp.model = clientModel
	}
	switch to {
	case OpenAIChat:
		if o.OmitReasoning {
			resp.parts = withoutReasoning(resp.parts)
		}
		markCustomCalls(resp.parts, o.CustomTools)
		return encodeChatResponse(resp), resp.usage, nil
	case AnthropicMessages:
		return encodeAnthropicResponse(resp), resp.usage, nil
	case OpenAIResponses:
		markCustomCalls(resp.parts, o.CustomTools)
		return encodeResponsesResponse(resp, o.Tools, o.ToolChoice, o.Echo), resp.usage, nil
	}
	return nil, Usage{}, &Error{Class: ErrAPI, Message: "unknown client dialect"}
}

// answerSize is the capacity a translated answer's encoder starts with for
// r: its envelope, and each part's strings with an eighth more for
// escapes, so that a long answer is written into one buffer instead of
// one that doubles from 512 bytes (copying the text at each step).
func answerSize(r *canonResponse) int {
	n := 384 + len(r.id) + len(r.model) + len(r.stopSeq)
	for i := range r.parts {
		p := &r.parts[i]
		m := len(p.text) + len(p.data) + len(p.signature) + len(p.args) + len(p.id) + len(p.name)
		n += 96 + m + m/8
	}
	return n
}
