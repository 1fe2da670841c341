package caddymodule

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmgateway/llm_gateway/translate"
)

// gatewayToken returns the key the client presented: the Bearer token of
// Authorization, else x-api-key (Anthropic clients), else api-key (Azure).
func gatewayToken(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			return strings.TrimSpace(a[7:])
		}
		return ""
	}
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return strings.TrimSpace(k)
	}
	return strings.TrimSpace(r.Header.Get("Api-Key"))
}

// requestID returns the client's X-Request-Id when it is reasonable (up to
// 128 printable ASCII characters), else a new random 32-hex-digit id. The
// id names a request in logs and headers and guards nothing, so it comes
// from math/rand/v2 (the runtime's ChaCha8 generator, seeded from the OS,
// per thread) rather than crypto/rand, whose read is a system call on
// every request.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 128 {
		ok := true
		for i := 0; i < len(id); i++ {
			if id[i] < 0x21 || id[i] > 0x7e {
				ok = false
				break
			}
		}
		if ok {
			return id
		}
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// serveModels answers GET /v1/models with the OpenAI list of model names
// that clients may use: exact names from the pools' models and model_map
// patterns (wildcards cannot be listed).
func (h *Handler) serveModels(w http.ResponseWriter, gk *gwKey) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, n := range h.modelNames(gk) {
		list.Data = append(list.Data, model{ID: n, Object: "model", OwnedBy: "llm_gateway"})
	}
	b, _ := json.Marshal(list)
	writeJSON(w, http.StatusOK, b)
}

// modelNames lists, once each and in config order, the exact model names
// of every pool's models and model_map patterns (wildcards cannot be
// listed) that the gateway key may use.
func (h *Handler) modelNames(gk *gwKey) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range h.pools {
		if !gk.allowsPool(p.name) {
			continue
		}
		for _, n := range p.listNames() {
			if !seen[n] && gk.allowsModel(n) && p.serves(n) {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// serveReady answers /readyz: 200 when at least one key of some pool can
// take a request now, else 503 with each pool's reason.
func (h *Handler) serveReady(w http.ResponseWriter) {
	reasons := map[string]string{}
	for _, p := range h.pools {
		ok, why := p.kp.Ready()
		if ok {
			writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`))
			return
		}
		reasons[p.name] = why
	}
	b, _ := json.Marshal(struct {
		Status string            `json:"status"`
		Pools  map[string]string `json:"pools"`
	}{"unavailable", reasons})
	writeJSON(w, http.StatusServiceUnavailable, b)
}

// writeJSON writes a JSON answer. An error answer (status >= 400) has its
// message bounded (boundErrorBody) and carries x-should-retry
// (setRetryHeaders) unless the caller set it.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	if status >= 400 {
		body = boundErrorBody(body)
		setRetryHeaders(w.Header(), status, false)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError writes a gateway error in the client's dialect, its message
// cut to maxErrorMessage bytes, with x-should-retry and, when retrying can
// help, Retry-After (1 s unless the caller set one).
func writeError(w http.ResponseWriter, d translate.Dialect, status int, class translate.ErrorClass, msg string) {
	setRetryHeaders(w.Header(), status, true)
	writeJSON(w, status, translate.ErrorBody(d, class, clipMessage(msg, maxErrorMessage)))
}
