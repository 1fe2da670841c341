package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// provisionBudgets compiles the configured budgets (keys, gateway keys,
// pools) into h.budgets (nil when there is none), attaches them to the
// process-wide spend, and applies the key budgets at once: a key whose
// budget is used up is held out of rotation, a key that has no budget
// (any more) is released. It runs after provisionState, so the shared
// store is known.
func (h *Handler) provisionBudgets(ctx caddy.Context) error {
	b := &budgetBook{logger: h.logger.Named("budget"),
		keys: map[string]map[string]*budgetEntry{}, pkeys: map[string][]*budgetEntry{},
		gws: map[string]*budgetEntry{}, pools: map[string]*budgetEntry{}}
	var rb *redisBackend
	for _, p := range h.pools {
		if r, ok := p.kp.Backend().(*redisBackend); ok {
			rb = r
			b.shared = r
			break
		}
	}
	add := func(e *budgetEntry) {
		id := e.scope + "\x00" + e.name + "\x00" + e.rule.period.signature()
		if e.scope == budgetScopeKey {
			id = e.scope + "\x00" + e.pool + "/" + e.fp + "\x00" + e.rule.period.signature()
		}
		e.spend = ledgerScope(id)
		if rb != nil {
			sn := e.name
			if e.scope == budgetScopeKey {
				sn = e.pool + "/" + rb.sid(e.fp) // fingerprints are per installation
			}
			e.shared = rb.prefix + "spend:{" + e.scope + ":" + sn + "}:" + e.rule.period.signature()
			sharedSpends.Store(e.shared, e.spend)
		}
		e.spend.setShared(rb != nil)
		b.all = append(b.all, e)
	}
	for i, gc := range h.GatewayKeys {
		if gc == nil || gc.Budget == nil {
			continue
		}
		r, err := gc.Budget.compile()
		if err != nil {
			return fmt.Errorf("gateway key %d: %v", i+1, err)
		}
		// provisionGatewayKeys appended h.APIKeys first, then these in order
		gk := h.gatewayKeys[len(h.APIKeys)+i]
		e := &budgetEntry{rule: r, scope: budgetScopeGatewayKey, name: gk.id}
		b.gws[gk.id] = e
		add(e)
	}
	for _, pc := range h.Pools {
		p := h.poolByName(pc.Name)
		if p == nil {
			continue
		}
		if pc.Budget != nil {
			r, err := pc.Budget.compile()
			if err != nil {
				return fmt.Errorf("pool %q: %v", pc.Name, err)
			}
			e := &budgetEntry{rule: r, scope: budgetScopePool, name: p.name, pool: p.name}
			b.pools[p.name] = e
			add(e)
		}
		budgeted := map[string]bool{}
		for i, kc := range pc.Keys {
			if kc == nil || kc.Budget == nil {
				continue
			}
			uk := p.keyAt(i)
			if uk == nil {
				continue
			}
			r, err := kc.Budget.compile()
			if err != nil {
				return fmt.Errorf("pool %q: key %s: %v", pc.Name, uk.id, err)
			}
			e := &budgetEntry{rule: r, scope: budgetScopeKey, name: p.name + "/" + uk.id, pool: p.name, keyID: uk.id, fp: uk.fp, kp: p.kp}
			if b.keys[p.name] == nil {
				b.keys[p.name] = map[string]*budgetEntry{}
			}
			b.keys[p.name][uk.id] = e
			b.pkeys[p.name] = append(b.pkeys[p.name], e)
			budgeted[uk.fp] = true
			add(e)
		}
		for fp := range p.keys {
			if !budgeted[fp] {
				p.kp.Hold(fp, "budget", 0) // a budget removed by a reload
			}
		}
	}
	if len(b.all) == 0 {
		h.budgets = nil
		return nil
	}
	b.buildGates()
	now := budgetNow()
	for _, e := range b.pkeys {
		b.pull(e, now)
	}
	for _, e := range b.all {
		if e.scope == budgetScopeKey {
			e.spend.resetHold() // the pool may be new to this process, the budget changed
		}
		b.check(e, now)
	}
	h.budgets = b
	publishBudgets(ctx, b)
	return nil
}

// poolByName returns the provisioned pool named name, nil when none.
func (h *Handler) poolByName(name string) *pool {
	for _, p := range h.pools {
		if p.name == name {
			return p
		}
	}
	return nil
}

// keyAt returns the pool's key configured at position i (0-based).
func (p *pool) keyAt(i int) *upstreamKey {
	if i < 0 || i >= len(p.order) {
		return nil
	}
	return p.keys[p.order[i]]
}

// setShared switches the scope between this instance's figures and the
// shared store's mirror (a reload that changed the state backend): spend
// not yet shared is kept as local figures or pending spend.
func (s *scopeSpend) setShared(shared bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shared == shared {
		return
	}
	if shared {
		// what this instance counted alone is added to the cluster's
		s.pending, s.buckets = s.buckets, map[int64]float64{}
	} else {
		for b, v := range s.pending {
			s.buckets[b] += v
		}
		s.pending = nil
	}
	s.shared = shared
	s.touchLocked(nil)
}

// resetHold forgets what the pool was told, so the next check places
// or lifts the hold whatever it was (a new process, or a reload that
// changed the budget).
func (s *scopeSpend) resetHold() {
	s.mu.Lock()
	s.heldUntil = holdUnknown
	s.touchLocked(nil)
	s.mu.Unlock()
}

// holdUnknown marks a key's hold as not known to match the budget.
var holdUnknown = time.Unix(1, 0)

// The budgets' metrics:
//
//	llm_gateway_budget_spend_usd{scope,name}        gauge: spend in the current period or window
//	llm_gateway_budget_limit_usd{scope,name}        gauge: the configured limit
//	llm_gateway_budget_warnings_total{scope,name}   counter: warning levels reached
//	llm_gateway_budget_exceeded_total{scope,name}   counter: limits reached
//
// scope is "key", "gateway_key" or "pool"; name is "<pool>/<key id>",
// the gateway key's id, or the pool's name.
var budgetMetricsOnce = struct {
	sync.Once
	m *budgetCollectors
}{}

type budgetCollectors struct {
	spend, limit       *prometheus.GaugeVec
	warnings, exceeded *prometheus.CounterVec
}

func budgetMetrics() *budgetCollectors {
	budgetMetricsOnce.Do(func() {
		labels := []string{"scope", "name"}
		budgetMetricsOnce.m = &budgetCollectors{
			spend: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "budget_spend_usd",
				Help: "Spend in US dollars counted against a budget in its current period or window, by scope (key, gateway_key, pool) and name."}, labels),
			limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "budget_limit_usd",
				Help: "A budget's limit in US dollars per period, by scope and name."}, labels),
			warnings: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "budget_warnings_total",
				Help: "Times a budget's warning level was reached (once per period), by scope and name."}, labels),
			exceeded: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "budget_exceeded_total",
				Help: "Times a budget was used up (once per period), by scope and name."}, labels),
		}
	})
	return budgetMetricsOnce.m
}

// budgetCollectorList is what registerMetrics adds to a config's registry.
func budgetCollectorList() []prometheus.Collector {
	m := budgetMetrics()
	return []prometheus.Collector{m.spend, m.limit, m.warnings, m.exceeded}
}

// budgetEvent is the data of an SSE `budget` event (GET
// /llm_gateway/events): a budget reached its warning level or its limit.
type budgetEvent struct {
	// Type is "budget_warning" or "budget_exceeded".
	Type string `json:"type"`
	// Scope is "key", "gateway_key" or "pool"; Name is "<pool>/<key
	// id>", the gateway key's id or the pool's name; Pool and Key name
	// the pool and key where they apply.
	Scope string `json:"scope"`
	Name  string `json:"name"`
	Pool  string `json:"pool,omitempty"`
	Key   string `json:"key,omitempty"`
	// Budget describes the budget, e.g. "20 USD monthly"; LimitUSD and
	// SpentUSD are its limit and the spend in the period.
	Budget   string  `json:"budget"`
	LimitUSD float64 `json:"limit_usd"`
	SpentUSD float64 `json:"spent_usd"`
	// ResetsAt is when a used-up budget allows again (zero for a warning).
	ResetsAt time.Time `json:"resets_at,omitzero"`
	// Time is when it happened.
	Time time.Time `json:"time"`
}

// budgetEvents keeps the latest budget events for the events streams,
// numbered from 1.
var budgetEvents = struct {
	sync.Mutex
	seq  uint64
	list []budgetEvent // the last maxBudgetEvents, the newest last
}{}

const maxBudgetEvents = 256

func publishBudgetEvent(e *budgetEntry, typ string, spent float64, now, reset time.Time) {
	ev := budgetEvent{Type: typ, Scope: e.scope, Name: e.name, Pool: e.pool, Key: e.keyID, Budget: e.rule.label,
		LimitUSD: e.rule.limit, SpentUSD: spent, Time: now.UTC()}
	if typ == "budget_exceeded" {
		ev.ResetsAt = reset.UTC()
	}
	budgetEvents.Lock()
	defer budgetEvents.Unlock()
	budgetEvents.seq++
	budgetEvents.list = append(budgetEvents.list, ev)
	if len(budgetEvents.list) > maxBudgetEvents {
		budgetEvents.list = budgetEvents.list[len(budgetEvents.list)-maxBudgetEvents:]
	}
}

// budgetEventsSince returns the events after number seq and the number of
// the newest.
func budgetEventsSince(seq uint64) ([]budgetEvent, uint64) {
	budgetEvents.Lock()
	defer budgetEvents.Unlock()
	n := budgetEvents.seq - seq
	if n > uint64(len(budgetEvents.list)) {
		n = uint64(len(budgetEvents.list))
	}
	return append([]budgetEvent(nil), budgetEvents.list[uint64(len(budgetEvents.list))-n:]...), budgetEvents.seq
}

// budgetView is one budget in GET /llm_gateway/budgets and in a key's
// entry of GET /llm_gateway/pools.
type budgetView struct {
	// Scope is "key", "gateway_key" or "pool"; Name as in budgetEvent.
	Scope string `json:"scope"`
	Name  string `json:"name"`
	// Budget describes it, e.g. "20 USD monthly"; Period is "daily",
	// "monthly" or the rolling window ("24h"); Timezone that of a
	// calendar period.
	Budget   string `json:"budget"`
	Period   string `json:"period"`
	Timezone string `json:"timezone,omitempty"`
	// LimitUSD, WarnUSD and SpentUSD are the limit, the warning level (0:
	// none) and the spend in the current period or window.
	LimitUSD float64 `json:"limit_usd"`
	WarnUSD  float64 `json:"warn_usd,omitempty"`
	SpentUSD float64 `json:"spent_usd"`
	// Exceeded is true while the budget is used up; ResetsAt is then when
	// it allows again, else when the current calendar period ends.
	Exceeded bool      `json:"exceeded"`
	ResetsAt time.Time `json:"resets_at,omitzero"`
}

// view renders an entry at now.
func (e *budgetEntry) view(now time.Time) budgetView {
	spent, reset := e.spend.state(e.rule, now)
	p := e.rule.period
	v := budgetView{Scope: e.scope, Name: e.name, Budget: e.rule.label, LimitUSD: e.rule.limit, WarnUSD: e.rule.warn,
		SpentUSD: spent, Exceeded: reached(spent, e.rule.limit)}
	if p.calendar != "" {
		v.Period, v.Timezone = p.calendar, p.loc.String()
		if reset.IsZero() {
			reset = p.dropAt(p.bucket(now))
		}
	} else {
		v.Period = p.window.String()
	}
	v.ResetsAt = reset.UTC()
	return v
}

// liveBudgets are the budget books of the running configurations (one
// per llm_gateway handler), the most recently provisioned last, for the
// admin API (which has no handler at hand). A book leaves when its
// configuration ends.
var liveBudgets struct {
	sync.Mutex
	books []*budgetBook
}

// publishBudgets makes b visible to the admin API until ctx is done, and
// sets its limits' metric; until then changes of its key budgets' spend
// queue them for their pool's keyGate.
func publishBudgets(ctx caddy.Context, b *budgetBook) {
	liveBudgets.Lock()
	liveBudgets.books = append(liveBudgets.books, b)
	liveBudgets.Unlock()
	m := budgetMetrics()
	for _, e := range b.all {
		m.limit.WithLabelValues(e.scope, e.name).Set(e.rule.limit)
	}
	b.watchSpends()
	if ctx.Context == nil {
		return
	}
	context.AfterFunc(ctx, func() {
		b.unwatchSpends()
		liveBudgets.Lock()
		defer liveBudgets.Unlock()
		for i, x := range liveBudgets.books {
			if x == b {
				liveBudgets.books = append(liveBudgets.books[:i:i], liveBudgets.books[i+1:]...)
				break
			}
		}
	})
}

// liveEntries returns the entries of the live books, the most recent
// configuration's where two name the same budget.
func liveEntries() []*budgetEntry {
	liveBudgets.Lock()
	defer liveBudgets.Unlock()
	seen := map[string]bool{}
	var out []*budgetEntry
	for i := len(liveBudgets.books) - 1; i >= 0; i-- {
		for _, e := range liveBudgets.books[i].all {
			if id := e.scope + "\x00" + e.name; !seen[id] {
				seen[id] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// budgetViews returns every live budget at now, sorted by scope and name.
func budgetViews(now time.Time) []budgetView {
	out := []budgetView{}
	for _, e := range liveEntries() {
		out = append(out, e.view(now))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Scope != out[j].Scope {
			return out[i].Scope < out[j].Scope
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// keyBudgetView returns the budget of a pool's key, nil when it has none.
func keyBudgetView(pool, keyID string, now time.Time) *budgetView {
	for _, e := range liveEntries() {
		if e.scope == budgetScopeKey && e.pool == pool && e.keyID == keyID {
			v := e.view(now)
			return &v
		}
	}
	return nil
}

// savedSpend is one scope's spend in the usage file: USD by bucket
// number, and whether the figures mirror the shared store (then they are
// not added to it again after a restart).
type savedSpend struct {
	Shared  bool               `json:"shared,omitempty"`
	Buckets map[string]float64 `json:"buckets"`
}

// spendSnapshot returns every scope's spend for the usage file, by ledger
// id; spend not yet shared counts as the scope's own.
func spendSnapshot() map[string]savedSpend {
	spendLedger.Lock()
	defer spendLedger.Unlock()
	out := make(map[string]savedSpend, len(spendLedger.m))
	for id, s := range spendLedger.m {
		s.mu.Lock()
		sv := savedSpend{Shared: s.shared && len(s.pending) == 0, Buckets: map[string]float64{}}
		for b, v := range s.buckets {
			sv.Buckets[strconv.FormatInt(b, 10)] += v
		}
		if len(s.pending) > 0 {
			// the shared store never got these: keep them as this
			// instance's, to be pushed after a restart
			sv.Buckets = map[string]float64{}
			for b, v := range s.pending {
				sv.Buckets[strconv.FormatInt(b, 10)] += v
			}
		}
		s.mu.Unlock()
		if len(sv.Buckets) > 0 {
			out[id] = sv
		}
	}
	return out
}

// restoreSpend puts saved spend into the ledger (once, before any budget
// is provisioned in this process).
func restoreSpend(saved map[string]savedSpend) {
	spendLedger.Lock()
	defer spendLedger.Unlock()
	for id, sv := range saved {
		s := &scopeSpend{buckets: map[int64]float64{}, shared: sv.Shared}
		for k, v := range sv.Buckets {
			if b, err := strconv.ParseInt(k, 10, 64); err == nil && v > 0 {
				s.buckets[b] = v
			}
		}
		spendLedger.m[id] = s
	}
}

// handleBudgets serves GET /llm_gateway/budgets: every configured budget
// (JSON array of budgetView) with its spend in the current period or
// window, sorted by scope and name. In cluster mode the figures are read
// from the shared store first (and key budgets applied), so every
// instance answers alike.
func (adminAPI) handleBudgets(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodGet); err != nil {
		return err
	}
	now := budgetNow()
	liveBudgets.Lock()
	books := append([]*budgetBook(nil), liveBudgets.books...)
	liveBudgets.Unlock()
	for _, b := range books {
		if b.shared != nil {
			b.pull(b.all, now)
			for _, e := range b.all {
				b.check(e, now)
			}
		}
	}
	return writeAdminJSON(w, budgetViews(now))
}
