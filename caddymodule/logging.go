package caddymodule

import (
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/llmgateway/llm_gateway/translate"
)

// requestLog collects the fields of the one log entry written per request.
// It never holds a secret: keys appear by id only.
type requestLog struct {
	id              string
	endpoint        string // the route's path after /v1/ ("chat/completions", "embeddings", ...), "" for none
	dialect         translate.Dialect
	upstreamDialect translate.Dialect
	start           time.Time
	clientModel     string
	upstreamModel   string
	pool            string
	key             string
	exit            string // the egress exit of the last attempt (masked URL), "" for none
	stream          bool
	attempts        []attemptLog
	status          int
	errMsg          string
	// upstreamErr is the upstream's error message of an upstream error
	// answer relayed to the client (relayUpstreamError: a client_error the
	// request caused, a model 404 or 403 two keys gave), as the client got
	// it: upstream key redacted, credentials scrubbed; logged as
	// upstream_error, at most maxErrorMessage bytes
	upstreamErr   string
	streamError   string
	streamOutcome string // a stream* constant (relay.go); "" when not streamed
	fallbackFrom  string
	affinityHit   bool
	reqBody       []byte // only with log_payloads
	respBody      []byte // only with log_payloads (non-streamed answers)
	gatewayKey    string
	ttfb          time.Duration
	acquireWait   time.Duration
	usage         translate.Usage
	estInput      int64        // the request's input token estimate (body bytes / 4), for costOf
	cost          *requestCost // set by costRequest; nil when the request is not billable

	// awaitsContinue: an HTTP/1 client that sent "Expect: 100-continue"
	// and waits for it before sending its body; an error answered before
	// the body is read closes the connection (see fail)
	awaitsContinue bool
}

// attemptLog is one upstream attempt.
type attemptLog struct {
	key     string
	outcome string
	status  int
	connect time.Duration // new connection set-up (0: reused)
	dur     time.Duration
	exit    string       // egress exit (masked URL), "" for none
	cost    *requestCost // the request's cost, on the attempt that served it (costRequest)
}

// MarshalLogObject implements zapcore.ObjectMarshaler.
func (a attemptLog) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("key", a.key)
	enc.AddString("outcome", a.outcome)
	if a.status != 0 {
		enc.AddInt("status", a.status)
	}
	if a.connect > 0 {
		enc.AddDuration("connect", a.connect)
	}
	enc.AddDuration("duration", a.dur)
	if a.exit != "" {
		enc.AddString("exit", a.exit)
	}
	if a.cost != nil && a.cost.known {
		enc.AddFloat64("cost_usd", a.cost.usd)
	}
	return nil
}

type attemptLogs []attemptLog

// MarshalLogArray implements zapcore.ArrayMarshaler.
func (as attemptLogs) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for _, a := range as {
		if err := enc.AppendObject(a); err != nil {
			return err
		}
	}
	return nil
}

// fail writes a gateway error in the client's dialect and records it. The
// message is cut to maxErrorMessage bytes (it may quote the client); the
// answer carries x-should-retry and, when retrying can help, Retry-After
// (see writeError).
//
// When the client awaits "100 Continue" and its body has not been read (a
// refusal before reading it: 401, 405, 413, 429, 503), the answer says
// "Connection: close": the body is then never sent, where Go's server
// would otherwise try to read up to 256 KiB of it first and so wait for
// the client to give up waiting. (Other clients' unread bodies are left
// to Go's server: it reads up to 256 KiB to keep the connection, or
// closes it after a lingering wait so that the answer arrives.)
func (rl *requestLog) fail(w http.ResponseWriter, d translate.Dialect, status int, class translate.ErrorClass, msg string) {
	msg = clipMessage(msg, maxErrorMessage)
	if rl.awaitsContinue {
		w.Header().Set("Connection", "close")
	}
	rl.status, rl.errMsg = status, msg
	writeError(w, d, status, class, msg)
}

// writesAccessLog reports whether the server that took r writes an access
// log entry for it (its "logs" are configured); without one, the fields
// logRequest would add to it are not built (ExtraLogFields.Add also clears
// the entry's cached handler loggers on every call).
func writesAccessLog(r *http.Request) bool {
	srv, ok := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	return !ok || srv.Logs != nil
}

// logRequest writes the request's log entry through the handler's logger
// ("http.handlers.llm_gateway") and adds llm_pool / llm_key to Caddy's
// access log entry. Durations are in seconds, as Caddy logs them.
func (h *Handler) logRequest(r *http.Request, rl *requestLog) {
	h.observe(rl)
	if extra, ok := r.Context().Value(caddyhttp.ExtraLogFieldsCtxKey).(*caddyhttp.ExtraLogFields); ok && rl.pool != "" && writesAccessLog(r) {
		extra.Add(zap.String("llm_pool", rl.pool))
		if rl.key != "" {
			extra.Add(zap.String("llm_key", rl.key))
		}
	}
	lvl := zapcore.InfoLevel
	if rl.status >= 500 {
		lvl = zapcore.WarnLevel
	}
	ce := h.logger.Check(lvl, "llm request")
	if ce == nil {
		return
	}
	fields := make([]zap.Field, 0, 20)
	fields = append(fields,
		zap.String("request_id", rl.id),
		zap.String("endpoint", rl.endpoint),
		zap.String("dialect", rl.dialect.String()),
		zap.String("upstream_dialect", upstreamDialectName(rl.upstreamDialect)),
		zap.String("client_model", clipClient(rl.clientModel)),
		zap.String("upstream_model", clipClient(rl.upstreamModel)),
		zap.String("pool", rl.pool),
		zap.String("key", rl.key),
		zap.Bool("stream", rl.stream),
		zap.Int("attempts", len(rl.attempts)),
		zap.Array("attempt_log", attemptLogs(rl.attempts)),
		zap.Int("status", rl.status),
		zap.Duration("acquire_wait", rl.acquireWait),
		zap.Duration("ttfb", rl.ttfb),
		zap.Duration("duration", time.Since(rl.start)),
	)
	addTokens := func(name string, v *int64) {
		if v != nil {
			fields = append(fields, zap.Int64(name, *v))
		}
	}
	addTokens("input_tokens", rl.usage.InputTokens)
	addTokens("output_tokens", rl.usage.OutputTokens)
	addTokens("cache_read_tokens", rl.usage.CacheReadTokens)
	addTokens("cache_write_tokens", rl.usage.CacheWriteTokens)
	addTokens("reasoning_tokens", rl.usage.ReasoningTokens)
	fields = appendCostFields(fields, rl.cost)
	if rl.errMsg != "" {
		fields = append(fields, zap.String("error", clipMessage(rl.errMsg, maxErrorMessage)))
	}
	if rl.upstreamErr != "" {
		fields = append(fields, zap.String("upstream_error", clipMessage(rl.upstreamErr, maxErrorMessage)))
	}
	if rl.fallbackFrom != "" {
		fields = append(fields, zap.String("fallback_from", rl.fallbackFrom))
	}
	if rl.exit != "" {
		fields = append(fields, zap.String("exit", rl.exit))
	}
	var connect time.Duration
	for _, a := range rl.attempts {
		connect += a.connect
	}
	if connect > 0 {
		fields = append(fields, zap.Duration("connect", connect))
	}
	if rl.reqBody != nil {
		fields = append(fields, zap.ByteString("request_body", truncate(rl.reqBody, payloadLogLimit)))
	}
	if rl.respBody != nil {
		fields = append(fields, zap.ByteString("response_body", truncate(rl.respBody, payloadLogLimit)))
	}
	if rl.affinityHit {
		fields = append(fields, zap.Bool("affinity_hit", true))
	}
	if rl.gatewayKey != "" {
		fields = append(fields, zap.String("gateway_key", rl.gatewayKey))
	}
	if rl.streamError != "" {
		fields = append(fields, zap.String("stream_error", rl.streamError))
	}
	if rl.streamOutcome != "" {
		fields = append(fields, zap.String("stream_outcome", rl.streamOutcome))
	}
	ce.Write(fields...)
}

func upstreamDialectName(d translate.Dialect) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// payloadLogLimit bounds each body logged with log_payloads.
const payloadLogLimit = 16 << 10

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
