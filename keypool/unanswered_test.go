package keypool

import (
	"testing"
	"time"
)

// unanswered is a client attempt's timeout while the upstream, having
// taken the request, had not answered yet.
var unanswered = Outcome{Kind: Timeout, AwaitingAnswer: true, Message: "no answer within attempt_timeout"}

// recordingVerifier sets a verifier that hands each call to the test,
// which confirms by hand.
func recordingVerifier(p *Pool) chan Outcome {
	calls := make(chan Outcome, 8)
	p.SetVerifier(func(k *Key, o Outcome) { calls <- o }, 5*time.Second)
	return calls
}

func waitVerified(t *testing.T, p *Pool, i int) {
	t.Helper()
	waitFor(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return !p.keys[i].verifying
	})
}

func TestUnansweredTimeoutLeavesKeyReady(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{MaxConcurrencyPerKey: 2, FailureThreshold: 1})
	calls := recordingVerifier(p)
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release(unanswered)
	b.Release(unanswered) // while the first probe is pending: no second probe
	st := status(p, "k0")
	if st.State != "ready" || st.Breaker != "closed" || st.ConsecutiveFailures != 0 || st.Failures != 0 || st.Reason != "" || st.LastMessage != "" {
		t.Fatalf("after two unanswered timeouts: %+v, want ready and untouched", st)
	}
	if o := <-calls; o.Kind != Timeout || !o.AwaitingAnswer {
		t.Fatalf("verifier called with %+v", o)
	}
	waitVerified(t, p, 0)
	if len(calls) != 0 {
		t.Fatalf("verifier called %d more times", len(calls))
	}
	p.Confirm("fp0", Outcome{Kind: Success, Status: 200})
	if st := status(p, "k0"); st.State != "ready" || st.Failures != 0 {
		t.Fatalf("after a good probe: %+v", st)
	}
	// the verdict is used up: a late failing probe changes nothing
	p.Confirm("fp0", Outcome{Kind: Timeout})
	if st := status(p, "k0"); st.State != "ready" || st.Breaker != "closed" {
		t.Fatalf("after a stray Confirm: %+v", st)
	}
}

func TestUnansweredTimeoutWithoutVerifierChangesNothing(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{FailureThreshold: 1})
	mustAcquire(t, p).Release(unanswered)
	if st := status(p, "k0"); st.State != "ready" || st.Breaker != "closed" || st.Failures != 0 {
		t.Fatalf("%+v", st)
	}
	p.mu.Lock()
	pending := p.keys[0].pending
	p.mu.Unlock()
	if pending != nil {
		t.Fatalf("a verdict is pending with no verifier: %+v", pending)
	}
	// a timeout before the upstream took the request is the key's, as ever
	mustAcquire(t, p).Release(Outcome{Kind: Timeout, Message: "upstream timeout"})
	if st := status(p, "k0"); st.Breaker != "open" || st.Failures != 1 {
		t.Fatalf("connection-level timeout: %+v, want the breaker open", st)
	}
}

func TestUnansweredTimeoutConfirmedByFailingProbe(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{})
	calls := recordingVerifier(p)
	mustAcquire(t, p).Release(unanswered)
	<-calls
	waitVerified(t, p, 0)
	t0 := clk.Now()
	p.Confirm("fp0", Outcome{Kind: Timeout, Message: "diagnose probe timed out"})
	st := status(p, "k0")
	if st.State != "cooling" || st.Reason != "timeout" || !st.Until.Equal(t0.Add(DefaultErrorCooldown)) ||
		st.ConsecutiveFailures != 1 || st.Failures != 1 || st.LastMessage != "diagnose probe timed out" {
		t.Fatalf("after the probe timed out too: %+v, want cooling %v for timeout", st, DefaultErrorCooldown)
	}
	// a probe answering 503 confirms as well, booked as what it was
	clk.Advance(DefaultErrorCooldown)
	mustAcquire(t, p).Release(unanswered)
	<-calls
	waitVerified(t, p, 0)
	p.Confirm("fp0", Outcome{Kind: ServerError, Status: 503})
	if st := status(p, "k0"); st.State != "cooling" || st.Reason != "server_error" || st.ConsecutiveFailures != 2 {
		t.Fatalf("after a 503 probe: %+v", st)
	}
	// a rate-limited probe says the key answers: nothing is booked
	clk.Advance(DefaultMaxCooldown)
	mustAcquire(t, p).Release(Outcome{Kind: Success, Status: 200})
	mustAcquire(t, p).Release(unanswered)
	<-calls
	waitVerified(t, p, 0)
	p.Confirm("fp0", Outcome{Kind: RateLimited, Status: 429})
	if st := status(p, "k0"); st.State != "ready" || st.ConsecutiveFailures != 0 {
		t.Fatalf("after a 429 probe: %+v", st)
	}
}

func TestUnansweredTimeoutLiftedByLaterSuccess(t *testing.T) {
	p, _ := newTestPool(t, 1, Settings{FailureThreshold: 1})
	calls := recordingVerifier(p)
	mustAcquire(t, p).Release(unanswered)
	<-calls
	mustAcquire(t, p).Release(Outcome{Kind: Success, Status: 200}) // begun after: the key answers
	waitVerified(t, p, 0)
	p.Confirm("fp0", Outcome{Kind: Timeout})
	if st := status(p, "k0"); st.State != "ready" || st.Breaker != "closed" || st.Failures != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestHalfOpenProbeNotJudgedByClientAnswerTime(t *testing.T) {
	p, clk := newTestPool(t, 1, Settings{FailureThreshold: 1})
	calls := recordingVerifier(p)
	mustAcquire(t, p).Release(Outcome{Kind: ServerError, Status: 500})
	if st := status(p, "k0"); st.Breaker != "open" {
		t.Fatalf("%+v", st)
	}
	clk.Advance(DefaultBreakerOpen)
	l := mustAcquire(t, p)
	if !l.Probe() || status(p, "k0").Breaker != "half_open" {
		t.Fatalf("not the half-open probe: %v %+v", l.Probe(), status(p, "k0"))
	}
	l.Release(unanswered) // a long generation on the probe slot
	if st := status(p, "k0"); st.Breaker != "half_open" || st.Failures != 1 || st.ConsecutiveFailures != 1 {
		t.Fatalf("the client's slow answer judged the half-open probe: %+v", st)
	}
	l2 := mustAcquire(t, p)
	if !l2.Probe() {
		t.Fatal("the next request is not the half-open probe again")
	}
	l2.Release(Outcome{Kind: Canceled})
	<-calls
	waitVerified(t, p, 0)
	t1 := clk.Now()
	p.Confirm("fp0", Outcome{Kind: Timeout})
	p.mu.Lock()
	until, trips := p.keys[0].breakerUntil, p.keys[0].breakerTrips
	p.mu.Unlock()
	if st := status(p, "k0"); st.Breaker != "open" || trips != 2 || !until.Equal(t1.Add(2*DefaultBreakerOpen)) {
		t.Fatalf("after the gateway's probe timed out: %+v trips %d until %v, want reopened for %v", st, trips, until.Sub(t1), 2*DefaultBreakerOpen)
	}
}
