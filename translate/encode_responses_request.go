package translate

// encodeResponsesRequest writes the canonical request as an OpenAI
// Responses request (POST /v1/responses). Not implemented yet.
func encodeResponsesRequest(r *canonRequest) ([]byte, error) {
	return nil, unsupported("", "translation to the OpenAI Responses dialect is not implemented yet")
}
