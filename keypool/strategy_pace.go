package keypool

import "time"

// pace, "pace": for keys with a budget per period (KeyConfig.Quota, e.g.
// 1000 requests per 24h or 5000000 tokens per 720h). Each key has a
// budget line, budget x (elapsed share of the period); the ready key
// furthest behind its line (elapsed share minus used share) wins, and a
// key is not leased while one more request would put it more than
// Settings.PaceLead (default 1% of the budget, at least one request)
// ahead of its line. So no key runs out before its period ends, and when
// demand is below the total budget every key is used at the same share.
// Keys without a quota are used only when no budgeted key is behind its
// line.
//
// Use it for free tiers and prepaid plans with daily or monthly
// allowances, where running one key dry at 10:00 leaves its share of the
// day unused while the other keys are overloaded.
//
// Keys sharing a period and anchor share their elapsed share, so each
// such group is a heap ordered by used share and a pick looks at one top
// per group.
type pace struct {
	groups []*paceGroup
	byKey  map[*Key]*paceGroup
	free   rrIndex
	isFree map[*Key]bool
}

type paceGroup struct {
	period time.Duration
	anchor time.Time
	h      keyHeap
	cur    int64 // period index the heap order was computed for
	init   bool
}

func (s *pace) build(keys []*Key, _ *Settings) {
	s.groups, s.byKey, s.isFree = nil, map[*Key]*paceGroup{}, map[*Key]bool{}
	var free []*Key
	for _, k := range keys {
		if !k.quota.set() {
			free = append(free, k)
			s.isFree[k] = true
			continue
		}
		var g *paceGroup
		for _, x := range s.groups {
			if x.period == k.quota.Period && x.anchor.Equal(k.quota.Anchor) {
				g = x
			}
		}
		if g == nil {
			g = &paceGroup{period: k.quota.Period, anchor: k.quota.Anchor}
			g.h = newKeyHeap(len(keys), func(k *Key) prio {
				return prio{a: k.lim.usedFrac(&k.quota), b: int64(k.inFlight), c: k.lastPick}
			})
			s.groups = append(s.groups, g)
		}
		s.byKey[k] = g
	}
	s.free.build(free)
}

func (s *pace) add(k *Key) {
	if s.isFree[k] {
		s.free.add(k)
		return
	}
	s.byKey[k].h.push(k)
}

func (s *pace) remove(k *Key) {
	if s.isFree[k] {
		s.free.remove(k)
		return
	}
	s.byKey[k].h.remove(k)
}

func (s *pace) update(k *Key) {
	if s.isFree[k] {
		s.free.update(k)
		return
	}
	s.byKey[k].h.update(k)
}

func (s *pace) pick(c *pickCtx) *Key {
	var best *Key
	bestScore := 0.0
	for _, g := range s.groups {
		q := Quota{Period: g.period, Anchor: g.anchor}
		if n := periodOf(&q, c.now); !g.init || n != g.cur {
			// a new period: counters reset, re-order the group
			g.init, g.cur = true, n
			for _, e := range g.h.es {
				e.k.lim.roll(&e.k.quota, c.now)
			}
			g.h.reorder()
		}
		k := g.h.bestWhere(c.accept, &c.scratch)
		if k == nil {
			continue
		}
		score := k.lim.elapsedFrac(&k.quota, c.now) - k.lim.usedFrac(&k.quota)
		if best == nil || score > bestScore {
			best, bestScore = k, score
		}
	}
	if best != nil && bestScore >= 0 {
		return best
	}
	if k := s.free.pick(c); k != nil {
		return k
	}
	return best
}

func (s *pace) allowAffinity(*Key, *pickCtx) bool { return true }
