package keypool

// Cluster mode: the order of a success elsewhere and a failure here.
//
// A key that served a request on another instance sends a Clear event
// (SharedEvent.Clear) that resets this instance's count of the key's
// consecutive failures, its transient cooldown and its open breaker. The
// event travels by the backend's publish (Redis pub/sub) and may arrive
// late: after failures this instance recorded once the success had
// happened. Applied then, it would wipe failures it does not know of, and
// a circuit breaker would open one failure late (or a cooldown end
// early). So the backend numbers every release of a key in the one order
// it applies them in (SharedRelease.Order, e.g. Redis's TIME in the
// script that applies the release, raised past the key's previous
// number), a Clear carries its release's number (SharedEvent.Order), and
// an instance ignores a Clear numbered before the key's latest failure it
// released, or while a failure it released has not been numbered yet
// (what such an event still says, that a slot may have come free, is
// kept). No two clocks are compared: an instance whose clock lags no
// longer has its Clears ignored for as long as it lags. A Clear without a
// number (zero Order: an older instance) is applied as before.

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

// sentFailure notes that a release of o, a failure of the key
// (keyFailure), goes to the backend: until its number comes back
// (numberedFailure) a Clear's order against it is unknown.
func (k *Key) sentFailure(o *Outcome) bool {
	if keyFailure(o) {
		k.failsSent++
		return true
	}
	return false
}

// numberedFailure records the number the backend gave a failure's
// release (0: none, the backend could not be reached or keeps none).
func (k *Key) numberedFailure(order int64) {
	k.failsSent--
	if order > k.failOrder {
		k.failOrder = order
	}
}

// staleClear reports whether a Clear event ev is older than the key's
// latest failure released here, or may be (see above).
func (k *Key) staleClear(ev *SharedEvent) bool {
	return ev.Order != 0 && (k.failsSent > 0 || ev.Order < k.failOrder)
}
