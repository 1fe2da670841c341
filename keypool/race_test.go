//go:build race

package keypool

// raceEnabled shrinks the simulator under the race detector, which slows
// it about tenfold.
const raceEnabled = true
