package keypool

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// KeyState is a key's runtime state as KeyStatus reports it. It is a
// string ("ready", "cooling", ...) in JSON, logs and metrics; compare it
// with the State constants, never with string literals.
type KeyState string

// Key states, as KeyStatus.State reports them.
const (
	// StateReady: the key can take a request now.
	StateReady KeyState = "ready"
	// StateBusy: every slot is in flight (or a probe is).
	StateBusy KeyState = "busy"
	// StateCooling: a cooldown runs (Reason says why, Source from where).
	StateCooling KeyState = "cooling"
	// StateBreakerOpen: the circuit breaker is open.
	StateBreakerOpen KeyState = "breaker_open"
	// StateLimited: over its rpm, tpm, quota or pace.
	StateLimited KeyState = "limited"
	// StateDisabled: taken out of rotation by an operator.
	StateDisabled KeyState = "disabled"
	// StateBenched: benched for the request's model after repeated 404s.
	StateBenched KeyState = "benched"
	// StateSkipped: excluded for this request (it failed it already).
	StateSkipped KeyState = "skipped"
	// StateBudget: held out of rotation until its spend budget's period
	// resets (Pool.Hold with ReasonBudget).
	StateBudget KeyState = "budget"
)

var keyStates = []KeyState{StateReady, StateBusy, StateCooling, StateBreakerOpen, StateLimited, StateDisabled, StateBenched, StateSkipped, StateBudget}

// String returns the state's name, e.g. "cooling".
func (s KeyState) String() string { return string(s) }

// MarshalText returns the state's name.
func (s KeyState) MarshalText() ([]byte, error) { return []byte(s), nil }

// UnmarshalText accepts one of the state names ("ready", "busy",
// "cooling", "breaker_open", "limited", "disabled", "benched", "skipped",
// "budget") and returns an error naming them for anything else.
func (s *KeyState) UnmarshalText(b []byte) error {
	for _, v := range keyStates {
		if string(b) == string(v) {
			*s = v
			return nil
		}
	}
	names := make([]string, len(keyStates))
	for i, v := range keyStates {
		names[i] = string(v)
	}
	return fmt.Errorf("key state %q: want one of %s", b, strings.Join(names, ", "))
}

// Reason says why a key cannot serve now (KeyStatus.Reason): an
// OutcomeKind name for a cooldown (OutcomeKind.Reason: "rate_limited",
// "invalid_key", ...) or one of the gate reasons below; empty when the
// key is ready. It is a string in JSON, logs and metrics.
type Reason string

// Gate reasons that are not an OutcomeKind.
const (
	// ReasonDisabled: taken out of rotation by an operator.
	ReasonDisabled Reason = "disabled"
	// ReasonBusy: every slot of the key is in flight.
	ReasonBusy Reason = "busy"
	// ReasonProbeInFlight: a half-open or early probe runs on the key.
	ReasonProbeInFlight Reason = "probe_in_flight"
	// ReasonBreakerOpen: the circuit breaker is open.
	ReasonBreakerOpen Reason = "breaker_open"
	// ReasonRPM, ReasonTPM, ReasonQuota: over the key's rpm, tpm or quota.
	ReasonRPM   Reason = "rpm"
	ReasonTPM   Reason = "tpm"
	ReasonQuota Reason = "quota"
	// ReasonPace: ahead of its budget line under the pace strategy.
	ReasonPace Reason = "pace"
	// ReasonCooldownAfterSuccess: resting after a success
	// (Settings.CooldownAfterSuccess).
	ReasonCooldownAfterSuccess Reason = "cooldown_after_success"
	// ReasonFailedThisRequest: a skipped key already failed this request.
	ReasonFailedThisRequest Reason = "failed this request"
	// ReasonBudget: the key's spend budget is used up until its period
	// resets (a Pool.Hold; state "budget").
	ReasonBudget Reason = "budget"
	// ReasonLearned: the upstream's own rate-limit headers said the key
	// has no requests (or too few tokens) left for the model until the
	// window resets (Lease.Learn); state "limited". Not a failure.
	ReasonLearned Reason = "learned"
)

// String returns the reason's name, e.g. "rate_limited".
func (r Reason) String() string { return string(r) }

// MarshalText returns the reason's name.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r), nil }

// UnmarshalText takes the reason's name as it is (reasons from other
// instances of a cluster may be newer than this build's list).
func (r *Reason) UnmarshalText(b []byte) error {
	*r = Reason(b)
	return nil
}

// Reason returns the kind's name as a key's Reason, e.g.
// Reason("rate_limited") for RateLimited.
func (k OutcomeKind) Reason() Reason { return Reason(k.String()) }

// KeyStatus is a secret-free snapshot of one key, for errors, readiness,
// logs and the admin API.
type KeyStatus struct {
	// ID is the key's display label (configured id or masked secret).
	ID string `json:"id"`
	// State is "ready", "busy", "cooling", "breaker_open", "limited"
	// (over its rpm, tpm, quota or pace), "disabled", "benched" (benched
	// for the request's model), "skipped" (excluded for this request) or
	// "budget" (its spend budget is used up until the period resets).
	State KeyState `json:"state"`
	// Reason is why the key cannot serve now: an OutcomeKind name such as
	// "rate_limited", "quota_exhausted", "invalid_key", "no_credit",
	// "forbidden", "server_error" or "model_not_found";
	// "cooldown_after_success", "busy", "breaker_open", "probe_in_flight",
	// "rpm", "tpm", "quota", "pace", "learned", "disabled", "budget" or another
	// Pool.Hold reason; empty when ready.
	Reason Reason `json:"reason,omitempty"`
	// Source says where the current cooldown's length came from:
	// "retry-after", "body", "reset-header", "utc-midnight" (named by the
	// upstream), "backoff" (the pool's ladder), "fixed" (a configured
	// cooldown) or "provisional" (Settings.ProvisionalCooldown: a long
	// verdict awaiting a probe's confirmation); empty when not cooling.
	Source string `json:"source,omitempty"`
	// Provisional is true while the key cools on a provisional verdict
	// (Reason is "invalid_key", "no_credit", "forbidden" or
	// "quota_exhausted"): one client request found the key dead, and the
	// long cooldown waits for an independent probe to confirm it
	// (Pool.Confirm); until then the cooldown lasts at most
	// Settings.ProvisionalCooldown.
	Provisional bool `json:"provisional,omitempty"`
	// VerdictDue, while Provisional and the pool's verifier probes the
	// key, is when the probe's answer is due (Pool.SetVerifier's bound
	// after it started): the key is back in rotation then if the probe
	// refutes the verdict, and cooling for the long cooldown if it
	// confirms it. Zero otherwise, and zero while something else keeps
	// the key out past then (disabled, a hold, an open breaker, its rpm,
	// tpm or quota limit; in an UnavailableError, a bench for the
	// request's model): the key would not serve at the probe's answer.
	VerdictDue time.Time `json:"verdict_due,omitzero"`
	// CooldownStatus is the upstream HTTP status that started the current
	// cooldown (0: none or not cooling).
	CooldownStatus int `json:"cooldown_status,omitempty"`
	// Until is when a time-bound state ends (zero when not time-bound).
	Until time.Time `json:"until,omitzero"`
	// SecondsLeft is Until minus now in whole seconds, rounded up.
	SecondsLeft int `json:"seconds_left,omitempty"`
	// InFlight and Cap are the current and maximum concurrent requests.
	InFlight int `json:"in_flight"`
	Cap      int `json:"cap"`
	// LastStatus is the last upstream HTTP status seen (0: none).
	LastStatus int `json:"last_status,omitempty"`
	// LastMessage is a short secret-free note on the last failure.
	LastMessage string `json:"last_message,omitempty"`
	// ConsecutiveFailures counts transient failures since the last success.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// Breaker is "closed", "open" or "half_open".
	Breaker string `json:"breaker"`
	// Requests, Successes and Failures are lifetime attempt counters.
	Requests  int64 `json:"requests"`
	Successes int64 `json:"successes"`
	Failures  int64 `json:"failures"`
	// LastUsed is when the key was last leased (zero: never).
	LastUsed time.Time `json:"last_used,omitzero"`
	// Priority and Weight are the configured values (Weight 0: a
	// standby, KeyConfig.Standby).
	Priority int `json:"priority,omitempty"`
	Weight   int `json:"weight"`
	// TTFB is the moving average of time to first byte (0: never
	// measured), in JSON as milliseconds.
	TTFB time.Duration `json:"-"`
	// TTFBMillis is TTFB in milliseconds, for JSON.
	TTFBMillis int64 `json:"ttfb_ms,omitempty"`
	// QuotaRequests and QuotaTokens are the requests and tokens used in
	// the current quota period; QuotaResetAt is when it ends (zero: no
	// quota).
	QuotaRequests int64     `json:"quota_requests,omitempty"`
	QuotaTokens   int64     `json:"quota_tokens,omitempty"`
	QuotaResetAt  time.Time `json:"quota_reset_at,omitzero"`
	// BenchedModels lists the models the key is benched for after
	// repeated 404s, with when each bench ends.
	BenchedModels map[string]time.Time `json:"benched_models,omitempty"`
	// NextProbe is the earliest time of the next early probe after a
	// failed one (zero: none pending).
	NextProbe time.Time `json:"next_probe,omitzero"`
	// Learned lists the limits the upstream reported for the key in its
	// rate-limit headers (Lease.Learn), one per model, most recent
	// first; windows past their reset are left out.
	Learned []LearnedLimit `json:"learned,omitempty"`
}

func (p *Pool) statusLocked(k *Key, now time.Time) KeyStatus {
	st := KeyStatus{
		ID:                  k.id,
		InFlight:            k.inFlight,
		Cap:                 k.capacity(&p.settings),
		LastStatus:          k.lastStatus,
		LastMessage:         k.lastMessage,
		ConsecutiveFailures: k.consecFailures,
		Breaker:             k.breaker.String(),
		Requests:            k.requests,
		Successes:           k.successes,
		Failures:            k.failures,
		LastUsed:            k.lastUsed,
		Priority:            k.priority,
		Weight:              k.weight,
		TTFB:                time.Duration(k.ema),
		TTFBMillis:          int64(k.ema / 1e6),
	}
	if k.quota.set() {
		k.lim.roll(&k.quota, now)
		st.QuotaRequests, st.QuotaTokens, st.QuotaResetAt = k.lim.qReq, k.lim.qTok, k.lim.periodEnd(&k.quota)
	}
	for m, x := range k.models {
		if now.Before(x.benchUntil) {
			if st.BenchedModels == nil {
				st.BenchedModels = map[string]time.Time{}
			}
			st.BenchedModels[m] = x.benchUntil
		}
	}
	if now.Before(k.nextProbe) {
		st.NextProbe = k.nextProbe
	}
	ok, reason, until := k.gate(now, &p.settings, p.pace)
	st.Reason, st.Until = Reason(reason), until
	switch r := st.Reason; {
	case ok:
		st.State = StateReady
	case r == ReasonDisabled:
		st.State = StateDisabled
	case r == ReasonBusy || r == ReasonProbeInFlight:
		st.State = StateBusy
	case r == ReasonBreakerOpen:
		st.State = StateBreakerOpen
	case r == ReasonBudget:
		st.State = StateBudget
	case r == ReasonRPM || r == ReasonTPM || r == ReasonQuota || r == ReasonPace:
		st.State = StateLimited
	case r != "" && r == k.holdReason(now):
		st.State = StateLimited // another hold: out of rotation for a limit, not a failure
	default:
		st.State = StateCooling
		st.Source, st.CooldownStatus = k.cooldownSource, k.cooldownStatus
		st.Provisional = k.cooldownProvisional() && now.Before(k.cooldownUntil) && reason == k.cooldownReason
		if st.Provisional && k.probing(reason, now) {
			st.VerdictDue = k.verifyBy
		}
	}
	if k.standby {
		st.Weight = 0 // KeyConfig.Standby
	}
	if k.lrn != nil {
		st.Learned = k.learnedStatus(now)
		if m, ok := k.latestModel(); ok && st.State == StateReady {
			p.learnedStateLocked(k, &st, m, 0, now)
		}
	}
	if !until.IsZero() {
		st.SecondsLeft = int(math.Ceil(until.Sub(now).Seconds()))
	}
	return st
}

// learnedStateLocked marks st, a ready key's status, "limited" for
// reason "learned" when the limits learned for model leave no room for a
// request of tokens.
func (p *Pool) learnedStateLocked(k *Key, st *KeyStatus, model string, tokens int64, now time.Time) {
	if k.lrn == nil {
		return
	}
	if ok, until := k.learnedGate(model, tokens, now); !ok {
		st.State, st.Reason, st.Until = StateLimited, ReasonLearned, until
		st.SecondsLeft = int(math.Ceil(until.Sub(now).Seconds()))
	}
}

// Snapshot returns the status of every key in configured order.
func (p *Pool) Snapshot() []KeyStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	out := make([]KeyStatus, len(p.keys))
	for i, k := range p.keys {
		out[i] = p.statusLocked(k, now)
	}
	return out
}

// Ready reports whether at least one key could take a request now; when
// none can, reason summarises why (secret-free).
func (p *Pool) Ready() (ready bool, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	if len(p.keys) == 0 {
		return false, "no keys configured"
	}
	counts := map[string]int{}
	for _, k := range p.keys {
		ok, r, _ := k.gate(now, &p.settings, p.pace)
		if ok {
			return true, ""
		}
		counts[r]++
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	return false, "no key ready (" + strings.Join(sortedStrings(parts), ", ") + ")"
}

func sortedStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// UnavailableError is returned by Acquire when no key can serve the request
// in time. Its message and Keys are secret-free and meant for the client.
type UnavailableError struct {
	// Pool is the pool's name.
	Pool string
	// RetryAfter suggests when to retry: the time until the earliest
	// cooldown ends, or until the answer of a running probe of a key
	// cooling on a provisional verdict is due (KeyStatus.VerdictDue) if
	// sooner, at least one second; zero when nothing will change by
	// itself (all keys disabled or skipped).
	RetryAfter time.Duration
	// Keys holds one entry per configured key.
	Keys []KeyStatus
	// NoKeys is true when no key could serve this request at all
	// (errors.Is(err, ErrNoKeys)).
	NoKeys bool
}

// KeysDead reports whether no key will serve again without an operator or
// a long wait: every key is disabled, or cooling on a confirmed dead-key
// verdict (invalid_key, no_credit, forbidden, quota_exhausted;
// OutcomeKind.Dead) with more than MaxClientRetryAfter left. A
// provisional verdict (Provisional: one client request's answer, awaiting
// the gateway's own probe) is a wait, not a death: that request may have
// caused the answer, and the probe may put the key back within seconds
// (VerdictDue); nor is a verdict applied directly for MaxClientRetryAfter
// or less (a quota whose reset named by the upstream is that close, a
// short configured cooldown), which ends by itself. False when Keys is
// empty.
func (e *UnavailableError) KeysDead() bool {
	for _, k := range e.Keys {
		if !k.outOfRotation() {
			return false
		}
	}
	return len(e.Keys) > 0
}

// outOfRotation reports whether the key will not serve again without an
// operator or a long wait: disabled, or cooling on a confirmed dead-key
// verdict with more than MaxClientRetryAfter left (see KeysDead).
func (k KeyStatus) outOfRotation() bool {
	return k.State == StateDisabled ||
		k.State == StateCooling && deadReason(string(k.Reason)) && !k.Provisional &&
			time.Duration(k.SecondsLeft)*time.Second > MaxClientRetryAfter
}

// KeysRateLimited reports whether every key is held back by a rate limit,
// so that the request failed for want of capacity rather than because of
// a broken or removed key: busy (every slot in flight, Reason "busy"),
// limited by its rpm, tpm, quota or pace or by the limits the upstream
// reported (Reason "rpm", "tpm", "quota", "pace", "learned"), resting
// after a success (Reason "cooldown_after_success"), or cooling on the
// upstream's 429 (Reason "rate_limited"; that includes a 429 for too many
// concurrent requests). A key skipped for the request (State "skipped")
// counts when failed429(its ID) reports that the request's last attempt
// on it ended RateLimited (a 429); failed429 may be nil (no skipped key
// counts). A key out of rotation (disabled, or a confirmed dead-key
// verdict with more than MaxClientRetryAfter left; see KeysDead) neither
// counts nor objects: it is not what holds the request back while the
// keys that can serve are rate limited. Any other key makes it false:
// cooling on a 5xx, network error or timeout, its breaker open or a probe
// in flight, a provisional or short dead-key verdict, benched for the
// model, held by its budget or by another Pool.Hold reason. False when no
// key is rate limited (Keys empty, or every key out of rotation).
func (e *UnavailableError) KeysRateLimited(failed429 func(id string) bool) bool {
	limited := false
	for _, k := range e.Keys {
		switch k.Reason {
		case ReasonBusy, ReasonRPM, ReasonTPM, ReasonQuota, ReasonPace, ReasonLearned, ReasonCooldownAfterSuccess,
			RateLimited.Reason():
			limited = true
			continue
		case ReasonFailedThisRequest:
			if k.State == StateSkipped && failed429 != nil && failed429(k.ID) {
				limited = true
				continue
			}
		}
		if !k.outOfRotation() {
			return false
		}
	}
	return limited
}

// SoonestBack returns how long until the first key may serve again by
// itself, as far as Keys tell, counting keys skipped for the request:
// the least of each cooling or limited key's time left, or, for a key
// whose provisional verdict is being probed, the time until the probe's
// answer is due (KeyStatus.VerdictDue); zero when no key tells (every key
// disabled, or busy). now is the time Keys were taken at.
func (e *UnavailableError) SoonestBack(now time.Time) time.Duration {
	var soonest time.Duration
	for _, k := range e.Keys {
		d := time.Duration(k.SecondsLeft) * time.Second
		if k.Provisional && k.VerdictDue.After(now) && k.VerdictDue.Sub(now) < d {
			d = k.VerdictDue.Sub(now)
		}
		if d > 0 && (soonest == 0 || d < soonest) {
			soonest = d
		}
	}
	return soonest
}

// Error lists each key's state, e.g.
// `pool "main": no key available: key-1 cooling (rate_limited, 3s left); key-2 busy`.
func (e *UnavailableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pool %q: no key available", e.Pool)
	for i, k := range e.Keys {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(k.ID)
		b.WriteByte(' ')
		b.WriteString(string(k.State))
		if k.Reason != "" && string(k.Reason) != string(k.State) {
			b.WriteString(" (")
			b.WriteString(string(k.Reason))
			if k.SecondsLeft > 0 {
				fmt.Fprintf(&b, ", %ds left", k.SecondsLeft)
			}
			b.WriteByte(')')
		} else if k.SecondsLeft > 0 {
			fmt.Fprintf(&b, " (%ds left)", k.SecondsLeft)
		}
	}
	return b.String()
}

// Is makes errors.Is(err, ErrNoKeys) true for an UnavailableError with
// NoKeys set.
func (e *UnavailableError) Is(target error) bool { return target == ErrNoKeys && e.NoKeys }

func (p *Pool) unavailableLocked(now time.Time, opts *AcquireOptions, wake time.Time) *UnavailableError {
	e := &UnavailableError{Pool: p.name, Keys: make([]KeyStatus, len(p.keys)), NoKeys: true}
	for i, k := range p.keys {
		st := p.statusLocked(k, now)
		if st.State == StateReady || st.State == StateLimited && st.Reason == ReasonLearned {
			st.State, st.Reason, st.Until, st.SecondsLeft = StateReady, "", time.Time{}, 0
			p.learnedStateLocked(k, &st, opts.Model, opts.Tokens, now)
		}
		if b, until := k.benched(opts.Model, now); b && (st.State == StateReady || st.State == StateBusy || until.After(st.Until)) {
			st.State, st.Reason, st.Until = StateBenched, ModelNotFound.Reason(), until
			st.SecondsLeft = int(math.Ceil(until.Sub(now).Seconds()))
			st.Source, st.CooldownStatus, st.Provisional, st.VerdictDue = "", 0, false, time.Time{}
		} else if b && until.After(st.VerdictDue) {
			st.VerdictDue = time.Time{} // benched for the model past the probe's answer
		}
		if opts.Skip != nil && opts.Skip(k) {
			if st.State == StateReady || st.State == StateBusy {
				// its own state does not explain why it was not used
				st.State, st.Reason = StateSkipped, ReasonFailedThisRequest
			}
		} else {
			if st.State != StateDisabled {
				e.NoKeys = false
			}
			if !st.VerdictDue.IsZero() && (wake.IsZero() || st.VerdictDue.Before(wake)) {
				wake = st.VerdictDue // the probe may put the key back then (set only while due, after now)
			}
		}
		e.Keys[i] = st
	}
	if !wake.IsZero() {
		e.RetryAfter = max(wake.Sub(now), time.Second)
	} else if !e.NoKeys {
		e.RetryAfter = time.Second
	}
	return e
}

// ClearCooldown ends the cooldown, resets the breaker and lifts the
// per-model benches of the key with the given id or fingerprint ("" clears
// all keys). It returns how many keys were cleared. Rate and quota usage
// are kept. A failure released later by a lease taken before the reset
// is counted but changes nothing on the key (the request was sent before
// the operator's reset; see Lease.Release). In cluster mode (SetBackend) the shared state of those keys is
// cleared too and every instance is told.
func (p *Pool) ClearCooldown(key string) int {
	p.mu.Lock()
	n := 0
	var fps []string
	for _, k := range p.keys {
		if key != "" && key != k.id && key != k.fingerprint {
			continue
		}
		k.clearCooldown()
		k.breaker, k.breakerTrips, k.consecFailures, k.consec429 = BreakerClosed, 0, 0, 0
		k.probePending = false
		k.pending = nil
		k.models = nil
		k.shUntil, k.shReason = time.Time{}, ""
		k.resetSeq = p.seq // a request in flight now must not undo the reset
		p.refreshLocked(k, p.clock.Now())
		n++
		if p.backend != nil {
			fps = append(fps, k.fingerprint)
		}
	}
	p.broadcastLocked()
	p.mu.Unlock()
	p.clearShared(fps)
	return n
}

// Hold keeps the key with the given id or fingerprint out of rotation
// for d (on the pool's clock) for reason, e.g. ReasonBudget, without
// counting it as a failure: no cooldown, breaker, backoff or probe; a
// lease in flight on it finishes normally. A later Hold with the same
// reason replaces the earlier one (d <= 0 lifts it); holds of other
// reasons are kept, and the key is out while any runs. Its KeyStatus
// shows Reason reason (State "budget" for ReasonBudget, else "limited")
// and Until the hold's end. Holds are local to this pool (not shared
// through a Backend). It reports whether a key matched.
func (p *Pool) Hold(key string, reason Reason, d time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	for _, k := range p.keys {
		if key != k.id && key != k.fingerprint {
			continue
		}
		hs := k.holds[:0]
		for _, h := range k.holds {
			if h.reason != reason && now.Before(h.until) {
				hs = append(hs, h)
			}
		}
		if d > 0 {
			hs = append(hs, hold{reason: reason, until: now.Add(d)})
		}
		k.holds = hs
		p.refreshLocked(k, now)
		p.broadcastLocked()
		return true
	}
	return false
}

// SetDisabled takes the key with the given id or fingerprint out of
// rotation (disabled=true) or puts it back. It reports whether a key
// matched.
func (p *Pool) SetDisabled(key string, disabled bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range p.keys {
		if key == k.id || key == k.fingerprint {
			k.disabled = disabled
			p.refreshLocked(k, p.clock.Now())
			p.broadcastLocked()
			return true
		}
	}
	return false
}
