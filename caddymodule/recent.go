package caddymodule

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// defaultRecentRequests is how many finished requests the admin API keeps
// for GET /llm_gateway/requests when recent_requests is not set.
const defaultRecentRequests = 1000

// maxRecentRequests is the largest recent_requests accepted.
const maxRecentRequests = 1_000_000

// checkRecentRequests checks a recent_requests value (0: the default),
// for Validate (JSON configs) and the Caddyfile (at its line).
func checkRecentRequests(n int) error {
	if n < 0 || n > maxRecentRequests {
		return fmt.Errorf("recent_requests must be between 0 (the default, %d) and %d, got %d", defaultRecentRequests, maxRecentRequests, n)
	}
	return nil
}

// recentPayloadLimit bounds each body a recent request keeps (only with
// log_payloads).
const recentPayloadLimit = 16 << 10

// recentRequest is one finished /v1 request in GET /llm_gateway/requests.
// It holds no secret: keys appear by id, the gateway key by its label.
type recentRequest struct {
	// Seq numbers the requests of this process, from 1, in the order
	// they finished; ?before=<seq> pages back from it.
	Seq uint64 `json:"seq"`
	// ID is the request id (X-Request-Id).
	ID string `json:"id"`
	// Time is when the request arrived; DurationMillis and TTFBMillis
	// are measured from then.
	Time           time.Time `json:"time"`
	DurationMillis float64   `json:"duration_ms"`
	TTFBMillis     float64   `json:"ttfb_ms,omitempty"`
	// GatewayKey is the caller's gateway key label ("" without one).
	GatewayKey string `json:"gateway_key,omitempty"`
	// Endpoint is the path after /v1/ ("chat/completions", "messages").
	Endpoint string `json:"endpoint,omitempty"`
	// Dialect and UpstreamDialect are the client's and the upstream's
	// ("openai", "anthropic", "responses").
	Dialect         string `json:"dialect"`
	UpstreamDialect string `json:"upstream_dialect,omitempty"`
	// Model is the client's model, UpstreamModel the one sent upstream.
	Model         string `json:"model,omitempty"`
	UpstreamModel string `json:"upstream_model,omitempty"`
	// Pool and Key served the request (the last attempt's).
	Pool string `json:"pool,omitempty"`
	Key  string `json:"key,omitempty"`
	// Stream is true for a streamed request; StreamOutcome says how its
	// stream ended (complete, error_event, truncated, interrupted,
	// canceled).
	Stream        bool   `json:"stream"`
	StreamOutcome string `json:"stream_outcome,omitempty"`
	// Status is the HTTP status the client got (499: it went away).
	Status int `json:"status"`
	// Error is the failure's message, for a failed request.
	Error string `json:"error,omitempty"`
	// FallbackFrom names the pool the request fell back from.
	FallbackFrom string `json:"fallback_from,omitempty"`
	// Tokens are the upstream-reported tokens by kind.
	Tokens tokenCounts `json:"tokens"`
	// CostUSD is the request's cost in US dollars when its model has a
	// price (absent otherwise); CostEstimated says its usage was partly
	// estimated (see GET /llm_gateway/spend).
	CostUSD       *float64 `json:"cost_usd,omitempty"`
	CostEstimated bool     `json:"cost_estimated,omitempty"`
	// Attempts is the attempt log: one entry per key tried, in order.
	Attempts []recentAttempt `json:"attempts"`
	// Request and Response are the bodies, clipped to 16 KiB, only with
	// log_payloads (Response: non-streamed answers).
	Request  string `json:"request,omitempty"`
	Response string `json:"response,omitempty"`
}

// recentAttempt is one upstream attempt of a recentRequest.
type recentAttempt struct {
	// Key is the id of the key tried; Outcome its keypool outcome
	// ("success", "rate_limited", ...); Status the upstream's HTTP status.
	Key     string `json:"key"`
	Outcome string `json:"outcome"`
	Status  int    `json:"status,omitempty"`
	// ConnectMillis is the new connection's set-up time (0: reused);
	// DurationMillis the attempt's.
	ConnectMillis  float64 `json:"connect_ms,omitempty"`
	DurationMillis float64 `json:"duration_ms"`
}

// recentRing holds the last finished requests of the process (every
// llm_gateway handler), for the admin API's request log. Nothing is
// persisted.
type recentRing struct {
	mu   sync.Mutex
	buf  []recentRequest // at most size entries
	next int             // once buf is full: the slot of the oldest, overwritten next
	size int
	seq  uint64 // requests recorded so far
}

// recent is the process's request log ring.
var recent = &recentRing{size: defaultRecentRequests}

// resize sets how many requests the ring keeps (n <= 0: the default),
// keeping the newest.
func (rr *recentRing) resize(n int) {
	if n <= 0 {
		n = defaultRecentRequests
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if n == rr.size {
		return
	}
	newest := rr.listLocked(func(*recentRequest) bool { return true }, 0, n)
	buf := make([]recentRequest, len(newest))
	for i, e := range newest {
		buf[len(newest)-1-i] = e
	}
	rr.buf, rr.next, rr.size = buf, 0, n
}

// add records a finished request.
func (rr *recentRing) add(e recentRequest) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.seq++
	e.Seq = rr.seq
	if len(rr.buf) < rr.size {
		rr.buf = append(rr.buf, e)
		return
	}
	rr.buf[rr.next] = e
	rr.next = (rr.next + 1) % len(rr.buf)
}

// listLocked returns up to limit requests matching keep, newest first,
// with a sequence number below before (0: from the newest).
func (rr *recentRing) listLocked(keep func(*recentRequest) bool, before uint64, limit int) []recentRequest {
	out := []recentRequest{}
	n := len(rr.buf)
	for i := 0; i < n && len(out) < limit; i++ {
		e := &rr.buf[((rr.next-1-i)%n+n)%n]
		if (before == 0 || e.Seq < before) && keep(e) {
			out = append(out, *e)
		}
	}
	return out
}

// recordRecent adds a finished request to the ring.
func (h *Handler) recordRecent(rl *requestLog) {
	e := recentRequest{
		ID: rl.id, Time: rl.start, DurationMillis: millis(time.Since(rl.start)), TTFBMillis: millis(rl.ttfb),
		GatewayKey: rl.gatewayKey, Endpoint: rl.endpoint,
		Dialect: rl.dialect.String(), UpstreamDialect: upstreamDialectName(rl.upstreamDialect),
		Model: clipClient(rl.clientModel), UpstreamModel: clipClient(rl.upstreamModel),
		Pool: rl.pool, Key: rl.key, Stream: rl.stream, StreamOutcome: rl.streamOutcome,
		Status: rl.status, FallbackFrom: rl.fallbackFrom, Attempts: make([]recentAttempt, len(rl.attempts)),
	}
	if rl.errMsg != "" {
		e.Error = clipMessage(rl.errMsg, maxErrorMessage)
	}
	if c := rl.cost; c != nil && c.known {
		usd := c.usd
		e.CostUSD, e.CostEstimated = &usd, c.estimated
	}
	u := rl.usage
	for _, t := range []struct {
		to *int64
		v  *int64
	}{{&e.Tokens.Input, u.InputTokens}, {&e.Tokens.Output, u.OutputTokens}, {&e.Tokens.CacheRead, u.CacheReadTokens},
		{&e.Tokens.CacheWrite, u.CacheWriteTokens}, {&e.Tokens.Reasoning, u.ReasoningTokens}} {
		if t.v != nil {
			*t.to = *t.v
		}
	}
	for i, a := range rl.attempts {
		e.Attempts[i] = recentAttempt{Key: a.key, Outcome: a.outcome, Status: a.status,
			ConnectMillis: millis(a.connect), DurationMillis: millis(a.dur)}
	}
	if h.LogPayloads {
		e.Request, e.Response = clipPayload(rl.reqBody), clipPayload(rl.respBody)
	}
	recent.add(e)
}

// clipPayload returns b as text, cut to recentPayloadLimit bytes.
func clipPayload(b []byte) string {
	if len(b) > recentPayloadLimit {
		return string(b[:recentPayloadLimit]) + "…(clipped)"
	}
	return string(b)
}

// requestsPage is the answer of GET /llm_gateway/requests.
type requestsPage struct {
	// Requests are the matching requests, newest first.
	Requests []recentRequest `json:"requests"`
	// Capacity is how many requests the ring keeps (recent_requests);
	// Total how many finished since the process started.
	Capacity int    `json:"capacity"`
	Total    uint64 `json:"total"`
}

// handleRequests serves GET /llm_gateway/requests: the last finished
// requests, newest first. Query: status=2xx|3xx|4xx|5xx|error (error:
// 4xx, 5xx and 499), pool=, key=, gateway_key=, q= (a request id, or
// part of a model name, case-insensitive), id= (one request), before=<seq>
// (page back), limit= (default 100, at most 1000).
func (adminAPI) handleRequests(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodGet); err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := queryLimit(q, 100, 1000)
	if err != nil {
		return err
	}
	var before uint64
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("before: want a sequence number, got %q", clipClient(v))}
		}
		before = n
	}
	status := q.Get("status")
	switch status {
	case "", "2xx", "3xx", "4xx", "5xx", "error":
	default:
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("status: want 2xx, 3xx, 4xx, 5xx or error, got %q", status)}
	}
	pool, key, gk, id := q.Get("pool"), q.Get("key"), q.Get("gateway_key"), q.Get("id")
	search := strings.ToLower(q.Get("q"))
	keep := func(e *recentRequest) bool {
		switch {
		case id != "" && e.ID != id,
			pool != "" && e.Pool != pool,
			key != "" && e.Key != key,
			gk != "" && e.GatewayKey != gk,
			status == "error" && e.Status < 400,
			status != "" && status != "error" && strconv.Itoa(e.Status/100) != status[:1],
			search != "" && e.ID != search && !strings.Contains(strings.ToLower(e.Model), search) &&
				!strings.Contains(strings.ToLower(e.UpstreamModel), search):
			return false
		}
		return true
	}
	recent.mu.Lock()
	page := requestsPage{Requests: recent.listLocked(keep, before, limit), Capacity: recent.size, Total: recent.seq}
	recent.mu.Unlock()
	return writeAdminJSON(w, page)
}
