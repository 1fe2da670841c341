package keypool

// random, "random": a uniformly random ready key.
//
// Use it when several gateway instances share the same keys without a
// shared state store: independent random choices do not synchronise the
// way independent round-robin cursors can.
type random struct{ set readySet }

func (s *random) build(keys []*Key, _ *Settings) {
	for i, k := range keys {
		k.slot = i
	}
	s.set.build(keys)
}
func (s *random) add(k *Key)                        { s.set.add(k) }
func (s *random) remove(k *Key)                     { s.set.remove(k) }
func (s *random) update(*Key)                       {}
func (s *random) pick(c *pickCtx) *Key              { return s.set.pickRandom(c) }
func (s *random) allowAffinity(*Key, *pickCtx) bool { return true }
