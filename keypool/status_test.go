package keypool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestKeyStateAndReasonText: states and reasons are typed, and their JSON
// is the same bytes the admin API has always shown.
func TestKeyStateAndReasonText(t *testing.T) {
	p, _ := newTestPool(t, 2, Settings{})
	mustAcquire(t, p).Release(Outcome{Kind: RateLimited, Status: 429})
	st := status(p, "k0")
	if st.State != StateCooling || st.Reason != RateLimited.Reason() {
		t.Fatalf("k0 %+v, want cooling for rate_limited", st)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"state":"cooling","reason":"rate_limited"`) {
		t.Errorf("JSON %s", b)
	}
	if s := status(p, "k1"); s.State != StateReady || s.Reason != "" {
		t.Errorf("k1 %+v, want ready without a reason", s)
	}
	p.SetDisabled("k1", true)
	if s := status(p, "k1"); s.State != StateDisabled || s.Reason != ReasonDisabled {
		t.Errorf("k1 %+v, want disabled", s)
	}
	// every state, listed here rather than read from keyStates, so that a
	// state missing from the list UnmarshalText accepts fails
	for _, s := range []KeyState{StateReady, StateBusy, StateCooling, StateBreakerOpen, StateLimited, StateDisabled, StateBenched, StateSkipped, StateBudget} {
		var back KeyState
		txt, _ := s.MarshalText()
		if err := back.UnmarshalText(txt); err != nil || back != s || s.String() != string(txt) || len(txt) == 0 {
			t.Errorf("state %q: round trip %q %v", s, back, err)
		}
	}
	var bad KeyState
	if err := bad.UnmarshalText([]byte("sleeping")); err == nil || !strings.Contains(err.Error(), `key state "sleeping": want one of ready, busy, cooling`) {
		t.Errorf("unknown state: %v", err)
	}
	var r Reason
	if err := json.Unmarshal([]byte(`"quota_exhausted"`), &r); err != nil || r != QuotaExhausted.Reason() {
		t.Errorf("reason %q %v", r, err)
	}
	for kind, want := range map[OutcomeKind]Reason{InvalidKey: "invalid_key", NoCredit: "no_credit", ServerError: "server_error", Timeout: "timeout"} {
		if kind.Reason() != want {
			t.Errorf("%v.Reason() = %q, want %q", kind, kind.Reason(), want)
		}
	}
}

// TestDefaultSettings: DefaultSettings is what zero Settings stand for,
// field by field the documented constants.
func TestDefaultSettings(t *testing.T) {
	d := DefaultSettings()
	want := Settings{
		MaxConcurrencyPerKey: DefaultMaxConcurrencyPerKey, RateLimitCooldown: 3 * time.Second, ErrorCooldown: 5 * time.Second,
		MaxCooldown: 10 * time.Minute, MaxHintCooldown: 24 * time.Hour, InvalidKeyCooldown: 5 * time.Minute,
		NoCreditCooldown: 24 * time.Hour, ForbiddenCooldown: 24 * time.Hour, ProvisionalCooldown: 60 * time.Second,
		FailureThreshold: 3, BreakerOpen: 30 * time.Second, RateLimitWindow: time.Hour, ModelNotFoundThreshold: 3,
		ModelNotFoundWindow: 15 * time.Minute, ModelNotFoundCooldown: 10 * time.Minute, ProbeTimeout: 5 * time.Second,
		ProbeBackoff: 30 * time.Second, MaxProbeBackoff: 15 * time.Minute, Strategy: "round_robin",
		AffinityTTL: 30 * time.Minute, AffinityMaxEntries: 100000, UsageWindow: time.Minute, LeastUsedBy: "requests",
		LatencyAlpha: 0.2, LatencyExplore: 0.05, PaceLead: 0.01,
	}
	if d != want {
		t.Errorf("DefaultSettings\n got %+v\nwant %+v", d, want)
	}
	if d.withDefaults() != d {
		t.Error("defaults are not a fixed point of withDefaults")
	}
}

// TestQuotaText: a Quota reads and writes the text ParseQuota takes.
func TestQuotaText(t *testing.T) {
	var q Quota
	if err := q.UnmarshalText([]byte("1000 requests and 5000 tokens per 24h")); err != nil {
		t.Fatal(err)
	}
	if q.Requests != 1000 || q.Tokens != 5000 || q.Period != 24*time.Hour {
		t.Fatalf("quota %+v", q)
	}
	b, _ := q.MarshalText()
	if string(b) != "1000 requests 5000 tokens per 24h0m0s" {
		t.Errorf("text %q", b)
	}
	var back Quota
	if err := back.UnmarshalText(b); err != nil || back != q {
		t.Errorf("round trip %+v %v", back, err)
	}
	if b, _ := (Quota{}).MarshalText(); len(b) != 0 {
		t.Errorf("zero quota text %q, want empty", b)
	}
	if err := back.UnmarshalText([]byte("lots per day")); err == nil || !strings.Contains(err.Error(), `quota "lots per day"`) {
		t.Errorf("bad quota: %v", err)
	}
}

// TestUnavailableKeysDead: only keys disabled or cooling on a confirmed
// dead-key verdict with over a minute (MaxClientRetryAfter) left make
// KeysDead true; one key cooling for a 429, busy or limited makes it
// false, and so do a provisional verdict (awaiting its probe: a wait,
// however long its cooldown), a dead-key verdict applied directly that
// ends within a minute and an empty list.
func TestUnavailableKeysDead(t *testing.T) {
	dead := KeyStatus{State: StateCooling, Reason: InvalidKey.Reason(), SecondsLeft: 86400}
	cases := []struct {
		name string
		keys []KeyStatus
		want bool
	}{
		{"none", nil, false},
		{"invalid", []KeyStatus{dead}, true},
		{"dead kinds and disabled", []KeyStatus{dead, {State: StateCooling, Reason: NoCredit.Reason(), SecondsLeft: 86400},
			{State: StateCooling, Reason: Forbidden.Reason(), SecondsLeft: 61},
			{State: StateCooling, Reason: QuotaExhausted.Reason(), SecondsLeft: 3600},
			{State: StateDisabled, Reason: ReasonDisabled}}, true},
		{"one provisional forbidden", []KeyStatus{dead, {State: StateCooling, Reason: Forbidden.Reason(), Provisional: true, SecondsLeft: 60}}, false},
		{"one long provisional quota", []KeyStatus{dead, {State: StateCooling, Reason: QuotaExhausted.Reason(), Provisional: true, SecondsLeft: 300}}, false},
		{"one quota resets within a minute", []KeyStatus{dead, {State: StateCooling, Reason: QuotaExhausted.Reason(), SecondsLeft: 30}}, false},
		{"one short invalid-key cooldown", []KeyStatus{dead, {State: StateCooling, Reason: InvalidKey.Reason(), SecondsLeft: 60}}, false},
		{"one rate limited", []KeyStatus{dead, {State: StateCooling, Reason: RateLimited.Reason()}}, false},
		{"one busy", []KeyStatus{dead, {State: StateBusy, Reason: ReasonBusy}}, false},
		{"one limited", []KeyStatus{dead, {State: StateLimited, Reason: ReasonRPM}}, false},
		{"one breaker open", []KeyStatus{dead, {State: StateBreakerOpen, Reason: ReasonBreakerOpen}}, false},
	}
	for _, c := range cases {
		if got := (&UnavailableError{Keys: c.keys}).KeysDead(); got != c.want {
			t.Errorf("%s: KeysDead() = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestUnavailableKeysRateLimited: a pool whose keys are all held by a rate
// limit (one busy, one over its rpm, one over its quota, one cooling on a
// 429) is rate limited; so is one resting after a success, and a key
// skipped for the request counts only when the request's last attempt on
// it was a 429. A key cooling on a 5xx, a dead-key verdict, an open
// breaker, a probe in flight, a bench, a budget hold or a disabled key
// makes it false.
func TestUnavailableKeysRateLimited(t *testing.T) {
	only := func(id string) AcquireOptions {
		return AcquireOptions{Skip: func(k *Key) bool { return k.ID() != id }}
	}
	unavailable := func(t *testing.T, p *Pool, opts AcquireOptions) *UnavailableError {
		t.Helper()
		l, err := p.Acquire(context.Background(), opts)
		var ue *UnavailableError
		if !errors.As(err, &ue) {
			if l != nil {
				l.Release(Outcome{Kind: Success})
			}
			t.Fatalf("acquire: %v, want an UnavailableError", err)
		}
		return ue
	}
	p, clk := newPoolWith(t, Settings{MaxConcurrencyPerKey: 1, RateLimitCooldown: 3 * time.Second}, []KeyConfig{
		{Fingerprint: "fp0", ID: "k0", RPM: 1},
		{Fingerprint: "fp1", ID: "k1"},
		{Fingerprint: "fp2", ID: "k2"},
		{Fingerprint: "fp3", ID: "k3", Quota: Quota{Requests: 1, Period: time.Hour}},
	})
	acquire(t, p, only("k0")).Release(Outcome{Kind: Success, Status: 200})
	held := acquire(t, p, only("k1"))
	acquire(t, p, only("k2")).Release(Outcome{Kind: RateLimited, Status: 429})
	acquire(t, p, only("k3")).Release(Outcome{Kind: Success, Status: 200})

	ue := unavailable(t, p, AcquireOptions{})
	want := `pool "main": no key available: k0 limited (rpm, 60s left); k1 busy; k2 cooling (rate_limited, 3s left); k3 limited (quota, 3600s left)`
	if ue.Error() != want {
		t.Fatalf("summary %q\nwant    %q", ue.Error(), want)
	}
	if !ue.KeysRateLimited(nil) || ue.KeysDead() {
		t.Fatalf("busy, rpm, quota and a 429: KeysRateLimited %v, KeysDead %v; want true, false", ue.KeysRateLimited(nil), ue.KeysDead())
	}

	// k1 skipped for the request: rate limited only when this request's
	// attempt on it was a 429
	skipK1 := AcquireOptions{Skip: func(k *Key) bool { return k.ID() == "k1" }}
	ue = unavailable(t, p, skipK1)
	if st := ue.Keys[1]; st.State != StateSkipped || st.Reason != ReasonFailedThisRequest {
		t.Fatalf("k1 %+v, want skipped", st)
	}
	if ue.KeysRateLimited(nil) || ue.KeysRateLimited(func(id string) bool { return id != "k1" }) {
		t.Error("a key skipped for another failure counted as rate limited")
	}
	if !ue.KeysRateLimited(func(id string) bool { return id == "k1" }) {
		t.Error("a key skipped after its 429 did not count as rate limited")
	}

	// k2's 429 cooldown ends; its next attempt fails with a 500: cooling
	// for a server error, no longer a rate limit
	clk.Advance(3 * time.Second)
	acquire(t, p, only("k2")).Release(Outcome{Kind: ServerError, Status: 500})
	ue = unavailable(t, p, AcquireOptions{})
	if st := ue.Keys[2]; st.State != StateCooling || st.Reason != ServerError.Reason() {
		t.Fatalf("k2 %+v, want cooling for server_error", st)
	}
	if ue.KeysRateLimited(func(string) bool { return true }) {
		t.Errorf("one key cooling on a 500: KeysRateLimited true (%s)", ue.Error())
	}
	held.Release(Outcome{Kind: Success, Status: 200})

	// resting after a success is a limit of the pool's own
	p2, _ := newPoolWith(t, Settings{CooldownAfterSuccess: 2 * time.Second}, keys(1))
	mustAcquire(t, p2).Release(Outcome{Kind: Success, Status: 200})
	ue = unavailable(t, p2, AcquireOptions{})
	if st := ue.Keys[0]; st.Reason != ReasonCooldownAfterSuccess || !ue.KeysRateLimited(nil) {
		t.Errorf("cooldown after success: %+v, KeysRateLimited %v", st, ue.KeysRateLimited(nil))
	}
	// a budget hold is not a rate limit
	p2.Hold("k0", ReasonBudget, time.Hour)
	if ue = unavailable(t, p2, AcquireOptions{}); ue.KeysRateLimited(nil) {
		t.Errorf("budget hold: KeysRateLimited true (%s)", ue.Error())
	}

	limited := KeyStatus{State: StateCooling, Reason: RateLimited.Reason(), SecondsLeft: 30}
	for _, c := range []struct {
		name string
		keys []KeyStatus
		want bool
	}{
		{"none", nil, false},
		{"learned and pace", []KeyStatus{limited, {State: StateLimited, Reason: ReasonLearned}, {State: StateLimited, Reason: ReasonPace}, {State: StateLimited, Reason: ReasonTPM}}, true},
		{"one cooling on a 503", []KeyStatus{limited, {State: StateCooling, Reason: ServerError.Reason()}}, false},
		{"one timed out", []KeyStatus{limited, {State: StateCooling, Reason: Timeout.Reason()}}, false},
		{"one breaker open", []KeyStatus{limited, {State: StateBreakerOpen, Reason: ReasonBreakerOpen}}, false},
		{"one probe in flight", []KeyStatus{limited, {State: StateBusy, Reason: ReasonProbeInFlight}}, false},
		{"one provisional invalid key", []KeyStatus{limited, {State: StateCooling, Reason: InvalidKey.Reason(), Provisional: true}}, false},
		{"one quota exhausted upstream", []KeyStatus{limited, {State: StateCooling, Reason: QuotaExhausted.Reason()}}, false},
		{"one benched", []KeyStatus{limited, {State: StateBenched, Reason: ModelNotFound.Reason()}}, false},
		// out of rotation: neither counts nor objects
		{"one disabled", []KeyStatus{limited, {State: StateDisabled, Reason: ReasonDisabled}}, true},
		{"one invalid key confirmed, an hour left", []KeyStatus{limited, {State: StateCooling, Reason: InvalidKey.Reason(), SecondsLeft: 3600}}, true},
		{"one invalid key confirmed, 30 s left", []KeyStatus{limited, {State: StateCooling, Reason: InvalidKey.Reason(), SecondsLeft: 30}}, false},
		{"all disabled", []KeyStatus{{State: StateDisabled, Reason: ReasonDisabled}, {State: StateDisabled, Reason: ReasonDisabled}}, false},
		{"one budget", []KeyStatus{limited, {State: StateBudget, Reason: ReasonBudget}}, false},
	} {
		if got := (&UnavailableError{Keys: c.keys}).KeysRateLimited(func(string) bool { return true }); got != c.want {
			t.Errorf("%s: KeysRateLimited = %v, want %v", c.name, got, c.want)
		}
	}
}
