package caddymodule

import "time"

// egressShared shares exit cooldowns between the gateway instances of a
// cluster (state redis), as key cooldowns are shared: a cooldown one
// instance takes is seen by the others.
type egressShared interface {
	// until returns the cluster's cooldown end of an exit (zero: none
	// known); it must not block on the network.
	until(e *egressExit) time.Time
	// publish tells the cluster that e cools until then.
	publish(e *egressExit, until time.Time)
}
