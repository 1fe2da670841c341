package caddymodule

import (
	"strconv"
	"testing"
)

// BenchmarkEgressOrder: ranking a plan's exits for one request (no
// socket), per strategy, over four healthy exits, into a buffer on the
// stack as egressDo does.
//
//	go test -run '^$' -bench 'BenchmarkEgressOrder' -benchmem -count 5 ./caddymodule/
func BenchmarkEgressOrder(b *testing.B) {
	exits := make([]*egressExit, 4)
	for i := range exits {
		exits[i] = &egressExit{name: "http://127.0.0.1:" + strconv.Itoa(9000+i)}
	}
	for _, s := range []string{"rotate", "sticky", "failover"} {
		b.Run(s, func(b *testing.B) {
			pl := &egressPlan{exits: exits, strategy: s}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var buf [8]*egressExit
				if got := pl.orderInto(buf[:0], "session-1234", nil); len(got) != len(exits) {
					b.Fatalf("%d exits", len(got))
				}
			}
		})
	}
}
