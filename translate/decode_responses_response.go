package translate

// decodeResponsesResponse reads an OpenAI Responses response object into
// the canonical response. Not implemented yet.
func decodeResponsesResponse(body []byte) (*canonResponse, *Error) {
	return nil, &Error{Class: ErrAPI, Message: "translation of openai_responses responses is not implemented yet"}
}
