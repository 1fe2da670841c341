package caddymodule

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
)

// Benchmarks of the budget gates a request passes (per request, before a
// key is chosen) and of booking a request's cost in cluster mode. They
// run in-process on hand-built books, no gateway or socket:
//
//	go test -run '^$' -bench 'BenchmarkBudget' -benchmem -count 5 ./caddymodule/

// benchBudgetBook returns a book over one pool "bp" of n keys, each with
// a daily key budget far from its limit, and a pool budget, as
// provisionBudgets builds it (the key budgets hold their keys in kp).
func benchBudgetBook(tb testing.TB, n int) (*budgetBook, *pool) {
	tb.Helper()
	r, err := (&BudgetSpec{AmountUSD: 1e9, Period: "daily", WarnPercent: 80}).compile()
	if err != nil {
		tb.Fatal(err)
	}
	kcs := make([]keypool.KeyConfig, n)
	for i := range kcs {
		kcs[i] = keypool.KeyConfig{Fingerprint: "fp" + strconv.Itoa(i), ID: "k" + strconv.Itoa(i)}
	}
	kp, err := keypool.New("bp", keypool.Settings{}, kcs, nil)
	if err != nil {
		tb.Fatal(err)
	}
	b := &budgetBook{logger: zap.NewNop(), keys: map[string]map[string]*budgetEntry{"bp": {}}, pkeys: map[string][]*budgetEntry{},
		gws: map[string]*budgetEntry{}, pools: map[string]*budgetEntry{}}
	pe := &budgetEntry{rule: r, scope: budgetScopePool, name: "bp", pool: "bp", spend: &scopeSpend{buckets: map[int64]float64{}}}
	b.pools["bp"] = pe
	b.all = append(b.all, pe)
	for i := 0; i < n; i++ {
		id := "k" + strconv.Itoa(i)
		e := &budgetEntry{rule: r, scope: budgetScopeKey, name: "bp/" + id, pool: "bp", keyID: id, fp: "fp" + strconv.Itoa(i), kp: kp,
			spend: &scopeSpend{buckets: map[int64]float64{}}}
		b.keys["bp"][id] = e
		b.pkeys["bp"] = append(b.pkeys["bp"], e)
		b.all = append(b.all, e)
	}
	return b, &pool{name: "bp"}
}

// BenchmarkBudgetPoolGate: the pool gate of one request on a pool of n
// keys that each have a budget, none near its limit (the common case):
// "every-key" checks each key budget on each request (a book without
// gates, as every book was before keyGate), "gated" as provisioned.
func BenchmarkBudgetPoolGate(b *testing.B) {
	for _, gated := range []bool{false, true} {
		for _, n := range []int{10, 1000} {
			name := "every-key"
			if gated {
				name = "gated"
			}
			b.Run(name+"/keys="+strconv.Itoa(n), func(b *testing.B) {
				bk, p := benchBudgetBook(b, n)
				if gated {
					bk.buildGates()
					bk.watchSpends()
					b.Cleanup(bk.unwatchSpends)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if f := bk.poolGate(p); f != nil {
						b.Fatal(f.msg)
					}
				}
			})
		}
	}
}

// nullSpendStore is a shared spend store that answers at once, with the
// figures added (no network): what remains is the gateway's own work.
type nullSpendStore struct{}

func (nullSpendStore) addSpend(_ context.Context, _ string, add map[int64]float64, _ time.Duration, _ []int64) (map[int64]float64, error) {
	return add, nil
}

func (nullSpendStore) loadSpend(_ context.Context, names []string) ([]map[int64]float64, error) {
	return make([]map[int64]float64, len(names)), nil
}

// BenchmarkBudgetChargeShared: booking one request's cost in cluster mode
// against a key budget (a rolling 24h window) and a pool budget, with a
// store that answers at once.
func BenchmarkBudgetChargeShared(b *testing.B) {
	r, _ := (&BudgetSpec{AmountUSD: 1e12, Period: "24h"}).compile()
	ke := &budgetEntry{rule: r, scope: budgetScopeKey, name: "bp/k1", pool: "bp", keyID: "k1", spend: &scopeSpend{buckets: map[int64]float64{}, shared: true}, shared: "spend:{key:bp/k1}"}
	pe := &budgetEntry{rule: r, scope: budgetScopePool, name: "bp", pool: "bp", spend: &scopeSpend{buckets: map[int64]float64{}, shared: true}, shared: "spend:{pool:bp}"}
	bk := &budgetBook{logger: zap.NewNop(), shared: nullSpendStore{}, keys: map[string]map[string]*budgetEntry{"bp": {"k1": ke}},
		pools: map[string]*budgetEntry{"bp": pe}, all: []*budgetEntry{ke, pe}}
	c := spendCharge{Pool: "bp", KeyID: "k1", USD: 0.001, Known: true}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bk.charge(c)
	}
}
