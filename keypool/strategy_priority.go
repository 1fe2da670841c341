package keypool

import "sort"

// priorityStrategy, "priority": keys are tried in order of
// KeyConfig.Priority, lowest number first. A key is used only while no
// key with a lower number is eligible (ready and not skipped for the
// request); within one priority the round_robin rule applies (fewest in
// flight, ties round robin). Session affinity does not override it: a
// session pinned to a backup returns to the main key as soon as that is
// eligible.
//
// Use it for a main key (or a cheap or already paid-for plan) with
// backups that should see traffic only while the main one is cooling,
// busy or out of budget.
type priorityStrategy struct {
	tiers  []*rrIndex // ascending priority
	prio   []int      // the priority of each tier
	tierOf map[*Key]int
}

func (s *priorityStrategy) build(keys []*Key, _ *Settings) {
	byPrio := map[int][]*Key{}
	for _, k := range keys {
		byPrio[k.priority] = append(byPrio[k.priority], k)
	}
	s.prio = s.prio[:0]
	for p := range byPrio {
		s.prio = append(s.prio, p)
	}
	sort.Ints(s.prio)
	s.tiers = make([]*rrIndex, len(s.prio))
	s.tierOf = make(map[*Key]int, len(keys))
	for i, p := range s.prio {
		s.tiers[i] = &rrIndex{}
		s.tiers[i].build(byPrio[p])
		for _, k := range byPrio[p] {
			s.tierOf[k] = i
		}
	}
}

func (s *priorityStrategy) add(k *Key)    { s.tiers[s.tierOf[k]].add(k) }
func (s *priorityStrategy) remove(k *Key) { s.tiers[s.tierOf[k]].remove(k) }
func (s *priorityStrategy) update(k *Key) { s.tiers[s.tierOf[k]].update(k) }

func (s *priorityStrategy) pick(c *pickCtx) *Key {
	for _, t := range s.tiers {
		if k := t.pick(c); k != nil {
			return k
		}
	}
	return nil
}

func (s *priorityStrategy) allowAffinity(k *Key, c *pickCtx) bool {
	for _, t := range s.tiers[:s.tierOf[k]] {
		if t.find(c) != nil {
			return false
		}
	}
	return true
}
