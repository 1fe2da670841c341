package keypool

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// KeyStatus is a secret-free snapshot of one key, for errors, readiness,
// logs and the admin API.
type KeyStatus struct {
	// ID is the key's display label (configured id or masked secret).
	ID string `json:"id"`
	// State is "ready", "busy", "cooling", "breaker_open", "disabled" or
	// "skipped" (excluded for this request).
	State string `json:"state"`
	// Reason is why the key cannot serve now: an OutcomeKind name such as
	// "rate_limited" or "invalid_key", "cooldown_after_success", "busy",
	// "breaker_open", "probe_in_flight", "disabled"; empty when ready.
	Reason string `json:"reason,omitempty"`
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
	}
	ok, reason, until := k.gate(now, &p.settings)
	st.Reason, st.Until = reason, until
	switch {
	case ok:
		st.State = "ready"
	case reason == "disabled":
		st.State = "disabled"
	case reason == "busy" || reason == "probe_in_flight":
		st.State = "busy"
	case reason == "breaker_open":
		st.State = "breaker_open"
	default:
		st.State = "cooling"
	}
	if !until.IsZero() {
		st.SecondsLeft = int(math.Ceil(until.Sub(now).Seconds()))
	}
	return st
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
		ok, r, _ := k.gate(now, &p.settings)
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
	// cooldown ends, at least one second; zero when nothing will change
	// by itself (all keys disabled or skipped).
	RetryAfter time.Duration
	// Keys holds one entry per configured key.
	Keys []KeyStatus
	// NoKeys is true when no key could serve this request at all
	// (errors.Is(err, ErrNoKeys)).
	NoKeys bool
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
		b.WriteString(k.State)
		if k.Reason != "" && k.Reason != k.State {
			b.WriteString(" (")
			b.WriteString(k.Reason)
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

func (p *Pool) unavailableLocked(now time.Time, skip func(*Key) bool, wake time.Time) *UnavailableError {
	e := &UnavailableError{Pool: p.name, Keys: make([]KeyStatus, len(p.keys)), NoKeys: true}
	for i, k := range p.keys {
		st := p.statusLocked(k, now)
		if skip != nil && skip(k) {
			if st.State == "ready" || st.State == "busy" {
				// its own state does not explain why it was not used
				st.State, st.Reason = "skipped", "failed this request"
			}
		} else if st.State != "disabled" {
			e.NoKeys = false
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

// ClearCooldown ends the cooldown and resets the breaker of the key with
// the given id or fingerprint ("" clears all keys). It returns how many
// keys were cleared.
func (p *Pool) ClearCooldown(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, k := range p.keys {
		if key != "" && key != k.id && key != k.fingerprint {
			continue
		}
		k.cooldownUntil, k.cooldownReason = time.Time{}, ""
		k.breaker, k.breakerTrips, k.consecFailures, k.consec429 = BreakerClosed, 0, 0, 0
		n++
	}
	p.broadcastLocked()
	return n
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
			p.broadcastLocked()
			return true
		}
	}
	return false
}
