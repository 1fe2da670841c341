package caddymodule

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// keyGate applies the key budgets of one pool of a book before each
// request (budgetBook.poolGate) without checking every one of them each
// time: a key budget's check (its spend, warning, limit and hold) gives
// the same answer until its spend changes or its period (a calendar
// day or month, or a step of a rolling window) ends. So a request checks
// only the entries whose spend changed since their last check (each
// change queues its entry, see scopeSpend.touchLocked), and all of them
// once the time leaves the span in which every budget's bucket is still
// the one of the last full check. With no such change a request costs
// two atomic loads, whatever the number of keys.
type keyGate struct {
	entries []*budgetEntry

	// span is [from, until) in Unix nanoseconds of the budget clock
	// (budgetNow) in which no entry's bucket differs from the last full
	// check's; nil before the first.
	span atomic.Pointer[[2]int64]

	run    sync.Mutex // one check (queued entries or all) at a time
	mu     sync.Mutex // guards queue and spare
	queue  []*budgetEntry
	spare  []*budgetEntry // the other buffer, swapped by take
	queued atomic.Int64   // entries queued and not yet checked
}

// buildGates gives each pool with key budgets its keyGate. The entries'
// spends queue them only once they are watched (watchSpends).
func (b *budgetBook) buildGates() {
	b.gates = make(map[string]*keyGate, len(b.pkeys))
	for name, es := range b.pkeys {
		if len(es) == 0 {
			continue
		}
		g := &keyGate{entries: es}
		for _, e := range es {
			e.gate = g
		}
		b.gates[name] = g
	}
}

// watchSpends makes the spend of every key budget with a gate queue its
// entry when it changes (until unwatchSpends).
func (b *budgetBook) watchSpends() {
	for _, e := range b.all {
		if e.gate != nil {
			e.spend.watch(e)
		}
	}
}

// unwatchSpends undoes watchSpends (the configuration ended).
func (b *budgetBook) unwatchSpends() {
	for _, e := range b.all {
		if e.gate != nil {
			e.spend.unwatch(e)
		}
	}
}

// apply brings the holds of the gate's keys up to date at now (see
// keyGate).
func (g *keyGate) apply(b *budgetBook, now time.Time) {
	n := now.UnixNano()
	if g.within(n) && g.queued.Load() == 0 {
		return
	}
	g.run.Lock()
	defer g.run.Unlock()
	if !g.within(n) {
		g.checkAll(b, now)
		return
	}
	q := g.take()
	for _, e := range q {
		if e.dirty.Swap(false) { // not checked since it was queued
			b.check(e, now)
		}
	}
	g.queued.Add(-int64(len(q)))
}

func (g *keyGate) within(n int64) bool {
	s := g.span.Load()
	return s != nil && s[0] <= n && n < s[1]
}

// checkAll checks every entry at now and records the span in which that
// stays good. The caller holds g.run.
func (g *keyGate) checkAll(b *budgetBook, now time.Time) {
	q := g.take()
	for _, e := range q {
		e.dirty.Store(false)
	}
	from, until := int64(math.MinInt64), int64(math.MaxInt64)
	for _, e := range g.entries {
		b.check(e, now)
		f, u := e.rule.period.current(now)
		from, until = max(from, f), min(until, u)
	}
	g.span.Store(&[2]int64{from, until})
	g.queued.Add(-int64(len(q)))
}

// take empties the queue and returns what it held; the slice is the
// caller's until its next take (the caller holds g.run).
func (g *keyGate) take() []*budgetEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	q := g.queue
	g.queue, g.spare = g.spare[:0], q
	return q
}

// markDirty queues a key budget's entry for a check by its gate, once
// until it is checked.
func (e *budgetEntry) markDirty() {
	if e.gate == nil || e.dirty.Swap(true) {
		return
	}
	g := e.gate
	g.queued.Add(1)
	g.mu.Lock()
	g.queue = append(g.queue, e)
	g.mu.Unlock()
}

// watch makes changes of s queue e (a key budget reading s) for a check.
func (s *scopeSpend) watch(e *budgetEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.watchers {
		if w == e {
			return
		}
	}
	s.watchers = append(s.watchers, e)
}

// unwatch undoes watch.
func (s *scopeSpend) unwatch(e *budgetEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range s.watchers {
		if w == e {
			s.watchers = append(s.watchers[:i:i], s.watchers[i+1:]...)
			return
		}
	}
}

// touchLocked queues the entries watching s, except skip (the one that
// is checking it), after s changed. The caller holds s.mu.
func (s *scopeSpend) touchLocked(skip *budgetEntry) {
	for _, w := range s.watchers {
		if w != skip {
			w.markDirty()
		}
	}
}

// current returns the span [from, until), in Unix nanoseconds, of the
// bucket now falls in: the calendar day or month in the period's time
// zone, or the rolling window's step. A budget's state changes only at
// the span's ends or when its spend changes.
func (p budgetPeriod) current(now time.Time) (from, until int64) {
	n := now.UnixNano()
	cur := p.bucket(now)
	if p.calendar == "" {
		from, until = cur*int64(p.step), (cur+1)*int64(p.step)
	} else {
		from, until = p.dropAt(cur-1).UnixNano(), p.dropAt(cur).UnixNano()
	}
	if n < from || n >= until {
		return n, n + 1 // never expected; good for this instant only
	}
	return from, until
}
