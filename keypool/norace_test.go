//go:build !race

package keypool

const raceEnabled = false
