package keypool

// roundRobin is the default strategy, "round_robin": among ready keys the
// one with the fewest requests in flight wins; ties go round robin in the
// configured key order, so load spreads evenly across equally idle keys.
//
// Use it when the keys are interchangeable (same upstream, same limits):
// it needs no configuration and keeps every key equally busy.
//
// Cost: O(levels + words) per pick via rrIndex, independent of how many
// keys are cooling or busy.
type roundRobin struct{ rr rrIndex }

func (s *roundRobin) build(keys []*Key, _ *Settings)    { s.rr.build(keys) }
func (s *roundRobin) add(k *Key)                        { s.rr.add(k) }
func (s *roundRobin) remove(k *Key)                     { s.rr.remove(k) }
func (s *roundRobin) update(k *Key)                     { s.rr.update(k) }
func (s *roundRobin) pick(c *pickCtx) *Key              { return s.rr.pick(c) }
func (s *roundRobin) allowAffinity(*Key, *pickCtx) bool { return true }
