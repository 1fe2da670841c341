package keypool

import (
	"sort"
	"time"
)

// A strategy orders the ready keys of a pool and picks one per request.
// The pool keeps in the strategy's index exactly the keys whose gates are
// all open (not disabled, cooling, breaker-open, busy, over rpm/tpm or
// quota); it calls add when a key becomes ready, remove when it stops
// being ready and update when a ready key's in-flight count or usage
// changed. pick returns the best ready key that c.accept allows, or nil.
// Every method runs under the pool's lock. Each strategy lives in its
// own strategy_<name>.go file.
type strategy interface {
	// build resets the index over the configured keys (none ready yet).
	build(keys []*Key, s *Settings)
	add(k *Key)
	remove(k *Key)
	update(k *Key)
	pick(c *pickCtx) *Key
	// allowAffinity reports whether a session pinned to the ready key k
	// may return to it; a strategy says no when it must send the request
	// elsewhere (priority: a better tier has an eligible key).
	allowAffinity(k *Key, c *pickCtx) bool
}

// pickCtx carries one selection's inputs.
type pickCtx struct {
	p       *Pool
	now     time.Time
	skip    func(*Key) bool
	model   string
	tokens  int64  // AcquireOptions.Tokens, for the learned token windows
	exclude []*Key // already chosen for this request
	scratch []int
}

// accept reports whether the request may use k beyond its gates: not
// skipped by the caller, not benched for the request's model and within
// the limits learned for that model (learned.go).
func (c *pickCtx) accept(k *Key) bool {
	if c.skip != nil && c.skip(k) {
		return false
	}
	for _, x := range c.exclude {
		if x == k {
			return false
		}
	}
	if c.model != "" && k.models != nil {
		if b, _ := k.benched(c.model, c.now); b {
			return false
		}
	}
	if k.lrn != nil {
		if ok, _ := k.learnedGate(c.model, c.tokens, c.now); !ok {
			return false
		}
	}
	return true
}

// strategies maps a Settings.Strategy name to its constructor.
var strategies = map[string]func() strategy{
	"round_robin":    func() strategy { return &roundRobin{} },
	"priority":       func() strategy { return &priorityStrategy{} },
	"weighted":       func() strategy { return &weighted{} },
	"least_used":     func() strategy { return &leastUsed{} },
	"lowest_latency": func() strategy { return &lowestLatency{} },
	"pace":           func() strategy { return &pace{} },
	"random":         func() strategy { return &random{} },
	"smart":          func() strategy { return &smart{} },
}

// Strategies returns the names accepted by Settings.Strategy, sorted:
// least_used, lowest_latency, pace, priority, random, round_robin,
// smart, weighted.
func Strategies() []string {
	out := make([]string, 0, len(strategies))
	for n := range strategies {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// rrIndex is the round-robin index: ready keys filed by in-flight count
// (one bitset of slots per level), so the fewest-in-flight key at or after
// the cursor is found without looking at busier keys.
type rrIndex struct {
	keys   []*Key // by slot
	levels []bitset
	counts []int
	cursor int
}

func (r *rrIndex) build(keys []*Key) {
	r.keys, r.levels, r.counts, r.cursor = keys, nil, nil, 0
	for i, k := range keys {
		k.slot = i
	}
}

func (r *rrIndex) add(k *Key) {
	l := k.inFlight
	for len(r.levels) <= l {
		r.levels = append(r.levels, nil)
		r.counts = append(r.counts, 0)
	}
	r.levels[l].grow(len(r.keys))
	r.levels[l].set(k.slot)
	r.counts[l]++
	k.level = l
}

func (r *rrIndex) remove(k *Key) {
	r.levels[k.level].clear(k.slot)
	r.counts[k.level]--
}

func (r *rrIndex) update(k *Key) {
	if k.level != k.inFlight {
		r.remove(k)
		r.add(k)
	}
}

// find returns the accepted key with the fewest in flight, the first at
// or after the cursor among equals, or nil.
func (r *rrIndex) find(c *pickCtx) *Key {
	n := len(r.keys)
	for l, b := range r.levels {
		if r.counts[l] == 0 {
			continue
		}
		if i := scanAccept(b, r.cursor, n, r.keys, c); i >= 0 {
			return r.keys[i]
		}
	}
	return nil
}

func (r *rrIndex) pick(c *pickCtx) *Key {
	k := r.find(c)
	if k != nil {
		r.cursor = k.slot + 1
		if r.cursor >= len(r.keys) {
			r.cursor = 0
		}
	}
	return k
}

// scanAccept returns the first slot in b, in cyclic order from from,
// whose key c accepts; -1 when none.
func scanAccept(b bitset, from, n int, keys []*Key, c *pickCtx) int {
	if from >= n {
		from = 0
	}
	for i := b.next(from); i >= 0 && i < n; i = b.next(i + 1) {
		if c.accept(keys[i]) {
			return i
		}
	}
	for i := b.next(0); i >= 0 && i < from; i = b.next(i + 1) {
		if c.accept(keys[i]) {
			return i
		}
	}
	return -1
}

// readySet is a plain set of ready slots, for random picks.
type readySet struct {
	keys []*Key
	bits bitset
	n    int
}

func (r *readySet) build(keys []*Key) {
	r.keys, r.bits, r.n = keys, nil, 0
	r.bits.grow(len(keys))
}
func (r *readySet) add(k *Key)    { r.bits.set(k.slot); r.n++ }
func (r *readySet) remove(k *Key) { r.bits.clear(k.slot); r.n-- }

// pickRandom returns a uniformly placed accepted ready key: the first
// accepted one at or after a random slot.
func (r *readySet) pickRandom(c *pickCtx) *Key {
	if r.n == 0 {
		return nil
	}
	start := c.p.rng.IntN(len(r.keys))
	if i := scanAccept(r.bits, start, len(r.keys), r.keys, c); i >= 0 {
		return r.keys[i]
	}
	return nil
}
