package testskip

import (
	"testing"
)

func TestLineCountsReasonsInOrder(t *testing.T) {
	if got := Line(); got != "" {
		t.Fatalf("Line before any skip = %q, want empty", got)
	}
	for i := 0; i < 3; i++ {
		record("tests replaying ../shared/fixtures", "folder absent")
	}
	record("cluster tests", "no redis-server")
	record("benchmarks replaying ../shared/fixtures", "folder absent")
	want := "testskip: skipped 3 tests replaying ../shared/fixtures (folder absent); 1 cluster test (no redis-server); 1 benchmark replaying ../shared/fixtures (folder absent)"
	if got := Line(); got != want {
		t.Errorf("Line() =\n%q\nwant\n%q", got, want)
	}
}
