package keypool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestParseRateLimitsOpenAI(t *testing.T) {
	now := newFakeClock().Now()
	h := http.Header{}
	h.Set("x-ratelimit-limit-requests", "500")
	h.Set("x-ratelimit-remaining-requests", "12")
	h.Set("x-ratelimit-reset-requests", "6m0s")
	h.Set("x-ratelimit-limit-tokens", "30000")
	h.Set("x-ratelimit-remaining-tokens", "29000")
	h.Set("x-ratelimit-reset-tokens", "20ms")
	rl, ok := ParseRateLimits(h, now)
	if !ok {
		t.Fatal("not parsed")
	}
	want := RateLimits{
		Requests: RateLimit{Limit: 500, Remaining: 12, Reset: 6 * time.Minute, Set: true},
		Tokens:   RateLimit{Limit: 30000, Remaining: 29000, Reset: 20 * time.Millisecond, Set: true},
	}
	if rl != want {
		t.Fatalf("got %+v, want %+v", rl, want)
	}
	h.Set("x-ratelimit-reset-requests", "1s")
	h.Set("x-ratelimit-reset-tokens", "1m30.5s")
	rl, _ = ParseRateLimits(h, now)
	if rl.Requests.Reset != time.Second || rl.Tokens.Reset != 90*time.Second+500*time.Millisecond {
		t.Fatalf("resets %v %v", rl.Requests.Reset, rl.Tokens.Reset)
	}
}

func TestParseRateLimitsAnthropic(t *testing.T) {
	now := newFakeClock().Now()
	h := http.Header{}
	reset := now.Add(3 * time.Second).Format(time.RFC3339)
	for _, w := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		h.Set("anthropic-ratelimit-"+w+"-limit", "4000")
		h.Set("anthropic-ratelimit-"+w+"-remaining", "3999")
		h.Set("anthropic-ratelimit-"+w+"-reset", reset)
	}
	h.Set("anthropic-ratelimit-requests-limit", "50")
	h.Set("anthropic-ratelimit-requests-remaining", "0")
	rl, ok := ParseRateLimits(h, now)
	if !ok {
		t.Fatal("not parsed")
	}
	if rl.Requests != (RateLimit{Limit: 50, Remaining: 0, Reset: 3 * time.Second, Set: true}) {
		t.Fatalf("requests %+v", rl.Requests)
	}
	for _, w := range []RateLimit{rl.Tokens, rl.InputTokens, rl.OutputTokens} {
		if w != (RateLimit{Limit: 4000, Remaining: 3999, Reset: 3 * time.Second, Set: true}) {
			t.Fatalf("tokens window %+v", w)
		}
	}
	// a reset in the past is now; OpenAI's family wins where both report
	h.Set("anthropic-ratelimit-tokens-reset", now.Add(-time.Hour).Format(time.RFC3339))
	h.Set("x-ratelimit-remaining-requests", "7")
	rl, _ = ParseRateLimits(h, now)
	if rl.Tokens.Reset != 0 || rl.Requests.Remaining != 7 || rl.Requests.Limit != 0 {
		t.Fatalf("got %+v", rl)
	}
}

func TestParseRateLimitsBadInput(t *testing.T) {
	now := newFakeClock().Now()
	if _, ok := ParseRateLimits(nil, now); ok {
		t.Fatal("nil header parsed")
	}
	h := http.Header{}
	h.Set("x-ratelimit-remaining-requests", "-3")
	h.Set("x-ratelimit-remaining-tokens", "lots")
	h.Set("anthropic-ratelimit-requests-remaining", "NaN")
	h.Set("anthropic-ratelimit-tokens-remaining", "1e400")
	if rl, ok := ParseRateLimits(h, now); ok {
		t.Fatalf("garbage parsed: %+v", rl)
	}
	h = http.Header{}
	h.Set("x-ratelimit-remaining-requests", "5")
	h.Set("x-ratelimit-reset-requests", "soon")
	h.Set("x-ratelimit-limit-requests", "x")
	rl, ok := ParseRateLimits(h, now)
	if !ok || rl.Requests != (RateLimit{Remaining: 5, Set: true}) {
		t.Fatalf("got %+v", rl.Requests)
	}
}

func TestParseRateLimitsAllocatesNothing(t *testing.T) {
	now := newFakeClock().Now()
	plain := http.Header{"Content-Type": {"application/json"}}
	oai := http.Header{}
	oai.Set("x-ratelimit-limit-requests", "500")
	oai.Set("x-ratelimit-remaining-requests", "12")
	oai.Set("x-ratelimit-reset-requests", "6m0s")
	ant := http.Header{}
	ant.Set("anthropic-ratelimit-requests-remaining", "12")
	ant.Set("anthropic-ratelimit-requests-reset", now.Format(time.RFC3339))
	for name, h := range map[string]http.Header{"none": plain, "openai": oai, "anthropic": ant} {
		if n := testing.AllocsPerRun(100, func() { ParseRateLimits(h, now) }); n != 0 {
			t.Errorf("%s: %.0f allocations per parse", name, n)
		}
	}
}

// learn leases a key of p for model and has it report rl.
func learn(t *testing.T, p *Pool, model string, rl RateLimits) *Key {
	t.Helper()
	l, err := p.Acquire(context.Background(), AcquireOptions{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	l.Learn(rl)
	l.Release(Outcome{Kind: Success, Status: 200})
	return l.Key()
}

func reqLimit(limit, remaining int64, reset time.Duration) RateLimits {
	return RateLimits{Requests: RateLimit{Limit: limit, Remaining: remaining, Reset: reset, Set: true}}
}

func TestLearnedRequestsGateUntilReset(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{MaxConcurrencyPerKey: 4})
	k := learn(t, p, "m", reqLimit(500, 0, 3*time.Second))
	for i := 0; i < 20; i++ {
		l, err := p.Acquire(context.Background(), AcquireOptions{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if l.Key() == k {
			t.Fatalf("request %d went to %s, which has no requests left", i, k.ID())
		}
		l.Release(Outcome{Kind: Success})
	}
	// another model's limits are its own
	if l, err := p.Acquire(context.Background(), AcquireOptions{Model: "other", Skip: func(x *Key) bool { return x != k }}); err != nil {
		t.Fatalf("other model: %v", err)
	} else {
		l.Release(Outcome{Kind: Success})
	}
	st := status(p, k.ID())
	if st.State != StateLimited || st.Reason != ReasonLearned || st.SecondsLeft != 3 || st.Source != "" || st.Failures != 0 || st.Breaker != "closed" {
		t.Fatalf("status %+v", st)
	}
	if len(st.Learned) != 1 || st.Learned[0].Model != "m" || *st.Learned[0].Requests != (LearnedWindow{Limit: 500, Remaining: 0, ResetAt: clk.Now().Add(3 * time.Second), ResetSeconds: 3}) {
		t.Fatalf("learned %+v", st.Learned)
	}
	_, err := p.Acquire(context.Background(), AcquireOptions{Model: "m", Skip: func(x *Key) bool { return x != k }})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.RetryAfter != 3*time.Second || ue.Keys[0].Reason != ReasonLearned || ue.Keys[0].State != StateLimited {
		t.Fatalf("err %v", err)
	}
	clk.Advance(3 * time.Second) // the window resets: the learned values age out
	l, err := p.Acquire(context.Background(), AcquireOptions{Model: "m", Skip: func(x *Key) bool { return x != k }})
	if err != nil {
		t.Fatalf("after the reset: %v", err)
	}
	l.Release(Outcome{Kind: Success})
	if st := status(p, k.ID()); st.State != StateReady || len(st.Learned) != 0 {
		t.Fatalf("after the reset: %+v", st)
	}
}

func TestLearnedCountsLeasesBegunSince(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 10})
	opts := AcquireOptions{Model: "m"}
	first, _ := p.Acquire(context.Background(), opts)
	second, _ := p.Acquire(context.Background(), opts) // begun before first's answer
	first.Learn(reqLimit(100, 3, 10*time.Second))
	// 3 left as of first's answer; second began after first: 2 more fit
	var held []*Lease
	for i := 0; i < 2; i++ {
		l, err := p.Acquire(context.Background(), opts)
		if err != nil {
			t.Fatalf("lease %d: %v", i, err)
		}
		held = append(held, l)
	}
	if _, err := p.Acquire(context.Background(), opts); err == nil {
		t.Fatal("a fourth request since the answer was let through")
	}
	// a newer request's answer replaces it
	held[1].Learn(reqLimit(100, 5, 10*time.Second))
	if st := status(p, "k0"); st.Learned[0].Requests.Remaining != 5 {
		t.Fatalf("learned %+v", st.Learned[0].Requests)
	}
	// an older request's answer (second began before held[1]) does not
	second.Learn(reqLimit(100, 50, 10*time.Second))
	if st := status(p, "k0"); st.Learned[0].Requests.Remaining != 5 {
		t.Fatalf("a stale answer replaced a newer one: %+v", st.Learned[0].Requests)
	}
	for _, l := range append(held, first, second) {
		l.Release(Outcome{Kind: Success})
	}
	clk.Advance(time.Second)
}

func TestLearnedTokensAgainstEstimate(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 10})
	l, _ := p.Acquire(context.Background(), AcquireOptions{Model: "m", Tokens: 100})
	l.Learn(RateLimits{Tokens: RateLimit{Limit: 10000, Remaining: 1000, Reset: 30 * time.Second, Set: true}})
	l.Release(Outcome{Kind: Success, Tokens: 100})
	if _, err := p.Acquire(context.Background(), AcquireOptions{Model: "m", Tokens: 1500}); err == nil {
		t.Fatal("a 1500-token request went to a key with 1000 tokens left")
	}
	a, err := p.Acquire(context.Background(), AcquireOptions{Model: "m", Tokens: 600})
	if err != nil {
		t.Fatal(err)
	}
	// 400 left now: the 600 just begun count against the 1000
	if _, err := p.Acquire(context.Background(), AcquireOptions{Model: "m", Tokens: 500}); err == nil {
		t.Fatal("in-flight tokens were not counted")
	}
	b, err := p.Acquire(context.Background(), AcquireOptions{Model: "m", Tokens: 400})
	if err != nil {
		t.Fatal(err)
	}
	a.Release(Outcome{Kind: Success})
	b.Release(Outcome{Kind: Success})
}

func TestLearnedConfiguredRPMStillApplies(t *testing.T) {
	clk := newFakeClock()
	p, err := New("main", Settings{MaxConcurrencyPerKey: 10}, []KeyConfig{{Fingerprint: "fp0", ID: "k0", RPM: 2}}, clk)
	if err != nil {
		t.Fatal(err)
	}
	learn(t, p, "m", reqLimit(1000, 900, time.Minute))
	learn(t, p, "m", reqLimit(1000, 899, time.Minute))
	if _, err := p.Acquire(context.Background(), AcquireOptions{Model: "m"}); err == nil {
		t.Fatal("the configured rpm 2 was exceeded because the upstream allows more")
	}
	if st := status(p, "k0"); st.Reason != ReasonRPM {
		t.Fatalf("status %+v", st)
	}
}

func TestLearnLimitsOff(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{LearnLimitsOff: true})
	learn(t, p, "m", reqLimit(10, 0, time.Minute))
	if st := status(p, "k0"); st.State != StateReady || st.Learned != nil {
		t.Fatalf("learning off, yet %+v", st)
	}
	// turning it off forgets what was learned
	p2, _ := newTestPool(t, 1, Settings{})
	learn(t, p2, "m", reqLimit(10, 0, time.Minute))
	if err := p2.Reconcile(Settings{LearnLimitsOff: true}, keys(1)); err != nil {
		t.Fatal(err)
	}
	if l, err := p2.Acquire(context.Background(), AcquireOptions{Model: "m"}); err != nil {
		t.Fatalf("after turning learning off: %v", err)
	} else {
		l.Release(Outcome{Kind: Success})
	}
}

func TestLearnedAcquireWaitsForReset(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 4})
	learn(t, p, "m", reqLimit(10, 0, 2*time.Second))
	got := make(chan error, 1)
	go func() {
		l, err := p.Acquire(context.Background(), AcquireOptions{Model: "m", Timeout: 10 * time.Second})
		if err == nil {
			l.Release(Outcome{Kind: Success})
		}
		got <- err
	}()
	waitFor(t, func() bool { return clk.pending() == 1 }) // waits for the reset, without polling
	clk.Advance(2 * time.Second)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// a wait past the timeout fails fast
	learn(t, p, "m", reqLimit(10, 0, time.Hour))
	if _, err := p.Acquire(context.Background(), AcquireOptions{Model: "m", Timeout: time.Second}); err == nil {
		t.Fatal("no error")
	}
}

func TestWeightZeroIsStandby(t *testing.T) {
	clk := newFakeClock()
	kc := keys(4)
	kc[3].Standby = true
	p, err := New("main", Settings{Strategy: "weighted", MaxConcurrencyPerKey: 4}, kc, clk)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for i := 0; i < 300; i++ {
		l := mustAcquire(t, p)
		count[l.Key().ID()]++
		l.Release(Outcome{Kind: Success})
	}
	if count["k3"] != 0 || count["k0"] != 100 || count["k1"] != 100 || count["k2"] != 100 {
		t.Fatalf("while the weighted keys are eligible: %v", count)
	}
	if st := status(p, "k3"); st.Weight != 0 {
		t.Fatalf("standby shows weight %d", st.Weight)
	}
	for i := 0; i < 3; i++ {
		l := mustAcquire(t, p)
		l.Release(Outcome{Kind: RateLimited, Status: 429, RetryAfter: time.Hour, HasRetryAfter: true})
	}
	count = map[string]int{}
	for i := 0; i < 300; i++ {
		l := mustAcquire(t, p)
		count[l.Key().ID()]++
		l.Release(Outcome{Kind: Success})
	}
	if count["k3"] != 300 {
		t.Fatalf("while the others cool: %v", count)
	}
	clk.Advance(time.Hour)
	l := mustAcquire(t, p)
	if l.Key().ID() == "k3" {
		t.Fatal("the standby kept serving after the others came back")
	}
	l.Release(Outcome{Kind: Success})
}

func TestSmartPenaltyDecays(t *testing.T) {
	p, clk := newTestPool(t, 2, Settings{Strategy: "smart", MaxConcurrencyPerKey: 4})
	l := mustAcquire(t, p)
	bad := l.Key()
	l.Release(Outcome{Kind: ServerError, Status: 500})
	clk.Advance(6 * time.Second) // past the error cooldown
	for i := 0; i < 10; i++ {
		l := mustAcquire(t, p)
		if l.Key() == bad {
			t.Fatalf("pick %d: the key that just failed was preferred", i)
		}
		l.Release(Outcome{Kind: Success})
	}
	clk.Advance(30 * time.Minute) // the failure is forgotten: never permanent
	seen := map[*Key]int{}
	for i := 0; i < 10; i++ {
		l := mustAcquire(t, p)
		seen[l.Key()]++
		l.Release(Outcome{Kind: Success})
	}
	if seen[bad] != 5 {
		t.Fatalf("after the failure aged out: %d of 10 on it", seen[bad])
	}
}

func TestSmartPrefersMostBudgetLeft(t *testing.T) {
	p, _ := newTestPool(t, 3, Settings{Strategy: "smart", MaxConcurrencyPerKey: 4})
	rem := map[string]int64{"k0": 20, "k1": 80, "k2": 50}
	for i := 0; i < 3; i++ {
		l, _ := p.Acquire(context.Background(), AcquireOptions{Model: "m", Skip: func(k *Key) bool { return k.ID() != keys(3)[i].ID }})
		l.Learn(reqLimit(100, rem[l.Key().ID()], time.Hour))
		l.Release(Outcome{Kind: Success})
	}
	l, _ := p.Acquire(context.Background(), AcquireOptions{Model: "m"})
	if l.Key().ID() != "k1" {
		t.Fatalf("picked %s, want k1 (80 of 100 left)", l.Key().ID())
	}
	l.Release(Outcome{Kind: Success})
}

func TestLearnedSharedAcrossCluster(t *testing.T) {
	ps, b, clk := cluster(t, 2, Settings{MaxConcurrencyPerKey: 4}, keys(1), time.Minute)
	learn(t, ps[0], "m", reqLimit(60, 0, 5*time.Second))
	// instance B heard of it with A's release
	if _, err := ps[1].Acquire(context.Background(), AcquireOptions{Model: "m"}); err == nil {
		t.Fatal("instance B leased a key A learned is used up")
	}
	st := status(ps[1], "k0")
	if st.Reason != ReasonLearned || st.Learned[0].Requests.Limit != 60 {
		t.Fatalf("B's view: %+v", st)
	}
	snap, err := b.Snapshot(context.Background(), "main", []string{"fp0"})
	if err != nil || len(snap[0].Learned) != 1 || snap[0].Learned[0].Limits.Requests.Reset != 5*time.Second {
		t.Fatalf("snapshot %+v %v", snap, err)
	}
	clk.Advance(5 * time.Second)
	l, err := ps[1].Acquire(context.Background(), AcquireOptions{Model: "m"})
	if err != nil {
		t.Fatalf("after the reset: %v", err)
	}
	l.Release(Outcome{Kind: Success})
}

func TestLearnedNoAllocationWithoutData(t *testing.T) {
	p, _ := newTestPool(t, 8, Settings{MaxConcurrencyPerKey: 4})
	opts := AcquireOptions{Model: "m", Tokens: 100}
	base := testing.AllocsPerRun(200, func() {
		l, _ := p.Acquire(context.Background(), opts)
		l.Release(Outcome{Kind: Success})
	})
	if base > 1 { // the Lease itself
		t.Fatalf("%.1f allocations per Acquire+Release", base)
	}
}

// TestLearnedResetCappedByMaxHint: a reported reset further than
// MaxHintCooldown (a relay's bogus header) holds the key no longer than
// that cap, as a Retry-After would.
func TestLearnedResetCappedByMaxHint(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 4, MaxHintCooldown: time.Minute})
	k := learn(t, p, "m", reqLimit(10, 0, 365*24*time.Hour))
	if st := status(p, k.ID()); st.State != StateLimited || st.Reason != ReasonLearned || st.SecondsLeft != 60 {
		t.Fatalf("status %+v, want limited for 60 s", st)
	}
	clk.Advance(time.Minute)
	if st := status(p, k.ID()); st.State != StateReady {
		t.Fatalf("after the cap: %+v", st)
	}
}

// TestLearnedGateNotPushedOutByOtherModels: a key full of learned models
// keeps the entry that holds it back, however many other model names
// (a client's made-up ones) answer afterwards.
func TestLearnedGateNotPushedOutByOtherModels(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 64})
	k := learn(t, p, "real", reqLimit(10, 0, time.Minute))
	for i := 0; i < 3*maxLearnedModels; i++ {
		learn(t, p, fmt.Sprintf("made-up-%d", i), reqLimit(10, 9, time.Minute))
	}
	if st := status(p, k.ID()); st.State != StateReady {
		t.Fatalf("status %+v", st) // the key serves the other models
	}
	if ok, _ := k.learnedGate("real", 0, p.clock.Now()); ok {
		t.Fatal("the real model's exhausted window was pushed out by other model names")
	}
	_, err := p.Acquire(context.Background(), AcquireOptions{Model: "real"})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Keys[0].Reason != ReasonLearned {
		t.Fatalf("acquire for the real model: %v", err)
	}
}
