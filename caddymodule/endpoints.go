package caddymodule

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/translate"
)

// statelessCheck returns a client-facing message when an OpenAI Responses
// request needs server-side state, which the gateway does not keep: an
// explicit "store": true, or "previous_response_id". Empty when fine.
func statelessCheck(body []byte) string {
	if v := gjson.GetBytes(body, "previous_response_id"); v.Exists() && v.Type != gjson.Null {
		return "previous_response_id is not supported: this gateway keeps no response state; send the whole conversation in input"
	}
	if gjson.GetBytes(body, "store").Type == gjson.True {
		return `"store": true is not supported: this gateway keeps no response state; send "store": false`
	}
	return ""
}

// serveCountTokens answers POST /v1/messages/count_tokens (Anthropic).
// The request passes the same gates as a completion (the gateway key's
// rpm and concurrency, max_in_flight, max_request_body). When the routed
// pool has a key that can count and is free now (an Anthropic-native key,
// through count_tokens, else a key with an OpenAI Responses endpoint,
// through /responses/input_tokens with the request translated), that key
// counts,
// through the same request builder and under the pool's attempt_timeout;
// otherwise, and whenever that attempt fails (a hung upstream times out),
// the count is estimated locally (about four bytes of text per token) and
// marked as an estimate with the header X-Token-Count-Estimate: true and
// the field "estimated": true.
func (h *Handler) serveCountTokens(w http.ResponseWriter, r *http.Request, rl *requestLog, gk *gwKey, _ *route) {
	d := translate.AnthropicMessages
	body, model, rel, ok := h.takeObject(w, r, rl, gk, d, "body must be a JSON object with a string model")
	if !ok {
		return
	}
	defer rel.run()
	if msgs := gjson.GetBytes(body, "messages"); !msgs.IsArray() {
		rl.fail(w, d, http.StatusBadRequest, translate.ErrInvalidRequest, "messages: field required (an array)")
		return
	}
	rl.clientModel = model.Str
	pools, routed, f := h.candidates(model.Str, gk)
	if f != nil {
		rl.failWith(w, d, f)
		return
	}
	p := pools[0]
	rl.pool = p.name
	rl.upstreamModel = p.upstreamModel(routed)
	if h.countTokensUpstream(w, r, p, body, rl) {
		return
	}
	n := estimateTokens(body)
	rl.status = http.StatusOK
	w.Header().Set("X-Token-Count-Estimate", "true")
	writeJSON(w, http.StatusOK, []byte(`{"input_tokens":`+strconv.Itoa(n)+`,"estimated":true}`))
}

// countTokensUpstream asks a free Anthropic-native key of the pool to count
// (one attempt, never waiting for a key) and relays a 2xx answer. It
// reports whether the client was answered (or went away).
func (h *Handler) countTokensUpstream(w http.ResponseWriter, r *http.Request, p *pool, body []byte, rl *requestLog) bool {
	lease, err := p.kp.Acquire(r.Context(), keypool.AcquireOptions{Skip: func(k *keypool.Key) bool {
		uk := p.keys[k.Fingerprint()]
		if uk == nil {
			return true
		}
		_, _, ok := uk.counter()
		return !ok
	}})
	if err != nil {
		return false
	}
	uk := p.keys[lease.Key().Fingerprint()]
	c := &call{kind: kindCountTokens, dialect: translate.AnthropicMessages, raw: body,
		clientModel: rl.clientModel, upstreamModel: rl.upstreamModel}
	res := h.attempt(w, r, p, uk, lease, c, rl, time.Now().Add(p.totalTimeout))
	return res.done
}

// estimateTokens approximates the input tokens of an Anthropic Messages
// request from the length of its text-bearing parts (system, messages,
// tools): about four bytes per token, at least 1.
func estimateTokens(body []byte) int {
	n := 0
	for _, f := range []string{"system", "messages", "tools"} {
		n += len(gjson.GetBytes(body, f).Raw)
	}
	return max(1, n/4)
}

// serveModelsAnthropic answers GET /v1/models in Anthropic's list shape
// (per Anthropic Models API: data[] of {type, id, display_name,
// created_at}, has_more, first_id, last_id), used when the request carries
// anthropic-version.
func (h *Handler) serveModelsAnthropic(w http.ResponseWriter, gk *gwKey) {
	type model struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	}
	list := struct {
		Data    []model `json:"data"`
		HasMore bool    `json:"has_more"`
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
	}{Data: []model{}}
	for _, n := range h.modelNames(gk) {
		list.Data = append(list.Data, model{Type: "model", ID: n, DisplayName: n, CreatedAt: "1970-01-01T00:00:00Z"})
	}
	if len(list.Data) > 0 {
		list.FirstID, list.LastID = &list.Data[0].ID, &list.Data[len(list.Data)-1].ID
	}
	b, _ := json.Marshal(list)
	writeJSON(w, http.StatusOK, b)
}
