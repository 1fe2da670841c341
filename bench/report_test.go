package main

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// ms and us build durations from fractional milliseconds and microseconds.
func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
func usd(v float64) time.Duration {
	return time.Duration(v * float64(time.Microsecond))
}

// synthRun is a measurement with only per-round headline figures.
func synthRun(target string, w workload, conc int, rounds ...roundFigures) *measurement {
	return &measurement{Target: target, Spec: runSpec{W: w, Conc: conc}, Rounds: rounds}
}

func jsonC1(p50ms ...float64) []roundFigures {
	var out []roundFigures
	for _, v := range p50ms {
		out = append(out, roundFigures{RPS: 1000, P50: ms(v)})
	}
	return out
}

// load gives rounds of req/s and CPU per request (µs), with TTFB p50 (ms)
// when ttfb is not nil, and TTFT p50 1 ms after it.
func load(rps []float64, cpuUS []float64, ttfb []float64) []roundFigures {
	var out []roundFigures
	for i := range rps {
		f := roundFigures{RPS: rps[i], P50: time.Millisecond, CPUPerReq: usd(cpuUS[i]), HasCPU: true}
		if ttfb != nil {
			f.TTFB50, f.HasTTFB = ms(ttfb[i]), true
			f.TTFT50, f.HasTTFT = ms(ttfb[i]+1), true
		}
		out = append(out, f)
	}
	return out
}

func memOf(target string, n int, kibPerStream float64) memResult {
	return memResult{Target: target, Requested: n, N: n,
		Before: procSample{RSS: 10 << 20},
		During: procSample{RSS: 10<<20 + int64(kibPerStream*1024*float64(n))}}
}

func pickTargets(names ...string) []target {
	var out []target
	for _, t := range allTargets(1000) {
		for _, n := range names {
			if t.Name == n {
				out = append(out, t)
			}
		}
	}
	return out
}

// synthReport: three rounds, each baseline figure with one outlier round
// that a mean would follow and a median does not; each gw-pass figure is
// the same in two rounds (the median of the per-round ratios or
// differences), where the ratio of (or difference between) the medians
// over rounds would differ (req/s 1850 ÷ 2100, CPU/req 266.7 ÷ 200,
// streams/s 420 ÷ 600, CPU/stream 820 ÷ 510, TTFB 11.2 − 11, p50
// 0.728 − 0.5); gw-a2o has one round, paired with the
// baseline's first, and sits exactly on its streams/s and CPU/stream
// targets.
func synthReport() *report {
	r := &report{Info: runInfo{
		Targets:   pickTargets("direct", "reverse_proxy", "gw-pass", "gw-redis", "gw-a2o"),
		LoadStart: "7.10 6.90 6.80", LoadEnd: "7.30 7.00 6.85",
	}}
	r.Runs = []*measurement{
		synthRun("direct", wlJSON, 1, jsonC1(0.5, 0.49, 0.51)...),
		synthRun("reverse_proxy", wlJSON, 1, jsonC1(0.715, 0.705, 5.0)...),
		synthRun("reverse_proxy", wlJSON, 16, load([]float64{2000, 2100, 9000}, []float64{200, 210, 50}, nil)...),
		synthRun("reverse_proxy", wlStream, 16, load([]float64{600, 640, 10}, []float64{500, 510, 900}, []float64{10, 12, 11})...),
		synthRun("gw-pass", wlJSON, 1, jsonC1(0.738, 0.728, 0.2)...),
		synthRun("gw-pass", wlJSON, 16, load([]float64{1820, 1911, 1850}, []float64{254, 266.7, 300}, nil)...),
		synthRun("gw-pass", wlStream, 16, load([]float64{414, 441.6, 420}, []float64{820, 836.4, 700}, []float64{10.15, 12.15, 11.2})...),
		synthRun("gw-a2o", wlJSON, 16, load([]float64{1700}, []float64{302}, nil)...),
		synthRun("gw-a2o", wlStream, 16, load([]float64{510}, []float64{675}, []float64{11})...),
	}
	failed := memOf("gw-a2o", 1000, 1500) // 28 of 1000 open, the rest failed to connect
	failed.N, failed.Errors = 28, 972
	short := memOf("gw-redis", 1000, 20) // 800 of 1000 started in time
	short.N = 800
	r.Mem = []memResult{
		memOf("reverse_proxy", 1000, 40), memOf("reverse_proxy", 10000, 30),
		memOf("gw-pass", 1000, 44), memOf("gw-pass", 10000, 27), failed, short,
	}
	return r
}

func near(t *testing.T, what string, f figure, want float64) {
	t.Helper()
	if !f.OK || math.Abs(f.V-want) > 1e-6 {
		t.Errorf("%s = %+v, want %.6f", what, f, want)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
		ok   bool
	}{
		{nil, 0, false},
		{[]float64{3}, 3, true},
		{[]float64{5, 1, 3}, 3, true},
		{[]float64{1, 3, 2, 10}, 2.5, true},
	} {
		got, ok := median(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("median(%v) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	in := []float64{3, 1, 2}
	median(in)
	if in[0] != 3 || in[1] != 1 {
		t.Errorf("median reordered its input: %v", in)
	}
}

func TestFiguresAndMergeKeepRounds(t *testing.T) {
	m := &measurement{OK: 4, Elapsed: 2 * time.Second, HasProc: true, CPU: 2 * time.Millisecond,
		Lat:  []time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond},
		TTFB: []time.Duration{100 * time.Microsecond, 200 * time.Microsecond, 300 * time.Microsecond}}
	f := m.figures()
	want := roundFigures{RPS: 2, P50: 2 * time.Millisecond, TTFB50: 200 * time.Microsecond, HasTTFB: true, CPUPerReq: 500 * time.Microsecond, HasCPU: true}
	if f != want {
		t.Fatalf("figures = %+v, want %+v", f, want)
	}
	if g := (&measurement{OK: 3, Lat: []time.Duration{time.Millisecond}}).figures(); g.HasCPU || g.HasTTFB {
		t.Errorf("no proxy process, no TTFB: %+v", g)
	}
	m.Rounds = []roundFigures{f}
	o := &measurement{OK: 1, Rounds: []roundFigures{{RPS: 7}}}
	m.merge(o)
	if len(m.Rounds) != 2 || m.Rounds[0] != f || m.Rounds[1].RPS != 7 || m.OK != 5 {
		t.Errorf("after merge: OK %d, rounds %+v", m.OK, m.Rounds)
	}
}

func TestHeadlineMediansAndRatios(t *testing.T) {
	h := synthReport().headline()
	if h.Err != "" || h.Rounds != 3 {
		t.Fatalf("headline: err %q, rounds %d", h.Err, h.Rounds)
	}
	var names []string
	for _, row := range h.Rows {
		names = append(names, row.Target.Name)
	}
	if got := strings.Join(names, ","); got != "reverse_proxy,gw-pass,gw-redis,gw-a2o" {
		t.Fatalf("rows %s: want reverse_proxy first and no direct", got)
	}
	near(t, "base direct p50", h.Base.DirectP50, 0.5)
	near(t, "base p50", h.Base.P50, 0.715)
	near(t, "base req/s", h.Base.RPS, 2100)
	near(t, "base CPU/req", h.Base.CPUReq, 200)
	near(t, "base streams/s", h.Base.StreamRPS, 600)
	near(t, "base CPU/stream", h.Base.CPUStream, 510)
	near(t, "base TTFB", h.Base.TTFB, 11)

	rp, gw, red, a2o := h.Rows[0], h.Rows[1], h.Rows[2], h.Rows[3]
	near(t, "rp added p50", rp.AddedP50, 0.215)
	for name, f := range map[string]figure{"req": rp.ReqRatio, "cpu": rp.CPUReqRatio, "streams": rp.StreamRatio, "cpu/stream": rp.CPUStreamRatio, "rss": rp.RSSRatio} {
		near(t, "rp "+name, f, 1)
	}
	near(t, "rp ttfb", rp.AddedTTFB, 0)

	near(t, "gw added p50", gw.AddedP50, 0.238)
	near(t, "gw req/s ratio", gw.ReqRatio, 0.91)
	near(t, "gw CPU/req ratio", gw.CPUReqRatio, 1.27)
	near(t, "gw streams ratio", gw.StreamRatio, 0.69)
	near(t, "gw CPU/stream ratio", gw.CPUStreamRatio, 1.64)
	near(t, "gw added TTFB", gw.AddedTTFB, 0.15)
	near(t, "gw RSS ratio (10000 streams, the largest both ran)", gw.RSSRatio, 27.0/30)
	if gw.RSSStreams != 10000 {
		t.Errorf("RSS stream count %d, want 10000", gw.RSSStreams)
	}

	for name, f := range map[string]figure{"p50": red.AddedP50, "req": red.ReqRatio, "ttfb": red.AddedTTFB, "rss": red.RSSRatio} {
		if f.OK {
			t.Errorf("gw-redis %s measured from nothing: %+v", name, f)
		}
	}
	if a2o.AddedP50.OK || a2o.RSSRatio.OK {
		t.Errorf("gw-a2o: c=1 not run, memory case failed; got %+v %+v", a2o.AddedP50, a2o.RSSRatio)
	}
	near(t, "a2o streams ratio", a2o.StreamRatio, 0.85)
}

// TestPairedRatiosFollowDrift: the background load changes between
// rounds (the baseline's throughput goes 300, 100, 200), and each round's
// ratio is taken between figures of that round. Streams/s: 0.99, 0.90 and
// 1.10, median 0.99, where the ratio of the medians over rounds is
// 220 ÷ 200 = 1.10; CPU/stream: 1.10, 0.90, 1.15, median 1.10 (of the
// medians: 1150 ÷ 1000 = 1.15); TTFB: +0.2, +0.5, +0.1, median +0.2 (of
// the medians: 20.1 − 20 = +0.1). Each figure would differ if the rounds
// were not paired.
func TestPairedRatiosFollowDrift(t *testing.T) {
	r := &report{Info: runInfo{Targets: pickTargets("reverse_proxy", "gw-pass")}}
	r.Runs = []*measurement{
		synthRun("reverse_proxy", wlStream, 16, load([]float64{300, 100, 200}, []float64{500, 1500, 1000}, []float64{10, 30, 20})...),
		synthRun("gw-pass", wlStream, 16, load([]float64{297, 90, 220}, []float64{550, 1350, 1150}, []float64{10.2, 30.5, 20.1})...),
	}
	h := r.headline()
	gw := h.Rows[1]
	near(t, "streams ratio", gw.StreamRatio, 0.99)
	near(t, "CPU/stream ratio", gw.CPUStreamRatio, 1.10)
	near(t, "added TTFB", gw.AddedTTFB, 0.2)
	// the unpaired figures, so that the ones above tell the two apart
	near(t, "baseline streams/s median", h.Base.StreamRPS, 200)
	near(t, "baseline CPU/stream median", h.Base.CPUStream, 1000)
	near(t, "baseline TTFB median", h.Base.TTFB, 20)
}

func TestHeadlineVerdicts(t *testing.T) {
	vs := synthReport().headline().verdicts()
	got := map[string]verdict{}
	for _, v := range vs {
		if v.Target == "gw-redis" || v.Target == "reverse_proxy" {
			t.Errorf("goal applied to %s", v.Target)
		}
		got[v.Target+"/"+v.Goal.What] = v
	}
	if len(vs) != 8 {
		t.Fatalf("%d verdicts, want 5 passthrough + 3 translated", len(vs))
	}
	for _, c := range []struct {
		key  string
		met  bool
		by   float64
		text string
	}{
		{"gw-pass/c=16 streams/s ÷ reverse_proxy", false, 0.26, "**missed** by 0.26"},
		{"gw-pass/CPU/stream ÷ reverse_proxy", false, 0.49, "**missed** by 0.49"},
		{"gw-pass/added TTFB p50, c=16 streams, over reverse_proxy's", true, 0.05, "met (0.050 ms to spare)"},
		{"gw-pass/CPU/req ÷ reverse_proxy", false, 0.17, "**missed** by 0.17"},
		{"gw-pass/RSS per idle open stream ÷ reverse_proxy", true, 0.10, "met (0.10 to spare)"},
		{"gw-a2o/c=16 streams/s ÷ reverse_proxy", true, 0, "met (0.00 to spare)"},
		{"gw-a2o/CPU/stream ÷ reverse_proxy", true, 0, "met (0.00 to spare)"},
		{"gw-a2o/CPU/req ÷ reverse_proxy", false, 0.21, "**missed** by 0.21"},
	} {
		v, ok := got[c.key]
		if !ok {
			t.Errorf("%s: no verdict", c.key)
			continue
		}
		if v.Met != c.met || math.Abs(v.By-c.by) > 1e-9 || v.text() != c.text {
			t.Errorf("%s: met %v by %v %q; want %v by %v %q", c.key, v.Met, v.By, v.text(), c.met, c.by, c.text)
		}
	}
	// a figure the run did not measure is reported, not dropped
	r := synthReport()
	r.Mem = nil
	for _, v := range r.headline().verdicts() {
		if v.Target == "gw-pass" && strings.HasPrefix(v.Goal.What, "RSS") && v.text() != "not measured in this run" {
			t.Errorf("RSS without a memory case: %q", v.text())
		}
	}
}

func TestHeadlineMarkdown(t *testing.T) {
	md := synthReport().Markdown()
	for _, want := range []string{
		"- load average (1/5/15 min, /proc/loadavg): 7.10 6.90 6.80 at start, 7.30 7.00 6.85 at end\n",
		"| target | c=1 added p50 | c=16 req/s ÷ reverse_proxy | CPU/req ÷ reverse_proxy | c=16 streams/s ÷ reverse_proxy | CPU/stream ÷ reverse_proxy | added TTFB p50, c=16 streams | added TTFT p50, c=16 streams | RSS/idle stream ÷ reverse_proxy |\n",
		"| Caddy reverse_proxy (`reverse_proxy`) | 0.215 ms | 1.00 | 1.00 | 1.00 | 1.00 | +0.000 ms | +0.000 ms | 1.00 (10000) |\n",
		"| llm_gateway passthrough (`gw-pass`) | 0.238 ms | 0.91 | 1.27 | 0.69 | 1.64 | +0.150 ms | +0.150 ms | 0.90 (10000) |\n",
		"| llm_gateway passthrough, state redis (`gw-redis`) | - | - | - | - | - | - | - | - |\n",
		"| llm_gateway Anthropic in, OpenAI up (`gw-a2o`) | - | 0.85 | 1.51 | 0.85 | 1.35 | +1.000 ms | +1.000 ms | - |\n",
		"c=1 p50 0.715 ms (no proxy: 0.500 ms); c=16 2100 req/s, CPU 200 µs/req; c=16 600 streams/s, CPU 510 µs/stream, TTFB p50 11.000 ms, TTFT p50 12.000 ms; RSS per idle stream 40.0 KiB at 1000 streams, 30.0 KiB at 10000 streams.",
		"Medians over 3 round(s)",
		"| target | kind | figure | measured | rounds: lowest … highest | target | verdict |\n",
		"| `gw-pass` | passthrough | c=16 streams/s ÷ reverse_proxy | 0.69 | 0.69 … 42.00 | ≥ 0.95 | **missed** by 0.26 |\n",
		"| `gw-pass` | passthrough | added TTFB p50, c=16 streams, over reverse_proxy's | +0.150 ms | +0.150 … +0.200 ms | ≤ 0.2 ms | met (0.050 ms to spare) |\n",
		"| `gw-pass` | passthrough | RSS per idle open stream ÷ reverse_proxy | 0.90 | - | ≤ 1.00 | met (0.10 to spare) |\n",
		"| `gw-a2o` | translated | CPU/req ÷ reverse_proxy | 1.51 | - | ≤ 1.30 | **missed** by 0.21 |\n",
		"4 met, 4 missed, 0 not measured.\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// the headline comes right after the run's header, before the target
	// list and the detailed tables
	head, tgt, detail := strings.Index(md, "## Headline"), strings.Index(md, "### Targets (issue 15)"), strings.Index(md, "## Non-streaming")
	if !(strings.Index(md, "- load average") < head && head < tgt && tgt < strings.Index(md, "\nTargets:\n") && tgt < detail) {
		t.Errorf("order: headline %d, its targets %d, detailed %d", head, tgt, detail)
	}
}

func TestHeadlineWithoutBaseline(t *testing.T) {
	r := synthReport()
	r.Info.Targets = pickTargets("direct", "gw-pass")
	h := r.headline()
	if h.Err == "" || len(h.Rows) != 0 || len(h.verdicts()) != 0 {
		t.Fatalf("no reverse_proxy: err %q, %d rows", h.Err, len(h.Rows))
	}
	if md := r.Markdown(); !strings.Contains(md, "not computed: the run did not include `reverse_proxy`") || strings.Contains(md, "### Targets (issue 15)") {
		t.Errorf("report without a baseline:\n%s", md[:min(len(md), 2000)])
	}
}

func TestGoalKind(t *testing.T) {
	want := map[string]string{"direct": "", "reverse_proxy": "", "gw-pass": "passthrough", "gw-keys": "passthrough", "gw-redis": "", "gw-a2o": "translated", "gw-o2a": "translated"}
	for _, tg := range allTargets(1000) {
		if got := goalKind(tg); got != want[tg.Name] {
			t.Errorf("goalKind(%s) = %q, want %q", tg.Name, got, want[tg.Name])
		}
	}
}

func TestParseLoadAvg(t *testing.T) {
	if got := parseLoadAvg("8.30 6.91 6.84 2/101 26500\n"); got != "8.30 6.91 6.84" {
		t.Errorf("parseLoadAvg = %q", got)
	}
	if got := parseLoadAvg("garbage"); got != "" {
		t.Errorf("parseLoadAvg(garbage) = %q", got)
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{fmtRatio(figure{}), "-"},
		{fmtRatio(figure{V: 0.945, OK: true}), "0.95"},
		{fmtMS(figure{V: -0.0001, OK: true}, true), "+0.000 ms"},
		{fmtMS(figure{V: 0.2154, OK: true}, false), "0.215 ms"},
		{fmtMS(figure{V: -0.05, OK: true}, true), "-0.050 ms"},
		{label(target{Desc: "(e) llm_gateway translating"}), "llm_gateway translating"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestWaitIdle(t *testing.T) {
	// this test process, asleep in waitIdle, uses no CPU to speak of
	if waited, idle := waitIdle(context.Background(), os.Getpid(), 5*time.Second); !idle || waited < idleWindow {
		t.Errorf("own process: waited %v, idle %v; want idle after one window", waited, idle)
	}
	if _, idle := waitIdle(context.Background(), -1, time.Second); idle {
		t.Error("a process that does not exist is not idle")
	}
}
