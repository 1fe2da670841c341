// Command bench measures what llm_gateway costs: it runs a mock LLM upstream
// in its own process, puts each target in front of it in turn (no proxy,
// Caddy's reverse_proxy, llm_gateway passthrough with one and with many
// keys, passthrough with its pool state in Redis on a redis-server of its
// own, llm_gateway translating in both directions), drives each with vegeta
// at fixed concurrency levels and at a fixed rate, for non-streaming and
// streaming requests, holds thousands of slow streams open to measure memory
// per stream, and writes the results to BENCHMARKS.md.
//
// Everything runs on 127.0.0.1 and stops by itself. Run it from the
// repository root:
//
//	go run ./bench              # full run (a few minutes), writes BENCHMARKS.md
//	go run ./bench -smoke       # 10-20 s check, writes to a temp file
//	go run ./bench -h           # durations, levels, targets
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// findings are the profile findings, appended to the report.
//
//go:embed findings.md
var findings string

// options are the command-line settings of a run.
type options struct {
	mode       string
	mockAddr   string
	smoke      bool
	out        string
	caddy      string
	altCaddy   string
	altTargets string
	build      string
	targets    string
	duration   time.Duration
	warmup     time.Duration
	conc       string
	rate       int
	streamRate int
	pacedConc  int
	reqSize    int
	keys       int
	memStreams string
	memTargets string
	memWait    time.Duration
	timeout    time.Duration
	gatewayLog bool
	keep       bool
	rounds     int
	profile    string
	profSpecs  string
	inproc     bool
	mock       mockConfig
}

func parseFlags() *options {
	o := &options{}
	flag.StringVar(&o.mode, "mode", "run", "run: the benchmark; mock: serve the mock upstream only (used by the harness)")
	flag.StringVar(&o.mockAddr, "mock-addr", "127.0.0.1:0", "mock mode: listen address")
	flag.BoolVar(&o.smoke, "smoke", false, "short check of the whole harness (10-20 s); writes to a temp file unless -out is given")
	flag.StringVar(&o.out, "out", "", "results file (default BENCHMARKS.md; with -smoke a temp file)")
	flag.StringVar(&o.caddy, "caddy", "./caddy", "Caddy binary with llm_gateway (built by ./xcaddy.sh)")
	flag.StringVar(&o.altCaddy, "alt-caddy", "", "another Caddy binary with llm_gateway (e.g. a build of another commit): adds, for each of -alt-targets, the target <name>-alt served by it, measured in the same rounds")
	flag.StringVar(&o.altTargets, "alt-targets", "gw-pass", "with -alt-caddy: the gateway targets to run on it too (comma-separated)")
	flag.StringVar(&o.build, "build", "auto", "build the Caddy binary: auto (when missing or older than the sources), always, never")
	flag.StringVar(&o.targets, "targets", "all", "comma-separated targets: direct,reverse_proxy,gw-pass,gw-redis,gw-keys,gw-a2o,gw-o2a (all: gw-redis only when redis-server is in PATH)")
	flag.DurationVar(&o.duration, "duration", 1500*time.Millisecond, "duration of each measurement (per round)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds over all measurements (each taken on every target in turn, in alternating order; the headline takes the median over rounds of each per-round ratio, the detailed tables pool the samples)")
	flag.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "warm-up per target and workload, not measured")
	flag.StringVar(&o.conc, "conc", "1,16,128", "closed-loop concurrency levels")
	flag.IntVar(&o.rate, "rate", 1000, "fixed rate for non-streaming requests (req/s; 0: skip)")
	flag.IntVar(&o.streamRate, "stream-rate", 100, "fixed rate for full-speed streams (streams/s; 0: skip)")
	flag.IntVar(&o.pacedConc, "paced-conc", 16, "concurrency of the paced-stream case (0: skip)")
	flag.IntVar(&o.reqSize, "req-size", 2048, "request body size (bytes)")
	flag.IntVar(&o.mock.RespSize, "resp-size", 1024, "non-streamed answer size (bytes)")
	flag.IntVar(&o.mock.Events, "events", 200, "events of a full-speed stream")
	flag.IntVar(&o.mock.PacedEvents, "paced-events", 50, "events of a paced stream")
	flag.Float64Var(&o.mock.PacedRate, "paced-rate", 50, "events/s of a paced stream")
	flag.IntVar(&o.mock.SlowEvents, "slow-events", 1000, "events of a slow (memory case) stream")
	flag.Float64Var(&o.mock.SlowRate, "slow-rate", 0.25, "events/s of a slow (memory case) stream")
	flag.IntVar(&o.mock.Spread, "mock-spread", 64, "the mock spreads each client key over this many of its per-key states (0: off)")
	flag.IntVar(&o.keys, "keys", 1000, "keys per pool of the many-keys target")
	flag.StringVar(&o.memStreams, "mem-streams", "1000,10000", "memory case: numbers of slow streams held open (empty: skip)")
	flag.StringVar(&o.memTargets, "mem-targets", "reverse_proxy,gw-pass,gw-keys,gw-o2a", "memory case: targets")
	flag.DurationVar(&o.memWait, "mem-wait", 60*time.Second, "memory case: how long to wait for all streams to start")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "abort the whole run after this long")
	flag.BoolVar(&o.gatewayLog, "gateway-log", false, "keep Caddy's INFO logs (the gateway's per-request log line) instead of WARN")
	flag.StringVar(&o.profile, "profile", "", "directory for pprof CPU and allocation profiles of the proxy processes (first round; enables Caddy's admin endpoint on a free loopback port)")
	flag.StringVar(&o.profSpecs, "profile-runs", "json/c=16,stream/c=16,paced/c=16", "with -profile: the measurements to profile, as workload/level")
	flag.BoolVar(&o.inproc, "inproc", true, "also run the in-process handler benchmarks (go test -bench BenchmarkGateway ./caddymodule/) and add them to the report")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp directory (Caddyfiles, logs)")
	flag.Parse()
	if o.smoke {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("duration", func() { o.duration = 200 * time.Millisecond })
		def("warmup", func() { o.warmup = 50 * time.Millisecond })
		def("conc", func() { o.conc = "1,16" })
		def("rate", func() { o.rate = 200 })
		def("stream-rate", func() { o.streamRate = 0 })
		def("paced-events", func() { o.mock.PacedEvents = 10 })
		def("slow-rate", func() { o.mock.SlowRate = 4 })
		def("mem-streams", func() { o.memStreams = "50" })
		def("mem-targets", func() { o.memTargets = "reverse_proxy,gw-pass" })
		def("mem-wait", func() { o.memWait = 10 * time.Second })
		def("timeout", func() { o.timeout = 2 * time.Minute })
		def("build", func() { o.build = "never" })
		def("rounds", func() { o.rounds = 1 })
		def("inproc", func() { o.inproc = false })
	}
	return o
}

func main() {
	o := parseFlags()
	if o.mode == "mock" {
		if err := runMock(o.mockAddr, o.mock); err != nil {
			fmt.Fprintln(os.Stderr, "bench mock:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad number %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// specs lists the measurements made on every target.
func (o *options) specs() ([]runSpec, error) {
	levels, err := ints(o.conc)
	if err != nil {
		return nil, err
	}
	var out []runSpec
	for _, w := range []workload{wlJSON, wlStream} {
		for _, c := range levels {
			out = append(out, runSpec{W: w, Conc: c, Dur: o.duration})
		}
		rate := o.rate
		if w.Stream {
			rate = o.streamRate
		}
		if rate > 0 {
			out = append(out, runSpec{W: w, Rate: rate, Dur: o.duration})
		}
	}
	if o.pacedConc > 0 {
		// at least two rounds of paced streams per worker
		d := o.duration
		if min := 2 * time.Duration(float64(o.mock.PacedEvents)/o.mock.PacedRate*float64(time.Second)); d < min {
			d = min
		}
		out = append(out, runSpec{W: wlPaced, Conc: o.pacedConc, Dur: d})
	}
	return out, nil
}

func run(o *options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	loadStart := loadAvg()
	limit := raiseFileLimit()
	specs, err := o.specs()
	if err != nil {
		return err
	}
	memN, err := ints(o.memStreams)
	if err != nil {
		return err
	}
	var targets []target
	for _, t := range allTargets(o.keys) {
		if o.targets == "all" || contains(o.targets, t.Name) {
			targets = append(targets, t)
		}
	}
	// gw-redis needs a redis-server: without one it is left out of "all"
	// with a line in the report, and an error when asked for by name
	stateNote := ""
	if hasRedisTarget(targets) {
		if _, err := exec.LookPath("redis-server"); err != nil {
			if o.targets != "all" {
				return fmt.Errorf("gw-redis needs redis-server in PATH: %v", err)
			}
			stateNote = fmt.Sprintf("`gw-redis` skipped: redis-server is not in PATH (%v). Install it (e.g. `apt-get install redis-server`) to compare `state redis` with memory state.", err)
			fmt.Fprintln(os.Stderr, "bench: gw-redis skipped: redis-server is not in PATH")
			kept := targets[:0]
			for _, t := range targets {
				if t.State != stateRedis {
					kept = append(kept, t)
				}
			}
			targets = kept
		}
	}
	if o.altCaddy != "" {
		// gateway targets again on another build, for comparing two
		// builds in the same run (each one's ratios, paired by round)
		bin, err := filepath.Abs(o.altCaddy)
		if err != nil {
			return err
		}
		for _, t := range allTargets(o.keys) {
			if t.Proxy == proxyGateway && contains(o.altTargets, t.Name) {
				t.Desc = "as " + t.Name + ", served by the -alt-caddy binary " + o.altCaddy
				t.Name, t.Bin = t.Name+"-alt", bin
				t.Label += " (-alt-caddy)"
				targets = append(targets, t)
			}
		}
	}
	if len(targets) == 0 {
		return fmt.Errorf("no target matches %q", o.targets)
	}
	if _, err := os.Stat("go.mod"); err != nil {
		return fmt.Errorf("run from the repository root: %v", err)
	}

	caddyVersion := "-"
	for _, t := range targets {
		if t.Proxy != proxyNone {
			if caddyVersion, err = ensureCaddy(o.caddy, o.build); err != nil {
				return err
			}
			break
		}
	}
	caddyBin, _ := filepath.Abs(o.caddy)

	dir, err := os.MkdirTemp("", "llmgw-bench-*")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "bench: temp dir", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	mock, mockAddr, err := startMock(dir, o.mock)
	if err != nil {
		return err
	}
	defer mock.stop()

	var rs *redisServer
	redisInfo := ""
	if hasRedisTarget(targets) {
		if rs, err = startRedis(ctx, dir); err != nil {
			return fmt.Errorf("gw-redis: %v", err)
		}
		defer rs.stop()
		for i := range targets {
			if targets[i].State == stateRedis {
				targets[i].StateAddr, targets[i].StatePrefix = rs.addr, rs.prefix
			}
		}
		redisInfo = fmt.Sprintf("redis-server %s (the harness's own, 127.0.0.1, no persistence), key prefix %s, lease and timeout at their defaults", rs.version, rs.prefix)
		fmt.Fprintf(os.Stderr, "bench: redis-server %s at %s\n", rs.version, rs.addr)
	}

	rep := &report{Info: runInfo{
		Date:      time.Now(),
		CPU:       cpuModel(),
		Cores:     runtime.NumCPU(),
		Go:        runtime.Version(),
		Caddy:     caddyVersion,
		Commit:    gitCommit(),
		Command:   "go run ./bench " + strings.Join(os.Args[1:], " "),
		FileLimit: limit,
		Targets:   targets,
		Redis:     redisInfo,
		LoadStart: loadStart,
		Settings: fmt.Sprintf("%d rounds (all targets run for the whole run, each in its own process; each measurement is taken on every target in turn, in an order that alternates; the headline takes the median over rounds of each per-round ratio to reverse_proxy, the detailed tables pool the samples) of %v per measurement after %v warm-up; concurrency %s; fixed rate %d req/s and %d streams/s; %d B requests, %d B answers; streams of %d events at full speed, %d events at %.0f events/s (paced, c=%d); gateway pools: max_concurrency_per_key 100000; each proxy process measured once idle after its start (at most %v: an llm_gateway fetches every key's models list at start); Caddy log level %s",
			o.rounds, o.duration, o.warmup, o.conc, o.rate, o.streamRate, o.reqSize, o.mock.RespSize, o.mock.Events,
			o.mock.PacedEvents, o.mock.PacedRate, o.pacedConc, maxIdleWait, map[bool]string{true: "INFO", false: "WARN"}[o.gatewayLog]),
	}, StateNote: stateNote}

	// every target runs in its own process for the whole run; each
	// measurement is taken on every target in turn before the next one
	// starts, in an order that alternates, so the figures compared in a
	// ratio are taken seconds apart and a drift in background load does
	// not favour one target (the headline pairs them by round)
	running := make([]*runningTarget, 0, len(targets))
	defer func() {
		for _, rt := range running {
			rt.stop()
		}
	}()
	for _, t := range targets {
		rt, err := startTarget(ctx, o, t, caddyBin, dir, mockAddr, rs)
		if err != nil {
			return err
		}
		running = append(running, rt)
	}
	// the order flips from one measurement to the next and, for each
	// measurement, from one round to the next (with an even count of
	// measurements a running turn count would give each the same order in
	// every round)
	for round := 0; round < o.rounds; round++ {
		for si, s := range specs {
			for i := range running {
				rt := running[i]
				if (round+si)%2 == 1 {
					rt = running[len(running)-1-i]
				}
				if err := rt.measure(ctx, o, rep, s, mockAddr, rs, round == 0); err != nil {
					return err
				}
			}
		}
	}
	for _, rt := range running {
		rt.stop()
	}
	running = nil
	for _, m := range rep.Runs {
		m.sortSamples()
	}
	for _, t := range targets {
		if t.Proxy != proxyNone && contains(o.memTargets, t.Name) && len(memN) > 0 {
			if err := memTarget(ctx, o, rep, t, caddyBin, dir, mockAddr, memN, limit); err != nil {
				return err
			}
		}
	}

	if o.inproc {
		// the load results stand on their own: a package that does not
		// build right now only costs this section
		if rep.Inproc, err = runInproc(ctx, "2000x"); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			rep.InprocErr = firstLine(err.Error())
		}
	}
	rep.Notes = findings
	rep.Info.LoadEnd = loadAvg()

	md := rep.Markdown()
	fmt.Println(md)
	out := o.out
	if out == "" {
		out = "BENCHMARKS.md"
		if o.smoke {
			f, err := os.CreateTemp("", "llmgw-bench-smoke-*.md")
			if err != nil {
				return err
			}
			out = f.Name()
			f.Close()
		}
	}
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "bench: results written to", out)
	if o.smoke {
		return smokeCheck(rep)
	}
	return nil
}

// runningTarget is one target's proxy process (none for direct), kept
// for the whole run.
type runningTarget struct {
	t         target
	base      string // the URL the load generator sends to
	pid       int    // the proxy process (0: direct)
	adminPort int    // Caddy's admin endpoint (0: none)
	p         *proc
}

// startTarget starts t's proxy process (for a target with a proxy), waits
// until it is idle after its start, and warms it up. Its admin endpoint
// is on when the run profiles, or counts state round trips (t has state
// redis on rs).
func startTarget(ctx context.Context, o *options, t target, caddyBin, dir, mockAddr string, rs *redisServer) (*runningTarget, error) {
	rt := &runningTarget{t: t, base: "http://" + mockAddr}
	if t.Proxy != proxyNone {
		if o.profile != "" || (t.State == stateRedis && rs != nil) {
			var err error
			if rt.adminPort, err = freePort(); err != nil {
				return nil, err
			}
		}
		bin := caddyBin
		if t.Bin != "" {
			bin = t.Bin
		}
		p, b, err := startCaddy(ctx, bin, dir, t, mockAddr, o.gatewayLog, rt.adminPort)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", t.Name, err)
		}
		rt.p, rt.base, rt.pid = p, b, p.Pid()
		idleAfterStart(ctx, t.Name, rt.pid)
	}
	fmt.Fprintf(os.Stderr, "bench: %s (%s) at %s\n", t.Name, t.Desc, rt.base)
	if o.warmup > 0 {
		for _, w := range []workload{wlJSON, wlStream} {
			if _, err := attack(ctx, t, rt.base, runSpec{W: w, Conc: 16, Dur: o.warmup}, o.reqSize, 0, ""); err != nil {
				rt.stop()
				return nil, err
			}
		}
	}
	return rt, nil
}

// stop stops the target's proxy process, once.
func (rt *runningTarget) stop() {
	if rt.p != nil {
		rt.p.stop()
		rt.p = nil
	}
}

// measure runs one measurement s on the target and adds its samples to
// those of earlier rounds. In the first round it profiles the
// measurements named by -profile-runs; for a target with state redis (on
// rs) it also counts the state round trips, through Caddy's admin
// endpoint.
func (rt *runningTarget) measure(ctx context.Context, o *options, rep *report, s runSpec, mockAddr string, rs *redisServer, first bool) error {
	t := rt.t
	var prof *profiler
	if o.profile != "" && first && t.Proxy != proxyNone && contains(o.profSpecs, s.W.Name+"/"+s.Level()) {
		prof = startProfile(rt.adminPort, s.Dur, filepath.Join(o.profile, t.Name+"-"+s.W.Name+"-"+strings.ReplaceAll(s.Level(), "/", "per")))
	}
	var sp *stateProbe
	if t.State == stateRedis && rs != nil && rt.adminPort > 0 {
		sp = newStateProbe(ctx, rt.adminPort, rs)
	}
	m, err := attack(ctx, t, rt.base, s, o.reqSize, rt.pid, "http://"+mockAddr)
	if prof != nil {
		prof.finish()
	}
	if err != nil {
		return err
	}
	if sp != nil {
		if err := sp.finish(ctx, m); err != nil {
			// the latencies still count; the smoke check fails on it
			fmt.Fprintf(os.Stderr, "bench: %s: state round trips not counted: %v\n", t.Name, err)
		}
	}
	fmt.Fprintf(os.Stderr, "  %-14s %-6s %-7s %8.0f req/s  p50 %6dµs  p99 %6dµs  errors %d\n",
		t.Name, s.W.Name, s.Level(), m.RPS(), pct(m.Lat, 50).Microseconds(), pct(m.Lat, 99).Microseconds(), m.Errors)
	if m.HasState {
		fmt.Fprintf(os.Stderr, "         state round trips %.2f/req (%s; mean %s); redis: scripts %.2f/req, publish %.2f/req\n",
			m.roundTrips(), m.stateDetail(), m.roundTripTimes(), m.perReq(float64(m.Scripts)), m.perReq(float64(m.Publishes)))
	}
	if m.OK == 0 {
		return fmt.Errorf("%s %s %s: no request succeeded (%s)", t.Name, s.W.Name, s.Level(), m.FirstErr)
	}
	if prev := rep.find(t.Name, s.W.Name, s.Level()); prev != nil {
		prev.merge(m)
	} else {
		rep.Runs = append(rep.Runs, m)
	}
	return ctx.Err()
}

// memTarget starts a fresh process of the target and holds each number of
// slow streams open through it in turn.
func memTarget(ctx context.Context, o *options, rep *report, t target, caddyBin, dir, mockAddr string, memN []int, limit uint64) (err error) {
	adminPort := 0
	if o.profile != "" {
		if adminPort, err = freePort(); err != nil {
			return err
		}
	}
	p, base, err := startCaddy(ctx, caddyBin, dir, t, mockAddr, o.gatewayLog, adminPort)
	if err != nil {
		return fmt.Errorf("%s: %v", t.Name, err)
	}
	defer p.stop()
	idleAfterStart(ctx, t.Name, p.Pid())
	fmt.Fprintf(os.Stderr, "bench: memory case, %s at %s\n", t.Name, base)
	if o.warmup > 0 {
		if _, err := attack(ctx, t, base, runSpec{W: wlStream, Conc: 16, Dur: o.warmup}, o.reqSize, 0, ""); err != nil {
			return err
		}
	}
	for _, n := range memN {
		// the proxy holds two descriptors per stream (client and upstream)
		maxN := int(limit-256) / 2
		note := ""
		if n > maxN {
			note = fmt.Sprintf("%d asked; RLIMIT_NOFILE %d (hard limit) allows %d", n, limit, maxN)
			n = maxN
		}
		var during func()
		if adminPort > 0 {
			prefix := filepath.Join(o.profile, fmt.Sprintf("%s-mem-%d", t.Name, n))
			during = func() { heapProfile(adminPort, prefix) }
		}
		mr, err := holdStreams(ctx, t, base, n, o.reqSize, p.Pid(), o.memWait, during)
		if err != nil {
			return err
		}
		if note != "" {
			if mr.Note != "" {
				note += "; " + mr.Note
			}
			mr.Note = note
		}
		rep.Mem = append(rep.Mem, mr)
		fmt.Fprintf(os.Stderr, "  memory %d streams: %.1f KiB/stream (RSS %s -> %s MiB, %d fds) %s\n",
			mr.N, mr.PerStream()/1024, mib(mr.Before.RSS), mib(mr.During.RSS), mr.During.FDs, mr.Note)
		// let the closed streams drain before the next size
		time.Sleep(time.Second)
	}
	return ctx.Err()
}

// maxIdleWait bounds the wait for a freshly started proxy to go idle.
const maxIdleWait = 30 * time.Second

// idleAfterStart waits until a freshly started proxy process is idle
// (waitIdle) and says so on stderr when that took a while or never came.
func idleAfterStart(ctx context.Context, name string, pid int) {
	waited, idle := waitIdle(ctx, pid, maxIdleWait)
	switch {
	case !idle && ctx.Err() == nil:
		fmt.Fprintf(os.Stderr, "bench: %s still busy %v after start; measuring anyway\n", name, waited.Round(time.Millisecond))
	case waited > time.Second:
		fmt.Fprintf(os.Stderr, "bench: %s idle %v after start\n", name, waited.Round(time.Millisecond))
	}
}

// smokeCheck fails a smoke run that measured nothing useful.
func smokeCheck(rep *report) error {
	for _, m := range rep.Runs {
		if m.OK == 0 || m.Errors > 0 {
			return fmt.Errorf("smoke: %s %s %s: %d ok, %d errors (%s)", m.Target, m.Spec.W.Name, m.Spec.Level(), m.OK, m.Errors, m.FirstErr)
		}
		if m.Spec.W.Stream && m.Events == 0 {
			return fmt.Errorf("smoke: %s %s: no stream events seen", m.Target, m.Spec.W.Name)
		}
	}
	redisTargets := map[string]bool{}
	for _, t := range rep.Info.Targets {
		if t.State == stateRedis {
			redisTargets[t.Name] = true
		}
	}
	for _, m := range rep.Runs {
		if !redisTargets[m.Target] {
			continue
		}
		if !m.HasState {
			return fmt.Errorf("smoke: %s %s %s: state round trips not counted", m.Target, m.Spec.W.Name, m.Spec.Level())
		}
		if m.State["acquire/ok"] == 0 || m.State["release/ok"] == 0 {
			return fmt.Errorf("smoke: %s %s %s: no acquire/release went to Redis (%s)", m.Target, m.Spec.W.Name, m.Spec.Level(), m.stateDetail())
		}
		for k := range m.State {
			if !strings.HasSuffix(k, "/ok") {
				return fmt.Errorf("smoke: %s %s %s: failed state round trips (%s)", m.Target, m.Spec.W.Name, m.Spec.Level(), m.stateDetail())
			}
		}
	}
	if err := smokeHeadline(rep); err != nil {
		return err
	}
	for _, mr := range rep.Mem {
		if mr.N == 0 || mr.Errors > 0 {
			return fmt.Errorf("smoke: memory case %s: %d streams open, %d errors (%s)", mr.Target, mr.N, mr.Errors, mr.FirstErr)
		}
	}
	return nil
}

// smokeHeadline fails a smoke run whose headline misses a figure the run
// measured: every llm_gateway row needs its c=16 ratios (and its c=1 added
// p50 when direct ran) once reverse_proxy is in the run. RSS per stream is
// not checked: a few dozen streams may not grow the baseline's RSS.
func smokeHeadline(rep *report) error {
	h := rep.headline()
	if h.Err != "" {
		if rep.find(headBase, wlJSON.Name, headLoadLevel) == nil {
			return nil // no baseline asked for
		}
		return fmt.Errorf("smoke: headline: %s", h.Err)
	}
	has := func(name, wl, level string) bool { return rep.find(name, wl, level) != nil }
	for _, row := range h.Rows {
		if row.Target.Proxy == proxyNone {
			continue
		}
		name := row.Target.Name
		// a cell is required when the run measured both sides of it
		cells := []struct {
			what string
			f    figure
			need bool
		}{
			{"c=1 added p50", row.AddedP50, has(name, wlJSON.Name, headLatLevel) && has(headDirect, wlJSON.Name, headLatLevel)},
			{"c=16 req/s", row.ReqRatio, has(name, wlJSON.Name, headLoadLevel) && has(headBase, wlJSON.Name, headLoadLevel)},
			{"CPU/req", row.CPUReqRatio, has(name, wlJSON.Name, headLoadLevel) && has(headBase, wlJSON.Name, headLoadLevel)},
			{"c=16 streams/s", row.StreamRatio, has(name, wlStream.Name, headLoadLevel) && has(headBase, wlStream.Name, headLoadLevel)},
			{"CPU/stream", row.CPUStreamRatio, has(name, wlStream.Name, headLoadLevel) && has(headBase, wlStream.Name, headLoadLevel)},
			{"added TTFB", row.AddedTTFB, has(name, wlStream.Name, headLoadLevel) && has(headBase, wlStream.Name, headLoadLevel)},
		}
		for _, c := range cells {
			if c.need && !c.f.OK {
				return fmt.Errorf("smoke: headline: %s: %s not computed", name, c.what)
			}
		}
	}
	return nil
}

// hasRedisTarget reports whether a target keeps its state in Redis.
func hasRedisTarget(targets []target) bool {
	for _, t := range targets {
		if t.State == stateRedis {
			return true
		}
	}
	return false
}

func contains(list, name string) bool {
	for _, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == name {
			return true
		}
	}
	return false
}

// gitCommit returns the short commit of the work tree, marked "+dirty" when
// it has uncommitted changes.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "+dirty"
	}
	return c
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
