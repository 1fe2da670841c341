package keypool

// KeyUsage is the part of a key's state worth keeping across a process
// restart: lifetime counters and the current quota window. It holds no
// secret (keys are identified by fingerprint).
type KeyUsage struct {
	// Fingerprint identifies the key (KeyConfig.Fingerprint).
	Fingerprint string `json:"fingerprint"`
	// Requests, Successes and Failures are lifetime attempt counters.
	Requests  int64 `json:"requests"`
	Successes int64 `json:"successes"`
	Failures  int64 `json:"failures"`
	// QuotaPeriod is the index of the quota period QuotaRequests and
	// QuotaTokens were counted in; meaningful only when HasQuota is true.
	HasQuota      bool  `json:"has_quota,omitempty"`
	QuotaPeriod   int64 `json:"quota_period,omitempty"`
	QuotaRequests int64 `json:"quota_requests,omitempty"`
	QuotaTokens   int64 `json:"quota_tokens,omitempty"`
}

// Usage returns the persistable usage of every key, in configured order.
func (p *Pool) Usage() []KeyUsage {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]KeyUsage, len(p.keys))
	for i, k := range p.keys {
		u := KeyUsage{Fingerprint: k.fingerprint, Requests: k.requests, Successes: k.successes, Failures: k.failures}
		if k.quota.set() && k.lim.qInit {
			u.HasQuota, u.QuotaPeriod, u.QuotaRequests, u.QuotaTokens = true, k.lim.qPeriod, k.lim.qReq, k.lim.qTok
		}
		out[i] = u
	}
	return out
}

// RestoreUsage adds saved usage to the keys with matching fingerprints
// (others are ignored), for a pool that was just created. Quota counts are
// restored only when they belong to the quota period that is current now
// and the key still has a quota; a period that has ended starts fresh.
func (p *Pool) RestoreUsage(saved []KeyUsage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	for _, u := range saved {
		k := p.byFP[u.Fingerprint]
		if k == nil {
			continue
		}
		k.requests += max(u.Requests, 0)
		k.successes += max(u.Successes, 0)
		k.failures += max(u.Failures, 0)
		if !u.HasQuota || !k.quota.set() {
			continue
		}
		k.lim.roll(&k.quota, now)
		if k.lim.qPeriod == u.QuotaPeriod {
			k.lim.qReq += max(u.QuotaRequests, 0)
			k.lim.qTok = addTokens(k.lim.qTok, max(u.QuotaTokens, 0))
		}
	}
	for _, k := range p.keys {
		p.refreshLocked(k, now) // a restored quota may close the gate
	}
	p.broadcastLocked()
}
