package translate

// ResponseAsStream returns a whole JSON answer of upstream dialect from as
// the event stream a client of dialect to expects when it asked for one
// ("stream": true) and the upstream answered in one piece instead (an
// OpenAI-compatible server or relay that ignores stream for some models):
// the events a streamed answer of the same content would have produced
// (per each dialect's streaming docs: Chat chat.completion.chunk and
// data: [DONE]; Anthropic message_start ... message_stop; Responses
// response.created ... response.completed), each block's content in one
// delta. clientModel is the model name the client sees ("" keeps the
// upstream's); o applies as to a translated answer.
//
// body must be an answer, not an error (see AnswerError). The returned
// usage is what the answer reported. The error, when body cannot be read
// as an answer of dialect from, is an *Error of class ErrAPI.
func ResponseAsStream(from, to Dialect, body []byte, clientModel string, o ResponseOptions) ([]byte, Usage, error) {
	cr, e := decodeResponse(from, body, o.StopSequences)
	if e != nil {
		return nil, Usage{}, e
	}
	var out []byte
	// the translator only carries the encoder's state: its usage is the
	// answer's (from is never read by the encoders)
	t := &StreamTranslator{from: OpenAIChat, to: to, model: clientModel, w: EventWriterFunc(func(p []byte) error {
		out = append(out, p...)
		return nil
	})}
	t.cs = newCanonStream(t, to, clientModel)
	t.SetOptions(o)
	t.usage = cr.usage
	cs := t.cs
	cs.begin(cr.id, cr.model, cr.created)
	for i := range cr.parts {
		p := &cr.parts[i]
		switch p.kind {
		case partText:
			cs.openBlock(partText, "", "", "")
			cs.delta(deltaText, p.text)
		case partThinking:
			cs.openBlock(partThinking, "", "", "")
			cs.delta(deltaThinking, p.text)
			if p.signature != "" {
				cs.delta(deltaSignature, p.signature)
			}
		case partRedactedThinking:
			cs.openBlock(partRedactedThinking, "", "", p.data)
		case partToolCall:
			cs.openBlock(partToolCall, p.id, p.name, "")
			if p.args != "" {
				cs.delta(deltaArgs, p.args)
			}
		}
	}
	cs.finish(cr.stop, cr.stopSeq)
	cs.end()
	return out, cr.usage, nil
}
