package caddymodule

import "github.com/llmgateway/llm_gateway/translate"

// passAnswer is a non-streamed answer as translate.ReadAnswer read it
// (translate.PassthroughAnswer for a client of the upstream's dialect), in
// one walk over its top-level members: the error object it is instead of
// an answer (se), or the client's bytes (out: the upstream's, the model
// rewritten when asked, or the translation), its usage and err when it is
// no answer of the dialect (the upstream's fault).
type passAnswer struct {
	out   []byte
	usage translate.Usage
	se    *translate.StreamError
	err   error
}

// readAnswer reads data, a valid JSON answer of upstream dialect from, for
// a client of dialect to that asked for model clientModel ("" keeps the
// answer's model), with the response options o.
func readAnswer(from, to translate.Dialect, data []byte, clientModel string, o translate.ResponseOptions) passAnswer {
	var p passAnswer
	p.out, p.usage, p.se, p.err = translate.ReadAnswer(from, to, data, clientModel, o)
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
