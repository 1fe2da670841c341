package keypool

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// A vendor simulator for the learned limits: each key's upstream enforces
// its own rpm and tpm, charged at arrival, either over a sliding window
// (at most rpm requests and tpm tokens in any window) or as a token
// bucket refilled continuously (as OpenAI and Anthropic document theirs),
// answers 429 with a Retry-After beyond them, and reports both in its
// rate-limit headers on every answer, OpenAI's family or Anthropic's,
// the reset being the time until the budget is full again. The pool knows none of the
// limits (no RPM or TPM configured): it learns them from the headers,
// which arrive at the answer's time to first byte, while other requests
// are in flight.

type vendorKey struct {
	rpm       int
	tpm       int64
	window    time.Duration // default 60s
	anthropic bool          // Anthropic's header family, else OpenAI's
	bucket    bool          // a token bucket (full at the start) instead of a sliding window
	log       []vendorHit
	// bucket levels
	reqLevel, tokLevel float64
	at                 time.Time
}

type vendorHit struct {
	at     time.Time
	tokens int64
}

// admit charges a request of tokens at now and returns the answer's
// status and rate-limit headers.
func (v *vendorKey) admit(now time.Time, tokens int64) (int, http.Header) {
	w := v.window
	if w == 0 {
		w = time.Minute
	}
	if v.bucket {
		return v.admitBucket(now, tokens, w)
	}
	keep := v.log[:0]
	for _, h := range v.log {
		if now.Sub(h.at) < w {
			keep = append(keep, h)
		}
	}
	v.log = keep
	used := int64(0)
	for _, h := range v.log {
		used += h.tokens
	}
	status := http.StatusOK
	if len(v.log)+1 > v.rpm || used+tokens > v.tpm {
		status = http.StatusTooManyRequests
	} else {
		v.log = append(v.log, vendorHit{at: now, tokens: tokens})
		used += tokens
	}
	// reset: until the budget is full again (the newest hit leaves the
	// window); Retry-After: until the oldest leaves (a request fits again)
	var full, next time.Duration
	if n := len(v.log); n > 0 {
		full, next = v.log[n-1].at.Add(w).Sub(now), v.log[0].at.Add(w).Sub(now)
	}
	h := v.headers(now, int64(v.rpm-len(v.log)), v.tpm-used, full, full)
	if status != http.StatusOK {
		h.Set("Retry-After", strconv.Itoa(int((next+time.Second-1)/time.Second)))
	}
	return status, h
}

// headers are the vendor's rate-limit headers for the counts left and
// the times until each budget is full again, in v's header family.
func (v *vendorKey) headers(now time.Time, remReq, remTok int64, fullReq, fullTok time.Duration) http.Header {
	h := http.Header{}
	if v.anthropic {
		h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(v.rpm))
		h.Set("anthropic-ratelimit-requests-remaining", strconv.FormatInt(remReq, 10))
		h.Set("anthropic-ratelimit-requests-reset", now.Add(fullReq).UTC().Format(time.RFC3339Nano))
		h.Set("anthropic-ratelimit-tokens-limit", strconv.FormatInt(v.tpm, 10))
		h.Set("anthropic-ratelimit-tokens-remaining", strconv.FormatInt(remTok, 10))
		h.Set("anthropic-ratelimit-tokens-reset", now.Add(fullTok).UTC().Format(time.RFC3339Nano))
	} else {
		h.Set("x-ratelimit-limit-requests", strconv.Itoa(v.rpm))
		h.Set("x-ratelimit-remaining-requests", strconv.FormatInt(remReq, 10))
		h.Set("x-ratelimit-reset-requests", fullReq.String())
		h.Set("x-ratelimit-limit-tokens", strconv.FormatInt(v.tpm, 10))
		h.Set("x-ratelimit-remaining-tokens", strconv.FormatInt(remTok, 10))
		h.Set("x-ratelimit-reset-tokens", fullTok.String())
	}
	return h
}

// admitBucket is admit for a token bucket refilled at rpm (tpm) per w.
func (v *vendorKey) admitBucket(now time.Time, tokens int64, w time.Duration) (int, http.Header) {
	rReq, rTok := float64(v.rpm)/float64(w), float64(v.tpm)/float64(w) // per ns
	if v.at.IsZero() {
		v.reqLevel, v.tokLevel = float64(v.rpm), float64(v.tpm)
	} else {
		d := float64(now.Sub(v.at))
		v.reqLevel, v.tokLevel = min(float64(v.rpm), v.reqLevel+rReq*d), min(float64(v.tpm), v.tokLevel+rTok*d)
	}
	v.at = now
	status := http.StatusOK
	if v.reqLevel < 1 || v.tokLevel < float64(tokens) {
		status = http.StatusTooManyRequests
	} else {
		v.reqLevel--
		v.tokLevel -= float64(tokens)
	}
	fullReq := time.Duration((float64(v.rpm) - v.reqLevel) / rReq)
	fullTok := time.Duration((float64(v.tpm) - v.tokLevel) / rTok)
	h := v.headers(now, int64(v.reqLevel), int64(v.tokLevel), fullReq, fullTok)
	if status != http.StatusOK {
		wait := max(time.Duration((1-v.reqLevel)/rReq), time.Duration((float64(tokens)-v.tokLevel)/rTok), 0)
		h.Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	}
	return status, h
}

type lsEvent struct {
	at      time.Time
	seq     int
	headers bool // the answer's headers arrive (Learn); else the release
	l       *Lease
	h       http.Header
	status  int
	out     Outcome
	first   bool // the key's first request
}

type lsQueue []lsEvent

func (q lsQueue) Len() int { return len(q) }
func (q lsQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q lsQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *lsQueue) Push(x any)   { *q = append(*q, x.(lsEvent)) }
func (q *lsQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// lsResult is one run's figures.
type lsResult struct {
	served      int            // admitted by the upstreams within the run
	refused     int            // Acquire found no key (the client's 429, no upstream call)
	upstream429 int            // answered 429 by an upstream
	late429     int            // of which, to keys that had answered before
	perKey      map[string]int // admitted per key id
	steady      map[string]int // admitted per key id after the warm-up
	steadyAll   int
}

// runLearnSim offers perMinute requests a minute, evenly spaced, for
// dur, to a pool over the vendor keys (ids k0, k1, ...). Each request
// asks for 200..1799 tokens (its estimate is exact, as a vendor charging
// max_tokens at arrival sees it), takes 1-3 s, and its headers arrive
// after 0.2-0.8 s.
func runLearnSim(t *testing.T, s Settings, vks []*vendorKey, perMinute int, dur time.Duration, seed uint64) lsResult {
	return runLearnSimWarm(t, s, vks, perMinute, dur, 0, seed)
}

// runLearnSimWarm is runLearnSim, also counting per key (lsResult.steady)
// the requests admitted after warm, once the windows' initial budgets
// are spent.
func runLearnSimWarm(t *testing.T, s Settings, vks []*vendorKey, perMinute int, dur, warm time.Duration, seed uint64) lsResult {
	t.Helper()
	clk := newFakeClock()
	cfgs := make([]KeyConfig, len(vks))
	byFP := map[string]*vendorKey{}
	for i, v := range vks {
		cfgs[i] = KeyConfig{Fingerprint: fmt.Sprintf("fp%d", i), ID: fmt.Sprintf("k%d", i)}
		byFP[cfgs[i].Fingerprint] = v
	}
	if s.MaxConcurrencyPerKey == 0 {
		s.MaxConcurrencyPerKey = 16
	}
	p, err := New("learn-sim", s, cfgs, clk)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	res := lsResult{perKey: map[string]int{}, steady: map[string]int{}}
	answered := map[string]bool{}
	var q lsQueue
	seq := 0
	push := func(e lsEvent) { seq++; e.seq = seq; heap.Push(&q, e) }
	process := func(until time.Time) {
		for len(q) > 0 && !q[0].at.After(until) {
			e := heap.Pop(&q).(lsEvent)
			if d := e.at.Sub(clk.Now()); d > 0 {
				clk.Advance(d)
			}
			if e.headers {
				if rl, ok := ParseRateLimits(e.h, clk.Now()); ok {
					e.l.Learn(rl)
				}
				answered[e.l.Key().ID()] = true
				if e.status == http.StatusTooManyRequests {
					e.l.Release(ClassifyResponseFor("m", e.status, e.h, []byte(`{"error":{"type":"rate_limit_error","message":"rate limited"}}`), clk.Now()))
				}
				continue
			}
			e.l.Release(e.out)
		}
		if d := until.Sub(clk.Now()); d > 0 {
			clk.Advance(d)
		}
	}
	start := clk.Now()
	gap := time.Minute / time.Duration(perMinute)
	for at := start; at.Before(start.Add(dur)); at = at.Add(gap) {
		process(at)
		tokens := 200 + rng.Int64N(1600)
		l, err := p.Acquire(context.Background(), AcquireOptions{Model: "m", Tokens: tokens})
		if err != nil {
			res.refused++
			continue
		}
		id := l.Key().ID()
		now := clk.Now()
		status, h := byFP[l.Key().Fingerprint()].admit(now, tokens)
		ttfb := 200*time.Millisecond + time.Duration(rng.Int64N(int64(600*time.Millisecond)))
		if status == http.StatusTooManyRequests {
			res.upstream429++
			if answered[id] {
				res.late429++
			}
			push(lsEvent{at: now.Add(50 * time.Millisecond), headers: true, l: l, h: h, status: status})
			continue
		}
		res.served++
		res.perKey[id]++
		if now.Sub(start) >= warm {
			res.steady[id]++
			res.steadyAll++
		}
		push(lsEvent{at: now.Add(ttfb), headers: true, l: l, h: h, status: status})
		push(lsEvent{at: now.Add(time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))), l: l,
			out: Outcome{Kind: Success, Status: 200, Tokens: tokens}})
	}
	process(start.Add(dur + 10*time.Second))
	checkIndex(t, p)
	return res
}

// The acceptance load: three keys whose upstreams allow 30, 60 and 90
// requests a minute (and 1500 tokens a request on average on top), none
// of it configured on the gateway, and a sustained load of 180 requests
// a minute, 3x the middle key's rpm and the keys' combined limit, for 60
// simulated seconds. Learning from the headers: no upstream 429 after a
// key's first answer, and throughput within 5% of the combined limit.
// Without it (Settings.LearnLimitsOff) the same load meets the 429s that
// learning avoided.
func TestLearnedLimitsSimulator(t *testing.T) {
	keys := func() []*vendorKey {
		return []*vendorKey{
			{rpm: 30, tpm: 30 * 1500},
			{rpm: 60, tpm: 60 * 1500, anthropic: true},
			{rpm: 90, tpm: 90 * 1500},
		}
	}
	const combined = 180
	on := runLearnSim(t, Settings{}, keys(), combined, time.Minute, 1)
	off := runLearnSim(t, Settings{LearnLimitsOff: true}, keys(), combined, time.Minute, 1)
	t.Logf("learning on:  %d served of %d combined limit (%.1f%%), %d upstream 429s (%d after a key's first answer), %d refused by the gateway; per key %v",
		on.served, combined, 100*float64(on.served)/combined, on.upstream429, on.late429, on.refused, on.perKey)
	t.Logf("learning off: %d served of %d combined limit (%.1f%%), %d upstream 429s (%d after a key's first answer), %d refused by the gateway; per key %v",
		off.served, combined, 100*float64(off.served)/combined, off.upstream429, off.late429, off.refused, off.perKey)
	if on.late429 != 0 {
		t.Fatalf("learning on: %d upstream 429s after the keys' first answers", on.late429)
	}
	if float64(on.served) < 0.95*combined {
		t.Fatalf("learning on: %d served, below 95%% of the combined limit %d", on.served, combined)
	}
	if off.upstream429 == 0 {
		t.Fatal("learning off: no upstream 429, the scenario does not show what learning avoids")
	}
	if off.served >= on.served {
		t.Fatalf("learning off served %d, on %d: learning should serve more", off.served, on.served)
	}
}

// smart: keys (token buckets, full at the start) of different limits and
// refill rates (so different resets), under a sustained load at their
// combined per-minute limit and 20% above it for 10 simulated minutes: no
// key is driven to a 429, and once the initial budgets are spent (after
// 2 minutes), each key's share of the traffic tracks its share of the
// combined limit within 5%.
func TestLearnedSmartSharesSimulator(t *testing.T) {
	vks := []*vendorKey{
		{rpm: 300, tpm: 300 * 1500, bucket: true},
		{rpm: 50, tpm: 50 * 1500, window: 15 * time.Second, anthropic: true, bucket: true}, // 200 a minute, refilled 4x faster
		{rpm: 100, tpm: 100 * 1500, bucket: true},
	}
	perMin := []float64{300, 200, 100}
	total := 600.0
	for _, load := range []float64{1, 1.2} {
		for _, v := range vks {
			v.at = time.Time{} // full again
		}
		r := runLearnSimWarm(t, Settings{Strategy: "smart"}, vks, int(load*total), 10*time.Minute, 2*time.Minute, 2)
		t.Logf("smart at %.0f%% of the combined limit: %d served, %d upstream 429s, %d refused by the gateway; after the warm-up per key %v of %d",
			100*load, r.served, r.upstream429, r.refused, r.steady, r.steadyAll)
		if r.upstream429 != 0 {
			t.Fatalf("smart: %d upstream 429s", r.upstream429)
		}
		for i, lim := range perMin {
			share := float64(r.steady[fmt.Sprintf("k%d", i)]) / float64(r.steadyAll)
			want := lim / total
			if share < want*0.95 || share > want*1.05 {
				t.Fatalf("k%d: share %.3f, limit share %.3f (more than 5%% off)", i, share, want)
			}
		}
	}
}
