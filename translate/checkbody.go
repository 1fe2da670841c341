package translate

import "github.com/tidwall/gjson"

// CheckObject checks a request body that the gateway passes through
// without parsing it as a completion (POST /v1/embeddings,
// /v1/messages/count_tokens): at most MaxRequestSize bytes, a JSON object
// nested at most MaxNesting levels (checked before any parse, so a body
// of "[[[[..." cannot exhaust the stack), valid, and without a repeated
// top-level key (decoders disagree on which copy wins, so a repeated
// "model" could be routed as one model and run as another). It returns
// nil or a *Error of class ErrInvalidRequest (ErrRequestTooLarge for the
// size), with the same messages as ParseRequest. It is one full parse of
// the body (see ParseCount).
func CheckObject(body []byte) *Error {
	return checkBody(body)
}

// ValidJSON reports whether b is valid JSON nested at most MaxNesting
// levels deep: gjson.Valid for bytes the gateway did not produce (an
// upstream's answer), whose validator recurses once per level and would
// exhaust the stack on a deep enough body.
func ValidJSON(b []byte) bool {
	return !tooDeep(b, MaxNesting) && gjson.ValidBytes(b)
}
