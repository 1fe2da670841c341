package caddymodule

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/translate"
)

// anthropicVersion is the anthropic-version header sent to Anthropic
// upstreams, per Anthropic's versioning docs.
const anthropicVersion = "2023-06-01"

// maxUpstreamErrorBody bounds how much of an upstream error answer is read
// (to classify and relay it); maxUpstreamBody bounds a whole non-streamed
// answer.
const (
	maxUpstreamErrorBody = 64 << 10
	maxUpstreamBody      = 64 << 20
)

// serveCompletion handles one completion request: read and validate the
// body, route it to a pool, then run the attempt loop.
func (h *Handler) serveCompletion(w http.ResponseWriter, r *http.Request, rl *requestLog, gk *gwKey, _ *route) {
	d := rl.dialect
	body, rel, ok := h.takeRequest(w, r, rl, gk)
	if !ok {
		return
	}
	defer rel.run()
	// one pass over the bytes: validation, the routing facts and, when
	// every key translates this client's requests to one dialect, the
	// canonical form the translation encodes from
	slot, err := decodeSlot(r.Context(), len(body))
	if err != nil {
		rl.status = 499 // the client went away while waiting
		return
	}
	up := h.parseFor[d]
	if up == 0 {
		up = d // keys differ: the canonical form is built on first need
	}
	req, err := translate.ParseRequestFor(d, body, up)
	slot()
	if err != nil {
		var te *translate.Error
		if errors.As(err, &te) {
			rl.failRequest(w, d, te)
		} else {
			rl.fail(w, d, http.StatusBadRequest, translate.ErrInvalidRequest, err.Error())
		}
		return
	}
	model, stream := req.Model(), req.Stream()
	rl.clientModel, rl.stream = model, stream
	if h.LogPayloads {
		rl.reqBody = body
	}
	if d == translate.OpenAIResponses {
		if msg := statelessCheck(body); msg != "" {
			rl.fail(w, d, http.StatusBadRequest, translate.ErrInvalidRequest, msg)
			return
		}
	}
	pools, routed, f := h.candidates(model, gk)
	if f != nil {
		rl.failWith(w, d, f)
		return
	}
	h.servePools(w, r, rl, pools, routed, call{req: req, dialect: d, raw: body, stream: stream, clientModel: model,
		session: sessionID(r, req), tokens: req.EstimatedTokens()})
}

// releases are what takeRequest holds for a request until it ends.
type releases [2]func()

// run releases them.
func (rs releases) run() {
	for _, f := range rs {
		f()
	}
}

// takeRequest applies the gateway key's own limits (rpm, concurrency: 429
// with Retry-After; a request they refuse costs no read of its body) and
// reads the body (readBody). On failure the client has been answered and
// ok is false; else the caller runs rel when the request ends.
func (h *Handler) takeRequest(w http.ResponseWriter, r *http.Request, rl *requestLog, gk *gwKey) (body []byte, rel releases, ok bool) {
	releaseKey, wait, err := gk.admit(time.Now())
	if err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
		rl.fail(w, rl.dialect, http.StatusTooManyRequests, translate.ErrRateLimited, "gateway key "+gk.id+" is over its rate or concurrency limit")
		return nil, rel, false
	}
	if f := h.budgets.gatewayGate(gk); f != nil {
		releaseKey()
		rl.failWith(w, rl.dialect, f) // 429 with Retry-After until the budget resets
		return nil, rel, false
	}
	body, releaseBody, ok := h.readBody(w, r, rl, rl.dialect)
	if !ok {
		releaseKey()
		return nil, rel, false
	}
	return body, releases{releaseBody, releaseKey}, true
}

// servePools runs the attempt loop over the candidate pools in order (a
// fallback pool when the one before could not serve), under one deadline
// for the whole search, across retries and fallback pools; the last
// pool's failure is the client's answer. c is the call without its
// upstream model, which each pool sets.
func (h *Handler) servePools(w http.ResponseWriter, r *http.Request, rl *requestLog, pools []*pool, routed string, c call) {
	deadline := time.Now().Add(pools[0].totalTimeout)
	var last *loopFailure
	for i, p := range pools {
		if i > 0 {
			rl.fallbackFrom = pools[0].name
			w.Header().Set("X-Fallback-From", pools[0].name)
		}
		rl.pool = p.name
		rl.upstreamModel = p.upstreamModel(routed)
		rl.estInput = c.tokens
		pc := new(call)
		*pc = c
		pc.upstreamModel = rl.upstreamModel
		if last = h.budgets.poolGate(p); last != nil {
			continue // the pool's budget is used up: the next pool, or this answer
		}
		last = h.attemptLoop(w, r, p, pc, rl, i == len(pools)-1, deadline)
		if last == nil {
			return // answered, or the client is gone
		}
	}
	rl.failWith(w, rl.dialect, last)
}

// candidates returns the pools to try for a client model, in order, and
// the model name to route with:
//   - "<pool>/<model>" addresses one pool when a pool has that name: the
//     rest of the name is the model, and it must match that pool's models
//     (else 403); a name whose prefix is no pool's is routed whole;
//   - "auto" tries every pool that names a model of its own for it
//     (default_model, or a model_map entry matching "auto"), by priority;
//   - otherwise every pool whose models match, by priority.
//
// The gateway key's scope is checked against the model after the pool
// prefix is resolved (for "auto": against each pool's model), never
// against the name as sent, so "gpt-pool/claude-x" cannot reach claude-x
// through a key scoped to gpt-*. The failure is the client's answer when
// there is nothing to try.
func (h *Handler) candidates(model string, gk *gwKey) ([]*pool, string, *loopFailure) {
	routed := model
	var out []*pool
	if name, rest, ok := strings.Cut(model, "/"); ok && rest != "" {
		for _, p := range h.pools {
			if p.name != name {
				continue
			}
			if !p.serves(rest) {
				return nil, "", &loopFailure{status: http.StatusForbidden, class: translate.ErrPermission,
					msg: "pool " + strconv.Quote(p.name) + " does not serve model " + quoteClient(rest) + " (its models: " + strings.Join(p.models, " ") + ")"}
			}
			out, routed = []*pool{p}, rest
			break
		}
	}
	if model != "auto" && !gk.allowsModel(routed) {
		return nil, "", &loopFailure{status: http.StatusForbidden, class: translate.ErrPermission,
			msg: "gateway key " + gk.id + " may not use model " + quoteClient(routed)}
	}
	if out == nil {
		for _, p := range h.sortedPools {
			if model == "auto" && p.choosesAuto() || model != "auto" && p.serves(model) {
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		return nil, "", h.notServed(model, gk)
	}
	allowed := out[:0:0]
	for _, p := range out {
		if gk.allowsPool(p.name) && (model != "auto" || gk.allowsModel(p.upstreamModel(model))) {
			allowed = append(allowed, p)
		}
	}
	if len(allowed) == 0 {
		return nil, "", &loopFailure{status: http.StatusForbidden, class: translate.ErrPermission,
			msg: "gateway key " + gk.id + " may not use the pools serving model " + quoteClient(model)}
	}
	return allowed, routed, nil
}

// loopFailure is the gateway's answer when a pool could not serve the
// request; the last pool's failure is written to the client.
type loopFailure struct {
	status int
	class  translate.ErrorClass
	msg    string
	// retryAfter is the Retry-After sent (0: none).
	retryAfter time.Duration
	// noRetry sends x-should-retry: false: no retry an SDK makes can
	// help (every key rejected by its upstream or disabled, or the
	// soonest key or budget back after longer than keypool.MaxClientRetryAfter).
	noRetry bool
	// param and code are the OpenAI error's param and code ("" for null
	// and the class's default), as OpenAI names them for the same error
	// ("model" and "model_not_found" for a model no pool serves)
	param, code string
}

// failWith writes a loopFailure in the client's dialect, with
// x-should-retry: false when f.noRetry, so the client sees the wait at
// once instead of its SDK's retries being refused again within seconds.
func (rl *requestLog) failWith(w http.ResponseWriter, d translate.Dialect, f *loopFailure) {
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(f.retryAfter.Seconds())))))
	}
	if f.noRetry {
		w.Header().Set("X-Should-Retry", "false")
	}
	if f.param != "" || f.code != "" {
		rl.failRequest(w, d, &translate.Error{Class: f.class, Param: f.param, Code: f.code, Message: clipMessage(f.msg, maxErrorMessage)})
		return
	}
	rl.fail(w, d, f.status, f.class, f.msg)
}

// callKind is what a call asks of an upstream key.
type callKind uint8

const (
	// kindCompletion: a chat completion, message or response, in the
	// key's dialect (translated when it differs from the client's).
	kindCompletion callKind = iota
	// kindCountTokens: Anthropic's count_tokens, on a key that can count
	// (upstreamKey.counter).
	kindCountTokens
	// kindPassthrough: an OpenAI endpoint passed through as it is (the
	// model rewritten), e.g. embeddings; see passthrough.
	kindPassthrough
)

// call is what one client request asks of the upstreams.
type call struct {
	pass          *passthrough       // the endpoint, for kindPassthrough
	req           *translate.Request // the parsed request (completions), nil for the others
	raw           []byte             // the client's body
	clientModel   string
	upstreamModel string
	bodies        [4]*[]byte // upstream bodies by upstream dialect, built on first use
	session       string     // affinity session id
	tokens        int64      // rough token estimate of the request, for tpm gates
	model404      int32      // upstream "model not found" answers so far
	forbidden     int32      // upstream key-level 403 answers so far
	kind          callKind
	dialect       translate.Dialect // the client's
	stream        bool
	hideUsage     bool // the usage chunk was added for accounting only
	mixed         bool // a failure other than a 403 or a model 404 happened
	// overLimit is the last over-limit 429 of the request (see
	// relayKept): the request's own answer even when a later key failed
	// otherwise
	overLimit *attemptResult

	// exitsTried are the egress exits that failed in this request (egress.go)
	exitsTried []*egressExit

	// overUnsure: an over-limit answer of this request rests on an
	// estimate of its size (overInputLimit): the client is not told that
	// retrying is in vain
	overUnsure bool
	// over is what the "request larger than the key's limit" answers
	// said (overlimit.go); nil: none
	over *overLimits
}

// body returns the request body for an upstream dialect, built once per
// dialect and kept for the call's retries: for a completion, the parsed
// request's encoding (the client's bytes after the dialect's hygiene with
// the model rewritten, or a translation; see translate.Request.Encode),
// plus the usage chunk asked of a streamed Chat passthrough; for the
// other kinds the client's bytes with the model rewritten. Errors are the
// client's (*translate.Error, 400).
func (c *call) body(ctx context.Context, up translate.Dialect) ([]byte, error) {
	if c.kind == kindPassthrough {
		up = c.dialect // one body whatever the key's dialect
	}
	if b := c.bodies[up]; b != nil {
		return *b, nil
	}
	b, err := c.encode(ctx, up)
	if err != nil {
		return nil, err
	}
	if c.kind == kindCompletion && c.stream && c.dialect == translate.OpenAIChat {
		if up == translate.OpenAIChat {
			// ask for the usage chunk so the pool can count tokens; it is
			// hidden again from a client that did not ask for it
			var asked bool
			b, asked = c.req.AddStreamUsage(b)
			c.hideUsage = !asked
		} else {
			// a translated stream ends with a usage chunk only when
			// the client asked for one, as OpenAI's does
			c.hideUsage = !c.req.StreamUsageAsked()
		}
	}
	c.bodies[up] = &b
	return b, nil
}

// encode is the one place where the client's request becomes an upstream
// body. A translation of a large body waits for a decode slot
// (decodeSlot), so that a burst of large translated requests does not
// encode them all at once; ctx is the client's.
func (c *call) encode(ctx context.Context, up translate.Dialect) ([]byte, error) {
	model := c.upstreamModel
	if model == c.clientModel {
		model = "" // the client's
	}
	if c.kind == kindCountTokens {
		return translate.CountTokensBody(up, c.raw, model)
	}
	if c.req == nil {
		if model == "" {
			return c.raw, nil // pass through untouched
		}
		return translate.SetModel(c.raw, model)
	}
	if up != c.dialect {
		release, err := decodeSlot(ctx, len(c.raw))
		if err != nil {
			return nil, err
		}
		defer release()
	}
	return c.req.Encode(up, model)
}

// responseModel is the model name to write into responses: the client's,
// whenever the upstream was asked for another one or the answer is
// translated; "" (keep the upstream's bytes) otherwise.
func (c *call) responseModel(up translate.Dialect) string {
	if up != c.dialect || c.upstreamModel != c.clientModel {
		return c.clientModel
	}
	return ""
}

// attemptResult tells the attempt loop what happened.
type attemptResult struct {
	done      bool // the client has its answer (or is gone)
	outcome   keypool.Outcome
	status    int    // upstream status, 0 when none
	errBody   []byte // upstream error body (bounded), for the final error
	clientErr []byte // the upstream's answer in the client's dialect, relayed when no other key can be tried
	routedVia string // X-Routed-Via of clientErr
	key       string // the log's id of the key that answered clientErr

	// exitsDown: every exit of the key failed (egress.go)
	exitsDown *exitsUnreachableError
	// exitLost: the attempt's egress exit was lost before anything reached
	// the client; the key may be tried again (by another exit)
	exitLost bool
}

// attemptLoop leases keys of pool p and tries them until one answers,
// the retry budget is spent, or no key can be had in time. It returns nil
// when the client got its answer (or went away), else the failure to
// report (the caller may fall back to another pool first).
//
// Budget: transient failures (5xx, network, timeout) spend max_retries.
// Keys that answered 401/402/403 or failed transiently are not tried again
// in this request; a key that answered 429 may be, once its cooldown ends.
// The number of attempts is capped at 2 x keys + max_retries + 1, and no
// attempt starts after the deadline. A pool that is not the last candidate
// is not waited for: when none of its keys is free now, the next pool is
// tried.
func (h *Handler) attemptLoop(w http.ResponseWriter, r *http.Request, p *pool, c *call, rl *requestLog, lastPool bool, deadline time.Time) *loopFailure {
	ctx := r.Context()
	var failed, limited []*keypool.Key
	var hostsDown []string
	avoidLimited := false
	// serves reports whether uk can serve this request at all (its
	// endpoint and model); a key that cannot is skipped, and is no part
	// of why the request found no key (unavailable)
	serves := func(uk *upstreamKey) bool {
		if c.kind == kindPassthrough && !c.pass.servedBy(uk) {
			return false // a passthrough endpoint goes to the keys that serve it
		}
		return !p.keyLacksModel(uk, c.upstreamModel) // a learned model goes to the keys that list it
	}
	skip := func(k *keypool.Key) bool {
		uk, ok := p.keys[k.Fingerprint()]
		if !ok || !serves(uk) {
			return true // a key of a newer config this instance cannot route, or one that cannot serve the request
		}
		for _, f := range failed {
			if f == k {
				return true
			}
		}
		if avoidLimited {
			for _, f := range limited {
				if f == k {
					return true
				}
			}
		}
		for _, h := range hostsDown {
			if h == uk.host {
				return true // refused, DNS or TLS failure: the host is down
			}
		}
		if uk.egress != nil && uk.egress.exhausted(c.exitsTried) {
			return true // every exit of the key failed in this request
		}
		return c.skipOverLimit(k) // its limit is known to be no larger than one that refused the request
	}
	// unfit reports whether the key with log id id cannot serve this
	// request (serves), or is one of a newer config this instance
	// cannot route; unavailable and exhausted ask it of every key, so
	// the keys are indexed by id once, when first asked
	var byID map[string]*upstreamKey
	unfit := func(id string) bool {
		if byID == nil {
			byID = make(map[string]*upstreamKey, len(p.keys))
			for _, uk := range p.keys {
				if _, dup := byID[uk.id]; !dup {
					byID[uk.id] = uk
				}
			}
		}
		uk, ok := byID[id]
		return !ok || !serves(uk)
	}
	transientLeft := p.maxRetries
	maxAttempts := 2*len(p.keys) + p.maxRetries + 1
	first := len(rl.attempts) // this pool's attempts are rl.attempts[first:]
	var last *attemptResult
	for n := 0; n < maxAttempts; n++ {
		wait := min(p.acquireTimeout, time.Until(deadline))
		if !lastPool {
			wait = 0
		}
		waitStart := time.Now()
		opts := keypool.AcquireOptions{Skip: skip, Timeout: max(wait, 0),
			Model: c.upstreamModel, Session: c.session, Tokens: c.tokens}
		var lease *keypool.Lease
		var err error
		if len(limited) > 0 {
			// prefer a key that has not refused this request yet; go back
			// to one that answered 429 only when no other can serve
			avoidLimited = true
			lease, err = p.kp.Acquire(ctx, keypool.AcquireOptions{Skip: skip, Model: c.upstreamModel, Tokens: c.tokens})
			avoidLimited = false
		}
		if lease == nil && ctx.Err() == nil {
			lease, err = p.kp.Acquire(ctx, opts)
		}
		rl.acquireWait += time.Since(waitStart)
		if err != nil {
			if ctx.Err() != nil {
				rl.status = 499
				return nil
			}
			if c.relayKept(w, rl, p, last) {
				return nil
			}
			if f := exitsFailure(last); f != nil {
				return f
			}
			return unavailable(err, last, rl, rl.attempts[first:], c.clientModel, unfit)
		}
		uk := p.keys[lease.Key().Fingerprint()]
		res := h.attempt(w, r, p, uk, lease, c, rl, deadline)
		if res.done {
			return nil
		}
		last = &res
		if res.outcome.OverLimit > 0 && res.clientErr != nil {
			c.overLimit = last
		}
		if k := res.outcome.Kind; k != keypool.ModelNotFound && k != keypool.Forbidden && res.outcome.OverLimit == 0 {
			c.mixed = true // the upstream's own 403/404 is the answer only when it is every failure
		}
		if res.outcome.Kind.SpendsRetry() {
			transientLeft--
			if transientLeft < 0 {
				break
			}
		}
		if res.outcome.Kind != keypool.RateLimited && !res.exitLost {
			failed = append(failed, lease.Key())
		} else {
			limited = append(limited, lease.Key())
		}
		if res.outcome.HostDown {
			hostsDown = append(hostsDown, uk.host)
		}
		if !time.Now().Before(deadline) {
			if c.relayKept(w, rl, p, last) {
				return nil
			}
			f := exhausted(last, rl, rl.attempts[first:], p.kp, unfit)
			f.msg += "; total_timeout reached"
			return f
		}
	}
	if c.relayKept(w, rl, p, last) {
		return nil
	}
	if f := exitsFailure(last); f != nil {
		return f
	}
	return exhausted(last, rl, rl.attempts[first:], p.kp, unfit)
}

// relayKept writes the upstream's own answer kept from the last attempt
// (a model 404, a key-level 403 or a 429 for a request larger than the
// key's limit, see attemptResult.clientErr) as the client's answer when
// no other key can be tried, and reports whether it did. A 403 is
// relayed only when every failure of the request was a 403, a model 404
// or an over-limit 429 (c.mixed false); a model 404 and an over-limit
// 429 always, the latter with X-Should-Retry: false only when no key of
// pool p may still take it (c.tooLargeForPool: another key that failed
// otherwise, or was not asked and whose limit is unknown, may take the
// request once it recovers). An
// over-limit 429 is kept across attempts: when a later key failed
// otherwise and none is left, the client gets that 429 (the vendor's
// word on its request), not the gateway's error for the later failure.
func (c *call) relayKept(w http.ResponseWriter, rl *requestLog, p *pool, last *attemptResult) bool {
	if (last == nil || last.clientErr == nil) && c.overLimit != nil {
		last = c.overLimit
	}
	if last == nil || last.clientErr == nil || last.outcome.Kind != keypool.ModelNotFound && last.outcome.OverLimit == 0 && c.mixed {
		return false
	}
	if last.outcome.OverLimit > 0 && !c.mixed && !c.overUnsure && c.tooLargeForPool(p) {
		w.Header().Set("X-Should-Retry", "false")
	}
	rl.key = last.key
	relayUpstreamError(w, rl, c.dialect, last.routedVia, last.status, nil, last.clientErr)
	return true
}

// attempt sends the call to one key and, on success, relays the answer:
// build, send, check (classify), relay (relayJSON or relayStream,
// streaming.go). It always releases the lease.
func (h *Handler) attempt(w http.ResponseWriter, r *http.Request, p *pool, uk *upstreamKey, lease *keypool.Lease, c *call, rl *requestLog, deadline time.Time) attemptResult {
	x := &exchange{h: h, w: w, r: r, p: p, uk: uk, lease: lease, c: c, rl: rl, t0: time.Now()}
	actx, url := x.start(deadline)
	defer x.cancel()
	defer x.timer.Stop()
	req, res, ok := x.build(actx, url)
	if !ok {
		return res
	}
	resp, res, ok := x.send(req)
	if !ok {
		return res
	}
	defer resp.Body.Close()
	body := &idleReader{r: resp.Body, timer: x.timer, d: p.requestTimeout, rearmed: &x.rearmed}
	if res, ok := x.check(resp, body); !ok {
		return res
	}
	if c.kind != kindCompletion || !c.stream || !isEventStream(resp.Header.Get("Content-Type")) {
		return x.relayJSON(resp, body)
	}
	return x.relayStream(resp, body)
}

// exchange is one attempt in progress: one request of a call to one key,
// with its timer and the bookkeeping of its outcome. It is the attempt's
// one allocation of its own, kept small (the hot path).
type exchange struct {
	h        *Handler
	w        http.ResponseWriter
	r        *http.Request // the client's; its context is the client's
	p        *pool
	uk       *upstreamKey
	lease    *keypool.Lease
	c        *call
	rl       *requestLog
	cancel   context.CancelFunc
	timer    *time.Timer
	t0       time.Time
	upTTFB   time.Duration // the upstream's time to first byte in this attempt
	connect  time.Duration // a new connection's set-up, for the log (0: reused)
	timedOut atomic.Bool
	wrote    atomic.Bool       // the whole request went to the upstream (httptrace WroteRequest)
	rearmed  atomic.Bool       // the first wait is over: request_timeout runs between reads
	d        translate.Dialect // the upstream's (upstreamFor)
	exit     *egressExit       // the egress exit that carried the attempt, nil: direct
	// trace is the attempt's connection-timing and wrote hooks, set in
	// the attempt's context by start (part of the exchange's one
	// allocation); connStart and connDur are the Unix ns of a new
	// connection's dial and its set-up time (the hooks may run on the
	// transport's dialing goroutine)
	trace              httptrace.ClientTrace
	connStart, connDur atomic.Int64

	// a committed stream's stream_idle_timeout (streaming.go, checkStall)
	stallTimer atomic.Pointer[time.Timer]
	lastData   atomic.Int64 // when the stream's last data line was read, Unix ns
	stalled    atomic.Bool  // the stream sent no data for stream_idle_timeout
}

// start picks the key's upstream and arms the attempt's timer: until the
// response headers (and, for streams, the first content event)
// attempt_timeout, streamed or not, so a hung key costs at most that
// before the next key is tried; never past the search deadline; then
// request_timeout between reads (idleReader). It returns the attempt's
// context and the upstream URL.
func (x *exchange) start(deadline time.Time) (actx context.Context, url string) {
	x.trace = httptrace.ClientTrace{ConnectStart: x.connectStart, ConnectDone: x.connectDone, WroteRequest: x.wroteRequest}
	actx, cancel := context.WithCancel(httptrace.WithClientTrace(
		context.WithValue(x.r.Context(), connectTimeoutKey{}, x.p.connectTimeout), &x.trace))
	x.cancel = cancel
	firstWait := x.uk.attemptTimeout
	if firstWait <= 0 {
		firstWait = x.p.attemptTimeout
	}
	if x.lease.Probe() {
		firstWait = min(firstWait, x.lease.ProbeTimeout())
	}
	firstWait = max(min(firstWait, time.Until(deadline)), time.Millisecond)
	x.timer = time.AfterFunc(firstWait, x.expire)
	if x.lease.AffinityHit() {
		x.rl.affinityHit = true
	}
	var d translate.Dialect
	switch x.c.kind {
	case kindCountTokens:
		d, url, _ = x.uk.counter()
	case kindPassthrough:
		d = translate.OpenAIChat
		if x.uk.chatURL == "" {
			d = translate.OpenAIResponses // Bearer auth alike
		}
		url = x.uk.openAIBase() + x.c.pass.suffix
	default:
		d, url = x.uk.target(x.c.dialect)
	}
	x.d = d
	x.rl.upstreamDialect = d
	return actx, url
}

// expire ends an attempt that ran out of time.
func (x *exchange) expire() {
	x.timedOut.Store(true)
	x.cancel()
}

// finish books the attempt's outcome to the key (releasing its lease) and
// to the request log.
func (x *exchange) finish(o keypool.Outcome) {
	if o.Kind == keypool.Success {
		o.Tokens, o.TTFB = x.rl.usage.Tokens(), x.upTTFB
	}
	x.lease.Release(o)
	x.rl.attempts = append(x.rl.attempts, attemptLog{key: x.uk.id, outcome: o.Kind.String(), status: o.Status,
		connect: x.connect, dur: time.Since(x.t0), exit: x.exit.label()})
}

// fail books an outcome with no upstream error body (a network error, a
// timeout, an unreadable answer) and ends the attempt: done when the
// client went away (499), else the loop moves on.
func (x *exchange) fail(o keypool.Outcome) attemptResult {
	x.finish(o)
	if o.Kind == keypool.Canceled && x.r.Context().Err() != nil {
		x.rl.status = 499
		return attemptResult{done: true}
	}
	// the attempt's own loss (its egress exit, classifyErr) with the
	// client still waiting: nothing reached it yet, so the loop moves on,
	// to the same key too (its next attempt leaves by another exit: the
	// lost one cools)
	return attemptResult{outcome: o, status: o.Status, exitLost: o.Kind == keypool.Canceled}
}

// classifyErr classifies a transport or read error of the attempt: the
// client's going away, the attempt's timeout, the loss of its egress exit
// (not the key's fault, see exitLost), else the error itself. A timeout
// of the first wait after the upstream took the whole request (no
// answer's headers or first bytes yet, or a stream's first content) is
// marked AwaitingAnswer: the client's request may be a long generation,
// so keypool leaves the key alone until the gateway's own probe (verify.go)
// times out or fails too. A timeout before that (dial, TLS, writing the
// request) or between reads of an answer begun stays the key's.
func (x *exchange) classifyErr(err error, status int) keypool.Outcome {
	if x.r.Context().Err() != nil {
		return keypool.Outcome{Kind: keypool.Canceled, Status: status, Message: "client went away"}
	}
	if x.timedOut.Load() {
		if x.wrote.Load() && !x.rearmed.Load() {
			return keypool.Outcome{Kind: keypool.Timeout, Status: status, AwaitingAnswer: true,
				Message: "no answer within attempt_timeout (the key is probed before it is blamed)"}
		}
		return keypool.Outcome{Kind: keypool.Timeout, Status: status, Message: "upstream timeout"}
	}
	if x.exitLost(err) {
		return keypool.Outcome{Kind: keypool.Canceled, Status: status, Message: "egress exit " + x.exit.name + " lost"}
	}
	o := keypool.Classify(0, nil, err, nil, time.Now())
	o.Status = status
	return o
}

// build makes the upstream request: the call's body for the upstream's
// dialect, the upstream's auth and version headers. A body that cannot be
// expressed for this upstream is the client's problem (400), not the
// key's; ok false ends the attempt with res.
func (x *exchange) build(actx context.Context, url string) (req *http.Request, res attemptResult, ok bool) {
	c, rl := x.c, x.rl
	reqBody, err := c.body(x.r.Context(), x.d)
	if err != nil {
		if x.r.Context().Err() != nil {
			x.finish(keypool.Outcome{Kind: keypool.Canceled})
			rl.status = 499
			return nil, attemptResult{done: true}, false
		}
		x.finish(keypool.Outcome{Kind: keypool.ClientError, Status: http.StatusBadRequest})
		if c.kind == kindCountTokens {
			// a count request the key's dialect cannot express: the
			// client gets the estimate, as when a native count fails
			return nil, attemptResult{outcome: keypool.Outcome{Kind: keypool.ClientError, Status: http.StatusBadRequest}}, false
		}
		var te *translate.Error
		if errors.As(err, &te) {
			rl.failRequest(x.w, c.dialect, te)
		} else {
			rl.fail(x.w, c.dialect, http.StatusBadRequest, translate.ErrInvalidRequest, err.Error())
		}
		return nil, attemptResult{done: true}, false
	}
	req, err = newUpstreamRequest(actx, http.MethodPost, url, bytes.NewReader(reqBody))
	if err != nil {
		x.finish(keypool.Outcome{Kind: keypool.NetworkError, Message: "building upstream request"})
		return nil, attemptResult{outcome: keypool.Outcome{Kind: keypool.NetworkError}}, false
	}
	hdr := req.Header
	hdr.Set("Content-Type", "application/json")
	upstreamFor(x.d).authorize(hdr, x.uk, c.dialect, x.r.Header)
	if c.stream {
		hdr.Set("Accept", "text/event-stream")
	} else {
		hdr.Set("Accept", "application/json")
	}
	if ua := x.r.Header.Get("User-Agent"); ua != "" {
		hdr.Set("User-Agent", ua)
	}
	hdr.Set("X-Request-Id", rl.id)
	return req, attemptResult{}, true
}

// connectStart, connectDone and wroteRequest are the attempt's trace
// hooks (x.trace): the first new connection's set-up time for the log,
// and whether the whole request went to the upstream.
func (x *exchange) connectStart(string, string) { x.connStart.CompareAndSwap(0, time.Now().UnixNano()) }

func (x *exchange) connectDone(_, _ string, err error) {
	if st := x.connStart.Load(); err == nil && st != 0 {
		x.connDur.CompareAndSwap(0, time.Now().UnixNano()-st)
	}
}

func (x *exchange) wroteRequest(i httptrace.WroteRequestInfo) {
	if i.Err == nil {
		x.wrote.Store(true)
	}
}

// send sends the request (its context carries the attempt's trace, see
// start), timing a new connection's set-up for the log.
func (x *exchange) send(req *http.Request) (*http.Response, attemptResult, bool) {
	resp, exit, err := egressDo(x.uk.egress, req, x.c.session, &x.c.exitsTried, x.attemptEnded)
	x.connect = time.Duration(x.connDur.Load())
	x.exit = exit
	x.rl.exit = exit.label()
	if err != nil {
		var eu *exitsUnreachableError
		if errors.As(err, &eu) {
			return nil, x.exitsUnreachable(eu), false
		}
		return nil, x.fail(x.classifyErr(err, 0)), false
	}
	x.upTTFB = time.Since(x.t0)
	return resp, attemptResult{}, true
}

// check hands the answer's rate-limit headers to the key's pool
// (learned limits) and classifies the upstream's status: a non-2xx answer (its body read,
// bounded and redacted) or a redirect (never followed: the key would
// travel with it, so a base_url that needs one is misconfigured) settles
// the attempt; ok is true for a 2xx.
func (x *exchange) check(resp *http.Response, body io.Reader) (attemptResult, bool) {
	var errBody []byte
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		errBody, _ = io.ReadAll(io.LimitReader(body, maxUpstreamErrorBody))
		errBody = x.uk.forms.redact(errBody) // every form: literal, %-encoded, base64, hex
	}
	o := keypool.ClassifyResponseFor(x.c.upstreamModel, resp.StatusCode, resp.Header, errBody[:min(len(errBody), keypool.MaxClassifyBody)], time.Now())
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		o = keypool.Outcome{Kind: keypool.ServerError, Status: resp.StatusCode, Message: "upstream redirected (" + strconv.Itoa(resp.StatusCode) + "); check base_url"}
	}
	// every answer teaches the key's limits, success or not, streamed or
	// not (ignored with learn_limits off), except one saying the model
	// does not exist: a client's made-up model names must not fill the
	// key's learned table
	if o.Kind != keypool.ModelNotFound {
		if rl, ok := keypool.ParseRateLimits(resp.Header, time.Now()); ok {
			x.lease.Learn(rl)
		}
	}
	if o.Kind != keypool.Success {
		return x.settle(o, resp.StatusCode, resp.Header, errBody), false
	}
	return attemptResult{}, true
}

// settle ends an attempt whose upstream said no with an error body (an
// HTTP error answer, or an in-band error event before the first content).
// What the request caused is relayed to the client in its dialect and
// never retried; a model the key lacks moves the request to at most one
// more key, whose answer the client then gets; the rest is the key's and
// the loop moves on. A token count is never relayed as an error: the
// client gets the local estimate instead.
func (x *exchange) settle(o keypool.Outcome, status int, hdr http.Header, errBody []byte) attemptResult {
	c := x.c
	if o.Kind == keypool.RateLimited && o.HasRetryAfter && o.RetryAfter <= 0 {
		// "retry now" (0 or a past date) from a key that just refused:
		// use the backoff ladder instead of hammering it
		o.HasRetryAfter = false
	}
	if c.kind == kindPassthrough && o.Kind == keypool.ClientError && status == http.StatusNotFound {
		// a passthrough endpoint the key's base URL lacks (a relay with
		// no /embeddings) is the key's, not the request's: judged as a
		// model the key lacks, so another key is tried
		o.Kind = keypool.ModelNotFound
	}
	inputLimit := false // o is about Anthropic's input tokens per minute
	if o.Kind == keypool.RateLimited && status == http.StatusTooManyRequests && c.kind == kindCompletion {
		if ov, sure := x.overInputLimit(o, hdr, errBody); ov.OverLimit > 0 {
			o, inputLimit = ov, true // larger than the key's whole input-tokens limit
			c.overUnsure = c.overUnsure || !sure
		}
	}
	relay := o.Kind == keypool.ClientError && c.kind != kindCountTokens
	switch o.Kind {
	case keypool.ModelNotFound:
		c.model404++
		relay = c.model404 >= 2
	case keypool.Forbidden:
		// a 403 the request itself can cause (an anthropic-beta the
		// account lacks, content a relay's moderation refuses): when a
		// second key answers the same, it is the request's answer, and
		// the second key is not blamed for it
		c.forbidden++
		if c.forbidden >= 2 {
			relay = true
			o = keypool.Outcome{Kind: keypool.ClientError, Status: o.Status, Code: o.Code, Message: o.Message}
		}
	case keypool.ClientError:
		if o.OverLimit > 0 && c.kind != kindCountTokens {
			// larger than this key's whole per-minute limit: a key with a
			// larger one may take it; relayed once a second key says the
			// same (overlimit.go). The key is not blamed either way.
			relay = c.noteOverLimit(x.p, x.lease.Key(), o, inputLimit)
		}
	}
	booked := o
	if c.kind == kindPassthrough && o.Kind == keypool.ModelNotFound {
		// a passthrough request's model (an embeddings model) is the
		// client's to name: a 404 for it benches no key, since a bench
		// for that model name would also keep the key from completions
		// naming it
		booked = keypool.Outcome{Kind: keypool.ClientError, Status: o.Status, Code: o.Code, Message: o.Message}
	}
	x.finish(booked)
	up := x.d
	if c.kind == kindPassthrough {
		up = c.dialect // an OpenAI error body, whatever the key's dialect
	}
	if relay {
		x.rl.key = x.uk.id
		if status == http.StatusTooManyRequests && !c.overUnsure || requestOwnFailure(o) {
			// a 429 the request caused (larger than the key's limit:
			// waiting for the upstream's Retry-After would not help,
			// unless the size was only estimated: overInputLimit), or
			// the request's own failure whatever its status (a 5xx
			// keypool counts as the client's): the SDKs would retry it
			// in vain; the upstream's headers (Retry-After) are not kept
			noRetryHint(x.w.Header())
			hdr = nil
		}
		relayUpstreamError(x.w, x.rl, c.dialect, x.routedVia(), status, hdr,
			scrubbedError(up, c.dialect, status, errBody, x.uk.forms))
		return attemptResult{done: true}
	}
	res := attemptResult{outcome: o, status: status, errBody: errBody}
	if o.Kind == keypool.ModelNotFound || o.Kind == keypool.Forbidden || o.OverLimit > 0 {
		// kept in case no other key can be tried: the client then gets
		// this answer, not a gateway error
		res.clientErr = scrubbedError(up, c.dialect, status, errBody, x.uk.forms)
		res.routedVia, res.key = x.routedVia(), x.uk.id
	}
	return res
}

// streamErrorOutcome classifies an in-band stream error as the same error
// with its HTTP status would be; an error event is never a success, even
// when its status says otherwise.
func streamErrorOutcome(model string, se *translate.StreamError, h http.Header) keypool.Outcome {
	o := keypool.ClassifyResponseFor(model, se.Status, h, se.Body, time.Now())
	if o.Kind == keypool.Success {
		o = keypool.Outcome{Kind: keypool.ServerError, Status: se.Status, Message: "upstream error event"}
	}
	return o
}

// scrubbedError renders an upstream error body in the client's dialect
// with the upstream key redacted in every form secretForms knows (literal,
// percent-encoded, base64 in either alphabet, inside Basic credentials,
// JSON-escaped, hex). errBody comes already redacted (f.redact, as the
// attempt reads it); what the translation may reveal (a form the raw body
// hid) is redacted here. When the rendered body would still show the key,
// the upstream's message is withheld altogether. f is the key's forms,
// built once at provision (upstreamKey.forms).
func scrubbedError(up, client translate.Dialect, status int, errBody []byte, f *secretForms) []byte {
	out := translate.TranslateError(up, client, status, errBody)
	if f.contains(out) {
		// the translation decoded a form the raw body hid
		out = f.redact(out)
		if f.contains(out) || !gjson.ValidBytes(out) {
			out = translate.ErrorBody(client, translate.ClassForStatus(status),
				"upstream rejected the request ("+strconv.Itoa(status)+"); its message was withheld because it contained credentials")
		}
	}
	return out
}

// unavailable is the failure when no key could be leased: 429 (class
// rate_limited) when every key that can serve the request is held by a
// rate limit (busy, over its rpm, tpm, quota or pace, cooling on its
// upstream's 429, or skipped after a 429 in this request:
// keypool.UnavailableError.KeysRateLimited); 404 model_not_found in the
// client's dialect when every such key is benched for the model (its
// upstream answered 404 for it again and again); else 503; either with
// Retry-After and a per-key summary (masked ids); or the last upstream
// failure when every key already failed this request. tried are the
// attempts of this pool in this request; model is the client's model
// name; unfit(id) reports whether the key with log id id cannot serve
// the request at all (its endpoint or model): such a key is left out of
// the decision and named as such in the summary.
func unavailable(err error, last *attemptResult, rl *requestLog, tried []attemptLog, model string, unfit func(id string) bool) *loopFailure {
	var ue *keypool.UnavailableError
	if !errors.As(err, &ue) {
		return &loopFailure{status: http.StatusServiceUnavailable, class: translate.ErrUpstreamUnavailable, msg: "no upstream key available"}
	}
	if last != nil && ue.NoKeys && last.outcome.Kind.Transient() {
		// every key failed this request with a 5xx, network error or
		// timeout: a gateway error naming the last failure
		return exhausted(last, rl, tried, nil, nil)
	}
	// the keys that could serve the request decide; one that does not
	// serve its endpoint or model is not why it failed
	fit := *ue
	fit.Keys = make([]keypool.KeyStatus, 0, len(ue.Keys))
	shown := *ue
	shown.Keys = slices.Clone(ue.Keys)
	for i, k := range ue.Keys {
		if unfit != nil && unfit(k.ID) {
			// whatever its own state (ready, or cooling on another
			// model's failure), it is not why this request failed
			shown.Keys[i] = keypool.KeyStatus{ID: k.ID, State: keypool.StateSkipped, Reason: reasonUnfit}
			continue
		}
		fit.Keys = append(fit.Keys, k)
	}
	if modelMissing(fit.Keys) {
		return &loopFailure{status: http.StatusNotFound, class: translate.ErrNotFound, param: "model", code: "model_not_found",
			msg: "model " + quoteClient(model) + " was not found by the upstreams: " + shown.Error()}
	}
	// a rate limit is the client's to wait out: the official SDKs raise
	// their RateLimitError for a 429 and retry it after Retry-After, as
	// they would the vendor's own
	limited := fit.KeysRateLimited(func(id string) bool { return lastRateLimited(tried, id) })
	ra := ue.RetryAfter
	if ra == 0 {
		// every key skipped in this request: the soonest end of a
		// cooldown, or of a running probe of a provisional verdict
		ra = fit.SoonestBack(time.Now())
	}
	if ra == 0 && limited {
		ra = time.Second // a 429 always says when to come back
	}
	if ra > 0 && ra <= time.Second {
		// keys merely busy: spread the retries of many waiting clients
		// over a few seconds instead of sending them all back at once
		ra = time.Second + rand.N(2*time.Second)
	}
	// every key rejected by its upstream (401, 402, 403, quota) with the
	// verdict confirmed by the gateway's probe, or disabled: an SDK would
	// wait out Retry-After (up to a minute, twice) only to be refused
	// again; the soonest key back after more than a minute: an SDK
	// ignores the wait and is refused within seconds. A verdict still
	// provisional is a wait (ra: until its probe's answer is due). Not in
	// exhausted: there Retry-After is the last key's, another may be back
	// sooner.
	f := &loopFailure{status: http.StatusServiceUnavailable, class: translate.ErrUpstreamUnavailable, msg: shown.Error(), retryAfter: ra, noRetry: fit.KeysDead() || ra > keypool.MaxClientRetryAfter}
	if limited {
		f.status, f.class = http.StatusTooManyRequests, translate.ErrRateLimited
	}
	return f
}

// reasonUnfit is the summary's reason for a key skipped because it cannot
// serve the request at all (its endpoint or model; see unavailable).
const reasonUnfit keypool.Reason = "does not serve this request"

// modelMissing reports whether every one of keys (at least one) is
// benched for the request's model: each key's upstream answered 404 (or
// a model-level 403) for it repeatedly, so no key serves the model.
func modelMissing(keys []keypool.KeyStatus) bool {
	for _, k := range keys {
		if k.State != keypool.StateBenched {
			return false
		}
	}
	return len(keys) > 0
}

// lastRateLimited reports whether the last of attempts on the key with
// log id id ended rate limited (an upstream 429, keypool.RateLimited).
func lastRateLimited(attempts []attemptLog, id string) bool {
	for i := len(attempts) - 1; i >= 0; i-- {
		if attempts[i].key == id {
			return attempts[i].outcome == keypool.RateLimited.String()
		}
	}
	return false
}

// allRateLimited reports whether every one of attempts (at least one)
// ended rate limited.
func allRateLimited(attempts []attemptLog) bool {
	for _, a := range attempts {
		if a.outcome != keypool.RateLimited.String() {
			return false
		}
	}
	return len(attempts) > 0
}

// exhausted is the failure when attempts ran out: a gateway error naming
// the last upstream failure (never its raw body, which may be from any
// key); 429 (class rate_limited) when every attempt of this pool (tried)
// was refused with a 429, else 502, 503 or 504. A last 429 carries the
// upstream's Retry-After, or, when it named none, when the soonest of
// kp's keys that can serve the request (unfit(id) false; unfit may be
// nil) is back by its own cooldown (soonestKeyBack; kp may be nil), at
// most keypool.MaxClientRetryAfter.
func exhausted(last *attemptResult, rl *requestLog, tried []attemptLog, kp *keypool.Pool, unfit func(id string) bool) *loopFailure {
	f := &loopFailure{status: http.StatusBadGateway, class: translate.ErrUpstreamUnavailable, msg: "all upstream attempts failed"}
	if last != nil {
		f.msg += " (" + strconv.Itoa(len(rl.attempts)) + " attempts; last: " + last.outcome.Message + ")"
		switch last.outcome.Kind {
		case keypool.Timeout:
			f.status = http.StatusGatewayTimeout
		case keypool.RateLimited:
			f.status = http.StatusServiceUnavailable
			if allRateLimited(tried) {
				f.status, f.class = http.StatusTooManyRequests, translate.ErrRateLimited
			}
			if last.outcome.HasRetryAfter {
				f.retryAfter = max(time.Second, last.outcome.RetryAfter)
			} else if kp != nil {
				// the keys' own cooldowns (the pool's backoff after a 429
				// that named no wait) say when one is back; a heuristic, so
				// never more than a client honours
				f.retryAfter = min(soonestKeyBack(kp, unfit), keypool.MaxClientRetryAfter)
			}
		}
	}
	return f
}

// soonestKeyBack returns how long until the first of kp's keys that can
// serve the request (unfit(its id) false; unfit may be nil) may serve
// again by itself (keypool.UnavailableError.SoonestBack over its
// snapshot); zero when such a key is ready now or none tells.
func soonestKeyBack(kp *keypool.Pool, unfit func(id string) bool) time.Duration {
	now := time.Now()
	keys := slices.DeleteFunc(kp.Snapshot(), func(k keypool.KeyStatus) bool { return unfit != nil && unfit(k.ID) })
	for _, k := range keys {
		if k.State == keypool.StateReady {
			return 0
		}
	}
	return (&keypool.UnavailableError{Keys: keys}).SoonestBack(now)
}
