// Package mockupstream is a programmable fake LLM server speaking the OpenAI
// Chat Completions, OpenAI Responses and native Anthropic Messages dialects,
// and OpenAI embeddings. It is used by tests, benchmarks and the demo to
// stand in for real vendors. Its Caddy module (llm_mock_upstream) is
// registered by the subpackage caddymock.
//
// Endpoints (the /v1 prefix is optional, query strings are ignored, and a
// path ending in /v1/<endpoint> also matches, for mounting under a prefix):
//
//	POST /v1/chat/completions        OpenAI Chat Completions, stream and non-stream
//	GET  /v1/models, /v1/models/{id} OpenAI model list / model object
//	POST /v1/messages                Anthropic Messages, stream and non-stream
//	POST /v1/messages/count_tokens   Anthropic token count {"input_tokens":N}
//	POST /v1/responses               OpenAI Responses, stream and non-stream
//	POST /v1/responses/input_tokens  {"object":"response.input_tokens","input_tokens":N}
//	POST /v1/embeddings              OpenAI embeddings (deterministic vectors, see Embedding)
//	POST /v1/replay                  recorded fixture bytes, verbatim
//	GET  /api/v1/key                 OpenRouter's key info (limit, usage, limit_remaining; see Credit)
//	GET  /user/balance               DeepSeek's balance (is_available, balance_infos; see Credit)
//
// Unknown paths get 404 and wrong methods 405, with an OpenAI error body;
// unparsable JSON gets 400. Errors on /v1/messages* use the Anthropic error
// shape {"type":"error","error":{"type","message"},"request_id"}, all others
// the OpenAI shape {"error":{"message","type","param","code"}}. The
// generating endpoints (chat completions, messages, responses, embeddings,
// replay) all apply the key's KeyBehavior gates and faults.
//
// Requests are identified by their API key (Authorization: Bearer <key>,
// x-api-key: <key>, or api-key: <key>); a request without a key gets 401 and
// is recorded under the key "". Each key can be programmed with a
// KeyBehavior: concurrency caps, cooldowns with Retry-After, fixed error
// statuses, random failures and connection resets, latency, stream pacing and
// replay.
//
// Answers are deterministic:
//   - Text: Text(last user message), streamed as Words (one chunk per word
//     plus its trailing white space). Array content counts its text parts.
//   - Tool result: when the last message is an OpenAI role "tool" message, or
//     an Anthropic user message with tool_result blocks, the answer is
//     ToolText(result text).
//   - Tool call: when the request has tools, tool_choice is not "none", and
//     either the last message is a user message containing "tool" (any case)
//     or tool_choice forces a tool ("required" / {"type":"any"} for the first
//     tool, or a named tool), the answer is one call to that tool with the
//     arguments {"<first string property of its schema>":"mock"} or {}.
//     Arguments stream in fragments of about 6 bytes.
//   - Reasoning: with reasoning_effort (other than "none") or a model name
//     containing "reason" or "think" (Chat), or thinking {"type":"enabled"|
//     "adaptive"} (Messages), ReasoningText(last user message) comes first:
//     reasoning_content deltas (Chat), or a thinking block with
//     thinking_delta events and one signature_delta (Messages).
//   - Limits: max_completion_tokens / max_tokens cut reasoning then text to
//     that many chunks, with finish_reason "length" / stop_reason
//     "max_tokens".
//   - Responses: the input (a string, or items: messages, function_call,
//     function_call_output) is read as the conversation, and the Chat rules
//     above apply, with reasoning.effort as reasoning_effort and
//     max_output_tokens as the limit (status "incomplete"). The output is a
//     reasoning item (summary ReasoningText, streamed as
//     response.reasoning_summary_text.delta; encrypted_content when include
//     has "reasoning.encrypted_content"), then a message (output_text
//     deltas) or a function_call (function_call_arguments deltas). Events
//     carry sequence_number from 0. StreamErrorAfter ends a stream with an
//     error event and response.failed.
//   - Usage: prompt tokens = white-space separated words over all message
//     text (and the Anthropic system prompt), minimum 1; completion tokens =
//     number of streamed content chunks (reasoning words + text words, or
//     argument fragments).
package mockupstream

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxBodyBytes bounds the request bodies the mock reads (32 MiB).
const maxBodyBytes = 32 << 20

// Server is the mock upstream; it implements http.Handler. Create it with
// New; it is safe for concurrent use and can be reprogrammed while serving.
//
// Replay: a request is answered with recorded bytes instead of a generated
// answer when (in this order of precedence) it carries the header
// X-Mock-Replay: <path>, its key's behavior has ReplayBody or Replay set, or
// it is POST /v1/replay with a JSON body {"path":"..."} (or ?path=...). The
// file's bytes are written verbatim: *.sse files as text/event-stream,
// flushed at each event boundary (blank line) and paced by TokensPerSecond;
// *.json files as application/json. *.chunks.txt files (one JSON event per
// line, SSE framing stripped by the recorder) are re-framed as SSE: each line
// becomes "event: <type>\n" (when the JSON has a "type" field) plus
// "data: <line>\n\n", and "data: [DONE]\n\n" is appended to Chat Completions
// chunk files. The status is X-Mock-Replay-Status, else ReplayStatus, else 200.
type Server struct {
	model      string
	replayDir  string
	seed       uint64
	created    int64
	modelsBody []byte

	beh    atomic.Pointer[behaviors]
	behMu  sync.Mutex // serializes writers of beh
	states sync.Map   // key -> *keyState
	seq    atomic.Uint64
}

// New returns a Server programmed with cfg. cfg.Keys is copied.
func New(cfg Config) *Server {
	s := &Server{
		model:     cfg.Model,
		replayDir: cfg.ReplayDir,
		seed:      uint64(cfg.Seed),
		created:   time.Now().Unix(),
	}
	if s.model == "" {
		s.model = DefaultModel
	}
	if cfg.Seed == 0 {
		s.seed = uint64(time.Now().UnixNano())
	}
	t := &behaviors{def: cfg.Default, keys: make(map[string]*KeyBehavior, len(cfg.Keys))}
	for k, b := range cfg.Keys {
		t.keys[k] = &b
	}
	s.beh.Store(t)

	ids := append([]string{s.model}, cfg.Models...)
	buf := []byte(`{"object":"list","data":[`)
	seen := map[string]bool{}
	n := 0
	for _, id := range ids {
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		if n > 0 {
			buf = append(buf, ',')
		}
		n++
		buf = s.appendModel(buf, id)
	}
	s.modelsBody = append(buf, "]}"...)
	return s
}

// keyModelsBody renders a key's own model list (KeyBehavior.Models) in the
// OpenAI list shape, or in the Anthropic one (per Anthropic's List Models
// API) when anthropic is set.
func (s *Server) keyModelsBody(ids []string, anthropic bool) []byte {
	if !anthropic {
		buf := []byte(`{"object":"list","data":[`)
		for i, id := range ids {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = s.appendModel(buf, id)
		}
		return append(buf, "]}"...)
	}
	created := time.Unix(s.created, 0).UTC().Format(time.RFC3339)
	buf := []byte(`{"data":[`)
	for i, id := range ids {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"type":"model","id":`...)
		buf = appendString(buf, id)
		buf = append(buf, `,"display_name":`...)
		buf = appendString(buf, id)
		buf = append(buf, `,"created_at":`...)
		buf = appendString(buf, created)
		buf = append(buf, '}')
	}
	buf = append(buf, `],"has_more":false,"first_id":`...)
	if len(ids) == 0 {
		buf = append(buf, `null,"last_id":null}`...)
		return buf
	}
	buf = appendString(buf, ids[0])
	buf = append(buf, `,"last_id":`...)
	buf = appendString(buf, ids[len(ids)-1])
	return append(buf, '}')
}

func (s *Server) appendModel(buf []byte, id string) []byte {
	buf = append(buf, `{"id":`...)
	buf = appendString(buf, id)
	buf = append(buf, `,"object":"model","created":`...)
	buf = appendInt(buf, s.created)
	return append(buf, `,"owned_by":"mock"}`...)
}

// SetKey programs the behavior for one API key, replacing any previous one.
// It takes effect for requests admitted after the call; counters and
// cooldown windows already running are kept (a Cooldown of 0 lifts the
// window).
func (s *Server) SetKey(key string, b KeyBehavior) {
	s.behMu.Lock()
	defer s.behMu.Unlock()
	old := s.beh.Load()
	t := &behaviors{def: old.def, keys: make(map[string]*KeyBehavior, len(old.keys)+1)}
	for k, v := range old.keys {
		t.keys[k] = v
	}
	t.keys[key] = &b
	s.beh.Store(t)
}

// RemoveKey drops the per-key behavior of key, so the default applies again.
func (s *Server) RemoveKey(key string) {
	s.behMu.Lock()
	defer s.behMu.Unlock()
	old := s.beh.Load()
	t := &behaviors{def: old.def, keys: make(map[string]*KeyBehavior, len(old.keys))}
	for k, v := range old.keys {
		if k != key {
			t.keys[k] = v
		}
	}
	s.beh.Store(t)
}

// SetDefault programs the behavior for keys without their own entry.
func (s *Server) SetDefault(b KeyBehavior) {
	s.behMu.Lock()
	defer s.behMu.Unlock()
	old := s.beh.Load()
	s.beh.Store(&behaviors{def: b, keys: old.keys})
}

// Behavior returns the behavior currently applied to key.
func (s *Server) Behavior(key string) KeyBehavior {
	return *s.beh.Load().get(key)
}

// state returns the live state of key, creating it on first use.
func (s *Server) state(key string) *keyState {
	if v, ok := s.states.Load(key); ok {
		return v.(*keyState)
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	ks := &keyState{rng: rand.New(rand.NewPCG(s.seed, h.Sum64()))}
	v, _ := s.states.LoadOrStore(key, ks)
	return v.(*keyState)
}

// endpoint identifies a route.
type endpoint uint8

const (
	epUnknown endpoint = iota
	epChat
	epModels
	epModel
	epMessages
	epCountTokens
	epReplay
	epResponses
	epResponsesInputTokens
	epEmbeddings
	epKeyInfo
	epBalance
	numEndpoints
)

// endpointNames name the endpoints in KeyStats.Endpoints.
var endpointNames = [numEndpoints]string{
	epUnknown:              "unknown",
	epChat:                 "chat/completions",
	epModels:               "models",
	epModel:                "models/{id}",
	epMessages:             "messages",
	epCountTokens:          "messages/count_tokens",
	epReplay:               "replay",
	epResponses:            "responses",
	epResponsesInputTokens: "responses/input_tokens",
	epEmbeddings:           "embeddings",
	epKeyInfo:              "api/v1/key",
	epBalance:              "user/balance",
}

// route maps a URL path to an endpoint; for epModel it also returns the id.
// Paths match with or without the /v1 prefix; as a fallback, a path that
// ends in a known endpoint (e.g. /upstream-a/v1/chat/completions, when the
// mock is mounted under a prefix that is not stripped) matches too.
func route(p string) (endpoint, string) {
	p = strings.TrimRight(p, "/")
	if strings.HasPrefix(p, "/v1/") {
		p = p[3:]
	}
	switch p {
	case "/chat/completions":
		return epChat, ""
	case "/models":
		return epModels, ""
	case "/messages":
		return epMessages, ""
	case "/messages/count_tokens":
		return epCountTokens, ""
	case "/replay":
		return epReplay, ""
	case "/responses":
		return epResponses, ""
	case "/responses/input_tokens":
		return epResponsesInputTokens, ""
	case "/embeddings":
		return epEmbeddings, ""
	case "/api/v1/key":
		return epKeyInfo, ""
	case "/user/balance":
		return epBalance, ""
	}
	if id, ok := strings.CutPrefix(p, "/models/"); ok && id != "" && !strings.Contains(id, "/") {
		return epModel, id
	}
	for _, r := range suffixRoutes {
		if strings.HasSuffix(p, r.suffix) {
			return r.ep, ""
		}
	}
	return epUnknown, ""
}

// suffixRoutes are tried in order (longest first where they overlap).
var suffixRoutes = []struct {
	suffix string
	ep     endpoint
}{
	{"/v1/chat/completions", epChat},
	{"/v1/messages/count_tokens", epCountTokens},
	{"/v1/messages", epMessages},
	{"/v1/models", epModels},
	{"/v1/replay", epReplay},
	{"/v1/responses/input_tokens", epResponsesInputTokens},
	{"/v1/responses", epResponses},
	{"/v1/embeddings", epEmbeddings},
}

// dialect selects the shape of error bodies.
type dialect uint8

const (
	dialectOpenAI dialect = iota
	dialectAnthropic
	dialectResponses // OpenAI error shape; Responses in-band stream errors
)

// apiKey extracts the key from Authorization: Bearer, x-api-key or api-key.
func apiKey(r *http.Request) string {
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		if k := strings.TrimSpace(a[7:]); k != "" {
			return k
		}
	}
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	return r.Header.Get("Api-Key")
}

// call carries one request through the handler.
type call struct {
	s   *Server
	w   http.ResponseWriter
	r   *http.Request
	ks  *keyState
	b   *KeyBehavior
	d   dialect
	key string
	id  uint64
}

// nextID returns a fresh sequence number for ids.
func (s *Server) nextID() uint64 { return s.seq.Add(1) }

// ServeHTTP implements http.Handler: it routes the request to one of the
// endpoints listed in the package documentation, identifies the key, applies
// the key's KeyBehavior and writes the answer (JSON, or SSE flushed event by
// event). It never calls another handler; with ResetRate or StreamCutAfter on
// HTTP/2 it aborts the stream by panicking with http.ErrAbortHandler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ep, arg := route(r.URL.Path)
	c := &call{s: s, w: w, r: r, id: s.nextID()}
	switch ep {
	case epMessages, epCountTokens:
		c.d = dialectAnthropic
	case epResponses, epResponsesInputTokens:
		c.d = dialectResponses
	}
	if ep == epUnknown {
		c.d = dialectOpenAI
		c.writeInfo(http.StatusNotFound, errorInfo{typ: "invalid_request_error", msg: "Invalid URL (" + r.Method + " " + r.URL.Path + ")"})
		return
	}
	want := http.MethodPost
	if ep == epModels || ep == epModel || ep == epKeyInfo || ep == epBalance {
		want = http.MethodGet
	}
	if r.Method != want {
		w.Header().Set("Allow", want)
		c.writeInfo(http.StatusMethodNotAllowed, errorInfo{typ: "invalid_request_error", msg: "Method " + r.Method + " not allowed for " + r.URL.Path + "; use " + want + "."})
		return
	}
	c.key = apiKey(r)
	c.ks = s.state(c.key)
	c.ks.endpoints[ep].Add(1)
	c.b = s.beh.Load().get(c.key)
	if c.key == "" {
		c.ks.record("", nil, r.Header)
		c.ks.failed.Add(1)
		c.writeError(http.StatusUnauthorized, "", "")
		return
	}
	switch ep {
	case epModels, epModel:
		c.ks.record("", nil, r.Header)
		if st := c.b.ModelsStatus; st > 0 && (st < 200 || st > 299) {
			c.countError(st)
			c.writeStatusError(st, "")
			return
		}
		if c.b.statusError() {
			c.countError(c.b.Status)
			c.writeStatusError(c.b.Status, "")
			return
		}
		if c.b.Latency > 0 && !sleepCtx(r.Context(), c.b.Latency) {
			c.ks.canceled.Add(1)
			return
		}
		var body []byte
		switch {
		case ep == epModel:
			body = s.appendModel(make([]byte, 0, 128), arg)
		case c.b.Models != nil:
			body = s.keyModelsBody(c.b.Models, r.Header.Get("Anthropic-Version") != "")
		default:
			body = s.modelsBody
		}
		c.writeJSON(http.StatusOK, body)
		c.ks.ok.Add(1)
	case epCountTokens, epResponsesInputTokens:
		c.countTokens(ep)
	case epKeyInfo, epBalance:
		c.balance(ep)
	default:
		c.generate(ep)
	}
}

// readBody reads the request body up to maxBodyBytes.
func (c *call) readBody() ([]byte, error) {
	var buf []byte
	if n := c.r.ContentLength; n > 0 && n <= maxBodyBytes {
		buf = make([]byte, 0, n+1)
	} else {
		buf = make([]byte, 0, 1024)
	}
	lr := io.LimitReader(c.r.Body, maxBodyBytes+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return buf, err
		}
	}
	if len(buf) > maxBodyBytes {
		return buf, errTooLarge
	}
	return buf, nil
}

var errTooLarge = errors.New("request body too large")

// badBody answers a request whose body could not be read or parsed.
func (c *call) badBody(model string, body []byte, err error) {
	c.ks.record(model, body, c.r.Header)
	c.ks.failed.Add(1)
	if errors.Is(err, errTooLarge) {
		c.writeError(http.StatusRequestEntityTooLarge, "", "")
		return
	}
	c.writeError(http.StatusBadRequest, "We could not parse the JSON body of your request: "+err.Error(), "")
}

// countTokens serves POST /v1/messages/count_tokens ({"input_tokens":N})
// and POST /v1/responses/input_tokens ({"object":"response.input_tokens",
// "input_tokens":N}).
func (c *call) countTokens(ep endpoint) {
	body, err := c.readBody()
	if err != nil {
		c.badBody("", body, err)
		return
	}
	var model string
	var n int
	if ep == epResponsesInputTokens {
		req, perr := parseBody[responsesRequest](body)
		model, n, err = req.Model, req.promptTokens(), perr
	} else {
		req, perr := parseBody[messagesRequest](body)
		model, n, err = req.Model, req.promptTokens(), perr
	}
	if err != nil {
		c.badBody("", body, err)
		return
	}
	c.ks.record(model, body, c.r.Header)
	if c.b.statusError() {
		c.countError(c.b.Status)
		c.writeStatusError(c.b.Status, model)
		return
	}
	out := make([]byte, 0, 64)
	if ep == epResponsesInputTokens {
		out = append(out, `{"object":"response.input_tokens","input_tokens":`...)
	} else {
		out = append(out, `{"input_tokens":`...)
	}
	out = appendInt(out, int64(n))
	out = append(out, '}')
	c.writeJSON(http.StatusOK, out)
	c.ks.ok.Add(1)
}

// generate serves the endpoints that produce an answer: it applies the gates
// and injected faults, then replays or generates.
func (c *call) generate(ep endpoint) {
	body, err := c.readBody()
	if err != nil {
		c.badBody("", body, err)
		return
	}
	var (
		chat   *chatRequest
		msgs   *messagesRequest
		resp   *responsesRequest
		emb    *embeddingsRequest
		model  string
		replay replaySource
	)
	switch ep {
	case epChat:
		chat, err = parseBody[chatRequest](body)
		if chat != nil {
			model = chat.Model
		}
	case epMessages:
		msgs, err = parseBody[messagesRequest](body)
		if msgs != nil {
			model = msgs.Model
		}
	case epResponses:
		resp, err = parseBody[responsesRequest](body)
		if resp != nil {
			model = resp.Model
		}
	case epEmbeddings:
		emb, err = parseBody[embeddingsRequest](body)
		if emb != nil {
			model = emb.Model
		}
	case epReplay:
		replay, model, err = c.replayRequest(body)
	}
	if err != nil {
		c.badBody(model, body, err)
		return
	}
	// the vendor's request validation comes first, as at the vendor
	var refusal string
	switch {
	case ep == epMessages:
		refusal = ValidateAnthropicRequest(body)
	case ep == epChat && c.b.Vendor == VendorDeepSeek:
		refusal = ValidateDeepSeekRequest(body)
	case ep == epEmbeddings:
		refusal = emb.validate()
	}
	if refusal != "" {
		c.ks.record(model, body, c.r.Header)
		c.ks.failed.Add(1)
		c.writeError(http.StatusBadRequest, refusal, model)
		return
	}

	ks, b := c.ks, c.b
	var rh rateHeaders
	var tokens int64
	if b.TPM > 0 {
		switch {
		case chat != nil:
			tokens = int64(promptTokens(chat.Messages, ""))
		case msgs != nil:
			tokens = int64(msgs.promptTokens())
		case resp != nil:
			tokens = int64(resp.promptTokens())
		default:
			tokens = int64(tokenCount(string(body)))
		}
	}
	adm, wait := ks.admit(b, model, body, c.r.Header, tokens, &rh)
	rh.write(c.w.Header(), time.Now(), adm == deniedRate)
	switch adm {
	case deniedRate:
		if b.TPM > 0 && tokens > b.TPM {
			c.writeOverLimit(model, b.organization(), b.TPM, tokens) // ratelimit.go
			return
		}
		c.writeStatusError(http.StatusTooManyRequests, model)
		return
	case deniedCooldown:
		c.rateLimited(wait)
		return
	case deniedCap:
		h := c.w.Header()
		h.Set("Retry-After", "1")
		h.Set("Retry-After-Ms", "100")
		c.writeError(http.StatusTooManyRequests, capMessage(c.d, b.MaxConcurrency), "")
		return
	case deniedStatus429:
		if b.RetryAfter == "" {
			c.w.Header().Set("Retry-After", "1")
		} else if b.RetryAfter != "none" {
			c.w.Header().Set("Retry-After", b.RetryAfter)
		}
		c.writeStatusError(http.StatusTooManyRequests, model)
		return
	}
	defer ks.finish(b.Cooldown)

	if b.Latency > 0 && !sleepCtx(c.r.Context(), b.Latency) {
		ks.canceled.Add(1)
		return
	}
	if b.statusError() {
		c.countError(b.Status)
		c.writeStatusError(b.Status, model)
		return
	}
	if b.ResetRate > 0 && ks.roll() < b.ResetRate {
		ks.resets.Add(1)
		c.resetConn()
		return
	}
	if b.FailRate > 0 && ks.roll() < b.FailRate {
		st := b.failStatus()
		c.countError(st)
		c.writeStatusError(st, model)
		return
	}

	if src, ok := c.replayOverride(); ok {
		replay = src
	}
	if replay.set() {
		c.serveReplay(replay)
		return
	}
	switch ep {
	case epChat:
		c.serveChat(chat)
	case epMessages:
		c.serveMessages(msgs)
	case epResponses:
		c.serveResponses(resp)
	case epEmbeddings:
		c.serveEmbeddings(emb)
	default:
		ks.failed.Add(1)
		c.writeError(http.StatusBadRequest, "No replay source: send X-Mock-Replay: <path> or a JSON body {\"path\":\"...\"}.", "")
	}
}

// countError counts an error answer of the given status.
func (c *call) countError(status int) {
	if status == http.StatusTooManyRequests {
		c.ks.rateLimited.Add(1)
	} else {
		c.ks.failed.Add(1)
	}
}

// rateLimited answers 429 for a key cooling down for another wait.
func (c *call) rateLimited(wait time.Duration) {
	secs := (wait + time.Second - 1) / time.Second
	if secs < 1 {
		secs = 1
	}
	ms := (wait + time.Millisecond - 1) / time.Millisecond
	if ms < 1 {
		ms = 1
	}
	h := c.w.Header()
	h.Set("Retry-After", itoa(int64(secs)))
	h.Set("Retry-After-Ms", itoa(int64(ms)))
	c.writeError(http.StatusTooManyRequests, cooldownMessage(c.d, wait), "")
}

// resetConn drops the connection without a response.
func (c *call) resetConn() {
	conn, _, err := http.NewResponseController(c.w).Hijack()
	if err != nil {
		// HTTP/2 or a writer that cannot be hijacked: abort the stream.
		panic(http.ErrAbortHandler)
	}
	raw := conn
	if nc, ok := conn.(interface{ NetConn() net.Conn }); ok {
		raw = nc.NetConn()
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = raw.Close()
}

// dropConn ends a response that has started: the connection is closed
// gracefully after the bytes already written (HTTP/1.1), or the stream is
// aborted (HTTP/2), so the client sees the body end early.
func (c *call) dropConn() {
	conn, _, err := http.NewResponseController(c.w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// sleepCtx waits d or until ctx is done; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// writeJSON writes a complete JSON response.
func (c *call) writeJSON(status int, body []byte) {
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	c.setRequestID()
	c.w.WriteHeader(status)
	_, _ = c.w.Write(body)
}

// setRequestID sets the dialect's request id header.
func (c *call) setRequestID() {
	if c.d == dialectAnthropic {
		c.w.Header().Set("Request-Id", c.requestID())
	} else {
		c.w.Header().Set("X-Request-Id", c.requestID())
	}
}

func (c *call) requestID() string { return "req_mock" + itoa(int64(c.id)) }

func itoa(n int64) string {
	var b [20]byte
	return string(appendInt(b[:0], n))
}

// parseBody decodes a request body into a new T (a zero T, never nil,
// when the body is not valid JSON for it).
func parseBody[T any](body []byte) (*T, error) {
	req := new(T)
	return req, json.Unmarshal(body, req)
}
