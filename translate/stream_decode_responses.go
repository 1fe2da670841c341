package translate

// responsesStreamDecoder reads OpenAI Responses streaming events. Not
// implemented yet: every stream fails as unsupported.
type responsesStreamDecoder struct{ cs *canonStream }

func newResponsesStreamDecoder(cs *canonStream) upstreamDecoder {
	return &responsesStreamDecoder{cs: cs}
}

func (d *responsesStreamDecoder) event(ev *SSEEvent) {
	d.cs.fail(ErrAPI, "translation of openai_responses streams is not implemented yet", ErrUnsupportedStream)
}

func (d *responsesStreamDecoder) end(readErr error) { d.cs.endOrFail(readErr) }
