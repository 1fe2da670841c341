package caddymodule

import (
	"encoding/csv"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeNow is a settable clock for usageSeries.
type fakeNow struct{ t time.Time }

func (f *fakeNow) now() time.Time { return f.t }

// TestUsageSeriesBuckets: hourly buckets live 48 hours and daily ones 90
// days (injected clock, no sleeps); queries sum by each dimension.
func TestUsageSeriesBuckets(t *testing.T) {
	clk := &fakeNow{time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)}
	s := newUsageSeries(clk.now)
	alice := seriesDims{GatewayKey: "alice", Pool: "p", Key: "k1", Model: "m1"}
	bob := seriesDims{GatewayKey: "bob", Pool: "p", Key: "k2", Model: "m1"}
	s.record(clk.t, alice, usageCounts{Requests: 1, InputTokens: 10, OutputTokens: 5, CostUSD: 0.25})
	s.record(clk.t.Add(10*time.Minute), bob, usageCounts{Requests: 1, Errors: 1, CostUnknown: 1})
	clk.t = clk.t.Add(time.Hour)
	s.record(clk.t, alice, usageCounts{Requests: 1, InputTokens: 1, OutputTokens: 1, CostUSD: 0.5})

	q := s.query(usageByGatewayKey, "hour", clk.t.Add(-2*time.Hour), clk.t.Add(time.Hour))
	if len(q.Points) != 3 || q.Totals["alice"].Requests != 2 || q.Totals["alice"].CostUSD != 0.75 ||
		q.Totals["alice"].InputTokens != 11 || q.Totals["bob"].Errors != 1 || q.Totals["bob"].CostUnknown != 1 || q.Total.Requests != 3 {
		t.Fatalf("by gateway_key: %+v", q)
	}
	if !q.Points[0].Start.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("first bucket starts %v", q.Points[0].Start)
	}
	if q := s.query(usageByKey, "day", clk.t.Add(-24*time.Hour), clk.t.Add(time.Hour)); len(q.Points) != 2 || q.Totals["p/k1"].Requests != 2 || q.Totals["p/k2"].Requests != 1 {
		t.Fatalf("by key, daily: %+v", q)
	}
	if q := s.query(usageByModel, "hour", clk.t.Add(-2*time.Hour), clk.t.Add(time.Hour)); q.Totals["m1"].Requests != 3 {
		t.Fatalf("by model: %+v", q.Totals)
	}

	// 49 hours later the hourly buckets are gone, the daily ones stay
	clk.t = clk.t.Add(49 * time.Hour)
	s.record(clk.t, alice, usageCounts{Requests: 1})
	if q := s.query(usageByPool, "hour", time.Time{}, clk.t.Add(time.Hour)); q.Total.Requests != 1 {
		t.Fatalf("hourly after 49h: %+v", q.Total)
	}
	if q := s.query(usageByPool, "day", time.Time{}, clk.t.Add(time.Hour)); q.Total.Requests != 4 || q.Totals["p"].CostUSD != 0.75 {
		t.Fatalf("daily after 49h: %+v", q.Totals)
	}
	// 91 days later the daily buckets are gone too
	clk.t = clk.t.Add(91 * 24 * time.Hour)
	s.record(clk.t, bob, usageCounts{Requests: 1})
	if q := s.query(usageByPool, "day", time.Time{}, clk.t.Add(time.Hour)); q.Total.Requests != 1 {
		t.Fatalf("daily after 91 days: %+v", q.Total)
	}

	// snapshot and restore carry everything
	h, d := s.snapshot()
	r := newUsageSeries(clk.now)
	r.restore(h, d)
	if q := r.query(usageByGatewayKey, "day", time.Time{}, clk.t.Add(time.Hour)); q.Totals["bob"].Requests != 1 || len(q.Points) != 1 {
		t.Fatalf("restored: %+v", q)
	}
}

// TestUsageCSV: the CSV export has one line per point with the JSON's
// figures, and a name that looks like a formula is defused.
func TestUsageCSV(t *testing.T) {
	q := usageQuery{By: usageByModel, Points: []usagePoint{
		{Start: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Name: "=cmd", usageCounts: usageCounts{Requests: 2, Errors: 1, InputTokens: 7, CostUSD: 0.0059}},
	}}
	rec := httptest.NewRecorder()
	if err := writeUsageCSV(rec, q); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(rec.Body.String())).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("%v %q", err, rec.Body.String())
	}
	if strings.Join(rows[0], ",") != strings.Join(usageCSVHeader, ",") {
		t.Fatalf("header %v", rows[0])
	}
	if got := strings.Join(rows[1], ","); got != "2026-03-01T10:00:00Z,model,'=cmd,2,1,7,0,0,0,0,0.0059,0,0" {
		t.Fatalf("row %s", got)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Fatalf("content type %q", ct)
	}
}
