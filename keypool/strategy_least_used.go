package keypool

import "time"

// leastUsed, "least_used": the ready key with the fewest requests (or,
// with Settings.LeastUsedBy "tokens", the fewest tokens as reported in
// Outcome.Tokens) in the current Settings.UsageWindow wins; ties go to
// the fewest in flight, then to the key leased longest ago. Windows are
// aligned to the Unix epoch and every count resets at a boundary.
//
// Use it when requests differ a lot in size and keys have per-minute
// token limits: counting tokens evens out the load that matters to the
// upstream, where round_robin evens out only the number of requests.
type leastUsed struct {
	h      keyHeap
	window time.Duration
	win    int64
}

func (s *leastUsed) build(keys []*Key, st *Settings) {
	tokens := st.LeastUsedBy == "tokens"
	s.window = st.UsageWindow
	s.h = newKeyHeap(len(keys), func(k *Key) prio {
		used := k.lim.winReq
		if tokens {
			used = k.lim.winTok
		}
		return prio{a: float64(used), b: int64(k.inFlight), c: k.lastPick}
	})
}

func (s *leastUsed) add(k *Key)    { s.h.push(k) }
func (s *leastUsed) remove(k *Key) { s.h.remove(k) }
func (s *leastUsed) update(k *Key) { s.h.update(k) }

func (s *leastUsed) pick(c *pickCtx) *Key {
	if w := c.now.UnixNano() / int64(s.window); w != s.win {
		// a new window: every count is zero again
		s.win = w
		for _, e := range s.h.es {
			e.k.lim.window(s.window, c.now)
		}
		s.h.reorder()
	}
	return s.h.bestWhere(c.accept, &c.scratch)
}

func (s *leastUsed) allowAffinity(*Key, *pickCtx) bool { return true }
