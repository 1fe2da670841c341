package keypool

// weighted, "weighted": smooth weighted round robin. Over any stretch of
// requests each ready key is served in proportion to its KeyConfig.Weight,
// and picks interleave (weights 5:1:1 give a a a b c a a, never a burst
// of five a's followed by b and c), as nginx's smooth weighted round
// robin does. It is computed as stride scheduling: every key has a
// virtual time that advances by 1/weight per pick, and the ready key with
// the earliest one wins, which gives the same proportions at O(log n) per
// pick instead of nginx's O(n). A key returning from a cooldown starts at
// the current virtual time, so it does not get a burst to catch up.
//
// A standby key (KeyConfig.Standby, a configured weight of 0) serves only
// when no key with a positive weight is eligible for the request; standby
// keys share that overflow round robin among themselves.
//
// Use it when keys have unequal capacity (a tier-5 key next to tier-1
// keys, or a paid key next to free ones) and each should get a fixed
// share, with standbys that see traffic only while the others cannot.
type weighted struct {
	h     keyHeap
	vtime float64
	sb    rrIndex // standby keys
	isSB  []bool  // by key index
}

func (s *weighted) build(keys []*Key, _ *Settings) {
	s.h = newKeyHeap(len(keys), func(k *Key) prio { return prio{a: k.pass} })
	s.vtime = 0
	s.isSB = make([]bool, len(keys))
	var sb []*Key
	for _, k := range keys {
		k.pass = 0.5 / float64(k.weight)
		if k.standby {
			s.isSB[k.idx] = true
			sb = append(sb, k)
		}
	}
	s.sb.build(sb)
}

func (s *weighted) add(k *Key) {
	if s.isSB[k.idx] {
		s.sb.add(k)
		return
	}
	if k.pass < s.vtime {
		k.pass = s.vtime + 0.5/float64(k.weight)
	}
	s.h.push(k)
}

func (s *weighted) remove(k *Key) {
	if s.isSB[k.idx] {
		s.sb.remove(k)
		return
	}
	s.h.remove(k)
}

func (s *weighted) update(k *Key) {
	if s.isSB[k.idx] {
		s.sb.update(k)
	}
}

func (s *weighted) pick(c *pickCtx) *Key {
	k := s.h.bestWhere(c.accept, &c.scratch)
	if k != nil {
		s.vtime = k.pass
		k.pass += 1 / float64(k.weight)
		s.h.update(k)
		return k
	}
	return s.sb.pick(c)
}

// allowAffinity keeps a session off a standby while a weighted key is
// eligible.
func (s *weighted) allowAffinity(k *Key, c *pickCtx) bool {
	return !s.isSB[k.idx] || s.h.bestWhere(c.accept, &c.scratch) == nil
}
