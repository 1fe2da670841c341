package keypool

import "time"

// Clock is the time source of a Pool. Production code uses SystemClock;
// tests inject a fake so cooldown arithmetic and waiting can be driven
// without sleeping.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once after d (d <= 0 fires at
	// once). The returned Timer must be stopped when no longer needed.
	NewTimer(d time.Duration) Timer
}

// Timer is the subset of *time.Timer that a Pool needs.
type Timer interface {
	// C delivers the fire time once.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was
	// still pending.
	Stop() bool
}

// SystemClock is the wall clock, backed by package time.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (SystemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (s sysTimer) C() <-chan time.Time { return s.t.C }
func (s sysTimer) Stop() bool          { return s.t.Stop() }

// Interface guard.
var _ Clock = SystemClock{}
