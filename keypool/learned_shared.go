package keypool

import "time"

// SharedLearned is one key's learned limits for one model as they cross
// a Backend (SharedRelease.Learned, SharedEvent.Learned,
// SharedKeyState.Learned): the counts left now and the resets as
// durations from now, so instances whose clocks disagree agree on them.
type SharedLearned struct {
	// Model is the upstream model the limits are for ("" for none).
	Model string
	// Limits are the windows; Reset is relative to the moment the value
	// was sent (or, in a snapshot, taken).
	Limits RateLimits
}

// sharedLearnedLocked returns what l's answer taught about its key, as
// of now, for the backend; nil when nothing was learned.
func (p *Pool) sharedLearnedLocked(l *Lease, now time.Time) *SharedLearned {
	k := l.key
	if l.learned == nil || k.lrn == nil {
		return nil
	}
	e := k.lrn.entry(l.model)
	if e == nil {
		return nil
	}
	sl := &SharedLearned{Model: l.model}
	any := false
	for i, dst := range sl.Limits.windows() {
		w := &e.w[i]
		left, known := w.left(k.lrnUsed(i), now)
		if !known {
			continue
		}
		*dst = RateLimit{Limit: w.limit, Remaining: max(left, 0), Reset: w.resetAt.Sub(now), Set: true}
		any = true
	}
	if !any {
		return nil
	}
	return sl
}

// notifyLearnedLocked applies limits another instance learned: they
// replace this instance's for that key and model, and the leases this
// instance begins from now on are counted against them.
func (p *Pool) notifyLearnedLocked(k *Key, sl *SharedLearned, now time.Time) {
	if sl == nil || p.settings.LearnLimitsOff || !sl.Limits.Any() {
		return
	}
	p.learnLocked(k, sl.Model, &sl.Limits, now, k.requests, k.lrnTok)
}

// learnedShared keeps the latest learned limits per model of one key in
// a MemoryBackend, with absolute resets on the backend's clock.
type learnedShared struct {
	model  string
	limits RateLimits
	at     time.Time
}

// storeLearned records sl for s at now (latest wins, per model; at most
// maxLearnedModels kept).
func (s *sharedKey) storeLearned(sl *SharedLearned, now time.Time) {
	for i := range s.learned {
		if s.learned[i].model == sl.Model {
			s.learned[i] = learnedShared{model: sl.Model, limits: sl.Limits, at: now}
			return
		}
	}
	if len(s.learned) >= maxLearnedModels {
		s.learned = s.learned[1:]
	}
	s.learned = append(s.learned, learnedShared{model: sl.Model, limits: sl.Limits, at: now})
}

// learnedAt returns the stored limits as of now (resets shortened by the
// time gone by, windows past their reset left out).
func (s *sharedKey) learnedAt(now time.Time) []SharedLearned {
	var out []SharedLearned
	for _, x := range s.learned {
		sl := SharedLearned{Model: x.model}
		any := false
		dst := sl.Limits.windows()
		for i, r := range x.limits.windows() {
			left := x.at.Add(r.Reset).Sub(now)
			if !r.Set || left <= 0 {
				continue
			}
			*dst[i] = *r
			dst[i].Reset = left
			any = true
		}
		if any {
			out = append(out, sl)
		}
	}
	return out
}
