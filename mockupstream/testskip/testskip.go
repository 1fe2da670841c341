// Package testskip lets a package's tests say, in one line, what a run left
// out and why: tests that skip because something outside the repository is
// missing (the recorded vendor fixtures in ../shared/fixtures, a
// redis-server) record it with Skipf, and the package's TestMain calls
// Report after m.Run.
//
// go test ./... shows nothing of a passing package but its "ok" line unless
// -v is given, so Report writes to the terminal (/dev/tty) when there is one
// and the run is not verbose; under -v or -json, and when there is no
// terminal, it writes to standard output. Nothing is written when nothing
// was skipped. Only tests import this package; it sits beside the mock
// upstream, the other support the tests share.
package testskip

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	order []reason
	count = map[reason]int{}
)

// reason is what was left out ("tests replaying ../shared/fixtures") and
// why ("folder absent").
type reason struct{ what, why string }

// Skipf records that t is skipped for a missing prerequisite and skips it
// with the message format, args. what names the tests left out, in the
// plural ("tests replaying ../shared/fixtures", "cluster tests"); why says
// what is missing ("folder absent"). Tests skipped with the same what and
// why are counted together.
func Skipf(t testing.TB, what, why, format string, args ...any) {
	t.Helper()
	record(what, why)
	t.Skipf(format, args...)
}

// record counts one test left out for reason {what, why}.
func record(what, why string) {
	r := reason{what, why}
	mu.Lock()
	defer mu.Unlock()
	if count[r] == 0 {
		order = append(order, r)
	}
	count[r]++
}

// Line returns the report line, e.g. "translate: skipped 12 tests
// replaying ../shared/fixtures (folder absent)", or "" when nothing was
// skipped. Reasons are listed in the order they first occurred, joined by
// "; ".
func Line() string {
	mu.Lock()
	defer mu.Unlock()
	if len(order) == 0 {
		return ""
	}
	parts := make([]string, 0, len(order))
	for _, r := range order {
		n := count[r]
		what := r.what
		if n == 1 {
			what = strings.Replace(strings.Replace(what, "tests", "test", 1), "benchmarks", "benchmark", 1)
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s)", n, what, r.why))
	}
	pkg := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	return pkg + ": skipped " + strings.Join(parts, "; ")
}

// Report writes Line, when it is not empty, where the person running the
// tests sees it (see the package comment). Call it from TestMain after
// m.Run.
func Report() {
	line := Line()
	if line == "" {
		return
	}
	var w io.Writer = os.Stdout
	if !testing.Verbose() {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			defer tty.Close()
			w = tty
		}
	}
	fmt.Fprintln(w, line)
}
