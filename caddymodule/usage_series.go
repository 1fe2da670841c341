package caddymodule

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
)

// Usage per caller over time: every finished /v1 request is counted
// (requests, errors, tokens by kind, cost) in hourly buckets kept for
// seriesHourlyKeep and daily buckets (UTC days) kept for seriesDailyKeep,
// per gateway key, upstream key, upstream model and pool together, so
// that GET /llm_gateway/usage can sum them by any one of these. The
// series is process-wide (it survives config reloads) and saved in the
// usage file.

// How long buckets are kept.
const (
	seriesHourlyKeep = 48 * time.Hour
	seriesDailyKeep  = 90 * 24 * time.Hour
)

// seriesDims are the dimensions a bucket row is kept under.
type seriesDims struct {
	GatewayKey string `json:"gateway_key,omitempty"`
	Pool       string `json:"pool,omitempty"`
	Key        string `json:"key,omitempty"`
	Model      string `json:"model,omitempty"`
}

// usageCounts are the figures of one bucket row. Tokens are what
// upstreams reported (translate.Usage semantics: input includes cache
// reads and writes, output includes reasoning). CostUSD sums the known
// costs; CostUnknown counts requests whose model had no price, and
// CostEstimated those whose cost rests on estimated usage.
type usageCounts struct {
	Requests         int64   `json:"requests"`
	Errors           int64   `json:"errors"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	CostUnknown      int64   `json:"cost_unknown,omitempty"`
	CostEstimated    int64   `json:"cost_estimated,omitempty"`
}

func (c *usageCounts) add(o usageCounts) {
	c.Requests += o.Requests
	c.Errors += o.Errors
	c.InputTokens += o.InputTokens
	c.OutputTokens += o.OutputTokens
	c.CacheReadTokens += o.CacheReadTokens
	c.CacheWriteTokens += o.CacheWriteTokens
	c.ReasoningTokens += o.ReasoningTokens
	c.CostUSD += o.CostUSD
	c.CostUnknown += o.CostUnknown
	c.CostEstimated += o.CostEstimated
}

// seriesRow is one bucket row (and its saved form).
type seriesRow struct {
	Start int64 `json:"start"` // Unix seconds, start of the hour or UTC day
	seriesDims
	usageCounts
}

type seriesKey struct {
	start int64
	dims  seriesDims
}

// usageSeries keeps the hourly and daily buckets. Its clock is injected
// (now), so tests move time without sleeping.
type usageSeries struct {
	mu     sync.Mutex
	now    func() time.Time
	hourly map[seriesKey]*usageCounts
	daily  map[seriesKey]*usageCounts
	pruned int64 // the hour last pruned at
}

func newUsageSeries(now func() time.Time) *usageSeries {
	return &usageSeries{now: now, hourly: map[seriesKey]*usageCounts{}, daily: map[seriesKey]*usageCounts{}}
}

// callerUsage is the process-wide series.
var callerUsage = newUsageSeries(time.Now)

// maxSeriesRows bounds each granularity's rows (dimension values include
// client-chosen model names passed through).
const maxSeriesRows = 200000

func hourStart(t time.Time) int64 { return t.UTC().Truncate(time.Hour).Unix() }

func dayStart(t time.Time) int64 {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()
}

// record adds one request's counts at time at.
func (s *usageSeries) record(at time.Time, dims seriesDims, c usageCounts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	for _, b := range []struct {
		m     map[seriesKey]*usageCounts
		start int64
	}{{s.hourly, hourStart(at)}, {s.daily, dayStart(at)}} {
		k := seriesKey{b.start, dims}
		row := b.m[k]
		if row == nil {
			if len(b.m) >= maxSeriesRows {
				continue
			}
			row = new(usageCounts)
			b.m[k] = row
		}
		row.add(c)
	}
}

// pruneLocked drops buckets older than their keep, at most once an hour.
func (s *usageSeries) pruneLocked() {
	now := s.now()
	h := hourStart(now)
	if h == s.pruned {
		return
	}
	s.pruned = h
	hcut := hourStart(now.Add(-seriesHourlyKeep))
	for k := range s.hourly {
		if k.start < hcut {
			delete(s.hourly, k)
		}
	}
	dcut := dayStart(now.Add(-seriesDailyKeep))
	for k := range s.daily {
		if k.start < dcut {
			delete(s.daily, k)
		}
	}
}

// usageBy names the dimension GET /llm_gateway/usage sums by.
type usageBy string

const (
	usageByGatewayKey usageBy = "gateway_key"
	usageByKey        usageBy = "key"
	usageByModel      usageBy = "model"
	usageByPool       usageBy = "pool"
)

// value returns the row's value of the dimension; key is "<pool>/<id>".
func (b usageBy) value(d seriesDims) string {
	switch b {
	case usageByGatewayKey:
		return d.GatewayKey
	case usageByKey:
		if d.Key == "" {
			return ""
		}
		return d.Pool + "/" + d.Key
	case usageByModel:
		return d.Model
	case usageByPool:
		return d.Pool
	}
	return ""
}

// usagePoint is one row of the answer: a bucket and a dimension value.
type usagePoint struct {
	Start time.Time `json:"start"`
	Name  string    `json:"name"`
	usageCounts
}

// usageQuery is the answer of GET /llm_gateway/usage.
type usageQuery struct {
	By          usageBy      `json:"by"`
	Granularity string       `json:"granularity"` // "hour" or "day"
	From        time.Time    `json:"from"`
	To          time.Time    `json:"to"`
	Points      []usagePoint `json:"points"`
	// Totals sums the points by name; Total sums them all.
	Totals map[string]usageCounts `json:"totals"`
	Total  usageCounts            `json:"total"`
}

// query sums the buckets whose start is in [from, to) by dimension by,
// hourly or daily.
func (s *usageSeries) query(by usageBy, granularity string, from, to time.Time) usageQuery {
	q := usageQuery{By: by, Granularity: granularity, From: from.UTC(), To: to.UTC(), Points: []usagePoint{}, Totals: map[string]usageCounts{}}
	type pk struct {
		start int64
		name  string
	}
	sums := map[pk]*usageCounts{}
	s.mu.Lock()
	m := s.hourly
	if granularity == "day" {
		m = s.daily
	}
	lo, hi := from.Unix(), to.Unix()
	for k, c := range m {
		if k.start < lo || k.start >= hi {
			continue
		}
		p := pk{k.start, by.value(k.dims)}
		if sums[p] == nil {
			sums[p] = new(usageCounts)
		}
		sums[p].add(*c)
	}
	s.mu.Unlock()
	for p, c := range sums {
		q.Points = append(q.Points, usagePoint{Start: time.Unix(p.start, 0).UTC(), Name: p.name, usageCounts: *c})
		t := q.Totals[p.name]
		t.add(*c)
		q.Totals[p.name] = t
		q.Total.add(*c)
	}
	sort.Slice(q.Points, func(i, j int) bool {
		if !q.Points[i].Start.Equal(q.Points[j].Start) {
			return q.Points[i].Start.Before(q.Points[j].Start)
		}
		return q.Points[i].Name < q.Points[j].Name
	})
	return q
}

// snapshot returns every bucket row, for the usage file.
func (s *usageSeries) snapshot() (hourly, daily []seriesRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	dump := func(m map[seriesKey]*usageCounts) []seriesRow {
		out := make([]seriesRow, 0, len(m))
		for k, c := range m {
			out = append(out, seriesRow{Start: k.start, seriesDims: k.dims, usageCounts: *c})
		}
		sort.Slice(out, func(i, j int) bool {
			a, b := out[i], out[j]
			if a.Start != b.Start {
				return a.Start < b.Start
			}
			return fmt.Sprint(a.seriesDims) < fmt.Sprint(b.seriesDims)
		})
		return out
	}
	return dump(s.hourly), dump(s.daily)
}

// restore adds saved rows (once per process, when the usage file is read).
func (s *usageSeries) restore(hourly, daily []seriesRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range []struct {
		m    map[seriesKey]*usageCounts
		rows []seriesRow
	}{{s.hourly, hourly}, {s.daily, daily}} {
		for _, r := range b.rows {
			k := seriesKey{r.Start, r.seriesDims}
			if b.m[k] == nil {
				if len(b.m) >= maxSeriesRows {
					continue
				}
				b.m[k] = new(usageCounts)
			}
			b.m[k].add(r.usageCounts)
		}
	}
	s.pruned = 0
	s.pruneLocked()
}

// countsOf returns the series counts of one finished request.
func countsOf(rl *requestLog) usageCounts {
	c := usageCounts{Requests: 1}
	if rl.status >= 400 || rl.streamError != "" {
		c.Errors = 1
	}
	v := func(p *int64) int64 {
		if p == nil || *p < 0 {
			return 0
		}
		return *p
	}
	u := rl.usage
	c.InputTokens, c.OutputTokens = v(u.InputTokens), v(u.OutputTokens)
	c.CacheReadTokens, c.CacheWriteTokens, c.ReasoningTokens = v(u.CacheReadTokens), v(u.CacheWriteTokens), v(u.ReasoningTokens)
	if rl.cost != nil {
		switch {
		case !rl.cost.known:
			c.CostUnknown = 1
		default:
			c.CostUSD = rl.cost.usd
			if rl.cost.estimated {
				c.CostEstimated = 1
			}
		}
	}
	return c
}

// recordUsage counts a finished /v1 request in the process-wide series.
func recordUsage(rl *requestLog) {
	model := rl.upstreamModel
	if model == "" {
		model = rl.clientModel
	}
	callerUsage.record(callerUsage.now(), seriesDims{GatewayKey: rl.gatewayKey, Pool: rl.pool, Key: rl.key, Model: clipClient(model)}, countsOf(rl))
}

// handleUsage serves GET /llm_gateway/usage?by=gateway_key|key|model|pool
// [&from=&to=][&granularity=hour|day][&format=csv]. from and to are
// RFC 3339 times or Unix seconds; the default range is the last 48 hours
// (hourly buckets) and a range reaching further back is answered from the
// daily buckets unless granularity says otherwise. Buckets are selected by
// their start: from <= start < to.
func (adminAPI) handleUsage(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodGet); err != nil {
		return err
	}
	q := r.URL.Query()
	by := usageBy(q.Get("by"))
	if by == "" {
		by = usageByGatewayKey
	}
	switch by {
	case usageByGatewayKey, usageByKey, usageByModel, usageByPool:
	default:
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("by: want gateway_key, key, model or pool, got %q", clipClient(string(by)))}
	}
	now := callerUsage.now()
	to := now.Add(time.Second)
	from := now.Add(-seriesHourlyKeep)
	var err error
	if v := q.Get("from"); v != "" {
		if from, err = parseUsageTime(v); err != nil {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("from: %v", err)}
		}
	}
	if v := q.Get("to"); v != "" {
		if to, err = parseUsageTime(v); err != nil {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("to: %v", err)}
		}
	}
	gran := q.Get("granularity")
	switch gran {
	case "":
		gran = "hour"
		if from.Before(now.Add(-seriesHourlyKeep).Truncate(time.Hour)) {
			gran = "day"
		}
	case "hour", "day":
	default:
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("granularity: want hour or day, got %q", clipClient(gran))}
	}
	// a bucket counts when it starts in the range: widen from to the
	// start of its bucket, so that from=<now-1h> includes the hour begun
	if gran == "hour" {
		from = time.Unix(hourStart(from), 0)
	} else {
		from = time.Unix(dayStart(from), 0)
	}
	res := callerUsage.query(by, gran, from, to)
	switch q.Get("format") {
	case "", "json":
		return writeAdminJSON(w, res)
	case "csv":
		return writeUsageCSV(w, res)
	default:
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("format: want json or csv, got %q", clipClient(q.Get("format")))}
	}
}

// parseUsageTime reads an RFC 3339 time or Unix seconds, in UTC between
// the years 1 and 9999 (the answer echoes the range, and a JSON time
// outside those years cannot be written).
func parseUsageTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if n, nerr := strconv.ParseInt(v, 10, 64); nerr == nil {
		t, err = time.Unix(n, 0), nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("want an RFC 3339 time or Unix seconds, got %q", clipClient(v))
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return time.Time{}, fmt.Errorf("%q is outside the years 1 to 9999", clipClient(v))
	}
	return t, nil
}

// usageCSVHeader is the CSV export's header line.
var usageCSVHeader = []string{"start", "by", "name", "requests", "errors", "input_tokens", "output_tokens",
	"cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "cost_usd", "cost_unknown_requests", "cost_estimated_requests"}

// writeUsageCSV writes the points of q as CSV (RFC 4180), one line per
// bucket and name, in the order of q.Points.
func writeUsageCSV(w http.ResponseWriter, q usageQuery) error {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="llm_gateway_usage.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	cw := csv.NewWriter(w)
	_ = cw.Write(usageCSVHeader)
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, p := range q.Points {
		_ = cw.Write([]string{p.Start.Format(time.RFC3339), string(q.By), csvSafe(p.Name), i(p.Requests), i(p.Errors),
			i(p.InputTokens), i(p.OutputTokens), i(p.CacheReadTokens), i(p.CacheWriteTokens), i(p.ReasoningTokens),
			strconv.FormatFloat(p.CostUSD, 'f', -1, 64), i(p.CostUnknown), i(p.CostEstimated)})
	}
	cw.Flush()
	return cw.Error()
}

// csvSafe keeps a spreadsheet from reading a name as a formula (a model
// name is client text): a leading = + - @ gets a quote mark.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// handleSpend serves GET /llm_gateway/spend: cost totals by upstream key,
// gateway key and model, and the models requested without a price.
func (adminAPI) handleSpend(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodGet); err != nil {
		return err
	}
	return writeAdminJSON(w, buildCostReport(r.Context()))
}

// handlePrices serves GET /llm_gateway/prices: the built-in price table
// with each entry's date and source.
func (adminAPI) handlePrices(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodGet); err != nil {
		return err
	}
	e, err := BuiltinPrices()
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: err}
	}
	return writeAdminJSON(w, map[string]any{"unit": "USD per 1M tokens", "builtin": e, "configured": configuredPrices()})
}

// appendCostFields adds the request's cost to its log entry: cost_usd
// (US dollars) and cost "known", "estimated" (usage partly estimated) or
// "unknown" (the model has no price; cost_usd is then absent).
func appendCostFields(fields []zap.Field, c *requestCost) []zap.Field {
	if c == nil {
		return fields
	}
	switch {
	case !c.known:
		return append(fields, zap.String("cost", "unknown"))
	case c.estimated:
		fields = append(fields, zap.Float64("cost_usd", c.usd), zap.String("cost", "estimated"))
	default:
		fields = append(fields, zap.Float64("cost_usd", c.usd), zap.String("cost", "known"))
	}
	if c.window != "" {
		fields = append(fields, zap.String("cost_window", c.window)) // priced at a time-of-day window
	}
	return fields
}
