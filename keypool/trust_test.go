package keypool

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// Tests of issue 11's hostile cases: nothing a client puts in its request
// can bench a key beyond what is attributable to the key.

// onKey returns AcquireOptions that only take the key with the given id.
func onKey(id, model string) AcquireOptions {
	return AcquireOptions{Model: model, Skip: func(k *Key) bool { return k.ID() != id }}
}

func TestHostile403ModelNotFoundLeavesEveryKeyReady(t *testing.T) {
	p, clk := newTestPool(t, 4, Settings{})
	// OpenAI's answer to a project that may not use the model
	body := []byte("{\"error\":{\"message\":\"Project `proj_abc` does not have access to model `o1-pro`\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}")
	o := ClassifyResponseFor("o1-pro", 403, http.Header{}, body, clk.Now())
	if o.Kind != ModelNotFound || o.Code != "model_not_found" {
		t.Fatalf("403 model_not_found classified %+v", o)
	}
	// the hostile request walks every key, again and again until each is
	// benched for the model
	for _, k := range []string{"k0", "k1", "k2", "k3"} {
		for i := 0; i < DefaultModelNotFoundThreshold; i++ {
			acquire(t, p, onKey(k, "o1-pro")).Release(o)
		}
	}
	for _, st := range p.Snapshot() {
		if st.State != "ready" || st.Reason != "" || st.Failures != 0 {
			t.Fatalf("%s not ready after a model-level 403: %+v", st.ID, st)
		}
		if until, ok := st.BenchedModels["o1-pro"]; !ok || until.Sub(clk.Now()) != DefaultModelNotFoundCooldown {
			t.Fatalf("%s benched models %v, want o1-pro for %v", st.ID, st.BenchedModels, DefaultModelNotFoundCooldown)
		}
	}
	for _, k := range []string{"k0", "k1", "k2", "k3"} {
		l := acquire(t, p, onKey(k, "gpt-4o"))
		if l.Probe() {
			t.Fatalf("%s: a request for another model is a probe", k)
		}
		l.Release(Outcome{Kind: Success})
	}
	_, err := p.Acquire(context.Background(), AcquireOptions{Model: "o1-pro"})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Keys[0].State != "benched" || ue.RetryAfter != DefaultModelNotFoundCooldown {
		t.Fatalf("o1-pro after the bench: %v", err)
	}
}

func TestClassify403And404AboutTheModel(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		model  string
		status int
		body   string
		kind   OutcomeKind
	}{
		{"403 model_not_found, model unknown to the caller", "", 403, `{"error":{"message":"Project ` + "`proj_abc`" + ` does not have access to model ` + "`o1-pro`" + `","type":"invalid_request_error","code":"model_not_found"}}`, ModelNotFound},
		{"403 model_not_allowed", "", 403, `{"error":{"message":"not allowed","type":"invalid_request_error","code":"model_not_allowed"}}`, ModelNotFound},
		{"403 naming the requested model", "claude-opus-4", 403, `{"error":{"message":"this token may not use claude-opus-4","type":"permission_error"}}`, ModelNotFound},
		{"403 naming a model, model not given: key level", "", 403, `{"error":{"message":"this token may not use claude-opus-4","type":"permission_error"}}`, Forbidden},
		{"403 region is key level", "gpt-4o", 403, `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`, Forbidden},
		{"403 anthropic permission_error is key level", "claude-opus-4", 403, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`, Forbidden},
		{"404 Azure DeploymentNotFound", "", 404, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`, ModelNotFound},
		{"404 Google models/", "", 404, `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta, or is not supported for generateContent.","status":"NOT_FOUND"}}`, ModelNotFound},
		{"404 naming the requested model", "mistral-huge", 404, `{"message":"No endpoints found for mistral-huge."}`, ModelNotFound},
		{"403 org disabled is not about a model named like its words", "organization", 403, `{"type":"error","error":{"type":"permission_error","message":"This organization has been disabled."}}`, Forbidden},
		{"404 path is not about a model named like the path", "completionz", 404, `{"error":{"message":"Invalid URL (POST /v1/chat/completionz)","type":"invalid_request_error","param":null,"code":null}}`, ClientError},
		{"403 naming the model after 'model'", "o1-pro", 403, `{"error":{"message":"Project proj_abc does not have access to model o1-pro","type":"invalid_request_error"}}`, ModelNotFound},
		{"404 path echo is not about the model", "gpt-4o", 404, `{"error":{"message":"Invalid URL (POST /v1/chat/completionz)","type":"invalid_request_error","param":null,"code":null}}`, ClientError},
		{"404 with the word model but no form", "", 404, `{"error":{"message":"Unknown route /v1/models/x/model","type":"invalid_request_error"}}`, ClientError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ClassifyResponseFor(c.model, c.status, http.Header{}, []byte(c.body), now)
			if o.Kind != c.kind {
				t.Fatalf("kind %s, want %s (%+v)", o.Kind, c.kind, o)
			}
		})
	}
}

func TestEchoedCreditBalanceDoesNotTouchTheKey(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{})
	const real = "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."
	echoes := []string{
		// Anthropic: "<field>: Extra inputs are not permitted"
		`{"type":"error","error":{"type":"invalid_request_error","message":"credit balance: Extra inputs are not permitted"}}`,
		`{"type":"error","error":{"type":"invalid_request_error","message":"` + real + `: Extra inputs are not permitted"}}`,
		`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low: Extra inputs are not permitted"}}`,
		`{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content.0.Your credit balance is too low to access the Anthropic API: Extra inputs are not permitted"}}`,
		// OpenAI: "Unrecognized request argument supplied: <field>"
		`{"error":{"message":"Unrecognized request argument supplied: Your credit balance is too low","type":"invalid_request_error","param":null,"code":null}}`,
		// the sentence somewhere other than the start
		`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Your credit balance is too low to access the Anthropic API."}}`,
		`{"type":"error","error":{"type":"invalid_request_error","message":"Input was: ` + real + `"}}`,
		// cut short by the body limit: not the vendor's short message
		`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing`,
	}
	for i, body := range echoes {
		o := ClassifyResponseFor("claude-opus-4", 400, http.Header{}, []byte(body), clk.Now())
		if o.Kind != ClientError {
			t.Fatalf("echo %d classified %s: %s", i, o.Kind, body)
		}
		acquire(t, p, AcquireOptions{}).Release(o)
	}
	if st := status(p, "k0"); st.State != "ready" || st.Failures != 0 {
		t.Fatalf("echoed text touched the key: %+v", st)
	}

	o := ClassifyResponseFor("claude-opus-4", 400, http.Header{},
		[]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"`+real+`"},"request_id":"req_011"}`), clk.Now())
	if o.Kind != NoCredit {
		t.Fatalf("Anthropic's own credit message classified %+v", o)
	}
	mustAcquire(t, p).Release(o)
	st := status(p, "k0")
	if st.State != "cooling" || st.Reason != "no_credit" || !st.Provisional || st.Source != "provisional" || st.SecondsLeft != 60 {
		t.Fatalf("before the probe: %+v, want no_credit provisional for 60s", st)
	}
	p.Confirm("fp0", Outcome{Kind: NoCredit, Status: 400})
	st = status(p, "k0")
	if st.State != "cooling" || st.Reason != "no_credit" || st.Provisional || st.Source != "fixed" || st.SecondsLeft != 24*3600 {
		t.Fatalf("after the NoCredit probe: %+v, want no_credit for 24h", st)
	}
	clk.Advance(24 * time.Hour)
	if l := mustAcquire(t, p); !l.Probe() {
		t.Fatal("the first request after a confirmed no_credit is not a probe")
	}
}

func TestClassifyAnthropicOrganizationDisabled(t *testing.T) {
	now := time.Now()
	o := ClassifyResponse(400, http.Header{}, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"This organization has been disabled."},"request_id":"req_011"}`), now)
	if o.Kind != Forbidden {
		t.Fatalf("organization disabled: %+v", o)
	}
	o = ClassifyResponse(400, http.Header{}, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"This organization has been disabled.: Extra inputs are not permitted"}}`), now)
	if o.Kind != ClientError {
		t.Fatalf("echoed field: %+v", o)
	}
}

func TestInvalidKeyIsProvisionalUntilConfirmed(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{})
	mustAcquire(t, p).Release(ClassifyResponse(401, http.Header{}, []byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`), clk.Now()))
	st := status(p, "k0")
	if st.State != "cooling" || st.Reason != "invalid_key" || !st.Provisional || st.SecondsLeft != 60 {
		t.Fatalf("after one 401: %+v, want invalid_key provisional for 60s", st)
	}
	clk.Advance(59 * time.Second)
	if st := status(p, "k0"); st.State != "cooling" || st.SecondsLeft != 1 {
		t.Fatalf("59s later: %+v", st)
	}
	// the probe succeeds: the client's request caused the 401
	p.Confirm("fp0", Outcome{Kind: Success, Status: 200})
	if st := status(p, "k0"); st.State != "ready" || st.Provisional || st.Reason != "" {
		t.Fatalf("after a good probe: %+v", st)
	}
	if l := acquire(t, p, onKey("k0", "")); l.Probe() {
		t.Fatal("still probing after a good probe")
	} else {
		l.Release(Outcome{Kind: Success})
	}
	// no verdict pending: Confirm does nothing, nor for an unknown key
	p.Confirm("fp0", Outcome{Kind: InvalidKey, Status: 401})
	p.Confirm("nope", Outcome{Kind: InvalidKey, Status: 401})
	if st := status(p, "k0"); st.State != "ready" {
		t.Fatalf("Confirm without a pending verdict changed the key: %+v", st)
	}

	// a probe that tells nothing (timeout): the provisional cooldown stands and expires
	acquire(t, p, onKey("k1", "")).Release(Outcome{Kind: InvalidKey, Status: 401})
	p.Confirm("fp1", Outcome{Kind: Timeout})
	if st := status(p, "k1"); !st.Provisional || st.SecondsLeft != 60 {
		t.Fatalf("after an inconclusive probe: %+v", st)
	}
	p.Confirm("fp1", Outcome{Kind: InvalidKey, Status: 401}) // the verdict was used up
	if st := status(p, "k1"); !st.Provisional || st.SecondsLeft != 60 {
		t.Fatalf("a second Confirm applied: %+v", st)
	}
	clk.Advance(60 * time.Second)
	l := acquire(t, p, onKey("k1", ""))
	if !l.Probe() {
		t.Fatal("the first request after a provisional cooldown is not a probe")
	}
	l.Release(Outcome{Kind: Success})
	if st := status(p, "k1"); st.State != "ready" {
		t.Fatalf("after a good request: %+v", st)
	}
}

func TestProvisionalOnlyWhenLongerThanProvisionalCooldown(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{InvalidKeyCooldown: 30 * time.Second})
	mustAcquire(t, p).Release(Outcome{Kind: InvalidKey, Status: 401})
	if st := status(p, "k0"); st.Provisional || st.SecondsLeft != 30 || st.Source != "fixed" {
		t.Fatalf("short verdict: %+v, want a plain 30s", st)
	}
	// a quota that resets in 2 minutes is provisional, and the probe's reset wins
	mustAcquire(t, p).Release(Outcome{Kind: QuotaExhausted, Status: 429, RetryAfter: 2 * time.Minute, HasRetryAfter: true, Source: "body"})
	if st := status(p, "k1"); !st.Provisional || st.SecondsLeft != 60 || st.Reason != "quota_exhausted" {
		t.Fatalf("quota in 2m: %+v", st)
	}
	clk.Advance(10 * time.Second)
	p.Confirm("fp1", Outcome{Kind: QuotaExhausted, Status: 429, RetryAfter: 3 * time.Hour, HasRetryAfter: true, Source: "body"})
	if st := status(p, "k1"); st.Provisional || st.SecondsLeft != 3*3600 || st.Source != "body" {
		t.Fatalf("confirmed quota: %+v", st)
	}
}

func TestVerifierCalledOnceOutsideTheLock(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 2})
	type call struct {
		k *Key
		o Outcome
	}
	calls := make(chan call, 4)
	proceed := make(chan struct{})
	p.SetVerifier(func(k *Key, o Outcome) {
		_ = p.Snapshot() // would deadlock under the pool's lock
		calls <- call{k, o}
		<-proceed
		p.Confirm(k.Fingerprint(), Outcome{Kind: InvalidKey, Status: 401})
	}, 10*time.Second)
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release(Outcome{Kind: InvalidKey, Status: 401, Message: "invalid key (401)"})
	c := <-calls
	if c.k.ID() != "k0" || c.o.Kind != InvalidKey || c.o.Status != 401 {
		t.Fatalf("verifier called with %s %+v", c.k.ID(), c.o)
	}
	b.Release(Outcome{Kind: InvalidKey, Status: 401}) // while the first verification runs
	if st := status(p, "k0"); !st.Provisional {
		t.Fatalf("not provisional while verifying: %+v", st)
	}
	close(proceed)
	waitFor(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return !p.keys[0].verifying
	})
	if len(calls) != 0 {
		t.Fatalf("verifier called %d more times while one was in flight", len(calls))
	}
	if st := status(p, "k0"); st.Provisional || st.SecondsLeft != 300 || st.Reason != "invalid_key" {
		t.Fatalf("after the verifier confirmed: %+v", st)
	}
}

func TestConcurrentFailuresOpenTheBreakerOnce(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 8})
	t0 := clk.Now()
	ls := make([]*Lease, 8)
	for i := range ls {
		ls[i] = mustAcquire(t, p)
	}
	for _, l := range ls {
		l.Release(ClassifyResponse(500, http.Header{}, []byte(`{"error":{"message":"The server had an error","type":"server_error"}}`), clk.Now()))
	}
	st := status(p, "k0")
	if k := p.keys[0]; st.Breaker != "open" || !k.breakerUntil.Equal(t0.Add(DefaultBreakerOpen)) || k.breakerTrips != 1 || st.Failures != 8 {
		t.Fatalf("after 8 concurrent 500s: %+v, breaker until %v (trips %d), want open for %v", st, k.breakerUntil.Sub(t0), k.breakerTrips, DefaultBreakerOpen)
	}
	// the backoff of the failures before the threshold ends first; then the open breaker is the gate
	clk.Advance(2 * DefaultErrorCooldown)
	if st := status(p, "k0"); st.State != "breaker_open" || !st.Until.Equal(t0.Add(DefaultBreakerOpen)) || st.SecondsLeft != 20 {
		t.Fatalf("10s later: %+v, want breaker_open until %v", st, t0.Add(DefaultBreakerOpen))
	}
	clk.Advance(DefaultBreakerOpen - 2*DefaultErrorCooldown)
	probe := mustAcquire(t, p)
	if !probe.Probe() || status(p, "k0").Breaker != "half_open" {
		t.Fatal("no half-open probe after the open period")
	}
	// a failed half-open probe still reopens with doubling
	probe.Release(Outcome{Kind: ServerError, Status: 500})
	if st := status(p, "k0"); st.Breaker != "open" || st.SecondsLeft != 60 {
		t.Fatalf("after a failed probe: %+v, want open for 60s", st)
	}
}

func TestStaleFailureDoesNotReopenTheBreaker(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 4})
	ls := make([]*Lease, 4)
	for i := range ls {
		ls[i] = mustAcquire(t, p)
	}
	for _, l := range ls[:3] {
		l.Release(Outcome{Kind: Timeout})
	}
	clk.Advance(DefaultBreakerOpen + time.Second)
	// the fourth attempt began before the breaker opened and fails late
	ls[3].Release(Outcome{Kind: Timeout})
	if p.keys[0].breakerTrips != 1 {
		t.Fatalf("a stale failure reopened the breaker: trips %d", p.keys[0].breakerTrips)
	}
	l := mustAcquire(t, p)
	if !l.Probe() {
		t.Fatal("the breaker's open period is over: the next request is its probe")
	}
	l.Release(Outcome{Kind: Success})
	if st := status(p, "k0"); st.Breaker != "closed" || st.State != "ready" {
		t.Fatalf("after a good probe: %+v", st)
	}
}

func TestRateLimitQuotingTheModelIsNotAQuota(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	msg := func(m string) []byte {
		return []byte(`{"error":{"message":"` + m + `","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
	}
	cases := []struct {
		name, model, message string
		kind                 OutcomeKind
		wait                 time.Duration // -1: no hint
	}{
		{"model named daily quota", "gpt-4o daily quota",
			"Rate limit reached for gpt-4o daily quota in organization org-abc on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more.",
			RateLimited, 20 * time.Second},
		{"model naming a daily limit and a long wait", "x on requests per day (RPD). Please try again in 20h.",
			"Rate limit reached for x on requests per day (RPD). Please try again in 20h. in organization org-abc on tokens per min (TPM): Limit 10, Used 10, Requested 1.",
			RateLimited, -1},
		{"same, the model not given", "",
			"Rate limit reached for x on requests per day (RPD). Please try again in 20h. in organization org-abc on tokens per min (TPM): Limit 10, Used 10, Requested 1.",
			RateLimited, -1},
		{"model with quota words, no vendor template", "gpt-daily-quota-insufficient_quota",
			"Too many requests for gpt-daily-quota-insufficient_quota, monthly quota allocation", RateLimited, -1},
		{"model holding a wait phrase, no template", "m. Please try again in 24h.",
			"Rate limited on m. Please try again in 24h.", RateLimited, -1},
		{"the vendor's own daily limit", "gpt-4o",
			"Rate limit reached for gpt-4o in organization org-abc on requests per day (RPD): Limit 200, Used 200, Requested 1.",
			QuotaExhausted, 12 * time.Hour},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ClassifyResponseFor(c.model, 429, http.Header{}, msg(c.message), now)
			if o.Kind != c.kind {
				t.Fatalf("kind %s, want %s (%+v)", o.Kind, c.kind, o)
			}
			if c.wait < 0 && o.HasRetryAfter || c.wait >= 0 && (!o.HasRetryAfter || o.RetryAfter != c.wait) {
				t.Fatalf("hint %v %v, want %v", o.HasRetryAfter, o.RetryAfter, c.wait)
			}
		})
	}
	// at pool level: the key cools for the rate limit's 20s, not until midnight
	p, clk := newTestPool(t, 1, Settings{})
	mustAcquire(t, p).Release(ClassifyResponseFor(cases[0].model, 429, http.Header{}, msg(cases[0].message), clk.Now()))
	if st := status(p, "k0"); st.Reason != "rate_limited" || st.SecondsLeft != 20 || st.Source != "body" {
		t.Fatalf("key after the 429: %+v", st)
	}
}

func TestClusterSeesTheConfirmedCooldown(t *testing.T) {
	ps, b, clk := cluster(t, 2, Settings{MaxConcurrencyPerKey: 1}, keys(2), time.Minute)
	a, other := ps[0], ps[1]
	ctx := context.Background()
	acquire(t, a, onKey("k0", "")).Release(Outcome{Kind: NoCredit, Status: 402})
	snap, err := b.Snapshot(ctx, "main", []string{"fp0", "fp1"})
	if err != nil || snap[0].CooldownReason != "no_credit" || snap[0].CooldownLeft != DefaultProvisionalCooldown {
		t.Fatalf("shared state after the provisional verdict: %+v %v", snap, err)
	}
	if st := status(other, "k0"); st.State != "cooling" || st.SecondsLeft != 60 {
		t.Fatalf("B's view of the provisional verdict: %+v", st)
	}
	a.Confirm("fp0", Outcome{Kind: NoCredit, Status: 402})
	snap, _ = b.Snapshot(ctx, "main", []string{"fp0"})
	if snap[0].CooldownReason != "no_credit" || snap[0].CooldownLeft != DefaultNoCreditCooldown {
		t.Fatalf("shared state after Confirm: %+v", snap[0])
	}
	if st := status(other, "k0"); st.State != "cooling" || st.Reason != "no_credit" || st.SecondsLeft != 24*3600 {
		t.Fatalf("B's view after Confirm: %+v", st)
	}
	clk.Advance(time.Hour)
	if _, err := other.Acquire(ctx, onKey("k0", "")); err == nil {
		t.Fatal("B leased k0 an hour into its confirmed no_credit")
	}

	// a good probe lifts a provisional verdict for the whole cluster
	acquire(t, a, onKey("k1", "")).Release(Outcome{Kind: Forbidden, Status: 403})
	if _, err := other.Acquire(ctx, onKey("k1", "")); err == nil {
		t.Fatal("B leased k1 during its provisional verdict")
	}
	a.Confirm("fp1", Outcome{Kind: Success, Status: 200})
	snap, _ = b.Snapshot(ctx, "main", []string{"fp1"})
	if snap[0].CooldownLeft != 0 || snap[0].CooldownReason != "" {
		t.Fatalf("shared state after a good probe: %+v", snap[0])
	}
	l, err := other.Acquire(ctx, onKey("k1", ""))
	if err != nil {
		t.Fatalf("B after the good probe: %v", err)
	}
	l.Release(Outcome{Kind: Success})
	if st := status(a, "k1"); st.State != "ready" || st.Provisional {
		t.Fatalf("A's k1: %+v", st)
	}
}

func TestEarlierSuccessDoesNotLiftAVerdict(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 2})
	before := mustAcquire(t, p) // began before the verdict
	mustAcquire(t, p).Release(Outcome{Kind: NoCredit, Status: 402})
	before.Release(Outcome{Kind: Success})
	if st := status(p, "k0"); st.State != "cooling" || !st.Provisional || st.SecondsLeft != 60 {
		t.Fatalf("a success begun before the verdict lifted it: %+v", st)
	}
	clk.Advance(DefaultProvisionalCooldown)
	l := mustAcquire(t, p)
	if !l.Probe() {
		t.Fatal("the request after the provisional cooldown is not a probe")
	}
	l.Release(Outcome{Kind: Success})
	p.Confirm("fp0", Outcome{Kind: NoCredit, Status: 402}) // too late: the key served since
	if st := status(p, "k0"); st.State != "ready" {
		t.Fatalf("a verdict lifted by a success was confirmed later: %+v", st)
	}
}

// TestProvisionalVerdictIsAWait: a 403 one client's request met starts a
// provisional verdict whose probe is running; another request turned
// away meanwhile is not told the pool is dead (KeysDead false: the
// request may have caused the 403) and is told to come back when the
// probe's answer is due (RetryAfter: SetVerifier's within from the
// probe's start, not the provisional cooldown's 60 s). A refuting probe
// puts the key back; a confirming one makes the pool dead with the long
// cooldown. Without a verifier the provisional cooldown is the wait.
func TestProvisionalVerdictIsAWait(t *testing.T) {
	for _, confirm := range []OutcomeKind{Success, Forbidden} {
		p, clk := newTestPool(t, 1, Settings{})
		proceed := make(chan struct{})
		p.SetVerifier(func(k *Key, o Outcome) {
			<-proceed
			p.Confirm(k.Fingerprint(), Outcome{Kind: confirm, Status: 403})
		}, 10*time.Second)
		t0 := clk.Now()
		mustAcquire(t, p).Release(Outcome{Kind: Forbidden, Status: 403})
		if st := status(p, "k0"); !st.Provisional || !st.VerdictDue.Equal(t0.Add(10*time.Second)) || st.SecondsLeft != 60 {
			close(proceed)
			t.Fatalf("while probing: %+v", st)
		}
		clk.Advance(4 * time.Second)
		_, err := p.Acquire(context.Background(), AcquireOptions{})
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.KeysDead() || ue.RetryAfter != 6*time.Second {
			close(proceed)
			t.Fatalf("confirm %v: during the probe: %v (dead %v, RetryAfter %v), want a wait of 6s", confirm, err, ue != nil && ue.KeysDead(), ue)
		}
		// the request that met the 403 skips the key: the same wait
		_, err = p.Acquire(context.Background(), AcquireOptions{Skip: func(*Key) bool { return true }})
		if !errors.As(err, &ue) || ue.KeysDead() || ue.RetryAfter != 0 || ue.SoonestBack(clk.Now()) != 6*time.Second {
			close(proceed)
			t.Fatalf("confirm %v: skipped: %v, SoonestBack %v", confirm, err, ue.SoonestBack(clk.Now()))
		}
		close(proceed)
		waitFor(t, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return !p.keys[0].verifying
		})
		_, err = p.Acquire(context.Background(), AcquireOptions{})
		switch confirm {
		case Success:
			if err != nil {
				t.Fatalf("after a refuting probe: %v", err)
			}
		default:
			if !errors.As(err, &ue) || !ue.KeysDead() || ue.RetryAfter != 24*time.Hour {
				t.Fatalf("after a confirming probe: %v", err)
			}
		}
	}
	// no verifier: the provisional cooldown is the wait
	p, _ := newTestPool(t, 1, Settings{})
	mustAcquire(t, p).Release(Outcome{Kind: Forbidden, Status: 403})
	_, err := p.Acquire(context.Background(), AcquireOptions{})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.KeysDead() || ue.RetryAfter != time.Minute || !ue.Keys[0].VerdictDue.IsZero() {
		t.Fatalf("no verifier: %v", err)
	}
}

// TestAcquireWaitsForRunningProbe: a request that arrives while the
// gateway's probe of a provisional verdict runs on the only key waits
// within its own Timeout for the probe's answer instead of being turned
// away at once: a refuting probe hands it the key, a confirming one
// turns it away as dead. A probe still out when the Timeout ends leaves
// a wait until its answer is due (RetryAfter).
func TestAcquireWaitsForRunningProbe(t *testing.T) {
	for _, confirm := range []OutcomeKind{Success, Forbidden, Canceled} {
		p, clk := newTestPool(t, 1, Settings{})
		proceed := make(chan struct{})
		p.SetVerifier(func(k *Key, o Outcome) {
			<-proceed
			p.Confirm(k.Fingerprint(), Outcome{Kind: confirm, Status: 403})
		}, 10*time.Second)
		mustAcquire(t, p).Release(Outcome{Kind: Forbidden, Status: 403})
		type result struct {
			l   *Lease
			err error
		}
		done := make(chan result, 1)
		go func() {
			l, err := p.Acquire(context.Background(), AcquireOptions{Timeout: 5 * time.Second})
			done <- result{l, err}
		}()
		waitFor(t, func() bool { return clk.pending() == 1 || len(done) == 1 })
		select {
		case r := <-done:
			close(proceed)
			t.Fatalf("confirm %v: Acquire returned during the probe (%v, %v), want it to wait", confirm, r.l, r.err)
		default:
		}
		var r result
		if confirm == Canceled {
			clk.Advance(5 * time.Second) // the probe outlasts the request's timeout
			r = <-done
			close(proceed)
		} else {
			close(proceed)
			r = <-done
		}
		var ue *UnavailableError
		switch confirm {
		case Success:
			if r.err != nil || r.l == nil || r.l.Key().ID() != "k0" {
				t.Fatalf("after a refuting probe: %v, %v; want the key", r.l, r.err)
			}
		case Forbidden:
			if !errors.As(r.err, &ue) || !ue.KeysDead() {
				t.Fatalf("after a confirming probe: %v; want the pool dead", r.err)
			}
		default:
			if !errors.As(r.err, &ue) || ue.KeysDead() || ue.RetryAfter != 5*time.Second {
				t.Fatalf("probe past the timeout: %v; want a wait of 5s until its answer is due", r.err)
			}
		}
	}
}

// TestRetryAfterNotBeforeKeyCanServe: a key whose provisional verdict's
// probe runs is not said to be back when the probe's answer is due
// (VerdictDue, RetryAfter) while something else keeps it out past then:
// a bench for the request's model (the wait is the bench's end), or an
// open breaker (the wait is the provisional cooldown's end). A refuting
// probe would leave the key still benched or still open, so a client sent
// back at the answer's due time would be refused again.
func TestRetryAfterNotBeforeKeyCanServe(t *testing.T) {
	block := func(p *Pool) chan struct{} {
		proceed := make(chan struct{})
		p.SetVerifier(func(k *Key, o Outcome) { <-proceed }, 10*time.Second)
		return proceed
	}
	t.Run("benched for the model", func(t *testing.T) {
		p, _ := newTestPool(t, 1, Settings{ModelNotFoundCooldown: 10 * time.Minute})
		proceed := block(p)
		defer close(proceed)
		for range DefaultModelNotFoundThreshold {
			l, err := p.Acquire(context.Background(), AcquireOptions{Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			l.Release(Outcome{Kind: ModelNotFound, Status: 404})
		}
		mustAcquire(t, p).Release(Outcome{Kind: Forbidden, Status: 403})
		if st := status(p, "k0"); st.VerdictDue.IsZero() {
			t.Fatalf("another model: no VerdictDue: %+v", st)
		}
		_, err := p.Acquire(context.Background(), AcquireOptions{Model: "m"})
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.RetryAfter != 10*time.Minute || ue.Keys[0].State != StateBenched || !ue.Keys[0].VerdictDue.IsZero() || ue.Keys[0].Provisional {
			t.Fatalf("model m: %v (RetryAfter %v, %+v); want the bench's 10m", err, ue.RetryAfter, ue.Keys[0])
		}
		if d := ue.SoonestBack(p.clock.Now()); d != 10*time.Minute {
			t.Errorf("SoonestBack %v, want 10m", d)
		}
	})
	t.Run("breaker open", func(t *testing.T) {
		p, _ := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 2, FailureThreshold: 1, BreakerOpen: 30 * time.Second})
		proceed := block(p)
		defer close(proceed)
		l1, l2 := mustAcquire(t, p), mustAcquire(t, p)
		l1.Release(Outcome{Kind: ServerError, Status: 500})
		l2.Release(Outcome{Kind: Forbidden, Status: 403})
		st := status(p, "k0")
		if !st.Provisional || !st.VerdictDue.IsZero() {
			t.Fatalf("status: %+v; want provisional with no VerdictDue (the breaker stays open past it)", st)
		}
		_, err := p.Acquire(context.Background(), AcquireOptions{})
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.RetryAfter < 30*time.Second {
			t.Fatalf("%v (RetryAfter %v); want at least the breaker's 30s", err, ue.RetryAfter)
		}
	})
}
