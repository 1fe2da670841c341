package caddymodule

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/http/httptrace"
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
func (h *Handler) serveCompletion(w http.ResponseWriter, r *http.Request, rl *requestLog, gk *gwKey) {
	d := rl.dialect

	// the gateway key's own limits come first: a request they refuse
	// costs no read of its body
	release, wait, err := gk.admit(time.Now())
	if err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
		rl.fail(w, d, http.StatusTooManyRequests, translate.ErrRateLimited, "gateway key "+gk.id+" is over its rate or concurrency limit")
		return
	}
	defer release()
	body, releaseBody, ok := h.readBody(w, r, rl, d)
	if !ok {
		return
	}
	defer releaseBody()
	model, stream, err := translate.RequestInfo(d, body)
	if err == nil {
		slot, cerr := decodeSlot(r.Context(), len(body))
		if cerr != nil {
			rl.status = 499 // the client went away while waiting
			return
		}
		err = translate.ValidateRequest(d, body)
		slot()
	}
	if err != nil {
		var te *translate.Error
		if errors.As(err, &te) {
			rl.failRequest(w, d, te)
		} else {
			rl.fail(w, d, http.StatusBadRequest, translate.ErrInvalidRequest, err.Error())
		}
		return
	}
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

	session := sessionID(r, d, body)
	// one deadline for the whole search, across retries and fallback pools
	deadline := time.Now().Add(pools[0].totalTimeout)
	var last *loopFailure
	for i, p := range pools {
		if i > 0 {
			rl.fallbackFrom = pools[0].name
			w.Header().Set("X-Fallback-From", pools[0].name)
		}
		rl.pool = p.name
		rl.upstreamModel = p.upstreamModel(routed)
		c := &call{dialect: d, raw: body, stream: stream, clientModel: model, upstreamModel: rl.upstreamModel,
			session: session, tokens: int64(len(body) / 4)}
		last = h.attemptLoop(w, r, p, c, rl, i == len(pools)-1, deadline)
		if last == nil {
			return // answered, or the client is gone
		}
	}
	rl.failWith(w, d, last)
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
	status     int
	class      translate.ErrorClass
	msg        string
	retryAfter time.Duration
}

// failWith writes a loopFailure in the client's dialect.
func (rl *requestLog) failWith(w http.ResponseWriter, d translate.Dialect, f *loopFailure) {
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(f.retryAfter.Seconds())))))
	}
	rl.fail(w, d, f.status, f.class, f.msg)
}

// call is what one client request asks of the upstreams.
type call struct {
	dialect       translate.Dialect // the client's
	raw           []byte            // the client's body
	stream        bool
	clientModel   string
	upstreamModel string
	bodies        [4]*[]byte // translated bodies by upstream dialect, built on first use
	hideUsage     bool       // the usage chunk was added for accounting only
	session       string     // affinity session id
	tokens        int64      // rough token estimate of the request, for tpm gates
	model404      int        // upstream "model not found" answers so far
	forbidden     int        // upstream key-level 403 answers so far
	mixed         bool       // a failure other than a 403 or a model 404 happened
}

// body returns the request body for an upstream dialect: the client's
// bytes with the model rewritten when the dialects match, else a
// translation. Errors are the client's (*translate.Error, 400).
//
// A translation of a large body waits for a decode slot (decodeSlot), so
// that a burst of large translated requests does not decode them all at
// once; ctx is the client's.
func (c *call) body(ctx context.Context, up translate.Dialect) ([]byte, error) {
	if b := c.bodies[up]; b != nil {
		return *b, nil
	}
	model := c.upstreamModel
	if up == c.dialect && model == c.clientModel {
		model = "" // pass through untouched
	}
	var b []byte
	var err error
	switch {
	case up != c.dialect:
		release, serr := decodeSlot(ctx, len(c.raw))
		if serr != nil {
			return nil, serr
		}
		b, err = translate.TranslateRequest(c.dialect, up, c.raw, model)
		release()
	case model == "":
		b = c.raw // validated once already (ValidateRequest): no second scan
	default:
		b, err = translate.SetModel(c.raw, model)
	}
	if err == nil && up == translate.OpenAIChat && up == c.dialect {
		// an assistant turn's reasoning goes to OpenAI-compatible upstreams
		// as reasoning_content, the name DeepSeek-style upstreams require
		// back on tool-call turns (a cheap scan; a rename only when found)
		b = translate.ChatReasoningToContent(b)
	}
	if err == nil && up == translate.AnthropicMessages && up == c.dialect {
		// Anthropic rejects empty or whitespace-only text blocks, which
		// clients produce: a cheap scan, a rewrite only when one is found
		b = translate.SanitizeAnthropicRequest(b)
	}
	if err != nil {
		return nil, err
	}
	if up == translate.OpenAIChat && c.dialect == translate.OpenAIChat && c.stream {
		// ask for the usage chunk so the pool can count tokens; it is
		// hidden again from a client that did not ask for it
		var asked bool
		b, asked = translate.AddStreamUsage(b)
		c.hideUsage = !asked
	}
	c.bodies[up] = &b
	return b, nil
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
	skip := func(k *keypool.Key) bool {
		uk, ok := p.keys[k.Fingerprint()]
		if !ok {
			return true // a key of a newer config this instance cannot route
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
		return p.keyLacksModel(uk, c.upstreamModel) // a learned model goes to the keys that list it
	}
	transientLeft := p.maxRetries
	maxAttempts := 2*len(p.keys) + p.maxRetries + 1
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
			if c.relayKept(w, rl, last) {
				return nil
			}
			return unavailable(err, last, rl)
		}
		uk := p.keys[lease.Key().Fingerprint()]
		res := h.attempt(w, r, p, uk, lease, c, rl, deadline)
		if res.done {
			return nil
		}
		last = &res
		if k := res.outcome.Kind; k != keypool.ModelNotFound && k != keypool.Forbidden {
			c.mixed = true // the upstream's own 403/404 is the answer only when it is every failure
		}
		if res.outcome.Kind.SpendsRetry() {
			transientLeft--
			if transientLeft < 0 {
				break
			}
		}
		if res.outcome.Kind != keypool.RateLimited {
			failed = append(failed, lease.Key())
		} else {
			limited = append(limited, lease.Key())
		}
		if res.outcome.HostDown {
			hostsDown = append(hostsDown, uk.host)
		}
		if !time.Now().Before(deadline) {
			if c.relayKept(w, rl, last) {
				return nil
			}
			f := exhausted(last, rl)
			f.msg += "; total_timeout reached"
			return f
		}
	}
	if c.relayKept(w, rl, last) {
		return nil
	}
	return exhausted(last, rl)
}

// relayKept writes the upstream's own answer kept from the last attempt
// (a model 404 or key-level 403, see attemptResult.clientErr) as the
// client's answer when no other key can be tried, and reports whether it
// did. A 403 is relayed only when every failure of the request was a 403
// or a model 404 (c.mixed false); a model 404 always.
func (c *call) relayKept(w http.ResponseWriter, rl *requestLog, last *attemptResult) bool {
	if last == nil || last.clientErr == nil || last.outcome.Kind != keypool.ModelNotFound && c.mixed {
		return false
	}
	rl.key = last.key
	relayUpstreamError(w, rl, c.dialect, last.routedVia, last.status, nil, last.clientErr)
	return true
}

// attempt sends the call to one key and, on success, relays the answer.
// It always releases the lease.
func (h *Handler) attempt(w http.ResponseWriter, r *http.Request, p *pool, uk *upstreamKey, lease *keypool.Lease, c *call, rl *requestLog, deadline time.Time) attemptResult {
	ctx := r.Context()
	actx, cancel := context.WithCancel(context.WithValue(ctx, connectTimeoutKey{}, p.connectTimeout))
	defer cancel()
	// until the response headers (and, for streams, the first content
	// event): attempt_timeout, streamed or not, so a hung key costs at most
	// that before the next key is tried; never past the search deadline;
	// then request_timeout between reads
	firstWait := uk.attemptTimeout
	if firstWait <= 0 {
		firstWait = p.attemptTimeout
	}
	if lease.Probe() {
		firstWait = min(firstWait, lease.ProbeTimeout())
	}
	firstWait = max(min(firstWait, time.Until(deadline)), time.Millisecond)
	var timedOut atomic.Bool
	timer := time.AfterFunc(firstWait, func() { timedOut.Store(true); cancel() })
	defer timer.Stop()

	t0 := time.Now()
	al := attemptLog{key: uk.id}
	if lease.AffinityHit() {
		rl.affinityHit = true
	}
	var upTTFB time.Duration // the upstream's time to first byte in this attempt
	finish := func(o keypool.Outcome) {
		if o.Kind == keypool.Success {
			o.Tokens, o.TTFB = usageTokens(rl.usage), upTTFB
		}
		lease.Release(o)
		al.outcome, al.status, al.dur = o.Kind.String(), o.Status, time.Since(t0)
		rl.attempts = append(rl.attempts, al)
	}
	classifyErr := func(err error, status int) keypool.Outcome {
		if ctx.Err() != nil {
			return keypool.Outcome{Kind: keypool.Canceled, Status: status, Message: "client went away"}
		}
		if timedOut.Load() {
			return keypool.Outcome{Kind: keypool.Timeout, Status: status, Message: "upstream timeout"}
		}
		o := keypool.Classify(0, nil, err, nil, time.Now())
		o.Status = status
		return o
	}

	up, target := uk.target(c.dialect)
	rl.upstreamDialect = up
	// settle ends an attempt whose upstream said no with an error body (an
	// HTTP error answer, or an in-band error event before the first
	// content). What the request caused is relayed to the client in its
	// dialect and never retried; a model the key lacks moves the request
	// to at most one more key, whose answer the client then gets; the
	// rest is the key's and the loop moves on.
	settle := func(o keypool.Outcome, status int, hdr http.Header, errBody []byte) attemptResult {
		if o.Kind == keypool.RateLimited && o.HasRetryAfter && o.RetryAfter <= 0 {
			// "retry now" (0 or a past date) from a key that just refused:
			// use the backoff ladder instead of hammering it
			o.HasRetryAfter = false
		}
		relay := o.Kind == keypool.ClientError
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
		}
		finish(o)
		if relay {
			rl.key = uk.id
			relayUpstreamError(w, rl, c.dialect, p.name+"/"+uk.public, status, hdr,
				scrubbedError(up, c.dialect, status, errBody, uk.forms))
			return attemptResult{done: true}
		}
		res := attemptResult{outcome: o, status: status, errBody: errBody}
		if o.Kind == keypool.ModelNotFound || o.Kind == keypool.Forbidden {
			// kept in case no other key can be tried: the client then gets
			// this answer, not a gateway error
			res.clientErr = scrubbedError(up, c.dialect, status, errBody, uk.forms)
			res.routedVia, res.key = p.name+"/"+uk.public, uk.id
		}
		return res
	}
	reqBody, err := c.body(ctx, up)
	if err != nil {
		if ctx.Err() != nil {
			finish(keypool.Outcome{Kind: keypool.Canceled})
			rl.status = 499
			return attemptResult{done: true}
		}
		// the request cannot be expressed for this upstream: the client's
		// problem, not the key's
		finish(keypool.Outcome{Kind: keypool.ClientError, Status: http.StatusBadRequest})
		var te *translate.Error
		if errors.As(err, &te) {
			rl.failRequest(w, c.dialect, te)
		} else {
			rl.fail(w, c.dialect, http.StatusBadRequest, translate.ErrInvalidRequest, err.Error())
		}
		return attemptResult{done: true}
	}
	req, err := http.NewRequestWithContext(actx, http.MethodPost, target, bytes.NewReader(reqBody))
	if err != nil {
		finish(keypool.Outcome{Kind: keypool.NetworkError, Message: "building upstream request"})
		return attemptResult{outcome: keypool.Outcome{Kind: keypool.NetworkError}}
	}
	req.Header.Set("Content-Type", "application/json")
	if up == translate.AnthropicMessages {
		req.Header.Set("X-Api-Key", uk.secret)
		req.Header.Set("Anthropic-Version", anthropicVersion)
		if c.dialect == translate.AnthropicMessages {
			if beta := r.Header.Values("Anthropic-Beta"); len(beta) > 0 {
				req.Header["Anthropic-Beta"] = beta
			}
		}
	} else {
		req.Header.Set("Authorization", uk.authHeader)
	}
	if c.stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if ua := r.Header.Get("User-Agent"); ua != "" {
		req.Header.Set("User-Agent", ua)
	}
	req.Header.Set("X-Request-Id", rl.id)

	// connection set-up time, for the log; the trace hooks may run on the
	// transport's dialing goroutine
	var connStart, connDur atomic.Int64
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		ConnectStart: func(string, string) { connStart.CompareAndSwap(0, time.Now().UnixNano()) },
		ConnectDone: func(_, _ string, err error) {
			if st := connStart.Load(); err == nil && st != 0 {
				connDur.CompareAndSwap(0, time.Now().UnixNano()-st)
			}
		},
	}))
	resp, err := upstreamClient.Do(req)
	al.connect = time.Duration(connDur.Load())
	if err != nil {
		o := classifyErr(err, 0)
		finish(o)
		if o.Kind == keypool.Canceled {
			rl.status = 499
			return attemptResult{done: true}
		}
		return attemptResult{outcome: o}
	}
	defer resp.Body.Close()
	upTTFB = time.Since(t0)
	body := &idleReader{r: resp.Body, timer: timer, d: p.requestTimeout}

	var errBody []byte
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		errBody, _ = io.ReadAll(io.LimitReader(body, maxUpstreamErrorBody))
		errBody = uk.forms.redact(errBody) // every form: literal, %-encoded, base64, hex
	}
	o := keypool.ClassifyResponseFor(c.upstreamModel, resp.StatusCode, resp.Header, errBody[:min(len(errBody), keypool.MaxClassifyBody)], time.Now())
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// redirects are not followed (the key would travel with them): a
		// base_url that needs one is misconfigured
		o = keypool.Outcome{Kind: keypool.ServerError, Status: resp.StatusCode, Message: "upstream redirected (" + strconv.Itoa(resp.StatusCode) + "); check base_url"}
	}
	if o.Kind != keypool.Success {
		return settle(o, resp.StatusCode, resp.Header, errBody)
	}

	if !c.stream || !isEventStream(resp.Header.Get("Content-Type")) {
		data, err := io.ReadAll(io.LimitReader(body, maxUpstreamBody+1))
		if err == nil && len(data) > maxUpstreamBody {
			err = errors.New("upstream response larger than the gateway's limit")
		}
		if err == nil && !gjson.ValidBytes(data) {
			// an HTML page, a proxy's banner or garbage with status 2xx:
			// a misconfigured or broken upstream, not an answer
			o := keypool.Outcome{Kind: keypool.ServerError, Status: resp.StatusCode, Message: "upstream answered " + strconv.Itoa(resp.StatusCode) + " with a body that is not JSON"}
			finish(o)
			return attemptResult{outcome: o, status: resp.StatusCode}
		}
		if err != nil {
			o := classifyErr(err, resp.StatusCode)
			finish(o)
			if o.Kind == keypool.Canceled {
				rl.status = 499
				return attemptResult{done: true}
			}
			return attemptResult{outcome: o, status: resp.StatusCode}
		}
		out, usage, err := translate.TranslateResponseWith(up, c.dialect, data, c.responseModel(up), p.respOpts)
		if err != nil {
			// a 2xx the gateway cannot understand: the upstream's fault
			o := keypool.Outcome{Kind: keypool.ServerError, Status: resp.StatusCode, Message: "unreadable upstream response"}
			finish(o)
			return attemptResult{outcome: o, status: resp.StatusCode}
		}
		data = out
		rl.usage = usage
		if h.LogPayloads {
			rl.respBody = data
		}
		finish(keypool.Outcome{Kind: keypool.Success, Status: resp.StatusCode})
		rl.key, rl.status = uk.id, resp.StatusCode
		rl.ttfb = time.Since(rl.start)
		hdr := w.Header()
		hdr.Set("X-Routed-Via", p.name+"/"+uk.public)
		ct := resp.Header.Get("Content-Type")
		if ct == "" || up != c.dialect {
			ct = "application/json"
		}
		hdr.Set("Content-Type", ct)
		hdr.Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(data)
		return attemptResult{done: true}
	}

	// Streaming. The client's response (status, headers, the stream's
	// preamble) is committed only at the upstream's first content event:
	// an upstream that fails before that (an error event after
	// message_start, a reset, an empty or preamble-only stream, no content
	// within attempt_timeout) is retried on another key and the client
	// never sees it. The translator holds bytes, not time: a healthy
	// stream's first content leaves as soon as it is read.
	fw := newFlushWriter(w, rl, h.clientWriteTimeout(), uk.forms)
	cw := &commitWriter{fw: fw, commit: func() {
		upTTFB = time.Since(t0)
		timer.Reset(p.requestTimeout) // from here on, request_timeout between reads
		rl.key, rl.status = uk.id, resp.StatusCode
		hdr := w.Header()
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("Cache-Control", "no-cache")
		hdr.Set("X-Accel-Buffering", "no")
		hdr.Set("X-Routed-Via", p.name+"/"+uk.public)
		hdr.Del("Content-Length")
		w.WriteHeader(http.StatusOK)
	}}
	st := translate.NewStreamTranslator(up, c.dialect, c.responseModel(up), cw)
	st.SetOptions(p.respOpts)
	if holdPreamble {
		st.HoldPreamble()
	}
	if c.hideUsage && up == c.dialect {
		st.HideUsageChunk()
	}
	body.armed = st.Committed // attempt_timeout runs until the first content
	runErr := st.Run(&flushBeforeRead{r: body, fw: fw})
	fw.flush()
	rl.usage = st.Usage()
	se := st.UpstreamError()
	if se != nil {
		se.Body = uk.forms.redact(se.Body) // it feeds the outcome's message and the log
	}
	switch {
	case !st.Committed():
		// nothing reached the client: the attempt failed before its first
		// content event, and the request may move on
		if se != nil && ctx.Err() == nil && !timedOut.Load() {
			o := streamErrorOutcome(c.upstreamModel, se, resp.Header)
			o.Message = "stream error event before content: " + o.Message
			return settle(o, se.Status, nil, se.Body)
		}
		err := runErr
		if err == nil || errors.Is(err, io.ErrUnexpectedEOF) && !timedOut.Load() {
			err = io.ErrUnexpectedEOF
		}
		o := classifyErr(unwrapNotCommitted(err), resp.StatusCode)
		if o.Kind == keypool.NetworkError {
			o.Message = "stream ended before its first content"
		}
		finish(o)
		if o.Kind == keypool.Canceled {
			rl.status = 499
			return attemptResult{done: true}
		}
		return attemptResult{outcome: o, status: resp.StatusCode}
	case ctx.Err() != nil:
		finish(keypool.Outcome{Kind: keypool.Canceled, Status: resp.StatusCode})
		rl.status = 499
		rl.streamOutcome = streamCanceled
	case fw.err != nil:
		// the client stopped reading (its context may not show it yet)
		finish(keypool.Outcome{Kind: keypool.Canceled, Status: resp.StatusCode})
		rl.status = 499
		rl.streamOutcome = streamCanceled
	case se != nil:
		// an in-band error after content went out: relayed to the client
		// in its dialect, and the attempt's outcome is that error,
		// classified as the same error with an HTTP status would be
		o := streamErrorOutcome(c.upstreamModel, se, resp.Header)
		o.Message = "stream error event: " + o.Message
		finish(o)
		rl.streamError, rl.streamOutcome = o.Kind.String(), streamErrorEvent
	case runErr == nil && st.Truncated():
		// the upstream ended without a finish reason: the client was told
		// in its dialect that the answer is cut short, the key is blamed
		finish(keypool.Outcome{Kind: keypool.NetworkError, Status: resp.StatusCode, Message: "stream ended without a finish reason"})
		rl.streamError, rl.streamOutcome = "truncated", streamTruncated
	case runErr != nil:
		// the upstream broke off mid-stream; the client got its dialect's
		// error, the key gets the blame
		o := classifyErr(runErr, resp.StatusCode)
		o.Message = "stream interrupted: " + o.Message
		finish(o)
		rl.streamError, rl.streamOutcome = o.Kind.String(), streamInterrupted
	default:
		finish(keypool.Outcome{Kind: keypool.Success, Status: resp.StatusCode})
		rl.streamOutcome = streamComplete
	}
	return attemptResult{done: true}
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

// usageTokens is the input plus output tokens of a usage, 0 when unknown.
func usageTokens(u translate.Usage) int64 {
	var n int64
	if u.InputTokens != nil {
		n += *u.InputTokens
	}
	if u.OutputTokens != nil {
		n += *u.OutputTokens
	}
	return n
}

// isEventStream reports whether a Content-Type is text/event-stream.
func isEventStream(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}

// idleReader re-arms the attempt's timeout after every read that returns
// data, so request_timeout bounds each wait for the upstream, not the whole
// length of a stream.
// While armed is set and reports false (a stream before its first content
// event), reads do not re-arm it: the attempt's first wait still runs.
type idleReader struct {
	r     io.Reader
	timer *time.Timer
	d     time.Duration
	armed func() bool
}

func (i *idleReader) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	if n > 0 && (i.armed == nil || i.armed()) {
		i.timer.Reset(i.d)
	}
	return n, err
}

// flushWriter writes client events as the stream translator produces
// them; flushBeforeRead flushes them to the client whenever the translator
// is about to wait for more upstream bytes. Every event therefore leaves as
// soon as the upstream bytes that carry it have been read, with no timer
// and no added delay, but the events of one upstream read share one flush
// (one chunk, one syscall) instead of one each.
//
// Slow readers: every write and flush runs under a write deadline of
// client_write_timeout from its start (http.ResponseController
// SetWriteDeadline; large events are written in 16 KiB pieces, each with
// its own deadline). A client that accepts no bytes for that long fails
// the write; the translator stops, so the upstream is no longer read, the
// attempt ends (the key's slot is released as "canceled", never counted
// against the key) and the upstream request is cancelled. Since the
// upstream is read only after the previous read's events were flushed,
// the gateway holds at most one upstream read (16 KiB, or one larger
// event) that the client has not accepted, besides the sockets' buffers.
//
// Upstream keys echoed in an in-band error event (an event with an
// "error" member or an error type: Chat error chunks, Anthropic error
// events, Responses response.failed and error), in any form secretForms
// knows, are redacted before they leave; content events are not scanned
// (a key reaches the stream only through an upstream's error message).
type flushWriter struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	rl       *requestLog
	timeout  time.Duration // client_write_timeout; 0: no deadline
	deadline time.Time     // the write deadline last set, zero when none
	secret   *secretForms  // nil: nothing to redact
	pending  bool
	err      error
}

// newFlushWriter returns the stream writer for one attempt: timeout is the
// client_write_timeout (0: none), forms the key's secret forms redacted
// from error events (nil for none; built once per key, upstreamKey.forms).
func newFlushWriter(w http.ResponseWriter, rl *requestLog, timeout time.Duration, forms *secretForms) *flushWriter {
	return &flushWriter{w: w, rc: http.NewResponseController(w), rl: rl, timeout: timeout, secret: forms}
}

// arm sets the write deadline for the next write or flush to
// client_write_timeout from now. It is moved only when it has aged by a
// sixteenth of the timeout (the effective bound is 15/16 to 16/16 of it),
// so that a stream of many small events does not pay for one deadline
// change each. A writer that cannot take deadlines (not a network
// connection) is left without one.
func (f *flushWriter) arm() {
	if f.timeout <= 0 {
		return
	}
	now := time.Now()
	if !f.deadline.IsZero() && f.deadline.Sub(now) > f.timeout-f.timeout/16 {
		return
	}
	d := now.Add(f.timeout)
	if err := f.rc.SetWriteDeadline(d); err != nil {
		f.timeout = 0
		return
	}
	f.deadline = d
}

// failed records a write error; one past the write deadline is the
// client's fault and is logged as client_write_timeout.
func (f *flushWriter) failed(err error) error {
	f.err = err
	if !f.deadline.IsZero() && !time.Now().Before(f.deadline) {
		f.rl.streamError = "client_write_timeout"
		f.rl.errMsg = "the client accepted no stream bytes for " + f.timeout.String() + " (client_write_timeout); stream cut"
	}
	return err
}

// WriteEvent implements translate.EventWriter.
func (f *flushWriter) WriteEvent(p []byte) error {
	if f.err != nil {
		return f.err
	}
	if f.secret != nil && bytes.Contains(p, errorField) {
		p = f.secret.redactEvent(p)
	}
	for len(p) > 0 {
		// in pieces, each under a deadline of its own: a client that
		// is slow but reading is not cut by one large event
		n := min(len(p), clientWriteChunk)
		f.arm()
		if _, err := f.w.Write(p[:n]); err != nil {
			return f.failed(err)
		}
		p = p[n:]
		f.pending = true
	}
	return nil
}

// errorField marks an event that may carry an upstream error message: a
// JSON key or value ending in "rror" ("error", "api_error",
// "overloaded_error"). It is searched for instead of `"error"` because
// its first byte is rarer than '"' in a stream event, which makes the
// search of an ordinary content event about twice as fast.
var errorField = []byte(`rror"`)

// clientWriteChunk is the most written to a client under one write
// deadline.
const clientWriteChunk = 16 << 10

// flush sends the written events to the client.
func (f *flushWriter) flush() {
	if !f.pending || f.err != nil {
		return
	}
	f.pending = false
	if f.rl.ttfb == 0 {
		f.rl.ttfb = time.Since(f.rl.start)
	}
	f.arm()
	if err := f.rc.Flush(); err != nil {
		_ = f.failed(err)
	}
}

// flushBeforeRead flushes pending client events before each read of the
// upstream body (a read may block until the upstream sends more).
type flushBeforeRead struct {
	r  io.Reader
	fw *flushWriter
}

func (f *flushBeforeRead) Read(p []byte) (int, error) {
	f.fw.flush()
	if f.fw.err != nil {
		return 0, f.fw.err // the client is gone: stop reading the upstream
	}
	return f.r.Read(p)
}

// unavailable is the failure when no key could be leased: 503 with
// Retry-After and a per-key summary, or the last upstream failure when
// every key already failed this request.
func unavailable(err error, last *attemptResult, rl *requestLog) *loopFailure {
	var ue *keypool.UnavailableError
	if !errors.As(err, &ue) {
		return &loopFailure{status: http.StatusServiceUnavailable, class: translate.ErrUpstreamUnavailable, msg: "no upstream key available"}
	}
	if last != nil && ue.NoKeys && last.outcome.Kind.Transient() {
		// every key failed this request with a 5xx, network error or
		// timeout: a gateway error naming the last failure
		return exhausted(last, rl)
	}
	ra := ue.RetryAfter
	if ra == 0 {
		// every key skipped in this request: the soonest end of a cooldown
		for _, k := range ue.Keys {
			if d := time.Duration(k.SecondsLeft) * time.Second; d > 0 && (ra == 0 || d < ra) {
				ra = d
			}
		}
	}
	if ra > 0 && ra <= time.Second {
		// keys merely busy: spread the retries of many waiting clients
		// over a few seconds instead of sending them all back at once
		ra = time.Second + rand.N(2*time.Second)
	}
	return &loopFailure{status: http.StatusServiceUnavailable, class: translate.ErrUpstreamUnavailable, msg: ue.Error(), retryAfter: ra}
}

// exhausted is the failure when attempts ran out: a gateway error naming
// the last upstream failure (never its raw body, which may be from any
// key).
func exhausted(last *attemptResult, rl *requestLog) *loopFailure {
	f := &loopFailure{status: http.StatusBadGateway, class: translate.ErrUpstreamUnavailable, msg: "all upstream attempts failed"}
	if last != nil {
		f.msg += " (" + strconv.Itoa(len(rl.attempts)) + " attempts; last: " + last.outcome.Message + ")"
		switch last.outcome.Kind {
		case keypool.Timeout:
			f.status = http.StatusGatewayTimeout
		case keypool.RateLimited:
			f.status = http.StatusServiceUnavailable
			if last.outcome.HasRetryAfter {
				f.retryAfter = max(time.Second, last.outcome.RetryAfter)
			}
		}
	}
	return f
}
