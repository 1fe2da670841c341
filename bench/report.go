package main

import (
	"fmt"
	"strings"
	"time"
)

// runInfo describes the machine and the settings of a run.
type runInfo struct {
	Date      time.Time
	CPU       string
	Cores     int
	Go        string
	Caddy     string
	Commit    string
	Command   string
	Settings  string
	FileLimit uint64
	Targets   []target
	// Redis describes the redis-server of the state redis targets, if any.
	Redis string
	// LoadStart and LoadEnd are the load averages (1, 5, 15 min, from
	// /proc/loadavg) when the run started and when it ended; "" if unknown.
	LoadStart, LoadEnd string
}

// report holds everything a run measured.
type report struct {
	Info runInfo
	Runs []*measurement
	Mem  []memResult
	// Inproc are the in-process handler benchmarks, if run.
	Inproc []inprocResult
	// InprocErr says why the in-process benchmarks are missing.
	InprocErr string
	// Notes is appended verbatim (profile findings).
	Notes string
	// StateNote says why the state redis target was left out, if it was.
	StateNote string
}

// find returns the measurement of target for the workload and load level,
// or nil.
func (r *report) find(target, wl, level string) *measurement {
	for _, m := range r.Runs {
		if m.Target == target && m.Spec.W.Name == wl && m.Spec.Level() == level {
			return m
		}
	}
	return nil
}

// pct returns the p-th percentile (0..100) of sorted values.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

func us(d time.Duration) string { return fmt.Sprintf("%d", d.Microseconds()) }

func signedUS(d time.Duration) string { return fmt.Sprintf("%+d", d.Microseconds()) }

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// cpuPer1k is the proxy's CPU seconds per 1 000 successful requests.
func (m *measurement) cpuPer1k() string {
	if !m.HasProc || m.OK == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", m.CPU.Seconds()/float64(m.OK)*1000)
}

// sysPerReq is the proxy's read and write system calls per successful
// request.
func (m *measurement) sysPerReq() string {
	if !m.HasProc || m.OK == 0 || m.Syscalls <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(m.Syscalls)/float64(m.OK))
}

func (m *measurement) rss() string {
	if !m.HasProc {
		return "-"
	}
	return mib(m.HWM)
}

func (m *measurement) errs() string {
	if m.Errors == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", m.Errors, strings.ReplaceAll(m.FirstErr, "|", "/"))
}

// Markdown renders the report.
func (r *report) Markdown() string {
	var b strings.Builder
	in := r.Info
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("What `llm_gateway` costs on top of the network path, measured in one run against no proxy (a) and against Caddy's own `reverse_proxy` (b), on loopback, with the mock upstream in its own process. Reproduce with `go run ./bench` (see README, \"Performance\").\n\n")
	fmt.Fprintf(&b, "- date: %s\n", in.Date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- machine: %s, %d cores, RLIMIT_NOFILE %d\n", in.CPU, in.Cores, in.FileLimit)
	fmt.Fprintf(&b, "- Go %s, Caddy %s, commit %s\n", strings.TrimPrefix(in.Go, "go"), in.Caddy, in.Commit)
	fmt.Fprintf(&b, "- command: `%s`\n", in.Command)
	fmt.Fprintf(&b, "- settings: %s\n", in.Settings)
	if in.Redis != "" {
		fmt.Fprintf(&b, "- state redis: %s\n", in.Redis)
	}
	fmt.Fprintf(&b, "- load average (1/5/15 min, /proc/loadavg): %s at start, %s at end\n", orDash(in.LoadStart), orDash(in.LoadEnd))
	b.WriteString("\n")
	r.headline().markdown(&b, in.LoadStart, in.LoadEnd)
	b.WriteString("Targets:\n\n")
	for _, t := range in.Targets {
		fmt.Fprintf(&b, "- `%s`: %s\n", t.Name, t.Desc)
	}
	b.WriteString("\nColumns: latencies are per request (whole body read), in µs; `+p50` is the added median latency over (a) at the same load; `÷ (b)` is the throughput as a fraction of `reverse_proxy`'s; CPU is the proxy process's user+system seconds per 1 000 requests (from /proc/<pid>/stat); syscalls/req its read and write system calls per request (syscr + syscw of /proc/<pid>/io, every socket read and write of both its connections included); RSS is its peak resident set (VmHWM) so far in that process. Streams: TTFB is the time to the first body byte, TTFT to the end of the first event that carries generated text (the gateway holds a stream's preamble, such as Chat's role chunk or Anthropic's message_start, until its first content, so its first byte comes with its first text), `gap p99` the 99th percentile of the delay between consecutive text-delta events as the client sees them (events without text, which differ between dialects, are not counted). Paced streams also give each text event's latency from the moment the mock flushed it to its arrival at the client (`event lat`; the request carries an X-Request-Id and the mock notes its send times), which does not include the mock's pacing jitter; `+` columns are over (a).\n\n")

	sections := []struct {
		wl, title string
	}{
		{wlJSON.Name, "Non-streaming"},
		{wlStream.Name, "Streaming at the mock's full speed"},
		{wlPaced.Name, "Streaming, paced"},
	}
	for _, sec := range sections {
		var rows []*measurement
		for _, m := range r.Runs {
			if m.Spec.W.Name == sec.wl {
				rows = append(rows, m)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n", sec.title)
		stream := rows[0].Spec.W.Stream
		paced := sec.wl == wlPaced.Name
		if paced {
			b.WriteString("| load | target | streams/s | p50 | p99 | TTFB p50 | +TTFB p50 | TTFT p50 | +TTFT p50 | gap p50 | gap p99 | +gap p99 | event lat p50 | event lat p99 | +event lat p50 | +event lat p99 | CPU s/1k | syscalls/req | RSS MiB | errors |\n")
			b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
		} else if stream {
			b.WriteString("| load | target | streams/s | p50 | p99 | TTFB p50 | +TTFB p50 | TTFT p50 | +TTFT p50 | gap p50 | gap p99 | +gap p99 | ÷ (b) | CPU s/1k | syscalls/req | RSS MiB | errors |\n")
			b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
		} else {
			b.WriteString("| load | target | req/s | p50 | p90 | p99 | max | +p50 | ÷ (b) | CPU s/1k | syscalls/req | RSS MiB | errors |\n")
			b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
		}
		for _, m := range rows {
			base := r.find(in.Targets[0].Name, sec.wl, m.Spec.Level())
			var floor *measurement
			if len(in.Targets) > 1 {
				floor = r.find(in.Targets[1].Name, sec.wl, m.Spec.Level())
			}
			ratio := "-"
			if floor != nil && floor.RPS() > 0 {
				ratio = fmt.Sprintf("%.2f", m.RPS()/floor.RPS())
			}
			add := func(f func(*measurement) time.Duration) string {
				if base == nil || base == m {
					return "-"
				}
				return signedUS(f(m) - f(base))
			}
			p50 := func(x *measurement) time.Duration { return pct(x.Lat, 50) }
			ttft := func(x *measurement) time.Duration { return pct(x.TTFT, 50) }
			if paced {
				ttfb := func(x *measurement) time.Duration { return pct(x.TTFB, 50) }
				gap99 := func(x *measurement) time.Duration { return pct(x.Gaps, 99) }
				ev50 := func(x *measurement) time.Duration { return pct(x.EvLat, 50) }
				ev99 := func(x *measurement) time.Duration { return pct(x.EvLat, 99) }
				fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
					m.Spec.Level(), m.Target, m.RPS(), us(p50(m)), us(pct(m.Lat, 99)),
					us(ttfb(m)), add(ttfb), us(ttft(m)), add(ttft), us(pct(m.Gaps, 50)), us(gap99(m)), add(gap99),
					us(ev50(m)), us(ev99(m)), add(ev50), add(ev99), m.cpuPer1k(), m.sysPerReq(), m.rss(), m.errs())
			} else if stream {
				ttfb := func(x *measurement) time.Duration { return pct(x.TTFB, 50) }
				gap99 := func(x *measurement) time.Duration { return pct(x.Gaps, 99) }
				fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
					m.Spec.Level(), m.Target, m.RPS(), us(p50(m)), us(pct(m.Lat, 99)),
					us(ttfb(m)), add(ttfb), us(ttft(m)), add(ttft), us(pct(m.Gaps, 50)), us(gap99(m)), add(gap99),
					ratio, m.cpuPer1k(), m.sysPerReq(), m.rss(), m.errs())
			} else {
				fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
					m.Spec.Level(), m.Target, m.RPS(), us(p50(m)), us(pct(m.Lat, 90)), us(pct(m.Lat, 99)),
					us(pct(m.Lat, 100)), add(p50), ratio, m.cpuPer1k(), m.sysPerReq(), m.rss(), m.errs())
			}
		}
		b.WriteString("\n")
	}

	r.stateSection(&b)

	if len(r.Mem) > 0 {
		b.WriteString("## Memory: slow streams held open\n\n")
		b.WriteString("Streams that have delivered their first byte and then idle (one event every few seconds); RSS of the proxy process before opening them and with all of them open.\n\n")
		b.WriteString("| target | streams | open | RSS before MiB | RSS open MiB | RSS per stream KiB | fds open | errors | note |\n")
		b.WriteString("|---|--:|--:|--:|--:|--:|--:|---|---|\n")
		for _, mr := range r.Mem {
			errs := fmt.Sprint(mr.Errors)
			if mr.FirstErr != "" {
				errs += " (" + mr.FirstErr + ")"
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %.1f | %d | %s | %s |\n",
				mr.Target, mr.Requested, mr.N, mib(mr.Before.RSS), mib(mr.During.RSS),
				mr.PerStream()/1024, mr.During.FDs, errs, mr.Note)
		}
		b.WriteString("\n")
	}

	if len(r.Inproc) > 0 {
		b.WriteString("## In-process: one request through the handler, no sockets\n\n")
		b.WriteString("`go test -run '^$' -bench 'BenchmarkGateway|BenchmarkStreamCommitPoint' -benchmem ./caddymodule/`: the handler's ServeHTTP with the upstream client's transport replaced by an in-memory mockupstream (2 KB request; 1 KB answer or 200-event stream). `upstream-only` is the in-memory upstream by itself, included in every other line. `ttfb ns` is the time from ServeHTTP to the client's first body byte; the `commit-point/*/hold` and `/no-hold` lines are the same stream with its preamble held until the first content event (as always served) and without, so their ttfb shows what the commit point costs.\n\n")
		b.WriteString("| case | ns/op | ttfb ns | B/op | allocs/op |\n|---|--:|--:|--:|--:|\n")
		for _, x := range r.Inproc {
			ttfb := x.TTFB
			if ttfb == "" {
				ttfb = "-"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", x.Name, x.NsOp, ttfb, x.BOp, x.Allocs)
		}
		b.WriteString("\n")
	}

	if r.InprocErr != "" {
		fmt.Fprintf(&b, "## In-process: one request through the handler, no sockets\n\nNot run: %s\n\n", r.InprocErr)
	}

	if checks := r.checks(); len(checks) > 0 {
		b.WriteString("## Earlier targets\n\n| target | measured | goal | met |\n|---|---|---|---|\n")
		for _, c := range checks {
			met := "yes"
			if !c.met {
				met = "**no**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.what, c.measured, c.goal, met)
		}
		b.WriteString("\n")
	}
	if r.Notes != "" {
		b.WriteString(r.Notes)
	}
	return b.String()
}

// floorNote gives what reverse_proxy adds over no proxy for the same
// measure, as a reference: " (reverse_proxy: +N µs)".
func (r *report) floorNote(wl, level string, f func(*measurement) time.Duration) string {
	rp, d := r.find("reverse_proxy", wl, level), r.find("direct", wl, level)
	if rp == nil || d == nil {
		return ""
	}
	return " (reverse_proxy: " + signedUS(f(rp)-f(d)) + " µs)"
}

// check is one acceptance target evaluated on the run.
type check struct {
	what, measured, goal string
	met                  bool
}

// checks evaluates the performance targets on whatever the run measured.
func (r *report) checks() []check {
	var out []check
	p50 := func(m *measurement) time.Duration { return pct(m.Lat, 50) }
	if gw, rp := r.find("gw-pass", "json", "c=16"), r.find("reverse_proxy", "json", "c=16"); gw != nil && rp != nil && rp.RPS() > 0 {
		v := gw.RPS() / rp.RPS()
		out = append(out, check{"passthrough throughput at c=16, ÷ reverse_proxy", fmt.Sprintf("%.2f (%.0f vs %.0f req/s)", v, gw.RPS(), rp.RPS()), "≥ 0.85", v >= 0.85})
	}
	if gw, rp := r.find("gw-keys", "json", "c=16"), r.find("reverse_proxy", "json", "c=16"); gw != nil && rp != nil && rp.RPS() > 0 {
		v := gw.RPS() / rp.RPS()
		out = append(out, check{"passthrough with many keys, c=16, ÷ reverse_proxy", fmt.Sprintf("%.2f", v), "≥ 0.85", v >= 0.85})
	}
	if gw, rp, d := r.find("gw-pass", "json", "c=1"), r.find("reverse_proxy", "json", "c=1"), r.find("direct", "json", "c=1"); gw != nil && rp != nil && d != nil {
		ag, ar := p50(gw)-p50(d), p50(rp)-p50(d)
		v := float64(ag) / float64(ar)
		out = append(out, check{"added p50 at c=1 over no proxy, ÷ reverse_proxy's", fmt.Sprintf("%.2f (%s µs vs %s µs)", v, us(ag), us(ar)), "≤ 1.5", ar > 0 && v <= 1.5})
	}
	for _, tr := range []string{"gw-a2o", "gw-o2a"} {
		if gw, pass := r.find(tr, "json", "c=1"), r.find("gw-pass", "json", "c=1"); gw != nil && pass != nil {
			d := p50(gw) - p50(pass)
			out = append(out, check{"translation (" + tr + ") p50 over passthrough, c=1, 2 KB request", signedUS(d) + " µs", "< 30 µs", d < 30*time.Microsecond})
		}
	}
	for _, tr := range []string{"gw-pass", "gw-a2o", "gw-o2a"} {
		if gw, d := r.find(tr, "stream", "c=1"), r.find("direct", "stream", "c=1"); gw != nil && d != nil {
			v := pct(gw.TTFB, 50) - pct(d.TTFB, 50)
			out = append(out, check{"stream TTFB p50 added (" + tr + "), c=1", signedUS(v) + " µs" + r.floorNote("stream", "c=1", func(m *measurement) time.Duration { return pct(m.TTFB, 50) }), "< 1 ms", v < time.Millisecond})
		}
	}
	for _, m := range r.Runs {
		if m.Spec.W.Name != "paced" || !strings.HasPrefix(m.Target, "gw-") {
			continue
		}
		if d := r.find("direct", "paced", m.Spec.Level()); d != nil && len(m.EvLat) > 0 && len(d.EvLat) > 0 {
			f := func(m *measurement) time.Duration { return pct(m.EvLat, 99) }
			v := f(m) - f(d)
			out = append(out, check{"paced stream, added latency of each event, p99 (" + m.Target + ", " + m.Spec.Level() + ")", signedUS(v) + " µs" + r.floorNote("paced", m.Spec.Level(), f), "< 100 µs", v < 100*time.Microsecond})
		}
	}
	for _, mr := range r.Mem {
		if strings.HasPrefix(mr.Target, "gw-") && mr.N > 0 {
			v := mr.PerStream() / 1024
			ref := ""
			for _, o := range r.Mem {
				if o.Target == "reverse_proxy" && o.Requested == mr.Requested && o.N > 0 {
					ref = fmt.Sprintf(" (reverse_proxy: %.1f KiB)", o.PerStream()/1024)
				}
			}
			out = append(out, check{fmt.Sprintf("RSS per idle stream (%s, %d streams)", mr.Target, mr.N), fmt.Sprintf("%.1f KiB", v) + ref, "< 64 KiB", v < 64})
		}
	}
	return out
}

// stateLevel is the load level of the state backend comparison.
const stateLevel = "c=16"

// stateSection compares gw-redis (state redis) with gw-pass (memory
// state) at stateLevel, measured in the same rounds.
func (r *report) stateSection(b *strings.Builder) {
	if r.StateNote != "" {
		fmt.Fprintf(b, "## State backend: redis vs memory\n\n%s\n\n", r.StateNote)
		return
	}
	type pair struct{ mem, red *measurement }
	var pairs []pair
	for _, wl := range []string{wlJSON.Name, wlStream.Name} {
		mem, red := r.find("gw-pass", wl, stateLevel), r.find("gw-redis", wl, stateLevel)
		if mem != nil && red != nil {
			pairs = append(pairs, pair{mem, red})
		}
	}
	if len(pairs) == 0 {
		return
	}
	b.WriteString("## State backend: redis vs memory\n\n")
	fmt.Fprintf(b, "`gw-redis` is `gw-pass` with `state redis`, measured in the same rounds, at %s; every key acquire and release is one Redis round trip. `redis ÷ memory` is the ratio of each column, `redis − memory` the difference (latencies in µs). Round trips: the gateway's own count (`llm_gateway_state_backend_requests_total`, acquire + release with result ok, read from its admin endpoint's /metrics before and after each measurement) per completed request, each operation in brackets; `rt mean`: their mean time as the gateway timed them (`llm_gateway_state_backend_duration_seconds`); Redis scripts and PUBLISH: Redis's own count (`INFO commandstats`: EVAL + EVALSHA calls, PUBLISH calls made by the scripts) per request; CPU: the Caddy process's and the redis-server process's user+system seconds per 1 000 requests.\n\n", stateLevel)
	b.WriteString("| workload | state | req/s | p50 | p99 | CPU s/1k | Redis CPU s/1k | round trips/req | rt mean | Redis scripts/req | Redis PUBLISH/req |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|---|---|--:|--:|\n")
	for _, p := range pairs {
		wl := p.mem.Spec.W.Name + ", " + stateLevel
		p50 := func(m *measurement) time.Duration { return pct(m.Lat, 50) }
		p99 := func(m *measurement) time.Duration { return pct(m.Lat, 99) }
		fmt.Fprintf(b, "| %s | memory (`gw-pass`) | %.0f | %s | %s | %s | - | - | - | - | - |\n",
			wl, p.mem.RPS(), us(p50(p.mem)), us(p99(p.mem)), p.mem.cpuPer1k())
		rt, rtTime, scripts, pubs, rcpu := "-", "-", "-", "-", "-"
		if m := p.red; m.HasState && m.requests() > 0 {
			rt = fmt.Sprintf("%.2f (%s)", m.roundTrips(), m.stateDetail())
			rtTime = m.roundTripTimes()
			scripts = fmt.Sprintf("%.2f", m.perReq(float64(m.Scripts)))
			pubs = fmt.Sprintf("%.2f", m.perReq(float64(m.Publishes)))
			rcpu = fmt.Sprintf("%.3f", m.perReq(m.RedisCPU.Seconds())*1000)
		}
		fmt.Fprintf(b, "| %s | redis (`gw-redis`) | %.0f | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			wl, p.red.RPS(), us(p50(p.red)), us(p99(p.red)), p.red.cpuPer1k(), rcpu, rt, rtTime, scripts, pubs)
		ratio := func(a, b float64) string {
			if b == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", a/b)
		}
		cpu := "-"
		if p.mem.HasProc && p.red.HasProc && p.mem.OK > 0 && p.red.OK > 0 {
			cpu = ratio(p.red.CPU.Seconds()/float64(p.red.OK), p.mem.CPU.Seconds()/float64(p.mem.OK))
		}
		fmt.Fprintf(b, "| %s | redis ÷ memory | %s | %s | %s | %s | | | | | |\n", wl, ratio(p.red.RPS(), p.mem.RPS()),
			ratio(float64(p50(p.red)), float64(p50(p.mem))), ratio(float64(p99(p.red)), float64(p99(p.mem))), cpu)
		fmt.Fprintf(b, "| %s | redis − memory | %+.0f | %s | %s | | | | | | |\n", wl, p.red.RPS()-p.mem.RPS(),
			signedUS(p50(p.red)-p50(p.mem)), signedUS(p99(p.red)-p99(p.mem)))
	}
	b.WriteString("\n")
}
