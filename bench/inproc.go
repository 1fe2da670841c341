package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// inprocResult is one line of `go test -bench` output.
type inprocResult struct {
	Name   string
	NsOp   string
	BOp    string
	Allocs string
	TTFB   string // ns from ServeHTTP to the client's first body byte, "" when not reported
}

// runInproc runs the handler benchmarks of caddymodule (in-memory upstream,
// no sockets) and parses their results.
func runInproc(ctx context.Context, benchtime string) ([]inprocResult, error) {
	fmt.Fprintln(os.Stderr, "bench: in-process handler benchmarks (go test -bench 'BenchmarkGateway|BenchmarkStreamCommitPoint' ./caddymodule/)")
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^(BenchmarkGateway|BenchmarkStreamCommitPoint)$", "-benchmem",
		"-benchtime", benchtime, "-count", "1", "./caddymodule/")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench: %v\n%s", err, out.String())
	}
	var res []inprocResult
	sc := bufio.NewScanner(&out)
	pending := "" // a benchmark's name whose result line a log line split off
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && strings.HasPrefix(f[0], "Benchmark") && !strings.Contains(sc.Text(), "ns/op") {
			pending = f[0] // the handler logged while the benchmark started
			continue
		}
		if !strings.Contains(sc.Text(), "ns/op") {
			continue // a log line
		}
		if len(f) > 0 && !strings.HasPrefix(f[0], "Benchmark") && pending != "" {
			f = append([]string{pending}, f...)
		}
		pending = ""
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkGateway/") && !strings.HasPrefix(f[0], "BenchmarkStreamCommitPoint/") {
			continue
		}
		r := inprocResult{Name: strings.TrimPrefix(f[0], "BenchmarkGateway/")}
		if n, ok := strings.CutPrefix(f[0], "BenchmarkStreamCommitPoint/"); ok {
			r.Name = "commit-point/" + n // a healthy stream with the preamble held, and without
		}
		if i := strings.LastIndexByte(r.Name, '-'); i > 0 {
			r.Name = r.Name[:i] // GOMAXPROCS suffix
		}
		for i := 2; i+1 < len(f); i += 2 {
			switch f[i+1] {
			case "ns/op":
				r.NsOp = f[i]
			case "B/op":
				r.BOp = f[i]
			case "allocs/op":
				r.Allocs = f[i]
			case "ttfb-ns":
				r.TTFB = f[i]
			}
		}
		res = append(res, r)
	}
	return res, nil
}
