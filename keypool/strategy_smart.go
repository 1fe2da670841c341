package keypool

// smart, "smart": among eligible keys, the one with the most budget left
// relative to its limit wins. A key's score is the smallest share of its
// limit any window it learned for the request's model has now
// (Lease.Learn: requests, tokens, input and output tokens): what the
// last answer reported left, plus what has come back since at the pace
// its time to reset implies (the vendors' budgets refill continuously,
// so a window with a short reset refills fast), less what was begun since
// that answer; 1 when nothing is known, so unmeasured keys get tried.
// Recent failures are penalised (0.25 each, decaying with a one-minute
// half-life: never permanent, never a lifetime count). Ties go to the
// fewest in flight, then to the key leased longest ago.
//
// Under a load at or above the keys' combined limit each key's share of
// the traffic tracks its share of that limit, and the learned gate keeps
// every key short of a 429; below it, keys are kept equally full, so a
// burst finds room everywhere.
//
// Use it for keys of unequal, unconfigured limits (different tiers or
// accounts behind one pool) whose upstreams report rate-limit headers.
//
// Cost: O(ready keys) per pick, since scores move with time; meant for
// pools of up to a few hundred keys.
type smart struct{ r readySet }

func (s *smart) build(keys []*Key, _ *Settings) {
	s.r.build(keys)
	for i, k := range keys {
		k.slot = i
	}
}
func (s *smart) add(k *Key)    { s.r.add(k) }
func (s *smart) remove(k *Key) { s.r.remove(k) }
func (s *smart) update(*Key)   {}

// smartScore is k's score for c (higher is better).
func smartScore(k *Key, c *pickCtx) float64 {
	score, _ := k.learnedShare(c.model, c.now)
	if k.lrn != nil && k.lrn.fail > 0 {
		score -= 0.25 * min(k.recentFailures(c.now), 4)
	}
	return score
}

func (s *smart) pick(c *pickCtx) *Key {
	if s.r.n == 0 {
		return nil
	}
	var best *Key
	bestScore := 0.0
	keys := s.r.keys
	for i := s.r.bits.next(0); i >= 0 && i < len(keys); i = s.r.bits.next(i + 1) {
		k := keys[i]
		if !c.accept(k) {
			continue
		}
		sc := smartScore(k, c)
		switch {
		case best == nil, sc > bestScore:
		case sc < bestScore:
			continue
		case k.inFlight > best.inFlight, k.inFlight == best.inFlight && k.lastPick >= best.lastPick:
			continue
		}
		best, bestScore = k, sc
	}
	return best
}

func (s *smart) allowAffinity(*Key, *pickCtx) bool { return true }
