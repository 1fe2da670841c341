package keypool

import "time"

// Cluster mode: the order of a success elsewhere and a failure here.
//
// A key that served a request on another instance sends a Clear event
// (SharedEvent.Clear) that resets this instance's count of the key's
// consecutive failures, its transient cooldown and its open breaker. The
// event travels by the backend's publish (Redis pub/sub) and may arrive
// late: after failures this instance recorded once the success had
// happened. Applied then, it would wipe failures it does not know of, and
// a circuit breaker would open one failure late (or a cooldown end
// early). So a Clear carries when the success happened (SharedEvent.At,
// the releasing instance's clock: SharedRelease.At) and an instance
// ignores one older than the key's latest failure it recorded (what such
// an event still says, that a slot may have come free, is kept). A Clear
// without a time (zero At: an older instance) is applied as before.

// keyFailure reports whether an outcome is a failure of the key that a
// Clear would undo (a transient cooldown, a count towards the circuit
// breaker): a Clear older than it must not undo it. A dead-key verdict
// (InvalidKey, NoCredit, Forbidden, QuotaExhausted) is not one: a Clear
// never lifts its cooldown, so there is nothing to order, and the verdict
// may be the client's request's doing (a 403 for a model or feature the
// key may not use, provisional until the gateway's probe): counted here,
// it made every older Clear stale, so the key's earlier transient
// failures outlived a success elsewhere that came after them. Nor are
// ModelNotFound, ClientError and Canceled, which are not the key's.
func keyFailure(o *Outcome) bool {
	switch o.Kind {
	case RateLimited, ServerError, NetworkError:
		return true
	case Timeout:
		return !o.AwaitingAnswer // a suspicion only, until the gateway's probe (verify.go)
	}
	return false
}

// noteFailedAt records when the key last failed (keyFailure), on the
// pool's clock.
func (k *Key) noteFailedAt(o *Outcome, now time.Time) {
	if keyFailure(o) && now.After(k.failedAt) {
		k.failedAt = now
	}
}

// staleClear reports whether a Clear event ev is older than the key's
// latest recorded failure (see above).
func (k *Key) staleClear(ev *SharedEvent) bool {
	return !ev.At.IsZero() && ev.At.Before(k.failedAt)
}
