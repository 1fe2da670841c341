package caddymodule

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Time-of-day prices.
//
// Some vendors bill by the hour of the day: DeepSeek charges twice its
// off-peak price from 01:00 to 04:00 and from 06:00 to 10:00 UTC on
// weekdays (per api-docs.deepseek.com/quick_start/pricing, in force since
// 16:00 UTC on 2026-08-16), and until 2025 it discounted 16:30-00:30 UTC.
// A Price may therefore carry a peak and an off-peak window: each names
// its UTC hours, optionally its UTC weekdays, and its own figures. A
// request is priced at the figures of the window it started in (the
// request's start on the clock budgets read, so tests can move it), or at
// the entry's own figures outside every window. The windows of one price
// may not overlap.
//
// In prices.json: "peak": {"hours_utc": ["01:00-04:00", "06:00-10:00"],
// "days_utc": "mon-fri", "input": 0.3, "output": 1.2, "cache_read": 0.006}.
// In the Caddyfile, a block under price:
//
//	price deepseek-v4-pro input 0.66 output 1.98 cache_read 0.022 {
//		peak 01:00-04:00,06:00-10:00 mon-fri input 1.32 output 3.96 cache_read 0.044
//	}
//	price deepseek-chat input 0.27 output 1.1 cache_read 0.07 {
//		off_peak 16:30-00:30 input 0.135 output 0.55 cache_read 0.035
//	}

// PriceWindow is a time-of-day price: the figures that apply to a request
// that started inside one of Hours on one of Days (both UTC).
type PriceWindow struct {
	// Hours are "HH:MM-HH:MM" ranges in UTC, the start included and the
	// end excluded; a range whose end is not after its start crosses
	// midnight ("16:30-00:30"; "00:00-00:00" is the whole day). "24:00"
	// may end a range. At least one is required.
	Hours []string `json:"hours_utc"`
	// Days limits the window to some UTC weekdays: names or ranges of
	// mon, tue, wed, thu, fri, sat, sun joined by ',' ("mon-fri",
	// "sat,sun", "fri-mon"). A range that crosses midnight belongs to the
	// day it opened on (a Friday 23:00-01:00 range runs into Saturday).
	// Empty: every day.
	Days string `json:"days_utc,omitempty"`
	// Price holds the window's figures (input and output required in the
	// Caddyfile); a missing cache_read, cache_write or reasoning figure is
	// the window's own input or output price. A window has no windows.
	Price

	// spec is Days and Hours parsed, set by check (at provisioning) so
	// that pricing a request parses nothing; nil: parsed on each use.
	spec *windowSpec
}

// windowSpec is a PriceWindow's Days as a bit set indexed by
// time.Weekday and its Hours as [start, end) minutes of the day.
type windowSpec struct {
	days  uint8
	hours [][2]int
}

// parse returns the window's Days and Hours parsed: the spec check
// stored, else parsed now.
func (w *PriceWindow) parse() (windowSpec, error) {
	if w.spec != nil {
		return *w.spec, nil
	}
	days, err := parseWeekdays(w.Days)
	if err != nil {
		return windowSpec{}, err
	}
	sp := windowSpec{days: days, hours: make([][2]int, 0, len(w.Hours))}
	for _, h := range w.Hours {
		s, e, err := parseHourRange(h)
		if err != nil {
			return windowSpec{}, err
		}
		sp.hours = append(sp.hours, [2]int{s, e})
	}
	return sp, nil
}

// Names of the two windows a Price may carry.
const (
	windowPeak    = "peak"
	windowOffPeak = "off_peak"
)

// priceTime is the moment a request that started at start (wall clock)
// is priced at: its start on the clock budgets read (budgetNow), or now
// when the start is unknown.
func priceTime(start time.Time) time.Time {
	if start.IsZero() {
		return budgetNow()
	}
	return start.Add(time.Duration(budgetClockOffset.Load()))
}

// windows returns p's windows by name, peak first.
func (p Price) windows() []struct {
	name string
	w    *PriceWindow
} {
	return []struct {
		name string
		w    *PriceWindow
	}{{windowPeak, p.Peak}, {windowOffPeak, p.OffPeak}}
}

// at returns the flat price (no windows) that applies to a request that
// started at t, and the name of the window that gave it ("" for the
// entry's own figures).
func (p Price) at(t time.Time) (Price, string) {
	for _, x := range p.windows() {
		if x.w != nil && x.w.contains(t) {
			wp := x.w.Price
			wp.Peak, wp.OffPeak = nil, nil
			return wp, x.name
		}
	}
	p.Peak, p.OffPeak = nil, nil
	return p, ""
}

// contains reports whether t falls in the window. A window that does not
// parse (prevented by check) contains nothing.
func (w *PriceWindow) contains(t time.Time) bool {
	sp, err := w.parse()
	if err != nil {
		return false
	}
	t = t.UTC()
	m := t.Hour()*60 + t.Minute()
	day := func(d time.Weekday) bool { return sp.days&(1<<uint((d+7)%7)) != 0 }
	for _, h := range sp.hours {
		s, e := h[0], h[1]
		switch {
		case s < e:
			if m >= s && m < e && day(t.Weekday()) {
				return true
			}
		case m >= s: // crosses midnight: the evening part
			if day(t.Weekday()) {
				return true
			}
		case m < e: // the morning part belongs to the day before
			if day(t.Weekday() - 1) {
				return true
			}
		}
	}
	return false
}

// check reports a window with no hours, a malformed range or day list, a
// nested window or a bad figure.
func (w *PriceWindow) check(name string) error {
	if len(w.Hours) == 0 {
		return fmt.Errorf("%s window: no hours (want HH:MM-HH:MM in UTC)", name)
	}
	for _, h := range w.Hours {
		if _, _, err := parseHourRange(h); err != nil {
			return fmt.Errorf("%s window: %v", name, err)
		}
	}
	if _, err := parseWeekdays(w.Days); err != nil {
		return fmt.Errorf("%s window: %v", name, err)
	}
	if w.Peak != nil || w.OffPeak != nil {
		return fmt.Errorf("%s window: a window cannot have windows of its own", name)
	}
	if err := w.Price.check(); err != nil {
		return fmt.Errorf("%s window: %v", name, err)
	}
	sp, err := w.parse()
	if err != nil {
		return fmt.Errorf("%s window: %v", name, err)
	}
	w.spec = &sp
	return nil
}

// checkWindows checks p's windows and that no minute of the week is in
// both.
func (p Price) checkWindows() error {
	for _, x := range p.windows() {
		if x.w != nil {
			if err := x.w.check(x.name); err != nil {
				return err
			}
		}
	}
	if p.Peak == nil || p.OffPeak == nil {
		return nil
	}
	monday := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) // a Monday
	for i := 0; i < 7*24*60; i++ {
		t := monday.Add(time.Duration(i) * time.Minute)
		if p.Peak.contains(t) && p.OffPeak.contains(t) {
			return fmt.Errorf("the peak and off_peak windows overlap (%s %s UTC)", strings.ToLower(t.Weekday().String()[:3]), t.Format("15:04"))
		}
	}
	return nil
}

// parseHourRange parses "HH:MM-HH:MM" into minutes of the day; the end
// may be 24:00.
func parseHourRange(s string) (start, end int, err error) {
	a, b, ok := strings.Cut(s, "-")
	if ok {
		start, err = parseClock(a, false)
	}
	if ok && err == nil {
		end, err = parseClock(b, true)
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("hours '%s' are not HH:MM-HH:MM in UTC (00:00 to 24:00)", s)
	}
	return start, end, nil
}

// parseClock parses "HH:MM" (00:00-23:59, and 24:00 where asEnd).
func parseClock(s string, asEnd bool) (int, error) {
	hh, mm, ok := strings.Cut(s, ":")
	if !ok || len(hh) != 2 || len(mm) != 2 {
		return 0, fmt.Errorf("bad clock")
	}
	h, err1 := strconv.Atoi(hh)
	m, err2 := strconv.Atoi(mm)
	if err1 != nil || err2 != nil || h < 0 || m < 0 || m > 59 || h > 24 || h == 24 && (m != 0 || !asEnd) {
		return 0, fmt.Errorf("bad clock")
	}
	return h*60 + m, nil
}

var weekdayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// parseWeekdays parses a day list ("mon-fri", "sat,sun") into a bit set
// indexed by time.Weekday; empty is every day.
func parseWeekdays(s string) (uint8, error) {
	if s == "" {
		return 0x7f, nil
	}
	day := func(n string) (int, bool) {
		for i, w := range weekdayNames {
			if strings.EqualFold(n, w) {
				return i, true
			}
		}
		return 0, false
	}
	var set uint8
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(part, "-")
		from, ok1 := day(a)
		to, ok2 := from, true
		if isRange {
			to, ok2 = day(b)
		}
		if !ok1 || !ok2 {
			return 0, fmt.Errorf("days '%s' are not weekdays such as mon-fri or sat,sun", s)
		}
		for d := from; ; d = (d + 1) % 7 {
			set |= 1 << uint(d)
			if d == to {
				break
			}
		}
	}
	return set, nil
}

// isPriceFigure reports a figure name of the price directive.
func isPriceFigure(s string) bool {
	switch s {
	case "input", "output", "cache_read", "cache_write", "reasoning":
		return true
	}
	return false
}

// unmarshalPriceWindows reads the optional block of a price directive
// (the dispenser is on the directive's last argument): at most one
// `peak` and one `off_peak` line, each `<HH:MM-HH:MM>[,<HH:MM-HH:MM>...]
// [<days>] input <usd> output <usd> [cache_read <usd>] [cache_write
// <usd>] [reasoning <usd>]`.
func unmarshalPriceWindows(d *caddyfile.Dispenser, pc *PriceConfig) error {
	const usage = "peak|off_peak <HH:MM-HH:MM>[,<HH:MM-HH:MM>...] [<days such as mon-fri>] input <usd> output <usd> [cache_read <usd>] [cache_write <usd>] [reasoning <usd>] (hours in UTC)"
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		var slot **PriceWindow
		switch name {
		case windowPeak:
			slot = &pc.Peak
		case windowOffPeak:
			slot = &pc.OffPeak
		default:
			return d.Errf("price %s: unknown window '%s'; want %s", pc.Model, name, usage)
		}
		if *slot != nil {
			return d.Errf("price %s: the %s window is given twice", pc.Model, name)
		}
		args := d.RemainingArgs()
		if len(args) == 0 || isPriceFigure(args[0]) {
			return d.Errf("price %s: %s needs its hours; want %s", pc.Model, name, usage)
		}
		w := &PriceWindow{Hours: strings.Split(args[0], ",")}
		for _, h := range w.Hours {
			if _, _, err := parseHourRange(h); err != nil {
				return d.Errf("price %s: %s %v", pc.Model, name, err)
			}
		}
		figs := args[1:]
		if len(figs) > 0 && !isPriceFigure(figs[0]) {
			if _, err := parseWeekdays(figs[0]); err != nil {
				return d.Errf("price %s: %s %v", pc.Model, name, err)
			}
			w.Days, figs = figs[0], figs[1:]
		}
		p, err := parsePriceFigures(d, pc.Model+" "+name, figs, usage)
		if err != nil {
			return err
		}
		w.Price = p
		*slot = w
		// checked as each window is read, so that an overlap is reported
		// at the line of the window that makes it
		if err := pc.Price.checkWindows(); err != nil {
			return d.Errf("price %s: %v", pc.Model, err)
		}
	}
	return nil
}

// poolPrices is a pool's configured price overrides as GET
// /llm_gateway/prices shows them: the pool's own (Prices) and its
// llm_gateway block's (Global), time-of-day windows included.
type poolPrices struct {
	Pool   string         `json:"pool"`
	Prices []*PriceConfig `json:"prices,omitempty"`
	Global []*PriceConfig `json:"global,omitempty"`
}

// configuredPrices lists the price overrides of the live pools, by pool
// name; pools with none are left out.
func configuredPrices() []poolPrices {
	published.Lock()
	names := make([]string, 0, len(published.byName))
	for n := range published.byName {
		names = append(names, n)
	}
	published.Unlock()
	sort.Strings(names)
	out := []poolPrices{}
	for _, n := range names {
		p := publishedPool(n)
		if p == nil {
			continue
		}
		pp := poolPrices{Pool: n}
		if p.prices != nil {
			pp.Prices = p.prices.cfg
		}
		if p.globalPrices != nil {
			pp.Global = p.globalPrices.cfg
		}
		if len(pp.Prices)+len(pp.Global) > 0 {
			out = append(out, pp)
		}
	}
	return out
}
