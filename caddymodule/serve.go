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

// gatewayCredentials are the gateway keys a client presented, by header.
// A client may send more than one (an SDK's own Authorization beside the
// x-api-key its user set, a Basic header its HTTP stack adds): the
// request is authenticated when any of them is a gateway key.
type gatewayCredentials struct {
	bearer    string // the token of 'Authorization: Bearer <token>'
	bare      string // an Authorization value of one word, sent without 'Bearer '
	xAPIKey   string // x-api-key (Anthropic clients)
	apiKey    string // api-key (Azure OpenAI clients)
	authBasic bool   // Authorization uses the Basic scheme
	authOther bool   // Authorization is some other scheme or garbage
	emptyAuth bool   // 'Authorization: Bearer' with no token
}

// readGatewayCredentials reads the gateway key headers of a request:
// Authorization (its Bearer token, scheme case-insensitive, or a bare
// key), x-api-key and api-key, each trimmed of white space.
func readGatewayCredentials(r *http.Request) gatewayCredentials {
	var c gatewayCredentials
	if a := strings.TrimSpace(r.Header.Get("Authorization")); a != "" {
		scheme, rest, spaced := strings.Cut(a, " ")
		switch {
		case strings.EqualFold(scheme, "bearer"):
			c.bearer = strings.TrimSpace(rest)
			c.emptyAuth = c.bearer == ""
		case strings.EqualFold(scheme, "basic"):
			c.authBasic = true
		case !spaced:
			c.bare = a
		default:
			c.authOther = true
		}
	}
	c.xAPIKey = strings.TrimSpace(r.Header.Get("X-Api-Key"))
	c.apiKey = strings.TrimSpace(r.Header.Get("Api-Key"))
	return c
}

// lookup returns the gateway key the client presented: the first of the
// Bearer token, the bare Authorization value, x-api-key and api-key that
// is a gateway key, else nil.
func (c gatewayCredentials) lookup(h *Handler) *gwKey {
	for _, t := range [...]string{c.bearer, c.bare, c.xAPIKey, c.apiKey} {
		if gk := h.lookupGatewayKey(t); gk != nil {
			return gk
		}
	}
	return nil
}

// rejection is the message of the 401 for credentials that name no
// gateway key: which headers carried a key that is not one, or why none
// was found, e.g. "invalid gateway API key (in the Anthropic API key
// header)". It never contains what the client sent. When a key was sent
// it does not name the header "x-api-key" either: Claude Code shows its
// own "Invalid API key · Fix external API key" in place of any error
// message that contains "x-api-key" (in any letter case), and the user
// would not see the gateway's.
func (c gatewayCredentials) rejection() string {
	const how = "send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'"
	var sent []string
	if c.bearer != "" {
		sent = append(sent, "Authorization: Bearer")
	}
	if c.bare != "" {
		sent = append(sent, "Authorization, without 'Bearer '")
	}
	if c.xAPIKey != "" {
		sent = append(sent, "the Anthropic API key header")
	}
	if c.apiKey != "" {
		sent = append(sent, "api-key")
	}
	var auth string
	switch {
	case c.authBasic:
		auth = "the Authorization header uses the Basic scheme, which the gateway does not read"
	case c.authOther:
		auth = "the Authorization header is not 'Bearer <key>'"
	case c.emptyAuth:
		auth = "the Authorization header is 'Bearer' with no key"
	}
	switch {
	case len(sent) > 0 && auth != "":
		return "invalid gateway API key (in " + strings.Join(sent, "; ") + "); " + auth
	case len(sent) > 0:
		return "invalid gateway API key (in " + strings.Join(sent, "; ") + ")"
	case auth != "":
		return "missing gateway API key: " + auth + "; " + how
	}
	return "missing gateway API key: " + how
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
