package caddymodule

import "time"

// spendCharge is the cost of one finished /v1 request, booked once when
// the request ends (a streamed request when its stream ends, abandoned or
// not). USD is meaningful only when Known; an unknown price is never 0.
type spendCharge struct {
	Pool       string    // the pool that served the request
	KeyID      string    // the upstream key id that served it
	GatewayKey string    // the caller's gateway key id ("" without auth)
	Model      string    // the upstream model priced
	USD        float64   // cost in US dollars
	Known      bool      // false: the model has no price (cost "unknown")
	Estimated  bool      // true: usage was estimated, not reported by the upstream
	At         time.Time // when the request ended
}

// budgetBook keeps spend against budgets (per upstream key, gateway key
// and pool). A nil *budgetBook books nothing.
type budgetBook struct{}

// charge books one request's cost against every budget it falls under.
func (b *budgetBook) charge(c spendCharge) {}
