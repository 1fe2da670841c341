package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// profiler fetches pprof profiles from a Caddy admin endpoint around one
// measurement: a CPU profile covering it, and the allocation profile before
// and after (compare with `go tool pprof -base <prefix>.allocs-before.pb.gz
// <prefix>.allocs-after.pb.gz`).
type profiler struct {
	admin  string
	prefix string
	cpu    chan error
}

// startProfile takes the "before" allocation profile and starts a CPU
// profile of about d; files are named prefix.*.pb.gz.
func startProfile(adminPort int, d time.Duration, prefix string) *profiler {
	p := &profiler{admin: fmt.Sprintf("http://127.0.0.1:%d", adminPort), prefix: prefix, cpu: make(chan error, 1)}
	if err := os.MkdirAll(dirOf(prefix), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
	}
	p.fetch("/debug/pprof/allocs", prefix+".allocs-before.pb.gz")
	secs := int(d.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	go func() { p.cpu <- p.fetch(fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), prefix+".cpu.pb.gz") }()
	return p
}

// finish waits for the CPU profile and takes the "after" allocation profile.
func (p *profiler) finish() {
	if err := <-p.cpu; err == nil {
		fmt.Fprintln(os.Stderr, "bench: profile", p.prefix+".cpu.pb.gz")
	}
	p.fetch("/debug/pprof/allocs", p.prefix+".allocs-after.pb.gz")
}

func (p *profiler) fetch(path, file string) error {
	resp, err := http.Get(p.admin + path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("%s: %s", path, resp.Status)
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

func dirOf(prefix string) string {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] == '/' {
			return prefix[:i]
		}
	}
	return "."
}

// heapProfile saves the live heap and the goroutine counts of a Caddy
// process with its admin endpoint on adminPort.
func heapProfile(adminPort int, prefix string) {
	p := &profiler{admin: fmt.Sprintf("http://127.0.0.1:%d", adminPort), prefix: prefix}
	if err := os.MkdirAll(dirOf(prefix), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
	}
	p.fetch("/debug/pprof/heap", prefix+".heap.pb.gz")
	p.fetch("/debug/pprof/goroutine", prefix+".goroutine.pb.gz")
	p.fetch("/debug/vars", prefix+".vars.json")
}
