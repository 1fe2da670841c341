package caddymodule

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// stalledSpendStore is a shared spend store that takes every read and
// answers none until released (it ignores the caller's deadline, as a
// hung connection would until its timeout), then answers figures.
type stalledSpendStore struct {
	reads   atomic.Int64
	release chan struct{}
	once    sync.Once
	figures map[int64]float64 // what every record holds once released
}

func (s *stalledSpendStore) open() { s.once.Do(func() { close(s.release) }) }

func (s *stalledSpendStore) addSpend(ctx context.Context, name string, add map[int64]float64, ttl time.Duration, stale []int64) (map[int64]float64, error) {
	<-s.release
	return map[int64]float64{}, nil
}

func (s *stalledSpendStore) loadSpend(ctx context.Context, names []string) ([]map[int64]float64, error) {
	s.reads.Add(1)
	<-s.release
	out := make([]map[int64]float64, len(names))
	for i := range out {
		out[i] = map[int64]float64{}
		for b, v := range s.figures {
			out[i][b] = v
		}
	}
	return out, nil
}

// TestBudgetGatesNeverWaitOnStalledStore: in cluster mode a request's
// budget gates (the gateway key's, then the pool's) make one read of
// the shared figures between them, not one each, and a store that does
// not answer does not hold the request: it is admitted on the figures
// mirrored so far while the read goes on; once the store answers, its
// figures refuse the next request.
func TestBudgetGatesNeverWaitOnStalledStore(t *testing.T) {
	shiftBudgetClock(t, time.Date(2031, 5, 1, 10, 0, 0, 0, time.UTC))
	r, _ := (&BudgetSpec{AmountUSD: 1, Period: "daily"}).compile()
	store := &stalledSpendStore{release: make(chan struct{}),
		figures: map[int64]float64{r.period.bucket(budgetNow()): 1.5}}
	t.Cleanup(store.open)
	gw := &budgetEntry{rule: r, scope: budgetScopeGatewayKey, name: "team", spend: &scopeSpend{buckets: map[int64]float64{}, shared: true}, shared: "spend:{gateway_key:team}"}
	pe := &budgetEntry{rule: r, scope: budgetScopePool, name: "main", pool: "main", spend: &scopeSpend{buckets: map[int64]float64{}, shared: true}, shared: "spend:{pool:main}"}
	bk := &budgetBook{logger: zap.NewNop(), shared: store, gws: map[string]*budgetEntry{"team": gw},
		pools: map[string]*budgetEntry{"main": pe}, all: []*budgetEntry{gw, pe}}
	gk, p := &gwKey{id: "team"}, &pool{name: "main"}

	done := make(chan [2]*loopFailure, 1)
	go func() { done <- [2]*loopFailure{bk.gatewayGate(gk), bk.poolGate(p)} }()
	select {
	case f := <-done:
		if f[0] != nil || f[1] != nil {
			t.Fatalf("refused on figures never read: %+v %+v", f[0], f[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the budget gates waited for a shared store that does not answer")
	}
	if n := store.reads.Load(); n != 1 {
		t.Fatalf("%d reads of the shared store for one request's two gates, want 1", n)
	}
	store.open()
	eventually(t, 5*time.Second, "the store's figures reach the gates", func() bool {
		f := bk.gatewayGate(gk)
		return f != nil && f.status == http.StatusTooManyRequests && strings.Contains(f.msg, "spent 1.5000 USD")
	})
	if f := bk.poolGate(p); f == nil || !strings.Contains(f.msg, `pool "main" is over its budget`) {
		t.Fatalf("pool gate after the store answered: %+v", f)
	}
}

// TestBudgetSpendEventsMirrored: the spend an instance books reaches the
// other instances' figures as an event carrying the shared record's new
// figures, with no read of their own; an event of a pool named S is not
// taken for one.
func TestBudgetSpendEventsMirrored(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	r, _ := (&BudgetSpec{AmountUSD: 1, Period: "daily"}).compile()
	rbA := newRedisBackend(&redis.Options{Addr: addr}, prefix, "", addr, time.Minute, time.Second, zap.NewNop())
	rbB := newRedisBackend(&redis.Options{Addr: addr}, prefix, "", addr, time.Minute, time.Second, zap.NewNop())
	t.Cleanup(func() { _ = rbA.Destruct(); _ = rbB.Destruct() })
	name := prefix + "spend:{gateway_key:ev}:" + r.period.signature()
	e := &budgetEntry{rule: r, scope: budgetScopeGatewayKey, name: "ev", spend: &scopeSpend{buckets: map[int64]float64{}, shared: true}, shared: name}
	a := &budgetBook{logger: zap.NewNop(), shared: rbA, gws: map[string]*budgetEntry{"ev": e}, all: []*budgetEntry{e}}
	other := &scopeSpend{buckets: map[int64]float64{}, shared: true} // another instance's spend of the scope
	sharedSpends.Store(name, other)
	t.Cleanup(func() { sharedSpends.Delete(name) })
	c := redisClient(t, addr)
	eventually(t, 5*time.Second, "both instances subscribed", func() bool {
		n, err := c.PubSubNumSub(t.Context(), prefix+"events").Result()
		return err == nil && n[prefix+"events"] >= 2
	})
	a.charge(spendCharge{GatewayKey: "ev", USD: 0.6, Known: true})
	eventually(t, 5*time.Second, "the spend event mirrored", func() bool {
		spent, _ := other.state(r, budgetNow())
		return spent == 0.6
	})
	a.charge(spendCharge{GatewayKey: "ev", USD: 0.5, Known: true})
	eventually(t, 5*time.Second, "the second spend event mirrored", func() bool {
		spent, reset := other.state(r, budgetNow())
		return spent == 1.1 && !reset.IsZero()
	})
	for _, bad := range []string{"S|inst|fp|c|0|-|0", "S|inst||name", "S|inst|1=x|name", "S|inst"} {
		if _, _, _, ok := parseSpendEvent(bad); ok {
			t.Errorf("%q parsed as a spend event", bad)
		}
	}
	if inst, n, f, ok := parseSpendEvent("S|i1|7=0.25,8=1|spend:{pool:a|b}:d"); !ok || inst != "i1" || n != "spend:{pool:a|b}:d" || f[7] != 0.25 || f[8] != 1 {
		t.Errorf("parsed %v %q %q %v", ok, inst, n, f)
	}
}
