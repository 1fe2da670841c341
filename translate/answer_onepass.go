package translate

import "github.com/tidwall/gjson"

// PassthroughAnswer checks and renders a non-streamed 2xx answer of
// dialect d for a client of the same dialect (passthrough), reading the
// answer's top-level members once. It returns exactly what the sequence
// AnswerError(d, body), then TranslateResponseWith(d, d, body,
// clientModel, ResponseOptions{}) returns, in one result:
//
//   - se: the error object the body is instead of an answer (AnswerError's
//     rules: an OpenAI-shaped or Anthropic error that states a message,
//     type or code, in a body without a non-empty choices, content or
//     output array and that is not a Responses object); out, u and err
//     are then zero.
//   - err: an *Error of class ErrAPI when the body is no answer of d
//     (chatPassthroughError, anthropicPassthroughError,
//     responsesPassthroughError: no choices array, finish_reason "error",
//     not a message, a failed/cancelled/queued/in_progress response).
//   - out: body itself, byte for byte, when clientModel is "", when the
//     answer has no top-level "model" or already names clientModel;
//     otherwise a new buffer with only the model value replaced by
//     clientModel as a JSON string (as SetModel does).
//   - u: the answer's usage as ResponseUsage(d, body) reads it.
//
// body must be valid JSON (ValidJSON; a 2xx that is not is the
// upstream's fault and is rejected before). A body that is not an object,
// or that repeats one of the members read, takes the path-by-path
// sequence, so the result is the same for every body.
func PassthroughAnswer(d Dialect, body []byte, clientModel string) (out []byte, u Usage, se *StreamError, err error) {
	var m answerRoot
	if !answerRootOf(body, &m) || m.dup {
		return passthroughAnswerBySteps(d, body, clientModel)
	}
	if se = answerErrorOf(d, m.err, m.object, m.choices, m.content, m.output); se != nil {
		return nil, Usage{}, se, nil
	}
	var e *Error
	switch d {
	case OpenAIResponses:
		e = responsesPassthroughErrorOf(body, m.object, m.output, m.status)
	case OpenAIChat:
		e = chatPassthroughErrorOf(&m)
	case AnthropicMessages:
		e = anthropicPassthroughErrorOf(m.typ, m.content, m.stopReason)
	}
	if e != nil {
		return nil, Usage{}, nil, e
	}
	u = usageOf(d, m.usage)
	mv := m.model
	if clientModel == "" || !mv.Exists() || (mv.Type == gjson.String && mv.Str == clientModel) {
		return body, u, nil, nil
	}
	ed := modelEdit(body, mv)
	if ed.from < 0 {
		// not found in place (cannot happen for a member of a parsed
		// object): SetModel's own lookup
		o, serr := SetModel(body, clientModel)
		if serr != nil {
			return nil, u, nil, &Error{Class: ErrAPI, Message: "upstream returned a response that is not a JSON object"}
		}
		return o, u, nil, nil
	}
	out = make([]byte, 0, len(body)-(ed.to-ed.from)+len(clientModel)+2)
	out = append(out, body[:ed.from]...)
	out = appendString(out, clientModel)
	out = append(out, body[ed.to:]...)
	return out, u, nil, nil
}

// passthroughAnswerBySteps is PassthroughAnswer as the separate lookups
// (AnswerError, then TranslateResponseWith's passthrough branch).
func passthroughAnswerBySteps(d Dialect, body []byte, clientModel string) ([]byte, Usage, *StreamError, error) {
	if se := AnswerError(d, body); se != nil {
		return nil, Usage{}, se, nil
	}
	out, u, err := TranslateResponseWith(d, d, body, clientModel, ResponseOptions{})
	return out, u, nil, err
}
