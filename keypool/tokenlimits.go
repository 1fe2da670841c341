package keypool

// TokenLimit is a key's per-minute token budgets for one model as the
// upstream last reported them in its rate-limit headers (Lease.Learn),
// in tokens; 0 when never reported.
type TokenLimit struct {
	// Tokens is the tokens window's full budget: OpenAI
	// x-ratelimit-limit-tokens, else Anthropic
	// anthropic-ratelimit-tokens-limit.
	Tokens int64
	// InputTokens is Anthropic's input-tokens window's full budget,
	// anthropic-ratelimit-input-tokens-limit.
	InputTokens int64
}

// TokenLimits returns the token budgets learned for model on each key of
// the pool that has one (keys with nothing learned for model are left
// out). Unlike the learned gate, which forgets a window at its reset, it
// keeps a window's limit after the reset: a budget refills, its size
// stays. It tells which keys are known to be too small for a request
// (e.g. after an upstream said the request alone exceeds one key's
// limit, Outcome.OverLimit). Nothing is learned with
// Settings.LearnLimitsOff. Safe for concurrent use; do not call it from
// AcquireOptions.Skip (the pool's lock is held there).
func (p *Pool) TokenLimits(model string) map[*Key]TokenLimit {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out map[*Key]TokenLimit
	for _, k := range p.keys {
		t := k.tokenLimitLocked(model)
		if t == (TokenLimit{}) {
			continue
		}
		if out == nil {
			out = make(map[*Key]TokenLimit)
		}
		out[k] = t
	}
	return out
}

// TokenLimitOf returns the token budgets learned for model on key k of
// the pool, as TokenLimits reports them (zero when nothing is learned),
// without looking at the other keys. Safe for concurrent use; do not call
// it from AcquireOptions.Skip.
func (p *Pool) TokenLimitOf(k *Key, model string) TokenLimit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return k.tokenLimitLocked(model)
}

// tokenLimitLocked is k's learned token budgets for model. The caller
// holds the pool's lock.
func (k *Key) tokenLimitLocked(model string) TokenLimit {
	var t TokenLimit
	if k.lrn == nil {
		return t
	}
	e := k.lrn.entry(model)
	if e == nil {
		return t
	}
	if w := e.w[lwTokens]; w.set {
		t.Tokens = max(w.limit, 0)
	}
	if w := e.w[lwInput]; w.set {
		t.InputTokens = max(w.limit, 0)
	}
	return t
}
