package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// playgroundGatewayKey is the gateway key label of requests sent from
// the status page's playground (POST /llm_gateway/playground): they are
// counted, logged and limited per key like any other caller's.
const playgroundGatewayKey = "playground"

// playgroundMaxBody bounds the playground request the admin API reads.
const playgroundMaxBody = 1 << 20

// playgroundCtxKey marks a request the admin API's playground issued; a
// request from the network cannot carry it.
type playgroundCtxKey struct{}

// playgroundKey is the gateway key every playground request authenticates
// as: all pools and models, no rpm or concurrency limit of its own (the
// pools' gates apply as to any request).
var playgroundKey = &gwKey{id: playgroundGatewayKey}

// isPlayground reports whether r was issued by the playground.
func isPlayground(r *http.Request) bool {
	v, _ := r.Context().Value(playgroundCtxKey{}).(bool)
	return v
}

// publishedHandlers are the provisioned llm_gateway handlers, most recent
// last: the playground sends its requests through the newest.
var publishedHandlers = struct {
	sync.Mutex
	list []*Handler
}{}

// publishHandler makes h the playground's handler until ctx is done.
func publishHandler(ctx caddy.Context, h *Handler) {
	publishedHandlers.Lock()
	publishedHandlers.list = append(publishedHandlers.list, h)
	publishedHandlers.Unlock()
	if ctx.Context == nil {
		return
	}
	context.AfterFunc(ctx, func() {
		publishedHandlers.Lock()
		defer publishedHandlers.Unlock()
		for i, q := range publishedHandlers.list {
			if q == h {
				publishedHandlers.list = append(publishedHandlers.list[:i:i], publishedHandlers.list[i+1:]...)
				break
			}
		}
	})
}

// playgroundRequest is the body of POST /llm_gateway/playground.
type playgroundRequest struct {
	// Model is a model the gateway serves (as GET /v1/models lists it).
	Model string `json:"model"`
	// Dialect is the client dialect to speak: "openai" (Chat
	// Completions, the default), "anthropic" (Messages) or "responses".
	Dialect string `json:"dialect"`
	// Stream asks for a streamed answer.
	Stream bool `json:"stream"`
	// Prompt is the user message.
	Prompt string `json:"prompt"`
	// MaxTokens bounds the answer; default 512.
	MaxTokens int `json:"max_tokens"`
}

// handlePlayground serves POST /llm_gateway/playground: it sends one
// request, built from a model, a client dialect, stream on or off and a
// prompt, through the gateway's own handler path (routing, pools, gates,
// retries, translation, logging, metrics), authenticated as the gateway
// key "playground" so that no gateway key has to be typed into the page,
// and relays the answer as the gateway wrote it: status, the routing
// headers (X-Routed-Via, X-Request-Id, X-Fallback-From) and the body or
// stream, event by event.
func (adminAPI) handlePlayground(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodPost); err != nil {
		return err
	}
	var pr playgroundRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, playgroundMaxBody)).Decode(&pr); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("playground: want a JSON object {model, dialect, stream, prompt}: %v", err)}
	}
	if pr.Model == "" || pr.Prompt == "" {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: errors.New("playground: model and prompt are required")}
	}
	if pr.MaxTokens <= 0 {
		pr.MaxTokens = 512
	}
	var (
		path string
		body any
	)
	msgs := []map[string]string{{"role": "user", "content": pr.Prompt}}
	switch pr.Dialect {
	case "", "openai":
		path = "/v1/chat/completions"
		body = map[string]any{"model": pr.Model, "messages": msgs, "stream": pr.Stream, "max_completion_tokens": pr.MaxTokens}
	case "anthropic":
		path = "/v1/messages"
		body = map[string]any{"model": pr.Model, "messages": msgs, "stream": pr.Stream, "max_tokens": pr.MaxTokens}
	case "responses":
		path = "/v1/responses"
		body = map[string]any{"model": pr.Model, "input": pr.Prompt, "stream": pr.Stream, "max_output_tokens": pr.MaxTokens, "store": false}
	default:
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("playground: dialect %q: want openai, anthropic or responses", pr.Dialect)}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	publishedHandlers.Lock()
	var h *Handler
	if n := len(publishedHandlers.list); n > 0 {
		h = publishedHandlers.list[n-1]
	}
	publishedHandlers.Unlock()
	if h == nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: errors.New("playground: no llm_gateway handler is running")}
	}
	// the admin server's read timeout would otherwise cut a long answer
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	ctx := context.WithValue(r.Context(), playgroundCtxKey{}, true)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.RemoteAddr = r.RemoteAddr
	req.Header.Set("Content-Type", "application/json")
	if pr.Dialect == "anthropic" {
		req.Header.Set("Anthropic-Version", anthropicVersion)
	}
	w.Header().Set("Cache-Control", "no-store")
	return h.ServeHTTP(w, req, caddyhttp.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) error {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: errors.New("playground: no route")}
	}))
}
