package caddymodule

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/llmgateway/llm_gateway/translate"
)

// utc is a UTC instant for the time-of-day tests.
func utc(y int, m time.Month, d, hh, mm int) time.Time {
	return time.Date(y, m, d, hh, mm, 0, 0, time.UTC)
}

// TestDeepSeekPeakPrices: the built-in DeepSeek entries price a request
// at the peak figures from 01:00 to 04:00 and 06:00 to 10:00 UTC on
// weekdays and at the off-peak ones otherwise (weekends included), on
// both sides of each boundary, and the cost of one usage follows.
func TestDeepSeekPeakPrices(t *testing.T) {
	p, pat, ok := loadBuiltinPrices().lookup("deepseek-v4-pro")
	if !ok || pat != "deepseek-v4-pro*" || p.Peak == nil {
		t.Fatalf("deepseek-v4-pro: %+v via %q (%v), want a peak window", p, pat, ok)
	}
	// 2026-12-01 is a Tuesday, 2026-12-05 a Saturday, 2026-12-07 a Monday
	for _, c := range []struct {
		at   time.Time
		peak bool
	}{
		{utc(2026, 12, 1, 0, 59), false},
		{utc(2026, 12, 1, 1, 0), true},
		{utc(2026, 12, 1, 3, 59), true},
		{utc(2026, 12, 1, 4, 0), false},
		{utc(2026, 12, 1, 5, 59), false},
		{utc(2026, 12, 1, 6, 0), true},
		{utc(2026, 12, 1, 9, 59), true},
		{utc(2026, 12, 1, 10, 0), false},
		{utc(2026, 12, 1, 23, 30), false},
		{utc(2026, 12, 5, 2, 0), false}, // Saturday
		{utc(2026, 12, 6, 7, 0), false}, // Sunday
		{utc(2026, 12, 7, 7, 0), true},  // Monday
		{utc(2026, 12, 1, 9, 59).In(time.FixedZone("UTC+8", 8*3600)), true},
	} {
		got, win := p.at(c.at)
		wantIn, wantOut, wantCR, wantWin := 0.66, 1.98, 0.022, ""
		if c.peak {
			wantIn, wantOut, wantCR, wantWin = 1.32, 3.96, 0.044, "peak"
		}
		if got.Input != wantIn || got.Output != wantOut || got.CacheRead == nil || *got.CacheRead != wantCR || win != wantWin || got.Peak != nil {
			t.Errorf("%s: %+v in %q, want %v/%v/%v in %q", c.at.Format(time.RFC3339), got, win, wantIn, wantOut, wantCR, wantWin)
		}
	}
	// 1M input of which 200k cache hits, 100k output
	u := translate.Usage{InputTokens: i64p(1_000_000), CacheReadTokens: i64p(200_000), OutputTokens: i64p(100_000)}
	off, _ := p.at(utc(2026, 12, 1, 12, 0))
	peak, _ := p.at(utc(2026, 12, 1, 8, 0))
	if got, _ := costOf(off, u, 0); math.Abs(got-0.7304) > 1e-12 { // 0.8*0.66 + 0.2*0.022 + 0.1*1.98
		t.Errorf("off-peak cost %v, want 0.7304", got)
	}
	if got, _ := costOf(peak, u, 0); math.Abs(got-1.4608) > 1e-12 {
		t.Errorf("peak cost %v, want 1.4608", got)
	}
}

// TestPriceWindowAcrossMidnight: an off-peak window that crosses
// midnight UTC (DeepSeek's former 16:30-00:30) holds on both sides of
// midnight and not outside; with days, the part after midnight belongs to
// the day the window opened on.
func TestPriceWindowAcrossMidnight(t *testing.T) {
	p := Price{Input: 0.27, Output: 1.1, CacheRead: f64(0.07),
		OffPeak: &PriceWindow{Hours: []string{"16:30-00:30"}, Price: Price{Input: 0.135, Output: 0.55, CacheRead: f64(0.035)}}}
	if err := p.check(); err != nil {
		t.Fatal(err)
	}
	for at, off := range map[time.Time]bool{
		utc(2026, 3, 2, 16, 29): false,
		utc(2026, 3, 2, 16, 30): true,
		utc(2026, 3, 2, 23, 59): true,
		utc(2026, 3, 3, 0, 0):   true,
		utc(2026, 3, 3, 0, 29):  true,
		utc(2026, 3, 3, 0, 30):  false,
		utc(2026, 3, 3, 12, 0):  false,
	} {
		got, win := p.at(at)
		if off != (win == windowOffPeak) || off && (got.Input != 0.135 || *got.CacheRead != 0.035) || !off && (got.Input != 0.27 || *got.CacheRead != 0.07) {
			t.Errorf("%s: %+v in %q, off-peak %v", at.Format(time.RFC3339), got, win, off)
		}
	}
	// Friday nights only: Saturday 00:10 is in Friday's window, Friday 00:10 is not
	fri := &PriceWindow{Hours: []string{"22:00-02:00"}, Days: "fri", Price: Price{Input: 1, Output: 1}}
	for at, in := range map[time.Time]bool{
		utc(2026, 3, 6, 22, 0): true,  // Friday
		utc(2026, 3, 7, 0, 10): true,  // Saturday morning
		utc(2026, 3, 7, 2, 0):  false, // Saturday, the window closed
		utc(2026, 3, 6, 0, 10): false, // Friday morning: Thursday's window
		utc(2026, 3, 7, 22, 0): false, // Saturday evening
	} {
		if fri.contains(at) != in {
			t.Errorf("fri 22:00-02:00 at %s: contains %v, want %v", at.Format(time.RFC3339), !in, in)
		}
	}
}

// TestPriceWindowChecks: malformed hours and days, nested and overlapping
// windows make a price invalid (in prices.json as in the Caddyfile).
func TestPriceWindowChecks(t *testing.T) {
	w := func(hours, days string) *PriceWindow {
		return &PriceWindow{Hours: strings.Split(hours, ","), Days: days, Price: Price{Input: 1, Output: 2}}
	}
	for name, c := range map[string]struct {
		p    Price
		want string
	}{
		"no hours":  {Price{Peak: &PriceWindow{}}, "peak window: no hours"},
		"bad clock": {Price{Peak: w("25:00-01:00", "")}, "hours '25:00-01:00' are not HH:MM-HH:MM"},
		"24 start":  {Price{Peak: w("24:00-01:00", "")}, "are not HH:MM-HH:MM"},
		"no dash":   {Price{OffPeak: w("01:00", "")}, "off_peak window: hours '01:00'"},
		"bad days":  {Price{Peak: w("01:00-02:00", "mon-funday")}, "days 'mon-funday' are not weekdays"},
		"nested":    {Price{Peak: &PriceWindow{Hours: []string{"01:00-02:00"}, Price: Price{Peak: w("01:00-02:00", "")}}}, "cannot have windows"},
		"negative":  {Price{Peak: &PriceWindow{Hours: []string{"01:00-02:00"}, Price: Price{Input: -1}}}, "peak window: input price -1"},
		"overlap":   {Price{Peak: w("01:00-04:00", "mon-fri"), OffPeak: w("03:00-05:00", "")}, "overlap (mon 03:00 UTC)"},
	} {
		err := c.p.check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if err := (Price{Peak: w("01:00-04:00", "mon-fri"), OffPeak: w("01:00-04:00", "sat,sun")}).check(); err != nil {
		t.Errorf("disjoint days: %v", err)
	}
	if _, err := parsePriceTable([]byte(`{"version":1,"entries":[{"model":"a","input":1,"output":2,"peak":{"hours_utc":["9-10"],"input":2,"output":4},"as_of":"2026-01-01","source":"https://x"}]}`)); err == nil || !strings.Contains(err.Error(), "hours '9-10'") {
		t.Errorf("table with bad window hours: %v", err)
	}
}

// TestPriceWindowCaddyfile: the peak / off_peak block of price parses into
// the windows; the flat form still parses alone; bad hours, days, missing
// figures and repeated windows are errors at the line of the window.
func TestPriceWindowCaddyfile(t *testing.T) {
	var h Handler
	d := caddyfile.NewTestDispenser(`llm_gateway {
		price deepseek-v4-pro input 0.66 output 1.98 cache_read 0.022 {
			peak 01:00-04:00,06:00-10:00 mon-fri input 1.32 output 3.96 cache_read 0.044
		}
		price gpt-4o input 2.5 output 10
		pool p {
			price deepseek-chat input 0.27 output 1.1 cache_read 0.07 {
				off_peak 16:30-00:30 input 0.135 output $0.55 cache_read 0.035
			}
			key k http://127.0.0.1:1/v1
		}
	}`)
	if err := h.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	if len(h.Prices) != 2 || h.Prices[1].Model != "gpt-4o" || h.Prices[1].Peak != nil || h.Prices[1].OffPeak != nil {
		t.Fatalf("global prices: %+v", h.Prices)
	}
	pk := h.Prices[0].Peak
	if pk == nil || strings.Join(pk.Hours, " ") != "01:00-04:00 06:00-10:00" || pk.Days != "mon-fri" ||
		pk.Input != 1.32 || pk.Output != 3.96 || *pk.CacheRead != 0.044 || h.Prices[0].Input != 0.66 {
		t.Fatalf("peak: %+v", pk)
	}
	op := h.Pools[0].Prices[0].OffPeak
	if op == nil || len(op.Hours) != 1 || op.Hours[0] != "16:30-00:30" || op.Days != "" || op.Output != 0.55 || *op.CacheRead != 0.035 {
		t.Fatalf("off_peak: %+v", op)
	}
	if err := validatePrices("llm_gateway", h.Prices); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if got, win := h.Pools[0].Prices[0].at(utc(2026, 3, 3, 0, 15)); win != windowOffPeak || got.Input != 0.135 {
		t.Fatalf("pool price at 00:15 UTC: %+v in %q", got, win)
	}
	for in, want := range map[string]string{
		"peak 1:00-04:00 input 1 output 2":                                         "peak hours '1:00-04:00' are not HH:MM-HH:MM",
		"peak 01:00-04:60 input 1 output 2":                                        "are not HH:MM-HH:MM",
		"peak 01:00 input 1 output 2":                                              "hours '01:00' are not",
		"peak input 1 output 2":                                                    "peak needs its hours",
		"peak":                                                                     "peak needs its hours",
		"peak 01:00-04:00 weekdays input 1 output 2":                               "days 'weekdays' are not weekdays",
		"peak 01:00-04:00 input 1 output":                                          "a figure without its price",
		"peak 01:00-04:00 input 1 cache_read 0.1":                                  "m peak: input and output are required",
		"peak 01:00-04:00 mon-fri output 2":                                        "input and output are required",
		"peak 01:00-04:00 input x output 2":                                        "input 'x' is not a non-negative number",
		"peak 01:00-04:00 input 1 output 2 fancy 3":                                "unknown figure 'fancy'",
		"offpeak 01:00-04:00 input 1 output 2":                                     "unknown window 'offpeak'",
		"peak 01:00-02:00 input 1 output 2\npeak 03:00-04:00 input 1 output 2":     "the peak window is given twice",
		"peak 01:00-04:00 input 1 output 2\noff_peak 03:00-05:00 input 1 output 2": "overlap (mon 03:00 UTC)",
	} {
		src := "llm_gateway {\n\tprice m input 1 output 2 {\n" + in + "\n\t}\n}"
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
			continue
		}
		// the error names the file and the line of the window (line 3; a
		// repeated window, or the one that makes an overlap, at its line, 4)
		line := "Testfile:3"
		switch {
		case strings.Contains(want, "given twice"), strings.Contains(want, "overlap"):
			line = "Testfile:4"
		}
		if !strings.Contains(err.Error(), line) {
			t.Errorf("%q: %v, want it at %s", in, err, line)
		}
	}
}

// TestCostRequestAtStart: a finished request is priced at the window in
// force when it started, on the budgets' clock: one that started at 09:59
// UTC on a weekday pays the peak price even though it ends after 10:00,
// and one that started at 10:00 pays the off-peak price.
func TestCostRequestAtStart(t *testing.T) {
	p, _, _ := loadBuiltinPrices().lookup("deepseek-v4-pro")
	h := &Handler{priceTab: priceTableOf([]*PriceConfig{{Model: "tod-test-model", Price: p}})}
	shiftBudgetClock(t, utc(2026, 12, 1, 10, 0)) // a Tuesday, 10:00 UTC: off-peak
	// leave no trace in the process-wide spend totals and metric
	t.Cleanup(func() {
		costMap.Delete(costKey{kind: costByKey, a: "tod-pool", b: "tod-key"})
		if _, ok := costMap.LoadAndDelete(costKey{kind: costByModel, a: "tod-test-model"}); ok {
			costModels.Add(-1)
		}
		initCostMetric()
		costMetric.DeleteLabelValues("tod-pool", "tod-key", "", "tod-test-model")
	})
	now := time.Now()
	u := translate.Usage{InputTokens: i64p(1_000_000), OutputTokens: i64p(1_000_000)}
	for _, c := range []struct {
		start time.Time
		usd   float64
		win   string
	}{
		{now.Add(-time.Minute), 5.28, "peak"}, // started 09:59: 1.32 + 3.96
		{now, 2.64, ""},                       // started 10:00: 0.66 + 1.98
	} {
		rl := &requestLog{pool: "tod-pool", key: "tod-key", endpoint: "chat/completions", status: 200,
			upstreamModel: "tod-test-model", usage: u, start: c.start}
		h.costRequest(rl)
		if rl.cost == nil || !rl.cost.known || math.Abs(rl.cost.usd-c.usd) > 1e-12 || rl.cost.window != c.win {
			t.Errorf("started %s: cost %+v, want %v in %q", priceTime(c.start).Format(time.RFC3339), rl.cost, c.usd, c.win)
		}
		// the request log says which window priced it
		var logged string
		for _, f := range appendCostFields(nil, rl.cost) {
			if f.Key == "cost_window" {
				logged = f.String
			}
		}
		if logged != c.win {
			t.Errorf("started %s: cost_window %q, want %q", priceTime(c.start).Format(time.RFC3339), logged, c.win)
		}
	}
}

// TestAdminPricesShowsWindows: GET /llm_gateway/prices lists the built-in
// DeepSeek entries with their peak window (hours, days, figures), their
// off-peak figures, date and source.
func TestAdminPricesShowsWindows(t *testing.T) {
	w := httptest.NewRecorder()
	if err := (adminAPI{}).handlePrices(w, httptest.NewRequest(http.MethodGet, "/llm_gateway/prices", nil)); err != nil {
		t.Fatal(err)
	}
	e := gjson.Get(w.Body.String(), `builtin.#(model=="deepseek-v4-pro*")`)
	if !e.Exists() {
		t.Fatalf("no deepseek-v4-pro* entry in %.300s", w.Body.String())
	}
	for path, want := range map[string]string{
		"input": "0.66", "output": "1.98", "cache_read": "0.022",
		"peak.hours_utc": `["01:00-04:00","06:00-10:00"]`, "peak.days_utc": "mon-fri",
		"peak.input": "1.32", "peak.output": "3.96", "peak.cache_read": "0.044",
		"source": "https://api-docs.deepseek.com/quick_start/pricing", "as_of": "2026-12-01",
	} {
		got := e.Get(path)
		s := got.String()
		if got.IsArray() {
			s = strings.Join(strings.Fields(got.Raw), "")
		}
		if s != want {
			t.Errorf("%s: %q, want %q", path, s, want)
		}
	}
	if e.Get("off_peak").Exists() || e.Get("peak.peak").Exists() {
		t.Errorf("unexpected windows: %s", e.Raw)
	}
}

// TestTimeOfDayPriceEndToEnd: through the gateway and the mock (usage
// known exactly: 2000 prompt, 100 completion tokens), a request that
// starts at 08:00 UTC on a Tuesday is priced at the pool's peak window
// and one at 12:00 at the off-peak figures, in the spend totals; a global
// price with an off_peak window crossing midnight prices the other pool
// at 23:30. GET /llm_gateway/prices shows the configured windows.
func TestTimeOfDayPriceEndToEnd(t *testing.T) {
	_, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"sk-tod-1": {ReplayBody: []byte(spendOA2), ReplayContentType: "application/json"},
		"sk-tod-2": {ReplayBody: []byte(spendOA2), ReplayContentType: "application/json"},
	}})
	forgetCostState()
	t.Cleanup(forgetCostState)
	site := "\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n" +
		"\t\tprice tod-night input 4 output 40 {\n\t\t\toff_peak 22:00-02:00 input 1 output 10\n\t\t}\n" +
		"\t\tpool tod-a {\n\t\t\tmodels tod-day\n" +
		"\t\t\tprice tod-day input 1 output 2 {\n\t\t\t\tpeak 06:00-10:00 mon-fri input 2 output 4\n\t\t\t}\n" +
		"\t\t\tkey sk-tod-1 " + base + " {\n\t\t\t\tid t1\n\t\t\t}\n\t\t}\n" +
		"\t\tpool tod-b {\n\t\t\tmodels tod-night\n" +
		"\t\t\tkey sk-tod-2 " + base + " {\n\t\t\t\tid t2\n\t\t\t}\n\t\t}\n\t}\n"
	gw, admin := adminGateway(t, site, "")

	spent := func(model string) float64 {
		t.Helper()
		code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/spend")
		if code != 200 {
			t.Fatalf("spend: %d %s", code, b)
		}
		return gjson.GetBytes(b, `models.#(model=="`+model+`").usd`).Float()
	}
	ask := func(model string) {
		t.Helper()
		resp, body := post(t, gw+"/v1/chat/completions", chatBody(model, "hi", false), "Authorization", "Bearer "+gatewayKey)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", model, resp.StatusCode, body)
		}
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	shiftBudgetClock(t, utc(2026, 12, 1, 8, 0)) // Tuesday 08:00 UTC: peak
	ask("tod-day")
	near("tod-day at peak", spent("tod-day"), 0.0044) // 2000x2 + 100x4
	shiftBudgetClock(t, utc(2026, 12, 1, 12, 0))      // off-peak
	ask("tod-day")
	near("tod-day after off-peak", spent("tod-day"), 0.0044+0.0022) // + 2000x1 + 100x2
	shiftBudgetClock(t, utc(2026, 12, 5, 8, 0))                     // Saturday 08:00: no peak
	ask("tod-day")
	near("tod-day on Saturday", spent("tod-day"), 0.0066+0.0022)

	shiftBudgetClock(t, utc(2026, 12, 1, 23, 30)) // the global off_peak window
	ask("tod-night")
	near("tod-night at 23:30", spent("tod-night"), 0.003) // 2000x1 + 100x10
	shiftBudgetClock(t, utc(2026, 12, 2, 3, 0))
	ask("tod-night")
	near("tod-night at 03:00", spent("tod-night"), 0.003+0.012) // + 2000x4 + 100x40

	code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/prices")
	if code != 200 {
		t.Fatalf("prices: %d %s", code, b)
	}
	a := gjson.GetBytes(b, `configured.#(pool=="tod-a")`)
	if a.Get("prices.0.model").String() != "tod-day" || a.Get("prices.0.peak.hours_utc.0").String() != "06:00-10:00" ||
		a.Get("prices.0.peak.days_utc").String() != "mon-fri" || a.Get("prices.0.peak.input").Float() != 2 ||
		a.Get("global.0.off_peak.hours_utc.0").String() != "22:00-02:00" || a.Get("global.0.off_peak.output").Float() != 10 {
		t.Fatalf("configured prices of tod-a: %s", a.Raw)
	}
	if bb := gjson.GetBytes(b, `configured.#(pool=="tod-b")`); bb.Get("prices").Exists() || bb.Get("global.0.model").String() != "tod-night" {
		t.Fatalf("configured prices of tod-b: %s", bb.Raw)
	}
}
