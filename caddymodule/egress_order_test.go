package caddymodule

import (
	"hash/fnv"
	"io"
	"strconv"
	"testing"
	"time"
)

// TestEgressOrderIntoStack: ranking a request's exits into a caller's
// buffer allocates nothing for every strategy, the all-cooling case
// included, and ranks as order does; a sticky session starts on the exit
// hash/fnv's FNV-1a of the session picks, as before.
func TestEgressOrderIntoStack(t *testing.T) {
	exits := make([]*egressExit, 5)
	for i := range exits {
		exits[i] = &egressExit{name: "x" + strconv.Itoa(i)}
	}
	for _, s := range []string{"rotate", "sticky", "failover", "random"} {
		pl := &egressPlan{exits: exits, strategy: s}
		var buf [8]*egressExit
		if n := testing.AllocsPerRun(100, func() { pl.orderInto(buf[:0], "session-9", nil) }); n != 0 {
			t.Errorf("%s: %v allocations per ranking", s, n)
		}
	}
	pl := &egressPlan{exits: exits, strategy: "sticky"}
	for i := 0; i < 50; i++ {
		session := "conversation-" + strconv.Itoa(i)
		h := fnv.New64a()
		_, _ = io.WriteString(h, session)
		if fnv1a64(session) != h.Sum64() {
			t.Fatalf("fnv1a64(%q) = %x, hash/fnv %x", session, fnv1a64(session), h.Sum64())
		}
		var buf [8]*egressExit
		got := pl.orderInto(buf[:0], session, nil)
		if want := exits[h.Sum64()%5]; got[0] != want || len(got) != 5 {
			t.Fatalf("session %q starts on %s, want %s", session, got[0].name, want.name)
		}
	}
	// every exit cooling: the soonest-recovering one alone, no allocation
	now := time.Now()
	for i, e := range exits {
		e.coolUntil = now.Add(time.Duration(10-i) * time.Minute)
	}
	pl.strategy = "rotate"
	var buf [8]*egressExit
	if got := pl.orderInto(buf[:0], "", nil); len(got) != 1 || got[0] != exits[4] {
		t.Fatalf("all cooling: %d exits, want x4 alone", len(got))
	}
	if n := testing.AllocsPerRun(100, func() { pl.orderInto(buf[:0], "", nil) }); n != 0 {
		t.Errorf("all cooling: %v allocations per ranking", n)
	}
}
