package main

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// The load levels and the baseline target of the headline table.
const (
	headLatLevel  = "c=1"  // added p50 latency
	headLoadLevel = "c=16" // throughput, CPU, TTFB
	headBase      = "reverse_proxy"
	headDirect    = "direct"
)

// roundFigures are the headline figures of one round of one measurement,
// kept apart from the pooled samples so that the headline can take the
// median over rounds.
type roundFigures struct {
	RPS       float64       // successful requests (or streams) per second
	P50       time.Duration // median latency (whole body read)
	TTFB50    time.Duration // median time to the first body byte (streams)
	HasTTFB   bool          // TTFB50 was measured
	TTFT50    time.Duration // median time to the first text delta event (streams)
	HasTTFT   bool          // TTFT50 was measured
	CPUPerReq time.Duration // proxy process CPU per successful request
	HasCPU    bool          // CPUPerReq was measured (a proxy process, OK > 0)
}

// figures returns the headline figures of m as measured so far; m's
// samples must be sorted.
func (m *measurement) figures() roundFigures {
	f := roundFigures{RPS: m.RPS(), P50: pct(m.Lat, 50)}
	if len(m.TTFB) > 0 {
		f.TTFB50, f.HasTTFB = pct(m.TTFB, 50), true
	}
	if len(m.TTFT) > 0 {
		f.TTFT50, f.HasTTFT = pct(m.TTFT, 50), true
	}
	if m.HasProc && m.OK > 0 {
		f.CPUPerReq, f.HasCPU = m.CPU/time.Duration(m.OK), true
	}
	return f
}

// figure is one computed cell: OK is false when the run did not measure
// what it needs.
type figure struct {
	V  float64
	OK bool
	// Lo and Hi are the smallest and largest per-round value behind a
	// median over rounds; N is how many rounds there were (0: the figure
	// is not such a median).
	Lo, Hi float64
	N      int
}

// median returns the median of vs (the mean of the middle two for an even
// count); false for none.
func median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], true
	}
	return (s[n/2-1] + s[n/2]) / 2, true
}

// roundMedian is the median over the rounds of m of the figure pick
// returns (skipping rounds where its second result is false).
func roundMedian(m *measurement, pick func(roundFigures) (float64, bool)) figure {
	if m == nil {
		return figure{}
	}
	var vs []float64
	for _, f := range m.Rounds {
		if v, ok := pick(f); ok {
			vs = append(vs, v)
		}
	}
	v, ok := median(vs)
	return figure{V: v, OK: ok}
}

func pickRPS(f roundFigures) (float64, bool) { return f.RPS, f.RPS > 0 }
func pickP50ms(f roundFigures) (float64, bool) {
	return float64(f.P50) / float64(time.Millisecond), f.P50 > 0
}
func pickTTFBms(f roundFigures) (float64, bool) {
	return float64(f.TTFB50) / float64(time.Millisecond), f.HasTTFB
}
func pickTTFTms(f roundFigures) (float64, bool) {
	return float64(f.TTFT50) / float64(time.Millisecond), f.HasTTFT
}
func pickCPUus(f roundFigures) (float64, bool) {
	return float64(f.CPUPerReq) / float64(time.Microsecond), f.HasCPU
}

// pairedMedian is the median over rounds of op applied to m's and base's
// figures of the same round (pick's second result false in either skips
// the round). Every target takes each measurement in every round, seconds
// after the others, so a per-round ratio compares figures taken under the
// same background load, and a drift in that load between rounds moves
// both sides of it.
func pairedMedian(m, base *measurement, pick func(roundFigures) (float64, bool), op func(a, b float64) (float64, bool)) figure {
	if m == nil || base == nil {
		return figure{}
	}
	var vs []float64
	for i := 0; i < len(m.Rounds) && i < len(base.Rounds); i++ {
		a, okA := pick(m.Rounds[i])
		b, okB := pick(base.Rounds[i])
		if !okA || !okB {
			continue
		}
		if v, ok := op(a, b); ok {
			vs = append(vs, v)
		}
	}
	v, ok := median(vs)
	f := figure{V: v, OK: ok, N: len(vs)}
	if ok {
		f.Lo, f.Hi = slices.Min(vs), slices.Max(vs)
	}
	return f
}

// div is a/b for a positive b; minus is a-b.
func div(a, b float64) (float64, bool)   { return a / b, b > 0 }
func minus(a, b float64) (float64, bool) { return a - b, true }

// ratio is a/b, when both are measured and b is positive.
func ratio(a, b figure) figure {
	if !a.OK || !b.OK || b.V <= 0 {
		return figure{}
	}
	return figure{V: a.V / b.V, OK: true}
}

// headlineRow is one target's line of the headline table: each figure is
// the median over rounds of a per-round ratio to (or difference from)
// reverse_proxy's figure of the same round (pairedMedian); times are in ms.
type headlineRow struct {
	Target target
	// AddedP50 is p50 at c=1 minus direct's (ms).
	AddedP50 figure
	// ReqRatio, CPUReqRatio: non-streamed req/s and proxy CPU per request
	// at c=16, ÷ reverse_proxy's.
	ReqRatio, CPUReqRatio figure
	// StreamRatio, CPUStreamRatio: full-speed streams/s and proxy CPU per
	// stream at c=16, ÷ reverse_proxy's.
	StreamRatio, CPUStreamRatio figure
	// AddedTTFB is TTFB p50 of full-speed streams at c=16 minus
	// reverse_proxy's (ms); AddedTTFT the same of the time to the first
	// text delta event.
	AddedTTFB, AddedTTFT figure
	// RSSRatio is the RSS growth per idle open stream ÷ reverse_proxy's,
	// at the memory case's largest stream count both targets ran.
	RSSRatio figure
	// RSSStreams is that stream count (0: not measured).
	RSSStreams int
}

// headlineBase holds reverse_proxy's (and direct's) medians over rounds,
// printed for scale (the ratios are taken per round).
type headlineBase struct {
	DirectP50, P50, RPS, CPUReq, StreamRPS, CPUStream, TTFB, TTFT figure // ms, req/s, µs
	// RSSPerStream by stream count (KiB).
	RSSPerStream map[int]float64
}

// headline is the run's headline table.
type headline struct {
	Rows   []headlineRow
	Base   headlineBase
	Rounds int    // rounds the medians are over (the most any figure had)
	Err    string // why there is no table
}

// memPerStream returns the RSS per stream (KiB) of the memory case of
// target at each stream count it ran cleanly: no stream failed and at
// least 90% of those asked for were open (a case where most streams
// failed to connect would divide the RSS by a handful).
func (r *report) memPerStream(target string) map[int]float64 {
	out := map[int]float64{}
	for _, mr := range r.Mem {
		if mr.Target == target && mr.N > 0 && mr.Errors == 0 && mr.N*10 >= mr.Requested*9 {
			out[mr.Requested] = mr.PerStream() / 1024
		}
	}
	return out
}

// headline computes the headline table: for each target but direct,
// reverse_proxy first, the median over rounds of each figure's ratio to
// (or difference from) reverse_proxy's figure of the same round.
func (r *report) headline() headline {
	var h headline
	find := func(name, wl, level string) *measurement { return r.find(name, wl, level) }
	for _, m := range r.Runs {
		if len(m.Rounds) > h.Rounds {
			h.Rounds = len(m.Rounds)
		}
	}
	var base *target
	for i := range r.Info.Targets {
		if r.Info.Targets[i].Name == headBase {
			base = &r.Info.Targets[i]
		}
	}
	if base == nil {
		h.Err = "not computed: the run did not include `reverse_proxy`, the baseline of every ratio."
		return h
	}
	b := &h.Base
	b.DirectP50 = roundMedian(find(headDirect, wlJSON.Name, headLatLevel), pickP50ms)
	b.P50 = roundMedian(find(headBase, wlJSON.Name, headLatLevel), pickP50ms)
	b.RPS = roundMedian(find(headBase, wlJSON.Name, headLoadLevel), pickRPS)
	b.CPUReq = roundMedian(find(headBase, wlJSON.Name, headLoadLevel), pickCPUus)
	b.StreamRPS = roundMedian(find(headBase, wlStream.Name, headLoadLevel), pickRPS)
	b.CPUStream = roundMedian(find(headBase, wlStream.Name, headLoadLevel), pickCPUus)
	b.TTFB = roundMedian(find(headBase, wlStream.Name, headLoadLevel), pickTTFBms)
	b.TTFT = roundMedian(find(headBase, wlStream.Name, headLoadLevel), pickTTFTms)
	b.RSSPerStream = r.memPerStream(headBase)

	rows := []target{*base}
	for _, t := range r.Info.Targets {
		if t.Name != headBase && t.Name != headDirect {
			rows = append(rows, t)
		}
	}
	direct := find(headDirect, wlJSON.Name, headLatLevel)
	bj, bs := find(headBase, wlJSON.Name, headLoadLevel), find(headBase, wlStream.Name, headLoadLevel)
	for _, t := range rows {
		row := headlineRow{Target: t}
		row.AddedP50 = pairedMedian(find(t.Name, wlJSON.Name, headLatLevel), direct, pickP50ms, minus)
		tj, ts := find(t.Name, wlJSON.Name, headLoadLevel), find(t.Name, wlStream.Name, headLoadLevel)
		row.ReqRatio = pairedMedian(tj, bj, pickRPS, div)
		row.CPUReqRatio = pairedMedian(tj, bj, pickCPUus, div)
		row.StreamRatio = pairedMedian(ts, bs, pickRPS, div)
		row.CPUStreamRatio = pairedMedian(ts, bs, pickCPUus, div)
		row.AddedTTFB = pairedMedian(ts, bs, pickTTFBms, minus)
		row.AddedTTFT = pairedMedian(ts, bs, pickTTFTms, minus)
		// the largest stream count both ran; a baseline that did not grow
		// gives no ratio
		mine := r.memPerStream(t.Name)
		for n, v := range mine {
			bv, ok := b.RSSPerStream[n]
			if ok && n > row.RSSStreams {
				row.RSSStreams = n
				row.RSSRatio = ratio(figure{V: v, OK: true}, figure{V: bv, OK: true})
			}
		}
		h.Rows = append(h.Rows, row)
	}
	return h
}

// round rounds v to the given decimals, so that a verdict agrees with the
// figure as printed.
func round(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// fmtRatio prints a ratio with two decimals, "-" when not measured.
func fmtRatio(f figure) string {
	if !f.OK {
		return "-"
	}
	return fmt.Sprintf("%.2f", round(f.V, 2))
}

// fmtMS prints milliseconds with three decimals, "-" when not measured;
// signed prefixes "+" to a positive value.
func fmtMS(f figure, signed bool) string {
	if !f.OK {
		return "-"
	}
	v := round(f.V, 3)
	if v == 0 {
		v = 0 // no "-0.000"
	}
	if signed {
		return fmt.Sprintf("%+.3f ms", v)
	}
	return fmt.Sprintf("%.3f ms", v)
}

// label names a target in the headline: its Label, else its Desc
// without the "(x) " tag.
func label(t target) string {
	if t.Label != "" {
		return t.Label
	}
	d := t.Desc
	if strings.HasPrefix(d, "(") {
		if _, rest, ok := strings.Cut(d, ") "); ok {
			d = rest
		}
	}
	return d
}

// goal is one of issue 15's targets, on one headline column, for the
// passthrough or the translating targets.
type goal struct {
	Kind   string // "passthrough" or "translated"
	What   string // the column, as named in the table
	AtMost bool   // the figure must be <= Limit (else >=)
	Limit  float64
	MS     bool // the figure is in ms (else a ratio)
	pick   func(headlineRow) figure
}

// issue15Goals are issue 15's targets, ratios to reverse_proxy in the
// same run.
var issue15Goals = []goal{
	{"passthrough", "c=16 streams/s ÷ reverse_proxy", false, 0.95, false, func(r headlineRow) figure { return r.StreamRatio }},
	{"passthrough", "CPU/stream ÷ reverse_proxy", true, 1.15, false, func(r headlineRow) figure { return r.CPUStreamRatio }},
	{"passthrough", "added TTFB p50, c=16 streams, over reverse_proxy's", true, 0.2, true, func(r headlineRow) figure { return r.AddedTTFB }},
	{"passthrough", "CPU/req ÷ reverse_proxy", true, 1.1, false, func(r headlineRow) figure { return r.CPUReqRatio }},
	{"passthrough", "RSS per idle open stream ÷ reverse_proxy", true, 1.0, false, func(r headlineRow) figure { return r.RSSRatio }},
	{"translated", "c=16 streams/s ÷ reverse_proxy", false, 0.85, false, func(r headlineRow) figure { return r.StreamRatio }},
	{"translated", "CPU/stream ÷ reverse_proxy", true, 1.35, false, func(r headlineRow) figure { return r.CPUStreamRatio }},
	{"translated", "CPU/req ÷ reverse_proxy", true, 1.3, false, func(r headlineRow) figure { return r.CPUReqRatio }},
}

// goalKind classifies a target for issue 15's targets: "passthrough"
// (llm_gateway, same dialect in and out, pool state in memory),
// "translated" (llm_gateway, dialects differ), or "" (none apply).
func goalKind(t target) string {
	if t.Proxy != proxyGateway {
		return ""
	}
	if t.Client != t.Upstream {
		return "translated"
	}
	if t.State == "" {
		return "passthrough"
	}
	return ""
}

// verdict is one goal evaluated on one target's row.
type verdict struct {
	Target   string
	Goal     goal
	Measured figure // rounded as printed
	Met      bool
	By       float64 // how far past the limit (missed) or inside it (met), >= 0
}

// verdicts evaluates issue 15's targets on the headline rows. Figures are
// compared as printed (ratios to 2 decimals, ms to 3).
func (h headline) verdicts() []verdict {
	var out []verdict
	for _, row := range h.Rows {
		kind := goalKind(row.Target)
		if kind == "" {
			continue
		}
		for _, g := range issue15Goals {
			if g.Kind != kind {
				continue
			}
			f := g.pick(row)
			v := verdict{Target: row.Target.Name, Goal: g}
			if f.OK {
				dec := 2
				if g.MS {
					dec = 3
				}
				v.Measured = figure{V: round(f.V, dec), OK: true, Lo: f.Lo, Hi: f.Hi, N: f.N}
				margin := g.Limit - v.Measured.V // >= 0 when met, for AtMost
				if !g.AtMost {
					margin = -margin
				}
				v.Met = margin >= 0
				v.By = round(math.Abs(margin), dec)
			}
			out = append(out, v)
		}
	}
	return out
}

// text renders the verdict's cell: "met (0.03 to spare)", "**missed** by
// 0.26", or "not measured".
func (v verdict) text() string {
	if !v.Measured.OK {
		return "not measured in this run"
	}
	by := fmt.Sprintf("%.2f", v.By)
	if v.Goal.MS {
		by = fmt.Sprintf("%.3f ms", v.By)
	}
	if v.Met {
		return "met (" + by + " to spare)"
	}
	return "**missed** by " + by
}

// spread renders the range of the per-round values behind the median
// ("0.91 … 1.04"), "-" for a figure without rounds (or only one).
func (v verdict) spread() string {
	f := v.Measured
	if !f.OK || f.N < 2 {
		return "-"
	}
	if v.Goal.MS {
		return fmt.Sprintf("%+.3f … %+.3f ms", round(f.Lo, 3), round(f.Hi, 3))
	}
	return fmt.Sprintf("%.2f … %.2f", round(f.Lo, 2), round(f.Hi, 2))
}

func (g goal) limitText() string {
	op := "≥"
	if g.AtMost {
		op = "≤"
	}
	if g.MS {
		return fmt.Sprintf("%s %.1f ms", op, g.Limit)
	}
	return fmt.Sprintf("%s %.2f", op, g.Limit)
}

// markdown renders the headline table, the baseline's absolute figures
// and the targets block.
func (h headline) markdown(b *strings.Builder, loadStart, loadEnd string) {
	b.WriteString("## Headline: ratios to reverse_proxy, same run\n\n")
	if h.Err != "" {
		b.WriteString(h.Err + "\n\n")
		return
	}
	fmt.Fprintf(b, "Medians over %d round(s) of each figure's ratio to (or difference from) `reverse_proxy`'s figure of the same round (`reverse_proxy` = 1.00): every target runs in its own process for the whole run and takes each measurement right after the others, so a round's figures are seconds apart. `c=1 added p50`: median latency of a non-streamed request at c=1 minus the no-proxy (`direct`) median of the same round, in ms. `c=16 req/s` and `CPU/req`: non-streamed requests at c=16 (CPU: the proxy process's user+system time per request, /proc/<pid>/stat). `c=16 streams/s`, `CPU/stream`, `added TTFB p50` and `added TTFT p50`: full-speed streams at c=16; TTFB (first body byte) and TTFT (first text delta event; the gateway holds a stream's preamble until its first content, so that a key failing before it is retried unseen) over `reverse_proxy`'s, in ms. `RSS/idle stream`: the memory case's RSS growth per open idle stream (one run, no rounds), at the largest stream count both ran cleanly (no failed stream, at least 90%% open). `-`: not measured in this run.\n\n", h.Rounds)
	b.WriteString("| target | c=1 added p50 | c=16 req/s ÷ reverse_proxy | CPU/req ÷ reverse_proxy | c=16 streams/s ÷ reverse_proxy | CPU/stream ÷ reverse_proxy | added TTFB p50, c=16 streams | added TTFT p50, c=16 streams | RSS/idle stream ÷ reverse_proxy |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range h.Rows {
		rss := fmtRatio(row.RSSRatio)
		if row.RSSRatio.OK {
			rss += fmt.Sprintf(" (%d)", row.RSSStreams)
		}
		fmt.Fprintf(b, "| %s (`%s`) | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			label(row.Target), row.Target.Name, fmtMS(row.AddedP50, false),
			fmtRatio(row.ReqRatio), fmtRatio(row.CPUReqRatio), fmtRatio(row.StreamRatio),
			fmtRatio(row.CPUStreamRatio), fmtMS(row.AddedTTFB, true), fmtMS(row.AddedTTFT, true), rss)
	}
	bs := h.Base
	num := func(f figure, format string) string {
		if !f.OK {
			return "-"
		}
		return fmt.Sprintf(format, f.V)
	}
	var rss []string
	ns := make([]int, 0, len(bs.RSSPerStream))
	for n := range bs.RSSPerStream {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	for _, n := range ns {
		rss = append(rss, fmt.Sprintf("%.1f KiB at %d streams", bs.RSSPerStream[n], n))
	}
	if len(rss) == 0 {
		rss = []string{"-"}
	}
	fmt.Fprintf(b, "\n`reverse_proxy`'s medians over rounds (for scale; each ratio above is taken per round): c=1 p50 %s (no proxy: %s); c=16 %s req/s, CPU %s µs/req; c=16 %s streams/s, CPU %s µs/stream, TTFB p50 %s, TTFT p50 %s; RSS per idle stream %s. Load average (1/5/15 min) %s at start, %s at end.\n\n",
		num(bs.P50, "%.3f ms"), num(bs.DirectP50, "%.3f ms"), num(bs.RPS, "%.0f"), num(bs.CPUReq, "%.0f"),
		num(bs.StreamRPS, "%.0f"), num(bs.CPUStream, "%.0f"), num(bs.TTFB, "%.3f ms"), num(bs.TTFT, "%.3f ms"), strings.Join(rss, ", "),
		orDash(loadStart), orDash(loadEnd))

	vs := h.verdicts()
	b.WriteString("### Targets (issue 15)\n\n")
	if len(vs) == 0 {
		b.WriteString("No llm_gateway target in this run.\n\n")
		return
	}
	b.WriteString("Computed from the table above (figures as printed). Passthrough: `llm_gateway` with the same dialect in and out and pool state in memory; translated: dialects differ. Allocations per streamed passthrough event are measured by the Go benchmarks (`go test -bench -benchmem`), not here.\n\n")
	b.WriteString("| target | kind | figure | measured | rounds: lowest … highest | target | verdict |\n|---|---|---|--:|--:|---|---|\n")
	for _, v := range vs {
		m := fmtRatio(v.Measured)
		if v.Goal.MS {
			m = fmtMS(v.Measured, true)
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", v.Target, v.Goal.Kind, v.Goal.What, m, v.spread(), v.Goal.limitText(), v.text())
	}
	met, missed, none := 0, 0, 0
	for _, v := range vs {
		switch {
		case !v.Measured.OK:
			none++
		case v.Met:
			met++
		default:
			missed++
		}
	}
	fmt.Fprintf(b, "\n%d met, %d missed, %d not measured.\n\n", met, missed, none)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
