package caddymodule

import "github.com/llmgateway/llm_gateway/translate"

// passAnswer is a non-streamed same-dialect answer as
// translate.PassthroughAnswer read it, in one walk over its top-level
// members: the error object it is instead of an answer (se), or the
// client's bytes (out, the model rewritten when asked), its usage and
// err when it is no answer of the dialect (the upstream's fault).
type passAnswer struct {
	out   []byte
	usage translate.Usage
	se    *translate.StreamError
	err   error
}

// readPassthroughAnswer reads data, an answer of dialect d for a client of
// the same dialect that asked for model clientModel ("" keeps the
// answer's model).
func readPassthroughAnswer(d translate.Dialect, data []byte, clientModel string) passAnswer {
	var p passAnswer
	p.out, p.usage, p.se, p.err = translate.PassthroughAnswer(d, data, clientModel)
	return p
}

// answerError is the error object data is instead of an answer: what the
// one walk found when onePass, translate.AnswerError otherwise.
func (p *passAnswer) answerError(onePass bool, d translate.Dialect, data []byte) *translate.StreamError {
	if onePass {
		return p.se
	}
	return translate.AnswerError(d, data)
}
