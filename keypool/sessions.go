package keypool

import "time"

// SessionPin is one entry of a pool's session affinity table, as
// Pool.Sessions reports it.
type SessionPin struct {
	// Session is the affinity session id (the client's session header or
	// the gateway's hash of the conversation's first messages).
	Session string `json:"session"`
	// KeyID is the id of the key the session is pinned to; "" when that
	// key is no longer in the pool.
	KeyID string `json:"key"`
	// LastUsed is when the session last placed a request.
	LastUsed time.Time `json:"last_used"`
	// ExpiresIn is the time left until the pin expires (AffinityTTL
	// after LastUsed), in whole seconds, rounded up.
	ExpiresIn int `json:"expires_in_seconds"`
	// Hits counts the session's requests placed on its key while pinned.
	Hits int64 `json:"hits"`
}

// Sessions returns the pool's live affinity pins, most recently used
// first, at most limit of them (limit <= 0: all). Expired pins are left
// out. Empty when affinity is off.
func (p *Pool) Sessions(limit int) []SessionPin {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	ttl := p.settings.AffinityTTL
	out := []SessionPin{}
	if ttl <= 0 {
		return out
	}
	ids := make(map[string]string, len(p.keys))
	for _, k := range p.keys {
		ids[k.fingerprint] = k.id
	}
	for e := p.aff.head; e != nil && (limit <= 0 || len(out) < limit); e = e.next {
		left := e.at.Add(ttl).Sub(now)
		if left <= 0 {
			continue
		}
		out = append(out, SessionPin{Session: e.session, KeyID: ids[e.fp], LastUsed: e.at,
			ExpiresIn: int((left + time.Second - 1) / time.Second), Hits: e.hits})
	}
	return out
}

// Unpin removes session's affinity pin, so that its next request is
// placed by the strategy (and pinned again). It reports whether a pin was
// removed. In cluster mode the shared pin (state backend) is kept until it
// expires, so the session's next request may follow it again.
func (p *Pool) Unpin(session string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.aff.m[session]
	if e == nil {
		return false
	}
	p.aff.unlink(e)
	delete(p.aff.m, session)
	return true
}

// Waiting returns the number of requests blocked in Acquire, waiting for
// a key of the pool.
func (p *Pool) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}
