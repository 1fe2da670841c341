package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of utime/stime in /proc/<pid>/stat (USER_HZ, 100
// on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// procSample is a snapshot of one process's resource use.
type procSample struct {
	CPU time.Duration // user + system time so far
	RSS int64         // resident set size now (bytes)
	HWM int64         // peak resident set size (bytes)
	FDs int           // open file descriptors
	// Reads and Writes are the read and write system calls so far
	// (syscr and syscw of /proc/<pid>/io; 0 where it cannot be read).
	Reads, Writes int64
}

// sampleProc reads /proc/<pid>/stat, /proc/<pid>/status, /proc/<pid>/fd
// and /proc/<pid>/io.
func sampleProc(pid int) (procSample, error) {
	var s procSample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// fields after "(comm)": state is field 3, utime 14, stime 15
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	s.CPU = time.Duration(ut+st) * clockTick

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "VmRSS":
			dst = &s.RSS
		case "VmHWM":
			dst = &s.HWM
		default:
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		*dst = kb << 10
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.FDs = len(ents)
	}
	if io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for _, line := range strings.Split(string(io), "\n") {
			name, val, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
			switch name {
			case "syscr":
				s.Reads = n
			case "syscw":
				s.Writes = n
			}
		}
	}
	return s, nil
}

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit (children
// inherit it) and returns the resulting limit.
func raiseFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 1024
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	return rl.Cur
}

// cpuModel returns the CPU model name from /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, val, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(val)
		}
	}
	return "unknown"
}

// loadAvg returns the 1, 5 and 15 minute load averages from /proc/loadavg
// ("0.52 0.58 0.59"), or "" when it cannot be read.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return parseLoadAvg(string(b))
}

// parseLoadAvg returns the first three fields of a /proc/loadavg line
// ("0.52 0.58 0.59 1/467 12345"), or "" when it has fewer.
func parseLoadAvg(s string) string {
	f := strings.Fields(s)
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Idle detection of a freshly started proxy: the process is idle once it
// used at most idleCPU of CPU time in an idleWindow (the unit of
// /proc/<pid>/stat is clockTick).
const (
	idleWindow = 250 * time.Millisecond
	idleCPU    = clockTick
)

// waitIdle waits, up to max, until process pid has been idle for one
// window, so that work it does once after start (an llm_gateway fetches
// every key's models list in the background at start, 4 000 requests for
// the many-keys target) is not measured as the cost of the first
// requests. It returns how long it waited and whether the process went
// idle.
func waitIdle(ctx context.Context, pid int, max time.Duration) (time.Duration, bool) {
	start := time.Now()
	prev, err := sampleProc(pid)
	if err != nil {
		return 0, false
	}
	for time.Since(start) < max {
		select {
		case <-ctx.Done():
			return time.Since(start), false
		case <-time.After(idleWindow):
		}
		cur, err := sampleProc(pid)
		if err != nil {
			return time.Since(start), false
		}
		if cur.CPU-prev.CPU <= idleCPU {
			return time.Since(start), true
		}
		prev = cur
	}
	return time.Since(start), false
}
