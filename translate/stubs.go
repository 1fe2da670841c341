package translate

type canonStream struct{ closed bool }

func newCanonStream(t *StreamTranslator, to Dialect, model string) *canonStream { return nil }

type upstreamDecoder interface {
	event(ev *SSEEvent)
	end(readErr error)
}

func newChatStreamDecoder(cs *canonStream) upstreamDecoder      { return nil }
func newAnthropicStreamDecoder(cs *canonStream) upstreamDecoder { return nil }

func decodeChatRequest(b []byte) (*canonRequest, *Error) { return nil, invalid("", "not implemented") }
func decodeAnthropicRequest(b []byte) (*canonRequest, *Error) {
	return nil, invalid("", "not implemented")
}
func decodeResponsesRequest(b []byte) (*canonRequest, *Error) {
	return nil, invalid("", "not implemented")
}
func encodeChatRequest(r *canonRequest) ([]byte, error) { return nil, invalid("", "not implemented") }
func encodeAnthropicRequest(r *canonRequest) ([]byte, error) {
	return nil, invalid("", "not implemented")
}

func decodeChatResponse(b []byte) (*canonResponse, *Error) {
	return nil, invalid("", "not implemented")
}
func decodeAnthropicResponse(b []byte) (*canonResponse, *Error) {
	return nil, invalid("", "not implemented")
}
func encodeChatResponse(r *canonResponse) []byte      { return nil }
func encodeAnthropicResponse(r *canonResponse) []byte { return nil }
func encodeResponsesResponse(r *canonResponse) []byte { return nil }
