package caddymodule

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
)

// gateTestBook returns a book over pool "gp" of n keys k0..k(n-1), each
// with the key budget spec, gated and watched as provisionBudgets and
// publishBudgets leave a book, and the keys' pool.
func gateTestBook(t *testing.T, n int, spec BudgetSpec) (*budgetBook, *pool, *keypool.Pool) {
	t.Helper()
	r, err := spec.compile()
	if err != nil {
		t.Fatal(err)
	}
	kcs := make([]keypool.KeyConfig, n)
	for i := range kcs {
		kcs[i] = keypool.KeyConfig{Fingerprint: "gfp" + strconv.Itoa(i), ID: "k" + strconv.Itoa(i)}
	}
	kp, err := keypool.New("gp", keypool.Settings{}, kcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &budgetBook{logger: zap.NewNop(), keys: map[string]map[string]*budgetEntry{"gp": {}}, pkeys: map[string][]*budgetEntry{},
		gws: map[string]*budgetEntry{}, pools: map[string]*budgetEntry{}}
	for i := 0; i < n; i++ {
		id := "k" + strconv.Itoa(i)
		e := &budgetEntry{rule: r, scope: budgetScopeKey, name: "gp/" + id, pool: "gp", keyID: id, fp: "gfp" + strconv.Itoa(i), kp: kp,
			spend: &scopeSpend{buckets: map[int64]float64{}}}
		b.keys["gp"][id] = e
		b.pkeys["gp"] = append(b.pkeys["gp"], e)
		b.all = append(b.all, e)
	}
	b.buildGates()
	b.watchSpends()
	t.Cleanup(b.unwatchSpends)
	return b, &pool{name: "gp"}, kp
}

// heldKeys lists the ids of the pool's keys held for their budget.
func heldKeys(kp *keypool.Pool) string {
	out := ""
	for _, s := range kp.Snapshot() {
		if s.State == keypool.StateBudget {
			out += s.ID + " "
		}
	}
	return out
}

// TestKeyGateChecksOnlyWhatChanged: a pool's gate checks no key budget
// on a request when nothing changed (a spend gauge set aside stays as
// it was), checks the one whose spend changed without a charge (a spend
// event of another instance) and holds its key, and checks every one
// when the day ends (the holds are lifted at midnight) or the clock goes
// back (held again).
func TestKeyGateChecksOnlyWhatChanged(t *testing.T) {
	day := time.Date(2031, 3, 4, 20, 0, 0, 0, time.UTC)
	shiftBudgetClock(t, day)
	bk, p, kp := gateTestBook(t, 3, BudgetSpec{AmountUSD: 1, Period: "daily"})
	if f := bk.poolGate(p); f != nil || heldKeys(kp) != "" {
		t.Fatalf("fresh budgets: %+v, held %q", f, heldKeys(kp))
	}
	k0, k1 := bk.keys["gp"]["k0"], bk.keys["gp"]["k1"]
	k0.spendGauge().Set(-1) // a check sets it back to the spend
	for i := 0; i < 3; i++ {
		bk.poolGate(p)
	}
	if got := gaugeValue(t, k0); got != -1 {
		t.Fatalf("k0's budget checked on requests that changed nothing (gauge %v)", got)
	}
	// another instance's spend reaches k1's figures as an event
	k1.spend.mirror(map[int64]float64{k1.rule.period.bucket(budgetNow()): 1.5})
	if heldKeys(kp) != "" {
		t.Fatalf("held before any gate: %q", heldKeys(kp))
	}
	bk.poolGate(p)
	if got := heldKeys(kp); got != "k1 " {
		t.Fatalf("after k1's spend event the gate holds %q, want k1", got)
	}
	if got := gaugeValue(t, k0); got != -1 {
		t.Fatalf("k0 checked for k1's change (gauge %v)", got)
	}
	if got := gaugeValue(t, k1); got != 1.5 {
		t.Fatalf("k1's spend gauge %v, want 1.5", got)
	}
	// a charge holds its key at once, as before
	bk.charge(spendCharge{Pool: "gp", KeyID: "k2", USD: 1, Known: true})
	if got := heldKeys(kp); got != "k1 k2 " {
		t.Fatalf("after k2's charge: held %q", got)
	}
	shiftBudgetClock(t, time.Date(2031, 3, 5, 0, 0, 1, 0, time.UTC))
	bk.poolGate(p)
	if got := heldKeys(kp); got != "" {
		t.Fatalf("after midnight still held: %q", got)
	}
	if got := gaugeValue(t, k0); got != 0 {
		t.Fatalf("k0 not checked in the new day (gauge %v)", got)
	}
	shiftBudgetClock(t, day.Add(time.Hour)) // the clock goes back
	bk.poolGate(p)
	if got := heldKeys(kp); got != "k1 k2 " {
		t.Fatalf("back in the spent day: held %q, want k1 and k2", got)
	}
}

// TestKeyGateRollingWindow: a key over a rolling budget is released by
// the first request once enough of the window has passed, with no
// charge or spend change in between.
func TestKeyGateRollingWindow(t *testing.T) {
	start := time.Date(2031, 3, 6, 10, 0, 0, 0, time.UTC)
	shiftBudgetClock(t, start)
	bk, p, kp := gateTestBook(t, 2, BudgetSpec{AmountUSD: 1, Period: "1h"})
	bk.charge(spendCharge{Pool: "gp", KeyID: "k0", USD: 2, Known: true})
	bk.poolGate(p)
	if got := heldKeys(kp); got != "k0 " {
		t.Fatalf("held %q, want k0", got)
	}
	_, reset := bk.keys["gp"]["k0"].spend.state(bk.keys["gp"]["k0"].rule, budgetNow())
	shiftBudgetClock(t, reset.Add(-time.Second))
	bk.poolGate(p)
	if got := heldKeys(kp); got != "k0 " {
		t.Fatalf("a second before the spend leaves the window: held %q, want k0", got)
	}
	shiftBudgetClock(t, reset)
	bk.poolGate(p)
	if got := heldKeys(kp); got != "" {
		t.Fatalf("at the window's reset %v: held %q, want none", reset, got)
	}
}

// TestKeyGateReloadOverlap: while two configurations with different
// budgets for the same key overlap (a reload), each request of the one
// that serves puts back the hold its budget calls for, whatever the other
// configuration's last check did, as when every request checked every key.
func TestKeyGateReloadOverlap(t *testing.T) {
	shiftBudgetClock(t, time.Date(2031, 3, 7, 9, 0, 0, 0, time.UTC))
	oldBk, p, kp := gateTestBook(t, 1, BudgetSpec{AmountUSD: 2, Period: "daily"})
	r, _ := (&BudgetSpec{AmountUSD: 1, Period: "daily"}).compile()
	e := oldBk.keys["gp"]["k0"]
	ne := &budgetEntry{rule: r, scope: budgetScopeKey, name: e.name, pool: "gp", keyID: "k0", fp: e.fp, kp: kp, spend: e.spend}
	newBk := &budgetBook{logger: zap.NewNop(), keys: map[string]map[string]*budgetEntry{"gp": {"k0": ne}},
		pkeys: map[string][]*budgetEntry{"gp": {ne}}, all: []*budgetEntry{ne}}
	newBk.buildGates()
	newBk.watchSpends()
	t.Cleanup(newBk.unwatchSpends)
	newBk.poolGate(p)
	newBk.charge(spendCharge{Pool: "gp", KeyID: "k0", USD: 1.5, Known: true})
	newBk.poolGate(p)
	if got := heldKeys(kp); got != "k0 " {
		t.Fatalf("new budget of 1 USD at 1.5: held %q", got)
	}
	oldBk.poolGate(p) // the old configuration's 2 USD lifts the hold
	if got := heldKeys(kp); got != "" {
		t.Fatalf("old budget of 2 USD at 1.5: held %q", got)
	}
	newBk.poolGate(p)
	if got := heldKeys(kp); got != "k0 " {
		t.Fatalf("the new configuration's next request: held %q, want k0 back", got)
	}
}

// TestKeyGateConcurrent: requests, charges and spend events racing on a
// gated pool leave, once they stop, every key held exactly when its
// budget is used up (run with -race).
func TestKeyGateConcurrent(t *testing.T) {
	shiftBudgetClock(t, time.Date(2031, 3, 8, 12, 0, 0, 0, time.UTC))
	const n = 40
	bk, p, kp := gateTestBook(t, n, BudgetSpec{AmountUSD: 1, Period: "daily"})
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := 0; i < 400; i++ {
				k := rng.IntN(n)
				switch i % 3 {
				case 0:
					bk.charge(spendCharge{Pool: "gp", KeyID: "k" + strconv.Itoa(k), USD: 0.05, Known: true})
				case 1:
					e := bk.keys["gp"]["k"+strconv.Itoa(k)]
					e.spend.mirror(map[int64]float64{e.rule.period.bucket(budgetNow()): rng.Float64() * 1.2})
				default:
					bk.poolGate(p)
				}
			}
		}()
	}
	wg.Wait()
	bk.poolGate(p)
	want := ""
	for i := 0; i < n; i++ {
		e := bk.keys["gp"]["k"+strconv.Itoa(i)]
		if spent, _ := e.spend.state(e.rule, budgetNow()); reached(spent, 1) {
			want += "k" + strconv.Itoa(i) + " "
		}
	}
	if got := heldKeys(kp); got != want {
		t.Fatalf("held %q, want %q", got, want)
	}
	if want == "" {
		t.Fatal("no key reached its budget: the test proves nothing")
	}
}

// TestBudgetPeriodCurrent: the span of a bucket is the calendar day or
// month in the period's time zone (a Berlin day of 23 hours when the
// clocks go forward), or the rolling window's step.
func TestBudgetPeriodCurrent(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	cases := []struct {
		spec     BudgetSpec
		at       time.Time
		from, to time.Time
	}{
		{BudgetSpec{AmountUSD: 1, Period: "daily"}, time.Date(2031, 3, 4, 20, 0, 0, 0, time.UTC),
			time.Date(2031, 3, 4, 0, 0, 0, 0, time.UTC), time.Date(2031, 3, 5, 0, 0, 0, 0, time.UTC)},
		{BudgetSpec{AmountUSD: 1, Period: "daily", Timezone: "Europe/Berlin"}, time.Date(2031, 3, 30, 12, 0, 0, 0, time.UTC),
			time.Date(2031, 3, 30, 0, 0, 0, 0, berlin), time.Date(2031, 3, 31, 0, 0, 0, 0, berlin)},
		{BudgetSpec{AmountUSD: 1, Period: "monthly", Timezone: "Europe/Berlin"}, time.Date(2031, 12, 31, 23, 30, 0, 0, time.UTC),
			time.Date(2032, 1, 1, 0, 0, 0, 0, berlin), time.Date(2032, 2, 1, 0, 0, 0, 0, berlin)},
		{BudgetSpec{AmountUSD: 1, Period: "24h"}, time.Date(2031, 3, 4, 20, 30, 0, 0, time.UTC),
			time.Date(2031, 3, 4, 20, 0, 0, 0, time.UTC), time.Date(2031, 3, 4, 21, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		r, err := c.spec.compile()
		if err != nil {
			t.Fatal(err)
		}
		from, until := r.period.current(c.at)
		if from != c.from.UnixNano() || until != c.to.UnixNano() {
			t.Errorf("%s at %v: [%v, %v), want [%v, %v)", r.label, c.at, time.Unix(0, from).UTC(), time.Unix(0, until).UTC(), c.from.UTC(), c.to.UTC())
		}
		if until-from == 23*int64(time.Hour) != (c.spec.Timezone != "" && c.spec.Period == "daily") {
			t.Errorf("%s: a span of %v", r.label, time.Duration(until-from))
		}
	}
}

// gaugeValue reads an entry's spend gauge.
func gaugeValue(t *testing.T, e *budgetEntry) float64 {
	t.Helper()
	var m dto.Metric
	if err := e.spendGauge().Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// recordingSpendStore is a shared spend store that answers at once and
// records the stale buckets each addition deletes; it fails while down.
type recordingSpendStore struct {
	mu    sync.Mutex
	stale [][]int64
	down  bool
	rec   map[int64]float64 // the one record's figures
}

func (s *recordingSpendStore) addSpend(_ context.Context, _ string, add map[int64]float64, _ time.Duration, stale []int64) (map[int64]float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, errors.New("store down")
	}
	s.stale = append(s.stale, append([]int64(nil), stale...))
	if s.rec == nil {
		s.rec = map[int64]float64{}
	}
	for b, v := range add {
		s.rec[b] += v
	}
	for _, b := range stale {
		delete(s.rec, b)
	}
	return maps.Clone(s.rec), nil
}

func (s *recordingSpendStore) loadSpend(_ context.Context, names []string) ([]map[int64]float64, error) {
	return make([]map[int64]float64, len(names)), nil
}

func (s *recordingSpendStore) last() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stale[len(s.stale)-1]
}

// TestPushDeletesStaleBucketsOnce: in cluster mode the first push of a
// budget deletes the 24 buckets before its window from the shared
// record; later pushes in the same window delete none, one a step later
// deletes the one bucket that left the window, a push after a failed one
// deletes what the failed one would have, and spend kept from an older
// bucket is deleted as it is added.
func TestPushDeletesStaleBucketsOnce(t *testing.T) {
	at := time.Date(2031, 3, 9, 10, 30, 0, 0, time.UTC)
	shiftBudgetClock(t, at)
	r, _ := (&BudgetSpec{AmountUSD: 100, Period: "24h"}).compile()
	store := &recordingSpendStore{}
	e := &budgetEntry{rule: r, scope: budgetScopeGatewayKey, name: "st", spend: &scopeSpend{buckets: map[int64]float64{}, shared: true}, shared: "spend:{gateway_key:st}"}
	bk := &budgetBook{logger: zap.NewNop(), shared: store, gws: map[string]*budgetEntry{"st": e}, all: []*budgetEntry{e}}
	first := r.period.first(r.period.bucket(at))
	span := func(hi, lo int64) []int64 {
		var out []int64
		for b := hi; b >= lo; b-- {
			out = append(out, b)
		}
		return out
	}
	charge := func() { bk.charge(spendCharge{GatewayKey: "st", USD: 0.5, Known: true}) }
	charge()
	if got, want := store.last(), span(first-1, first-24); !slices.Equal(got, want) {
		t.Fatalf("first push deleted %v, want %v", got, want)
	}
	charge()
	if got := store.last(); len(got) != 0 {
		t.Fatalf("second push in the same window deleted %v, want none", got)
	}
	shiftBudgetClock(t, at.Add(time.Hour)) // one step on
	charge()
	if got := store.last(); !slices.Equal(got, []int64{first}) {
		t.Fatalf("a step later the push deleted %v, want [%d]", got, first)
	}
	store.mu.Lock()
	store.down = true
	store.mu.Unlock()
	shiftBudgetClock(t, at.Add(3*time.Hour))
	charge()
	store.mu.Lock()
	store.down = false
	n := len(store.stale)
	store.mu.Unlock()
	charge()
	if got := store.last(); n != 3 || !slices.Equal(got, span(first+2, first+1)) {
		t.Fatalf("after a failed push (%d pushes answered): deleted %v, want [%d %d]", n, got, first+2, first+1)
	}
	// spend of an old bucket still pending (kept from before the window moved)
	e.spend.restorePending(map[int64]float64{first - 30: 0.25})
	charge()
	if got := store.last(); !slices.Equal(got, []int64{first - 30}) {
		t.Fatalf("pending spend of an old bucket: deleted %v, want [%d]", got, first-30)
	}
	if spent, _ := e.spend.state(r, budgetNow()); spent != 3 {
		t.Fatalf("spent %v, want 3 (six charges of 0.5 in the window)", spent)
	}
	if _, ok := store.rec[first-30]; ok || len(store.rec) != 3 {
		t.Fatalf("the shared record %v, want the three buckets charged in the window", store.rec)
	}
}
