package caddymodule

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/translate"
)

// passthrough is an OpenAI endpoint the gateway serves through the pools
// without translating it (POST /v1/embeddings): the client's body goes to
// the key's OpenAI root (its base_url, whether the key speaks Chat
// Completions or Responses) plus suffix, byte for byte apart from the
// model, and the answer comes back the same way, never streamed. Keys
// that speak only Anthropic Messages do not serve it. Usage is read from
// the answer's usage (prompt_tokens as input tokens, completion_tokens as
// output tokens when present).
type passthrough struct {
	name   string // the endpoint's name in messages: "embeddings"
	suffix string // appended to the key's OpenAI root: "/embeddings"
	// answer is the top-level array every answer of the endpoint has
	// ("data" for embeddings, per OpenAI's API reference); a 2xx without
	// it ({}, a relay's {"code":…,"message":…}) is no answer: the key's
	// server error, never relayed as a success. "" checks nothing.
	answer string
}

// errNoAnswer is readJSON's error for a 2xx that is no answer of the
// endpoint (the key's server error, see relayJSON).
var errNoAnswer = errors.New("upstream answer is not an answer of the endpoint")

// servedBy reports whether key uk serves the endpoint.
func (pt *passthrough) servedBy(uk *upstreamKey) bool { return uk.openAIBase() != "" }

// readJSON returns the upstream's answer with the client's model name when
// the upstream was asked for another one (only when the answer names a
// model: nothing is added), and its usage; errNoAnswer when the answer
// lacks the endpoint's answer member.
func (pt *passthrough) readJSON(c *call, data []byte) ([]byte, translate.Usage, error) {
	var u translate.Usage
	res := gjson.GetManyBytes(data, "usage.prompt_tokens", "usage.completion_tokens", "model", pt.answer)
	if pt.answer != "" && !res[3].IsArray() {
		return nil, u, errNoAnswer
	}
	// a negative figure is no count (as translate's usage readers say)
	if n := res[0].Int(); res[0].Type == gjson.Number && n >= 0 {
		u.InputTokens = &n
	}
	if n := res[1].Int(); res[1].Type == gjson.Number && n >= 0 {
		u.OutputTokens = &n
	}
	if c.upstreamModel != c.clientModel && res[2].Exists() {
		out, err := translate.SetModel(data, c.clientModel)
		return out, u, err
	}
	return data, u, nil
}

// servePassthrough serves a passthrough route: the gateway key's limits,
// the body (a JSON object with a string model), the pools serving the
// model and, among their keys, those that serve the endpoint; then the
// attempt loop as for completions (the same gates, retries, fallback and
// accounting).
func (h *Handler) servePassthrough(w http.ResponseWriter, r *http.Request, rl *requestLog, gk *gwKey, rt *route) {
	d := rl.dialect
	body, model, rel, ok := h.takeObject(w, r, rl, gk, d, "model: a string is required")
	if !ok {
		return
	}
	defer rel.run()
	rl.clientModel = model.Str
	if h.LogPayloads {
		rl.reqBody = body
	}
	pools, routed, f := h.candidates(model.Str, gk)
	if f != nil {
		rl.failWith(w, d, f)
		return
	}
	serving := pools[:0:0]
	for _, p := range pools {
		for _, uk := range p.keys {
			if rt.pass.servedBy(uk) {
				serving = append(serving, p)
				break
			}
		}
	}
	if len(serving) == 0 {
		msg := "no key of pool " + strconv.Quote(pools[0].name) + " serves " + rt.pass.name + " (its keys speak only Anthropic Messages)"
		if len(pools) > 1 {
			msg = "no key of the pools serving model " + quoteClient(model.Str) + " serves " + rt.pass.name + " (their keys speak only Anthropic Messages)"
		}
		rl.fail(w, d, http.StatusNotFound, translate.ErrNotFound, msg)
		return
	}
	h.servePools(w, r, rl, serving, routed, call{kind: kindPassthrough, pass: rt.pass, dialect: d, raw: body,
		clientModel: model.Str, tokens: int64(len(body) / 4)})
}

// takeObject is takeRequest for a body that is passed on without a parse
// of its own: it must be a JSON object (translate.CheckObject: size, depth
// before any parse, since a deep body would exhaust the stack, validity,
// and one "model", never routed as one copy and run as another) with a
// non-empty string model, else the client gets a 400 in dialect d
// (noModel is the message when the model is missing). On failure the
// client has been answered and ok is false; else the caller runs rel when
// the request ends.
func (h *Handler) takeObject(w http.ResponseWriter, r *http.Request, rl *requestLog, gk *gwKey, d translate.Dialect, noModel string) (body []byte, model gjson.Result, rel releases, ok bool) {
	body, rel, ok = h.takeRequest(w, r, rl, gk)
	if !ok {
		return nil, model, rel, false
	}
	if te := translate.CheckObject(body); te != nil {
		rl.failRequest(w, d, te)
		rel.run()
		return nil, model, rel, false
	}
	model = gjson.GetBytes(body, "model")
	if model.Type != gjson.String || model.Str == "" {
		rl.fail(w, d, http.StatusBadRequest, translate.ErrInvalidRequest, noModel)
		rel.run()
		return nil, model, rel, false
	}
	return body, model, rel, true
}
