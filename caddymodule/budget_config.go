package caddymodule

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// BudgetSpec is a spend limit in US dollars per period, on an upstream
// key (KeyConfig.Budget), a gateway key (GatewayKeyConfig.Budget) or a
// pool across its keys (PoolConfig.Budget). Spend is the cost the gateway
// computes for each finished request from the usage the upstream
// reported (or its estimate) and the price table; a request whose model
// has no price costs "unknown" and is not counted.
//
// Caddyfile:
//
//	budget <amount> usd per <24h|30d|<duration>|daily|monthly> [{
//	    warn <percent>%       # e.g. warn 80%: an event, a log warning and a metric
//	    timezone <IANA name>  # daily and monthly only; default UTC
//	}]
//
// A duration is a rolling window (spend of the last 24 hours, counted in
// steps of a 24th of the window: spend leaves the window a whole window
// after the end of its step, so up to one step late, never early); daily and monthly are calendar
// periods that reset at midnight, and on the first of the month, in the
// time zone.
type BudgetSpec struct {
	// AmountUSD is the limit in US dollars, > 0.
	AmountUSD float64 `json:"amount_usd"`
	// Period is "daily" or "monthly" (calendar periods in Timezone), or a
	// Caddy duration such as "24h" or "30d" (a rolling window, from 1m
	// to 366d).
	Period string `json:"period"`
	// WarnPercent, when > 0 (and < 100), is the share of AmountUSD at
	// which a warning is raised once per period. Default: 0, none.
	WarnPercent float64 `json:"warn_percent,omitempty"`
	// Timezone is the IANA time zone of a calendar period (e.g.
	// "Europe/Berlin"). Default: UTC.
	Timezone string `json:"timezone,omitempty"`
}

// budgetRule is a compiled BudgetSpec.
type budgetRule struct {
	limit  float64 // USD
	warn   float64 // USD; 0: no warning
	period budgetPeriod
	label  string // e.g. "5 USD daily", "20 USD per 30d"
}

// compile checks s and returns its rule. Errors name the wrong part.
func (s *BudgetSpec) compile() (*budgetRule, error) {
	if s.AmountUSD <= 0 || math.IsInf(s.AmountUSD, 0) || math.IsNaN(s.AmountUSD) {
		return nil, fmt.Errorf("budget: the amount must be a number of US dollars > 0, got %v", s.AmountUSD)
	}
	if s.WarnPercent < 0 || s.WarnPercent >= 100 || math.IsNaN(s.WarnPercent) {
		return nil, fmt.Errorf("budget: warn must be a percentage between 0 and 100 (e.g. warn 80%%), got %v", s.WarnPercent)
	}
	r := &budgetRule{limit: s.AmountUSD, warn: s.AmountUSD * s.WarnPercent / 100}
	amount := strconv.FormatFloat(s.AmountUSD, 'f', -1, 64) + " USD"
	switch s.Period {
	case "daily", "monthly":
		loc := time.UTC
		if s.Timezone != "" && s.Timezone != "UTC" {
			l, err := time.LoadLocation(s.Timezone)
			if err != nil || s.Timezone == "Local" {
				return nil, fmt.Errorf("budget: unknown time zone '%s' (want an IANA name such as Europe/Berlin or America/New_York)", s.Timezone)
			}
			loc = l
		}
		r.period = budgetPeriod{calendar: s.Period, loc: loc, n: 1}
		r.label = amount + " " + s.Period
		if loc != time.UTC {
			r.label += " (" + loc.String() + ")"
		}
	case "":
		return nil, errors.New("budget: a period is required: per 24h, per 30d, per daily or per monthly")
	default:
		d, err := caddy.ParseDuration(s.Period)
		if err != nil || d < time.Minute {
			return nil, fmt.Errorf("budget: period '%s' is neither daily, monthly nor a duration of at least 1m such as 24h or 30d", s.Period)
		}
		if d > maxBudgetWindow {
			// the window's bucket times would overflow (a reset in 1738)
			return nil, fmt.Errorf("budget: a rolling window of at most 366d, got '%s' (use monthly for a calendar month)", s.Period)
		}
		if s.Timezone != "" {
			return nil, fmt.Errorf("budget: timezone applies to daily and monthly budgets, not to a rolling window (per %s)", s.Period)
		}
		r.period = budgetPeriod{window: d, n: budgetSteps, step: d / budgetSteps}
		r.label = amount + " per " + s.Period
	}
	return r, nil
}

// unmarshalBudget reads `budget <amount> usd per <period> [{ warn <n>%;
// timezone <zone> }]` at the dispenser (its name is d.Val()). Errors point
// at the offending line.
func unmarshalBudget(d *caddyfile.Dispenser) (*BudgetSpec, error) {
	const syntax = "budget <amount> usd per <24h|30d|daily|monthly> [{ warn <percent>%; timezone <zone> }]"
	// a dispenser over the directive's token alone, to report errors of
	// the whole at its line
	at := caddyfile.NewDispenser([]caddyfile.Token{d.Token()})
	at.Next()
	args := d.RemainingArgs()
	if len(args) != 4 || !strings.EqualFold(args[1], "usd") || args[2] != "per" {
		return nil, d.Errf("budget: want %s, e.g. budget 20 usd per monthly", syntax)
	}
	amount, err := strconv.ParseFloat(strings.TrimPrefix(args[0], "$"), 64)
	if err != nil {
		return nil, d.Errf("budget: the amount '%s' is not a number of US dollars (%s)", args[0], syntax)
	}
	bs := &BudgetSpec{AmountUSD: amount, Period: args[3]}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "warn":
			var v string
			if !d.AllArgs(&v) {
				return nil, d.Err("budget: warn needs a percentage, e.g. warn 80%")
			}
			pct, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if err != nil || !(pct > 0 && pct < 100) { // NaN too
				return nil, d.Errf("budget: warn wants a percentage between 0 and 100 such as 80%%, got '%s'", v)
			}
			bs.WarnPercent = pct
		case "timezone":
			if !d.AllArgs(&bs.Timezone) {
				return nil, d.Err("budget: timezone needs an IANA name, e.g. timezone Europe/Berlin")
			}
			if _, err := (&BudgetSpec{AmountUSD: 1, Period: "daily", Timezone: bs.Timezone}).compile(); err != nil {
				return nil, d.Err(err.Error())
			}
		default:
			return nil, unknownSubdirective(d, "budget", d.Val(), []string{"warn", "timezone"})
		}
	}
	if _, err := bs.compile(); err != nil {
		return nil, at.Err(err.Error())
	}
	return bs, nil
}

// maxBudgetWindow is the longest rolling window a budget may have.
const maxBudgetWindow = 366 * 24 * time.Hour

// budgetSteps is the number of steps a rolling window is counted in.
const budgetSteps = 24

// budgetPeriod numbers the steps (buckets) spend is counted in: for a
// calendar period each period is one bucket (its number: the day, or the
// month, in loc); for a rolling window of n steps of step each, bucket b
// covers [b*step, (b+1)*step) since the Unix epoch, and the window at a
// time is the n buckets up to the current one.
type budgetPeriod struct {
	calendar string         // "daily", "monthly" or "" (rolling)
	loc      *time.Location // calendar periods
	window   time.Duration  // rolling
	step     time.Duration  // rolling: window / n
	n        int64          // buckets in the window (1 for calendar periods)
}

// bucket returns the number of the bucket t falls in.
func (p budgetPeriod) bucket(t time.Time) int64 {
	switch p.calendar {
	case "daily":
		y, m, d := t.In(p.loc).Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
	case "monthly":
		y, m, _ := t.In(p.loc).Date()
		return int64(y)*12 + int64(m) - 1
	}
	return t.UnixNano() / int64(p.step)
}

// first returns the oldest bucket of the window whose newest is cur: the
// current period, or for a rolling window the n+1 steps that overlap it
// (spend is never forgotten early: it leaves a whole window after its
// step ended).
func (p budgetPeriod) first(cur int64) int64 {
	if p.calendar != "" {
		return cur
	}
	return cur - p.n
}

// dropAt returns when bucket b leaves the window: the end of the day or
// month for a calendar period, a window after the end of its step for a
// rolling one.
func (p budgetPeriod) dropAt(b int64) time.Time {
	switch p.calendar {
	case "daily":
		d := time.Unix((b+1)*86400, 0).UTC()
		return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, p.loc)
	case "monthly":
		return time.Date(int((b+1)/12), time.Month((b+1)%12+1), 1, 0, 0, 0, 0, p.loc)
	}
	return time.Unix(0, (b+p.n+1)*int64(p.step))
}

// signature names the period's bucket scheme: spend counted under another
// scheme is not comparable.
func (p budgetPeriod) signature() string {
	if p.calendar != "" {
		return p.calendar + "@" + p.loc.String()
	}
	return "rolling:" + p.window.String()
}
