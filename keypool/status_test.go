package keypool

import (
	"encoding/json"
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
