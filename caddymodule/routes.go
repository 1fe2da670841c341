package caddymodule

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/llmgateway/llm_gateway/translate"
)

// route is one endpoint of the gateway's API.
type route struct {
	path   string // "/v1/..."; served without "/v1" too, and with a trailing slash
	method string
	// dialect is the client's, which every answer (errors included) is
	// written in; 0: Anthropic Messages when the request carries
	// anthropic-version, else OpenAI Chat Completions
	dialect translate.Dialect
	// serve answers the request; nil for a passthrough endpoint
	// (servePassthrough)
	serve func(h *Handler, w http.ResponseWriter, r *http.Request, rl *requestLog, gk *gwKey, rt *route)
	// pass, when set, makes the route an OpenAI endpoint passed through
	// to the pool's OpenAI keys as it is (the model rewritten)
	pass *passthrough
	// slot: the request takes an in-flight slot (max_in_flight)
	slot bool
}

// routes is the gateway's API. Adding an OpenAI endpoint that is passed
// through to the keys as it is takes one entry with a passthrough.
var routes = [...]route{
	{path: "/v1/chat/completions", method: http.MethodPost, dialect: translate.OpenAIChat, serve: (*Handler).serveCompletion, slot: true},
	{path: "/v1/messages", method: http.MethodPost, dialect: translate.AnthropicMessages, serve: (*Handler).serveCompletion, slot: true},
	{path: "/v1/responses", method: http.MethodPost, dialect: translate.OpenAIResponses, serve: (*Handler).serveCompletion, slot: true},
	{path: "/v1/messages/count_tokens", method: http.MethodPost, dialect: translate.AnthropicMessages, serve: (*Handler).serveCountTokens, slot: true},
	{path: "/v1/embeddings", method: http.MethodPost, dialect: translate.OpenAIChat, pass: &passthrough{name: "embeddings", suffix: "/embeddings", answer: "data"}, slot: true},
	{path: "/v1/models", method: http.MethodGet, serve: (*Handler).serveModelList},
}

// findRoute returns the route of a request path, and whether the path is
// the gateway's at all: every /v1 path is (one no route serves is a 404),
// and so are the routes' paths without "/v1", which many SDKs and apps
// send when their base URL lacks it. One trailing slash is tolerated.
func findRoute(path string) (rt *route, ours bool) {
	if n := len(path); n > 1 && path[n-1] == '/' {
		path = path[:n-1]
	}
	versioned := path == "/v1" || strings.HasPrefix(path, "/v1/")
	for i := range routes {
		if p := routes[i].path; path == p || !versioned && path == p[len("/v1"):] {
			return &routes[i], true
		}
	}
	return nil, versioned
}

// ServeHTTP implements caddyhttp.MiddlewareHandler: it finds the route,
// decides the client's dialect once, authenticates the gateway key and
// dispatches. Paths that are not the gateway's go to next.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	path := r.URL.Path
	switch path {
	case "/healthz":
		writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
		return nil
	case "/readyz":
		h.serveReady(w)
		return nil
	}
	rt, ours := findRoute(path)
	if !ours {
		return next.ServeHTTP(w, r)
	}

	rl := &requestLog{id: requestID(r), dialect: translate.OpenAIChat, start: time.Now(),
		awaitsContinue: r.ProtoMajor == 1 && r.ContentLength != 0 && strings.EqualFold(r.Header.Get("Expect"), "100-continue")}
	defer h.logRequest(r, rl)
	w.Header().Set("X-Request-Id", rl.id)
	if rt != nil {
		rl.endpoint = rt.path[len("/v1/"):]
	}
	if rt != nil && rt.dialect != 0 {
		rl.dialect = rt.dialect
	} else if r.Header.Get("Anthropic-Version") != "" {
		rl.dialect = translate.AnthropicMessages
	}
	d := rl.dialect

	// The gateway key is read and then removed from the request headers:
	// Caddy's access log redacts Authorization but would print X-Api-Key.
	creds := readGatewayCredentials(r)
	r.Header.Del("X-Api-Key")
	r.Header.Del("Api-Key")
	gk := creds.lookup(h)
	if isPlayground(r) {
		gk = playgroundKey // issued by the admin API, not the network
	}
	if gk == nil && h.Auth != "off" {
		msg := creds.rejection()
		if len(h.gatewayKeys) == 0 {
			msg = "this gateway has no api_key configured: add 'api_key <token>' to the llm_gateway block (or 'auth off' to allow unauthenticated use)"
		}
		rl.fail(w, d, http.StatusUnauthorized, translate.ErrAuthentication, msg)
		return nil
	}

	switch {
	case rt == nil:
		rl.fail(w, d, http.StatusNotFound, translate.ErrNotFound, "unknown endpoint "+quoteClient(path))
		return nil
	case r.Method != rt.method && (r.Method != http.MethodHead || rt.method != http.MethodGet):
		// HEAD is served wherever GET is (RFC 9110 §9.3.2; net/http
		// sends the headers without the body)
		allow := rt.method
		if allow == http.MethodGet {
			allow = "GET, HEAD"
		}
		w.Header().Set("Allow", allow)
		rl.fail(w, d, http.StatusMethodNotAllowed, translate.ErrInvalidRequest, "method "+clipClient(r.Method)+" not allowed; use "+rt.method)
		return nil
	}
	if rt.slot {
		rl.gatewayKey = gk.label()
		release, ok := h.enter()
		if !ok {
			rl.failOverloaded(w, d, "max_in_flight ("+strconv.Itoa(h.MaxInFlight)+" requests)")
			return nil
		}
		defer release()
	}
	if rt.pass != nil {
		h.servePassthrough(w, r, rl, gk, rt)
	} else {
		rt.serve(h, w, r, rl, gk, rt)
	}
	return nil
}

// serveModelList answers GET /v1/models in the client's shape: Anthropic's
// when the request carries anthropic-version, else OpenAI's.
func (h *Handler) serveModelList(w http.ResponseWriter, _ *http.Request, rl *requestLog, gk *gwKey, _ *route) {
	rl.status = http.StatusOK
	if rl.dialect == translate.AnthropicMessages {
		h.serveModelsAnthropic(w, gk)
		return
	}
	h.serveModels(w, gk)
}
