package keypool

// lowestLatency, "lowest_latency": the ready key with the lowest moving
// average of time to first byte wins (Outcome.TTFB or Lease.ReportTTFB,
// averaged with weight Settings.LatencyAlpha); keys never measured come
// first so every key gets measured; ties go to the fewest in flight, then
// to the key leased longest ago. A share Settings.LatencyExplore of
// requests goes to a uniformly random ready key instead, so a key that
// was slow once is re-measured and can win back its place.
//
// Use it when keys reach different upstreams or regions (or the same
// upstream behaves differently per account) and interactive latency
// matters more than even spread.
type lowestLatency struct {
	h       keyHeap
	set     readySet
	explore float64
}

func (s *lowestLatency) build(keys []*Key, st *Settings) {
	s.explore = st.LatencyExplore
	s.h = newKeyHeap(len(keys), func(k *Key) prio {
		return prio{a: k.ema, b: int64(k.inFlight), c: k.lastPick}
	})
	for i, k := range keys {
		k.slot = i
	}
	s.set.build(keys)
}

func (s *lowestLatency) add(k *Key)    { s.h.push(k); s.set.add(k) }
func (s *lowestLatency) remove(k *Key) { s.h.remove(k); s.set.remove(k) }
func (s *lowestLatency) update(k *Key) { s.h.update(k) }

func (s *lowestLatency) pick(c *pickCtx) *Key {
	if s.explore > 0 && c.p.rng.Float64() < s.explore {
		if k := s.set.pickRandom(c); k != nil {
			return k
		}
	}
	return s.h.bestWhere(c.accept, &c.scratch)
}

func (s *lowestLatency) allowAffinity(*Key, *pickCtx) bool { return true }
