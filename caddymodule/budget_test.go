package caddymodule

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

// shiftBudgetClock moves the budgets' clock so that it reads at (the
// real clock is untouched), until the test ends.
func shiftBudgetClock(t *testing.T, at time.Time) {
	t.Helper()
	if budgetClockOffset.Load() == 0 {
		// a fresh test: forget the spend earlier runs of the same test
		// booked on the same day (go test -count=N)
		spendLedger.Lock()
		clear(spendLedger.m)
		spendLedger.Unlock()
	}
	budgetClockOffset.Store(int64(time.Until(at)))
	t.Cleanup(func() { budgetClockOffset.Store(0) })
}

// book returns the budget book of the configuration last loaded.
func book(t *testing.T) *budgetBook {
	t.Helper()
	liveBudgets.Lock()
	defer liveBudgets.Unlock()
	if len(liveBudgets.books) == 0 {
		t.Fatal("no budgets provisioned")
	}
	return liveBudgets.books[len(liveBudgets.books)-1]
}

// TestBudgetCalendarPeriods: daily and monthly periods are counted in the
// configured time zone (a day in Berlin starts at 23:00 UTC in winter), a
// month ends on the first at midnight, and a rolling window lets its
// oldest steps go.
func TestBudgetCalendarPeriods(t *testing.T) {
	r, err := (&BudgetSpec{AmountUSD: 10, Period: "daily", Timezone: "Europe/Berlin", WarnPercent: 80}).compile()
	if err != nil {
		t.Fatal(err)
	}
	if r.label != "10 USD daily (Europe/Berlin)" || r.warn != 8 {
		t.Fatalf("rule %+v", r)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	s := &scopeSpend{buckets: map[int64]float64{}}
	// 22:30 UTC on 1 Dec is 23:30 in Berlin: still 1 Dec there
	t1 := time.Date(2026, 12, 1, 22, 30, 0, 0, time.UTC)
	s.add(r.period, t1, 10)
	spent, reset := s.state(r, t1)
	if spent != 10 || !reset.Equal(time.Date(2026, 12, 2, 0, 0, 0, 0, berlin)) || reset.UTC().Hour() != 23 {
		t.Fatalf("at 22:30 UTC: spent %v reset %v, want 10 until 23:00 UTC", spent, reset.UTC())
	}
	// 23:10 UTC is 00:10 on 2 Dec in Berlin: a new day, though not in UTC
	if spent, reset := s.state(r, t1.Add(40*time.Minute)); spent != 0 || !reset.IsZero() {
		t.Fatalf("after midnight in Berlin: spent %v reset %v, want 0", spent, reset)
	}
	u, _ := (&BudgetSpec{AmountUSD: 10, Period: "daily"}).compile()
	su := &scopeSpend{buckets: map[int64]float64{}}
	su.add(u.period, t1, 10)
	if spent, reset := su.state(u, t1.Add(40*time.Minute)); spent != 10 || !reset.Equal(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("UTC daily at 23:10 UTC: spent %v reset %v, want 10 until midnight UTC", spent, reset)
	}
	m, _ := (&BudgetSpec{AmountUSD: 5, Period: "monthly", Timezone: "America/New_York"}).compile()
	ny, _ := time.LoadLocation("America/New_York")
	sm := &scopeSpend{buckets: map[int64]float64{}}
	dec31 := time.Date(2026, 12, 31, 12, 0, 0, 0, ny)
	sm.add(m.period, dec31, 6)
	if spent, reset := sm.state(m, dec31); spent != 6 || !reset.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, ny)) {
		t.Fatalf("monthly: spent %v reset %v, want 6 until 1 Jan in New York", spent, reset)
	}
	if spent, _ := sm.state(m, time.Date(2027, 1, 1, 0, 0, 1, 0, ny)); spent != 0 {
		t.Fatalf("monthly in January: spent %v", spent)
	}
	// rolling 24h in 1h steps: 3 USD at 00:xx, 8 at 10:xx; limit 10
	w, _ := (&BudgetSpec{AmountUSD: 10, Period: "24h"}).compile()
	sw := &scopeSpend{buckets: map[int64]float64{}}
	d0 := time.Date(2026, 12, 1, 0, 30, 0, 0, time.UTC)
	sw.add(w.period, d0, 3)
	sw.add(w.period, d0.Add(10*time.Hour), 8)
	spent, reset = sw.state(w, d0.Add(12*time.Hour))
	if spent != 11 || !reset.Equal(time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)) {
		t.Fatalf("rolling: spent %v reset %v, want 11 until the 00:00 step leaves (01:00 next day)", spent, reset)
	}
	if spent, _ := sw.state(w, time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)); spent != 8 {
		t.Fatalf("rolling after the first step left: %v, want 8", spent)
	}
	for _, bad := range []struct {
		spec BudgetSpec
		want string
	}{
		{BudgetSpec{AmountUSD: 0, Period: "daily"}, "amount must be"},
		{BudgetSpec{AmountUSD: 1, Period: "weekly"}, "period 'weekly' is neither"},
		{BudgetSpec{AmountUSD: 1, Period: "30s"}, "at least 1m"},
		{BudgetSpec{AmountUSD: 1, Period: "daily", Timezone: "Mars/Olympus"}, "unknown time zone 'Mars/Olympus'"},
		{BudgetSpec{AmountUSD: 1, Period: "24h", Timezone: "UTC"}, "timezone applies to daily and monthly"},
		{BudgetSpec{AmountUSD: 1, Period: "daily", WarnPercent: 120}, "warn must be a percentage"},
	} {
		if _, err := bad.spec.compile(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.spec, err, bad.want)
		}
	}
}

// TestBudgetCaddyfileMistakes: a wrong budget fails the load with the
// file and line of the budget.
func TestBudgetCaddyfileMistakes(t *testing.T) {
	for _, c := range []struct{ budget, want string }{
		{"budget 20 per monthly", "budget: want budget <amount> usd per"},
		{"budget twenty usd per monthly", "the amount 'twenty' is not a number"},
		{"budget 20 usd per fortnightly", "period 'fortnightly' is neither"},
		{"budget 20 usd per monthly {\n\t\t\t\twarn 180%\n\t\t\t}", "warn wants a percentage"},
		{"budget 20 usd per monthly {\n\t\t\t\ttimezone Atlantis/Capital\n\t\t\t}", "unknown time zone 'Atlantis/Capital'"},
		{"budget 20 usd per monthly {\n\t\t\t\twarm 80%\n\t\t\t}", "unrecognized budget subdirective 'warm' (did you mean warn?)"},
		{"budget 20 usd per 24h {\n\t\t\t\ttimezone Europe/Berlin\n\t\t\t}", "timezone applies to daily and monthly"},
	} {
		cf := "{\n\tadmin off\n}\n:0 {\n\tllm_gateway {\n\t\tauth off\n\t\tpool p {\n\t\t\tmodels *\n\t\t\tkey sk-a http://127.0.0.1:9/v1\n\t\t\t" +
			c.budget + "\n\t\t}\n\t}\n}\n"
		path, err := loadCaddyfileFileErr(t, cf)
		sub := c.budget
		if i := strings.Index(sub, "\n"); i >= 0 {
			sub = strings.TrimSpace(strings.Split(c.budget, "\n")[1])
		}
		if strings.Contains(c.want, "timezone applies") {
			sub = "budget 20"
		}
		at := path + ":" + strconv.Itoa(lineOf(t, cf, sub))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), at) {
			t.Errorf("%q: %v\nwant %q at %s", c.budget, err, c.want, at)
		}
	}
}

// budgetGateway starts a gateway whose pool "budk" has keys k1 (budget 1
// USD daily, warn 50%) and k2, priority strategy (k1 first), and two
// gateway keys: "capped" (budget 2 USD daily) and "free".
func budgetGateway(t *testing.T, extraPool string) (*mockupstream.Server, string) {
	t.Helper()
	m, base := mock(t, mockupstream.Config{})
	// the requests themselves cost nothing here (price * 0): the tests
	// book exact charges
	gw := gateway(t, "\tllm_gateway {\n\t\tprice * input 0 output 0\n"+
		"\t\tapi_key "+gatewayKey+" {\n\t\t\tid capped\n\t\t\tbudget 2 usd per daily\n\t\t}\n"+
		"\t\tapi_key sk-free-caller-0123456789 {\n\t\t\tid free\n\t\t}\n"+
		"\t\tpool budk {\n\t\t\tmodels *\n\t\t\tstrategy priority\n"+extraPool+
		"\t\t\tkey sk-k1 "+base+" {\n\t\t\t\tid k1\n\t\t\t\tpriority 0\n\t\t\t\tbudget 1 usd per daily {\n\t\t\t\t\twarn 50%\n\t\t\t\t}\n\t\t\t}\n"+
		"\t\t\tkey sk-k2 "+base+" {\n\t\t\t\tid k2\n\t\t\t\tpriority 1\n\t\t\t}\n\t\t}\n\t}\n")
	return m, gw
}

// TestKeyBudgetLeavesRotation: the key that reaches its budget leaves
// rotation (state budget, visible in the admin view), the next request is
// served by another key, the warning is raised once, and the key returns
// when the day rolls over.
func TestKeyBudgetLeavesRotation(t *testing.T) {
	day := time.Date(2031, 3, 4, 20, 0, 0, 0, time.UTC)
	shiftBudgetClock(t, day)
	m, gw := budgetGateway(t, "")
	served := func() string {
		t.Helper()
		resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "hi", false), "Authorization", "Bearer sk-free-caller-0123456789")
		if resp.StatusCode != 200 {
			t.Fatalf("status %d %s", resp.StatusCode, b)
		}
		return resp.Header.Get("X-Routed-Via")
	}
	if got := served(); got != "budk/k1" {
		t.Fatalf("first request via %q, want budk/k1", got)
	}
	_, seq := budgetEventsSince(^uint64(0))
	bk := book(t)
	bk.charge(spendCharge{Pool: "budk", KeyID: "k1", GatewayKey: "free", Model: "gpt-4o", USD: 0.6, Known: true})
	bk.charge(spendCharge{Pool: "budk", KeyID: "k1", GatewayKey: "free", Model: "gpt-4o", USD: 0.3, Known: true})
	bk.charge(spendCharge{Pool: "budk", KeyID: "k1", Model: "x", USD: 5, Known: false}) // unknown cost: not counted
	evs, seq := budgetEventsSince(seq)
	if len(evs) != 1 || evs[0].Type != "budget_warning" || evs[0].Name != "budk/k1" || evs[0].SpentUSD != 0.6 {
		t.Fatalf("events after 0.9 of 1 USD: %+v, want one budget_warning at 0.6", evs)
	}
	if st := keyStatus(t, "budk", "k1"); st.State != keypool.StateReady {
		t.Fatalf("k1 under its budget: %+v", st)
	}
	bk.charge(spendCharge{Pool: "budk", KeyID: "k1", GatewayKey: "free", Model: "gpt-4o", USD: 0.1, Known: true})
	st := keyStatus(t, "budk", "k1")
	midnight := time.Date(2031, 3, 5, 0, 0, 0, 0, time.UTC)
	if st.State != keypool.StateBudget || st.Reason != keypool.ReasonBudget || st.Failures != 0 || st.Breaker != "closed" ||
		st.SecondsLeft < 4*3600-5 || st.SecondsLeft > 4*3600+1 {
		t.Fatalf("k1 at its budget: %+v, want state budget for 4h (until midnight UTC)", st)
	}
	evs, _ = budgetEventsSince(seq)
	if len(evs) != 1 || evs[0].Type != "budget_exceeded" || !evs[0].ResetsAt.Equal(midnight) {
		t.Fatalf("events at the limit: %+v", evs)
	}
	v := viewPool(poolFor(t, "budk"))
	if v.Keys[0].State != keypool.StateBudget || v.Keys[0].Budget == nil || v.Keys[0].Budget.SpentUSD < 0.999 ||
		!v.Keys[0].Budget.Exceeded || !v.Keys[0].Budget.ResetsAt.Equal(midnight) || v.Keys[1].Budget != nil {
		b, _ := json.Marshal(v.Keys)
		t.Fatalf("admin view %s", b)
	}
	for i := 0; i < 2; i++ {
		if got := served(); got != "budk/k2" {
			t.Fatalf("request %d after k1's budget ran out via %q, want budk/k2", i, got)
		}
	}
	if n := m.Stats("sk-k1").Requests; n != 1 {
		t.Errorf("k1 asked %d times, want 1", n)
	}
	shiftBudgetClock(t, midnight.Add(time.Second))
	if got := served(); got != "budk/k1" {
		t.Fatalf("after midnight via %q, want budk/k1 back", got)
	}
	if st := keyStatus(t, "budk", "k1"); st.State != keypool.StateReady {
		t.Fatalf("k1 in the new day: %+v", st)
	}
	bk.charge(spendCharge{Pool: "budk", KeyID: "k1", USD: 0.7, Known: true})
	if evs, _ := budgetEventsSince(seq + 1); len(evs) != 1 || evs[0].Type != "budget_warning" || evs[0].SpentUSD != 0.7 {
		t.Fatalf("the warning of the new day: %+v", evs)
	}
}

// TestGatewayKeyBudget: a caller over its budget gets 429 with
// Retry-After until the reset, in each of the three dialects, with a
// message naming the budget; another caller is served.
func TestGatewayKeyBudget(t *testing.T) {
	day := time.Date(2031, 3, 6, 23, 0, 0, 0, time.UTC)
	shiftBudgetClock(t, day)
	m, gw := budgetGateway(t, "")
	book(t).charge(spendCharge{Pool: "budk", KeyID: "k2", GatewayKey: "capped", USD: 2.5, Known: true})
	cases := []struct {
		path, body, errType string
	}{
		{"/v1/chat/completions", string(chatBody("gpt-4o", "hi", false)), "error.type"},
		{"/v1/messages", `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "error.type"},
		{"/v1/responses", `{"model":"gpt-4o","input":"hi"}`, "error.type"},
	}
	before := m.Stats("sk-k1").Requests + m.Stats("sk-k2").Requests
	for _, c := range cases {
		resp, b := post(t, gw+c.path, []byte(c.body), "Anthropic-Version", "2023-06-01")
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		msg := gjson.GetBytes(b, "error.message").Str
		if resp.StatusCode != http.StatusTooManyRequests || ra < 3595 || ra > 3601 || resp.Header.Get("X-Should-Retry") != "false" ||
			!strings.Contains(msg, "gateway key capped is over its budget of 2 USD daily (spent 2.5000 USD)") {
			t.Fatalf("%s over budget: %d Retry-After %q %s", c.path, resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
		switch c.path {
		case "/v1/messages":
			if gjson.GetBytes(b, "type").Str != "error" || gjson.GetBytes(b, "error.type").Str != "rate_limit_error" {
				t.Errorf("anthropic dialect: %s", b)
			}
		default:
			if gjson.GetBytes(b, "error.type").Str != "rate_limit_error" && gjson.GetBytes(b, "error.code").Str != "rate_limit_exceeded" {
				t.Errorf("%s dialect: %s", c.path, b)
			}
		}
	}
	if after := m.Stats("sk-k1").Requests + m.Stats("sk-k2").Requests; after != before {
		t.Errorf("refused requests reached the upstream: %d -> %d", before, after)
	}
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "hi", false), "Authorization", "Bearer sk-free-caller-0123456789")
	if resp.StatusCode != 200 {
		t.Fatalf("another caller: %d %s", resp.StatusCode, b)
	}
	shiftBudgetClock(t, day.Add(time.Hour+time.Second))
	if resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "hi", false)); resp.StatusCode != 200 {
		t.Fatalf("capped caller in the new day: %d %s", resp.StatusCode, b)
	}
}

// TestPoolBudget: a pool over its budget answers 429 with Retry-After
// until the reset, or hands the request to a fallback pool.
func TestPoolBudget(t *testing.T) {
	day := time.Date(2031, 3, 8, 12, 0, 0, 0, time.UTC)
	shiftBudgetClock(t, day)
	_, base := mock(t, mockupstream.Config{})
	site := "\tllm_gateway {\n\t\tauth off\n\t\tprice * input 0 output 0\n" +
		"\t\tpool budp {\n\t\t\tmodels gpt-*\n\t\t\tbudget 3 usd per 24h\n\t\t\tkey sk-p1 " + base + " {\n\t\t\t\tid p1\n\t\t\t}\n\t\t}\n%s\t}\n"
	gw := gateway(t, strings.Replace(site, "%s", "", 1))
	bk := book(t)
	bk.charge(spendCharge{Pool: "budp", KeyID: "p1", USD: 1, Known: true, At: day})
	if resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "hi", false)); resp.StatusCode != 200 {
		t.Fatalf("under the pool budget: %d %s", resp.StatusCode, b)
	}
	bk.charge(spendCharge{Pool: "budp", KeyID: "p1", USD: 2, Known: true})
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "hi", false))
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	// both charges are in the 12:00 step of a 24h window: it leaves 24h
	// after that step's end, at 13:00 tomorrow
	if resp.StatusCode != http.StatusTooManyRequests || ra < 25*3600-5 || ra > 25*3600+1 ||
		!strings.Contains(gjson.GetBytes(b, "error.message").Str, `pool "budp" is over its budget of 3 USD per 24h (spent 3.0000 USD)`) {
		t.Fatalf("over the pool budget: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	views := budgetViews(budgetNow())
	if len(views) != 1 || views[0].Scope != "pool" || views[0].Name != "budp" || views[0].SpentUSD != 3 || !views[0].Exceeded {
		t.Fatalf("budget views %+v", views)
	}
	// with a fallback pool the request goes there
	fallback := "\t\tpool budq {\n\t\t\tmodels gpt-*\n\t\t\tpriority 1\n\t\t\tkey sk-q1 " + base + " {\n\t\t\t\tid q1\n\t\t\t}\n\t\t}\n"
	gw = gateway(t, strings.Replace(site, "%s", fallback, 1))
	resp, b = post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "budq/q1" || resp.Header.Get("X-Fallback-From") != "budp" {
		t.Fatalf("with a fallback pool: %d via %q from %q %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), resp.Header.Get("X-Fallback-From"), b)
	}
}

// TestBudgetSpendSurvivesRestart: the spend of the current period goes
// to the usage file and comes back in a new process.
func TestBudgetSpendSurvivesRestart(t *testing.T) {
	r, _ := (&BudgetSpec{AmountUSD: 1, Period: "monthly"}).compile()
	now := time.Date(2031, 5, 10, 0, 0, 0, 0, time.UTC)
	id := "gateway_key\x00restart-test\x00" + r.period.signature()
	s := ledgerScope(id)
	s.add(r.period, now, 0.75)
	saved := spendSnapshot()
	b, err := json.Marshal(usageFile{Version: 1, Budgets: saved})
	if err != nil {
		t.Fatal(err)
	}
	var back usageFile
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	spendLedger.Lock()
	delete(spendLedger.m, id) // the new process
	spendLedger.Unlock()
	restoreSpend(back.Budgets)
	if spent, _ := ledgerScope(id).state(r, now); spent != 0.75 {
		t.Fatalf("after the restart: spent %v, want 0.75 (file %s)", spent, b)
	}
}

// TestBudgetClusterSharesSpend: two instances on one Redis share a
// caller's spend: what one books, the other refuses on; and with requests
// racing on both, the budget is exceeded by no more than the requests in
// flight when it ran out.
func TestBudgetClusterSharesSpend(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	r, _ := (&BudgetSpec{AmountUSD: 1, Period: "daily"}).compile()
	instance := func(name string) *budgetBook {
		rb := newRedisBackend(&redis.Options{Addr: addr}, prefix, "", addr, time.Minute, time.Second, zap.NewNop())
		t.Cleanup(func() { _ = rb.Destruct() })
		e := &budgetEntry{rule: r, scope: budgetScopeGatewayKey, name: name, spend: &scopeSpend{buckets: map[int64]float64{}, shared: true},
			shared: prefix + "spend:{gateway_key:" + name + "}:" + r.period.signature()}
		return &budgetBook{logger: zap.NewNop(), shared: rb, gws: map[string]*budgetEntry{name: e}, all: []*budgetEntry{e}}
	}
	a, b := instance("team"), instance("team")
	gk := &gwKey{id: "team"}
	a.charge(spendCharge{GatewayKey: "team", USD: 0.6, Known: true})
	if f := b.gatewayGate(gk); f != nil {
		t.Fatalf("b refused at 0.6 of 1 USD: %s", f.msg)
	}
	b.charge(spendCharge{GatewayKey: "team", USD: 0.5, Known: true})
	f := a.gatewayGate(gk)
	if f == nil || f.status != http.StatusTooManyRequests || !strings.Contains(f.msg, "spent 1.1000 USD") {
		t.Fatalf("a after b's charge: %+v, want 429 at 1.1 USD", f)
	}
	c := redisClient(t, addr)
	vals, err := c.HVals(t.Context(), a.gws["team"].shared).Result()
	if err != nil || len(vals) != 1 || vals[0] != "1.1" {
		t.Fatalf("the shared record: %v %v, want one bucket of 1.1", vals, err)
	}

	// racing: 4 callers on each instance, each a request in flight at a
	// time (admitted, then charged 0.1 when it ends), until refused
	x, y := instance("race"), instance("race")
	race := &gwKey{id: "race"}
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for i := 0; i < 8; i++ {
		bk := x
		if i%2 == 1 {
			bk = y
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 100 && bk.gatewayGate(race) == nil; n++ {
				admitted.Add(1)
				bk.charge(spendCharge{GatewayKey: "race", USD: 0.1, Known: true})
			}
		}()
	}
	wg.Wait()
	spent, _ := x.gws["race"].spend.state(r, budgetNow())
	if n := admitted.Load(); n < 10 || n > 10+8 || spent < 1-1e-9 || spent > 1.8+1e-9 {
		t.Fatalf("racing on two instances: %d requests admitted, %.4f USD spent; want 10 to 18 requests and at most 1.8 USD (1 + 8 in flight)", n, spent)
	}
}

// TestKeyBudgetReload: a reload that raises a used-up key budget puts the
// key back at once, one that lowers it below the spend takes it out, and
// one that removes it puts it back; the spend is kept across reloads.
func TestKeyBudgetReload(t *testing.T) {
	shiftBudgetClock(t, time.Date(2031, 4, 1, 10, 0, 0, 0, time.UTC))
	_, base := mock(t, mockupstream.Config{})
	site := func(budget string) string {
		return "\tllm_gateway {\n\t\tauth off\n\t\tpool budr {\n\t\t\tmodels *\n\t\t\tkey sk-r1 " + base + " {\n\t\t\t\tid r1\n" + budget +
			"\t\t\t}\n\t\t\tkey sk-r2 " + base + " {\n\t\t\t\tid r2\n\t\t\t}\n\t\t}\n\t}\n"
	}
	gateway(t, site("\t\t\t\tbudget 1 usd per daily\n"))
	book(t).charge(spendCharge{Pool: "budr", KeyID: "r1", USD: 1.5, Known: true})
	if st := keyStatus(t, "budr", "r1"); st.State != keypool.StateBudget {
		t.Fatalf("r1 over 1 USD: %+v", st)
	}
	gateway(t, site("\t\t\t\tbudget 2 usd per daily\n"))
	if st := keyStatus(t, "budr", "r1"); st.State != keypool.StateReady {
		t.Fatalf("r1 after raising its budget to 2 USD: %+v", st)
	}
	if v := keyBudgetView("budr", "r1", budgetNow()); v == nil || v.SpentUSD != 1.5 || v.Exceeded {
		t.Fatalf("r1's budget after the reload: %+v", v)
	}
	gateway(t, site("\t\t\t\tbudget 1.25 usd per daily\n"))
	if st := keyStatus(t, "budr", "r1"); st.State != keypool.StateBudget {
		t.Fatalf("r1 after lowering its budget to 1.25 USD: %+v", st)
	}
	gateway(t, site(""))
	if st := keyStatus(t, "budr", "r1"); st.State != keypool.StateReady {
		t.Fatalf("r1 after its budget was removed: %+v", st)
	}
}

// TestKeyBudgetSurvivesRestart: the spend of the current period is saved
// in the usage file when the gateway stops, and a new process holds the
// key out of rotation from its first request on.
func TestKeyBudgetSurvivesRestart(t *testing.T) {
	shiftBudgetClock(t, time.Date(2031, 7, 1, 9, 0, 0, 0, time.UTC))
	_, base := mock(t, mockupstream.Config{})
	file := filepath.Join(t.TempDir(), "usage.json")
	block := "\tllm_gateway {\n\t\tauth off\n\t\tusage_file " + file + "\n\t\tprice * input 0 output 0\n" +
		"\t\tpool budrs {\n\t\t\tmodels *\n\t\t\tstrategy priority\n" +
		"\t\t\tkey sk-rs1 " + base + " {\n\t\t\t\tid rs1\n\t\t\t\tpriority 1\n\t\t\t\tbudget 1 usd per monthly\n\t\t\t}\n" +
		"\t\t\tkey sk-rs2 " + base + " {\n\t\t\t\tid rs2\n\t\t\t\tpriority 2\n\t\t\t}\n\t\t}\n\t}\n"
	forgetProcessState()
	t.Cleanup(forgetProcessState)
	gateway(t, block)
	book(t).charge(spendCharge{Pool: "budrs", KeyID: "rs1", USD: 1.25, Known: true})
	if st := keyStatus(t, "budrs", "rs1"); st.State != keypool.StateBudget {
		t.Fatalf("rs1 over its budget: %+v", st)
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(saved), `"budgets"`) || !strings.Contains(string(saved), "1.25") || strings.Contains(string(saved), "sk-rs1") {
		t.Fatalf("saved file: %v %s", err, saved)
	}

	// "restart": new process state, same file
	forgetProcessState()
	spendLedger.Lock()
	clear(spendLedger.m)
	spendLedger.Unlock()
	gw := gateway(t, block)
	if st := keyStatus(t, "budrs", "rs1"); st.State != keypool.StateBudget || st.Until.IsZero() {
		t.Fatalf("rs1 after the restart: %+v, want state budget until August", st)
	}
	if v := keyBudgetView("budrs", "rs1", budgetNow()); v == nil || v.SpentUSD != 1.25 || !v.ResetsAt.Equal(time.Date(2031, 8, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("rs1's budget after the restart: %+v", v)
	}
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "budrs/rs2" {
		t.Fatalf("after the restart: %d via %q %s, want rs2", resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
	}
}

// TestBudgetRedisOutage: while Redis is unreachable an instance counts
// its spend alone (and refuses on it); when Redis answers again, what it
// counted is added to the shared figures.
func TestBudgetRedisOutage(t *testing.T) {
	if os.Getenv(envTestRedis) != "" {
		t.Skip("needs a private redis-server it can stop")
	}
	rp := privateRedis(t)
	prefix := testPrefix(t, rp.Addr)
	r, _ := (&BudgetSpec{AmountUSD: 1, Period: "daily"}).compile()
	rb := newRedisBackend(&redis.Options{Addr: rp.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond}, prefix, "", rp.Addr, time.Minute, 200*time.Millisecond, zap.NewNop())
	t.Cleanup(func() { _ = rb.Destruct() })
	name := prefix + "spend:{gateway_key:out}:" + r.period.signature()
	e := &budgetEntry{rule: r, scope: budgetScopeGatewayKey, name: "out", spend: &scopeSpend{buckets: map[int64]float64{}, shared: true}, shared: name}
	bk := &budgetBook{logger: zap.NewNop(), shared: rb, gws: map[string]*budgetEntry{"out": e}, all: []*budgetEntry{e}}
	gk := &gwKey{id: "out"}
	bk.charge(spendCharge{GatewayKey: "out", USD: 0.25, Known: true})
	rp.Stop()
	bk.charge(spendCharge{GatewayKey: "out", USD: 0.5, Known: true})
	bk.charge(spendCharge{GatewayKey: "out", USD: 0.25, Known: true})
	if f := bk.gatewayGate(gk); f == nil || !strings.Contains(f.msg, "spent 1.0000 USD") {
		t.Fatalf("during the outage: %+v, want a refusal at 1 USD counted locally", f)
	}
	rp.Start()
	c := redisClient(t, rp.Addr)
	// the probe notices Redis within a second or so; the next gate
	// pushes the spend counted meanwhile
	eventually(t, 10*time.Second, "spend pushed after the outage", func() bool {
		bk.gatewayGate(gk)
		v, err := c.HVals(t.Context(), name).Result()
		return err == nil && len(v) == 1 && v[0] == "0.75"
	})
	if spent, _ := e.spend.state(r, budgetNow()); spent != 0.75 {
		t.Fatalf("after the outage the instance sees %v, want the shared 0.75 (the 0.25 before the outage was lost with Redis' memory)", spent)
	}
}
