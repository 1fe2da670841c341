package mockupstream

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// KeyStats is a snapshot of what the mock observed for one API key since the
// server was created or ResetStats was called. Its JSON form uses snake_case
// names (last_body is base64, as for any []byte).
type KeyStats struct {
	// Requests counts every request presenting the key (all endpoints, all
	// outcomes, including the ones answered 429).
	Requests int64 `json:"requests"`
	// OK counts requests answered successfully to the end (a complete body or
	// a complete stream).
	OK int64 `json:"ok"`
	// RateLimited counts 429 answers (cooldown, concurrency cap, Status=429).
	RateLimited int64 `json:"rate_limited"`
	// Failed counts other error answers (Status, FailRate, 400 bad request).
	Failed int64 `json:"failed"`
	// Resets counts connections reset by ResetRate.
	Resets int64 `json:"resets"`
	// Canceled counts requests whose client went away (request context done)
	// before the mock finished: during Latency or mid-stream.
	Canceled int64 `json:"canceled"`
	// InFlight is the number of requests holding a slot right now (from
	// admission to handler return); MaxInFlight is the highest value seen.
	InFlight    int64 `json:"in_flight"`
	MaxInFlight int64 `json:"max_in_flight"`
	// FirstEventSentAt is when the first SSE event of the most recent stream
	// was written; LastEventSentAt when its last event so far was written.
	// Zero if no stream was sent.
	FirstEventSentAt time.Time `json:"first_event_sent_at,omitzero"`
	LastEventSentAt  time.Time `json:"last_event_sent_at,omitzero"`
	// CooldownUntil is the end of the key's current cooldown window (zero
	// or in the past when not cooling down).
	CooldownUntil time.Time `json:"cooldown_until,omitzero"`
	// LastModel is the "model" field of the most recent request ("" when
	// absent or not JSON).
	LastModel string `json:"last_model,omitempty"`
	// LastBody is a copy of the most recent request body.
	LastBody []byte `json:"last_body,omitempty"`
	// LastHeaders is a copy of the most recent request headers.
	LastHeaders http.Header `json:"last_headers,omitempty"`
	// Endpoints counts the requests presenting the key by endpoint, like
	// Requests (every outcome): "chat/completions", "messages",
	// "messages/count_tokens", "responses", "responses/input_tokens",
	// "embeddings", "models", "models/{id}", "replay". Endpoints never
	// called are absent.
	Endpoints map[string]int64 `json:"endpoints,omitempty"`
}

// keyState is the live state of one key.
type keyState struct {
	requests, ok, rateLimited, failed, resets, canceled atomic.Int64
	firstEvent, lastEvent                               atomic.Int64 // unix nanos
	endpoints                                           [numEndpoints]atomic.Int64

	mu            sync.Mutex
	inFlight      int64
	maxInFlight   int64
	cooldownUntil time.Time
	lastModel     string
	lastBody      []byte
	lastHeaders   http.Header
	rng           *rand.Rand
	rate          rateWindow // RPM and TPM (ratelimit.go)
}

// admission is the outcome of keyState.admit.
type admission uint8

const (
	admitted admission = iota
	deniedCooldown
	deniedCap
	deniedStatus429
	deniedRate // over RPM or TPM
)

// record stores the request facts and counts it.
func (ks *keyState) recordLocked(model string, body []byte, hdr http.Header) {
	ks.requests.Add(1)
	ks.lastModel = model
	ks.lastBody = body
	ks.lastHeaders = hdr
}

// record counts a request that is not subject to the gates.
func (ks *keyState) record(model string, body []byte, hdr http.Header) {
	h := hdr.Clone()
	ks.mu.Lock()
	ks.recordLocked(model, body, h)
	ks.mu.Unlock()
}

// admit records the request and applies the gates. When admitted, the
// request holds an in-flight slot that must be given back with finish. When
// denied by the cooldown, wait is the remaining cooldown.
func (ks *keyState) admit(b *KeyBehavior, model string, body []byte, hdr http.Header, tokens int64, rh *rateHeaders) (admission, time.Duration) {
	h := hdr.Clone()
	now := time.Now()
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.recordLocked(model, body, h)
	if b.Cooldown > 0 {
		if wait := ks.cooldownUntil.Sub(now); wait > 0 {
			ks.rateLimited.Add(1)
			return deniedCooldown, wait
		}
	}
	if b.MaxConcurrency > 0 && ks.inFlight >= int64(b.MaxConcurrency) {
		ks.rateLimited.Add(1)
		return deniedCap, 0
	}
	if b.Status == http.StatusTooManyRequests {
		ks.rateLimited.Add(1)
		return deniedStatus429, 0
	}
	if b.RPM > 0 || b.TPM > 0 {
		ok, r := ks.rate.admit(b.RPM, b.TPM, tokens, now)
		*rh = r
		if !ok {
			ks.rateLimited.Add(1)
			return deniedRate, 0
		}
	}
	ks.inFlight++
	if ks.inFlight > ks.maxInFlight {
		ks.maxInFlight = ks.inFlight
	}
	return admitted, 0
}

// finish gives back the in-flight slot and starts the cooldown window.
func (ks *keyState) finish(cooldown time.Duration) {
	ks.mu.Lock()
	ks.inFlight--
	if cooldown > 0 {
		if until := time.Now().Add(cooldown); until.After(ks.cooldownUntil) {
			ks.cooldownUntil = until
		}
	}
	ks.mu.Unlock()
}

// roll draws a uniform number in [0,1) from the key's generator.
func (ks *keyState) roll() float64 {
	ks.mu.Lock()
	f := ks.rng.Float64()
	ks.mu.Unlock()
	return f
}

// eventSent notes the time an SSE event was written; first marks the first
// event of a stream.
func (ks *keyState) eventSent(first bool) {
	now := time.Now().UnixNano()
	if first {
		ks.firstEvent.Store(now)
	}
	ks.lastEvent.Store(now)
}

func unixNanoTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// snapshot copies the state into a KeyStats.
func (ks *keyState) snapshot() KeyStats {
	st := KeyStats{
		Requests:         ks.requests.Load(),
		OK:               ks.ok.Load(),
		RateLimited:      ks.rateLimited.Load(),
		Failed:           ks.failed.Load(),
		Resets:           ks.resets.Load(),
		Canceled:         ks.canceled.Load(),
		FirstEventSentAt: unixNanoTime(ks.firstEvent.Load()),
		LastEventSentAt:  unixNanoTime(ks.lastEvent.Load()),
	}
	for ep := range ks.endpoints {
		if n := ks.endpoints[ep].Load(); n > 0 {
			if st.Endpoints == nil {
				st.Endpoints = make(map[string]int64)
			}
			st.Endpoints[endpointNames[ep]] = n
		}
	}
	ks.mu.Lock()
	st.InFlight = ks.inFlight
	st.MaxInFlight = ks.maxInFlight
	st.CooldownUntil = ks.cooldownUntil
	st.LastModel = ks.lastModel
	if ks.lastBody != nil {
		st.LastBody = append([]byte(nil), ks.lastBody...)
	}
	st.LastHeaders = ks.lastHeaders.Clone()
	ks.mu.Unlock()
	return st
}

// reset zeroes the counters; in-flight requests keep their slots, and
// MaxInFlight restarts from the current InFlight. Cooldowns are kept.
func (ks *keyState) reset() {
	ks.requests.Store(0)
	ks.ok.Store(0)
	ks.rateLimited.Store(0)
	ks.failed.Store(0)
	ks.resets.Store(0)
	ks.canceled.Store(0)
	ks.firstEvent.Store(0)
	ks.lastEvent.Store(0)
	for ep := range ks.endpoints {
		ks.endpoints[ep].Store(0)
	}
	ks.mu.Lock()
	ks.maxInFlight = ks.inFlight
	ks.lastModel = ""
	ks.lastBody = nil
	ks.lastHeaders = nil
	ks.mu.Unlock()
}

// Stats returns a snapshot of the statistics of key (the zero KeyStats if the
// key was never seen). Requests without any key are recorded under "".
func (s *Server) Stats(key string) KeyStats {
	if v, ok := s.states.Load(key); ok {
		return v.(*keyState).snapshot()
	}
	return KeyStats{}
}

// AllStats returns a snapshot of every key seen so far, by key.
func (s *Server) AllStats() map[string]KeyStats {
	out := make(map[string]KeyStats)
	s.states.Range(func(k, v any) bool {
		out[k.(string)] = v.(*keyState).snapshot()
		return true
	})
	return out
}

// ResetStats zeroes the counters and forgets the last request of every key.
// It does not end cooldowns (see ClearCooldowns) and does not disturb
// requests in flight: InFlight stays exact and MaxInFlight restarts from it.
func (s *Server) ResetStats() {
	s.states.Range(func(_, v any) bool {
		v.(*keyState).reset()
		return true
	})
}

// ClearCooldowns ends the cooldown window of every key.
func (s *Server) ClearCooldowns() {
	s.states.Range(func(_, v any) bool {
		ks := v.(*keyState)
		ks.mu.Lock()
		ks.cooldownUntil = time.Time{}
		ks.mu.Unlock()
		return true
	})
}
