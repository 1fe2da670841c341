package caddymodule

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/translate"
)

// spendCharge is the cost of one finished /v1 request, booked once when
// the request ends (a streamed request when its stream ends, abandoned or
// not). USD is meaningful only when Known; an unknown price is never 0.
type spendCharge struct {
	Pool       string    // the pool that served the request
	KeyID      string    // the upstream key id that served it
	GatewayKey string    // the caller's gateway key id ("" without auth)
	Model      string    // the upstream model priced
	USD        float64   // cost in US dollars
	Known      bool      // false: the model has no price (cost "unknown")
	Estimated  bool      // true: usage was estimated, not reported by the upstream
	At         time.Time // when the request ended
}

// Budget scopes, as the admin API, events, logs and metrics name them.
const (
	budgetScopeKey        = "key"
	budgetScopeGatewayKey = "gateway_key"
	budgetScopePool       = "pool"
)

// budgetClockOffset shifts the clock budgets read (budgetNow) by this many
// nanoseconds; tests move it to cross a period's end without sleeping.
var budgetClockOffset atomic.Int64

// budgetNow is the time budgets are counted at.
func budgetNow() time.Time { return time.Now().Add(time.Duration(budgetClockOffset.Load())) }

// budgetBook keeps spend against the budgets of one configuration (per
// upstream key, gateway key and pool). The spend itself lives in the
// process-wide spendLedger, so a reload keeps it. A nil *budgetBook
// books nothing and refuses nothing.
type budgetBook struct {
	logger *zap.Logger
	shared spendStore // nil: spend is this instance's (state memory)

	keys  map[string]map[string]*budgetEntry // pool -> key id -> entry
	pkeys map[string][]*budgetEntry          // pool -> its keys' entries
	gws   map[string]*budgetEntry            // gateway key id -> entry
	pools map[string]*budgetEntry            // pool -> entry
	all   []*budgetEntry
	gates map[string]*keyGate // pool -> its key budgets' gate (see keyGate)

	// cluster mode: the figures requests are admitted on are read at
	// most once per budgetFresh, by one pull at a time, which a request
	// waits for budgetWait at most (see refresh)
	pullMu   sync.Mutex
	pulling  chan struct{} // closed when the pull under way ends; nil: none
	pulledAt time.Time     // when the last pull began
}

// Cluster-mode budget reads: a request is admitted on figures read from
// the shared store less than budgetFresh before it (other instances'
// spend also arrives as spend events, as it is booked), and waits for a
// read budgetWait at most: a slow or unreachable store then admits it on
// the figures mirrored so far, while the read goes on in the background.
const (
	budgetFresh = 20 * time.Millisecond
	budgetWait  = 150 * time.Millisecond
)

// refresh brings the entries' shared figures up to date for a request:
// unless the last read began less than budgetFresh ago, it joins the
// pull under way or starts one (one round trip for every entry, pending
// spend pushed first) and waits for it budgetWait at most. Nothing is
// read without a shared store.
func (b *budgetBook) refresh() {
	if b == nil || b.shared == nil {
		return
	}
	b.pullMu.Lock()
	done := b.pulling
	if done == nil {
		if time.Since(b.pulledAt) < budgetFresh {
			b.pullMu.Unlock()
			return
		}
		done = make(chan struct{})
		b.pulling, b.pulledAt = done, time.Now()
		go func() {
			b.pull(b.all, budgetNow())
			b.pullMu.Lock()
			b.pulling = nil
			b.pullMu.Unlock()
			close(done)
		}()
	}
	b.pullMu.Unlock()
	t := time.NewTimer(budgetWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// budgetEntry is one configured budget and the spend it is counted in.
type budgetEntry struct {
	rule   *budgetRule
	scope  string // budgetScope*
	name   string // key: "<pool>/<key id>"; gateway key id; pool name
	pool   string // key and pool budgets
	keyID  string // key budgets
	fp     string // key budgets: the key's fingerprint
	kp     *keypool.Pool
	spend  *scopeSpend
	shared string // name in the shared store ("" without one)

	// staleDone is the oldest bucket of the window at the entry's last
	// successful push: the buckets before it are gone from the shared
	// record (0: none pushed yet)
	staleDone atomic.Int64

	gate  *keyGate    // key budgets: the gate of the entry's pool (nil: none)
	dirty atomic.Bool // key budgets: queued on gate for a check
	gauge atomic.Pointer[prometheus.Gauge]
}

// spendGauge is the entry's llm_gateway_budget_spend_usd series, looked
// up once.
func (e *budgetEntry) spendGauge() prometheus.Gauge {
	if g := e.gauge.Load(); g != nil {
		return *g
	}
	g := budgetMetrics().spend.WithLabelValues(e.scope, e.name)
	e.gauge.Store(&g)
	return g
}

// charge books one request's cost against every budget it falls under:
// the serving key's, the caller's and the pool's. A key that reaches its
// limit leaves rotation until the period resets; crossing the warning
// level raises an event, a log warning and a metric once per period.
// Unknown costs are not counted. In cluster mode the spend is added to the
// shared store at once, so the next request on any instance sees it.
func (b *budgetBook) charge(c spendCharge) {
	if b == nil || !c.Known || c.USD <= 0 {
		return
	}
	at := budgetNow()
	hit := make([]*budgetEntry, 0, 3) // at most the key's, the caller's and the pool's
	if e := b.keys[c.Pool][c.KeyID]; e != nil {
		hit = append(hit, e)
	}
	if e := b.gws[c.GatewayKey]; e != nil && c.GatewayKey != "" {
		hit = append(hit, e)
	}
	if e := b.pools[c.Pool]; e != nil {
		hit = append(hit, e)
	}
	for _, e := range hit {
		e.spend.add(e.rule.period, at, c.USD)
		b.push(e, at)
		e.dirty.Store(false) // checked here: its gate need not
		b.check(e, at)
	}
}

// push adds the entry's unsynced spend to the shared store and mirrors
// the shared figures; on failure the spend stays pending for the next try.
// The buckets that left the window since the entry's last successful push
// are deleted with it (see staleSince).
func (b *budgetBook) push(e *budgetEntry, now time.Time) {
	if b.shared == nil {
		return
	}
	p := e.rule.period
	cur := p.bucket(now)
	pending := e.spend.takePending()
	if len(pending) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ttl := p.dropAt(cur).Sub(now) + p.span()
	first := p.first(cur)
	stale := e.staleSince(first, pending)
	got, err := b.shared.addSpend(ctx, e.shared, pending, ttl, stale)
	if err != nil {
		e.spend.restorePending(pending)
		return
	}
	for done := e.staleDone.Load(); done < first && !e.staleDone.CompareAndSwap(done, first); done = e.staleDone.Load() {
	}
	e.spend.mirror(got)
}

// staleSince returns the buckets a push at the window whose oldest bucket
// is first deletes from the shared record: the budgetSteps buckets before
// first, less those an earlier push of the entry already deleted (none
// when the window has not moved since: nil), and any bucket of pending
// older than first (spend kept from before, added and dropped at once).
func (e *budgetEntry) staleSince(first int64, pending map[int64]float64) []int64 {
	lo := first - budgetSteps
	if done := e.staleDone.Load(); done > lo && done <= first {
		lo = done
	}
	var stale []int64
	if lo < first {
		stale = make([]int64, 0, first-lo)
		for i := first - 1; i >= lo; i-- {
			stale = append(stale, i)
		}
	}
	for bk := range pending {
		if bk < lo {
			stale = append(stale, bk)
		}
	}
	return stale
}

// pull refreshes the entries' spend from the shared store (one round
// trip), pushing pending spend first.
func (b *budgetBook) pull(es []*budgetEntry, now time.Time) {
	if b.shared == nil || len(es) == 0 {
		return
	}
	names := make([]string, 0, len(es))
	for _, e := range es {
		if e.spend.hasPending() {
			b.push(e, now)
		}
		names = append(names, e.shared)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	got, err := b.shared.loadSpend(ctx, names)
	if err != nil {
		return // serve on the local figures
	}
	for i, e := range es {
		if i < len(got) {
			e.spend.mirror(got[i])
		}
	}
}

// check applies an entry's state at now: warns once per period at the
// warning level, logs and counts reaching the limit, and for a key
// budget holds the key out of rotation until the reset (or lifts the
// hold). It returns whether the budget is used up and when that ends.
func (b *budgetBook) check(e *budgetEntry, now time.Time) (over bool, reset time.Time, spent float64) {
	spent, reset = e.spend.state(e.rule, now)
	over = reached(spent, e.rule.limit)
	warn, exceeded := e.spend.marks(e.rule, now, spent, over)
	e.spendGauge().Set(spent)
	if warn {
		budgetMetrics().warnings.WithLabelValues(e.scope, e.name).Inc()
		b.logger.Warn("budget warning level reached", e.fields(spent, reset)...)
		publishBudgetEvent(e, "budget_warning", spent, now, reset)
	}
	if exceeded {
		budgetMetrics().exceeded.WithLabelValues(e.scope, e.name).Inc()
		b.logger.Warn("budget used up: refused until the period resets", e.fields(spent, reset)...)
		publishBudgetEvent(e, "budget_exceeded", spent, now, reset)
	}
	if e.scope == budgetScopeKey {
		e.spend.holdKey(e, over, reset, now)
	}
	return over, reset, spent
}

// fields are an entry's log fields (no secret: ids only).
func (e *budgetEntry) fields(spent float64, reset time.Time) []zap.Field {
	f := []zap.Field{zap.String("scope", e.scope), zap.String("budget", e.rule.label),
		zap.Float64("spent_usd", spent), zap.Float64("limit_usd", e.rule.limit)}
	if e.pool != "" {
		f = append(f, zap.String("pool", e.pool))
	}
	switch e.scope {
	case budgetScopeKey:
		f = append(f, zap.String("key", e.keyID))
	case budgetScopeGatewayKey:
		f = append(f, zap.String("gateway_key", e.name))
	}
	if !reset.IsZero() {
		f = append(f, zap.Time("resets_at", reset.UTC()))
	}
	return f
}

// refusal is the message and Retry-After of a used-up budget.
func (e *budgetEntry) refusal(what string, spent float64, reset, now time.Time) (string, time.Duration) {
	wait := max(reset.Sub(now), time.Second)
	msg := what + " is over its budget of " + e.rule.label + " (spent " + usd(spent) + "); it resets at " +
		reset.UTC().Format(time.RFC3339) + ", in " + strconv.Itoa(int(wait.Round(time.Second).Seconds())) + "s"
	return msg, wait
}

// reached reports whether spent is at or over level, allowing for the
// rounding of sums of float dollars (0.6 + 0.3 + 0.1 reaches 1).
func reached(spent, level float64) bool { return spent >= level-1e-9 }

// usd formats an amount of dollars for messages, e.g. "5.0213 USD".
func usd(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) + " USD" }

// gatewayGate is the gateway-key budget's gate, checked before a request
// is read, on the figures at hand (in cluster mode the mirror of the
// shared store, kept current by spend events and refresh): it returns
// the failure (429 with Retry-After until the reset) when the caller's
// budget is used up, else nil.
func (b *budgetBook) gatewayGate(gk *gwKey) *loopFailure {
	if b == nil || gk == nil {
		return nil
	}
	e := b.gws[gk.id]
	if e == nil {
		return nil
	}
	now := budgetNow()
	b.refresh()
	over, reset, spent := b.check(e, now)
	if !over {
		return nil
	}
	msg, wait := e.refusal("gateway key "+gk.id, spent, reset, now)
	return budgetFailure(msg, wait)
}

// poolGate applies the budgets of a pool and its keys before the pool
// is tried, on the figures at hand as gatewayGate does (holding keys
// whose budget is used up, releasing those whose period reset), and
// returns the failure when the pool's own budget is used up (429 with
// Retry-After until the reset), else nil. The key budgets are checked
// through the pool's keyGate: only those whose spend changed since they
// were last checked, and all of them once a period or window step of
// one of them ended; a request that finds neither touches none.
func (b *budgetBook) poolGate(p *pool) *loopFailure {
	if b == nil {
		return nil
	}
	pe := b.pools[p.name]
	es := b.pkeys[p.name]
	if pe == nil && len(es) == 0 {
		return nil
	}
	now := budgetNow()
	b.refresh()
	if g := b.gates[p.name]; g != nil {
		g.apply(b, now)
	} else {
		for _, e := range es {
			b.check(e, now)
		}
	}
	if pe == nil {
		return nil
	}
	over, reset, spent := b.check(pe, now)
	if !over {
		return nil
	}
	msg, wait := pe.refusal("pool "+strconv.Quote(p.name), spent, reset, now)
	return budgetFailure(msg, wait)
}

// budgetFailure is the answer to a request a used-up budget refuses: 429
// (rate_limited in the client's dialect) with Retry-After until the
// reset, and x-should-retry: false when that is more than a minute away
// (the SDKs' own retries would only be refused again).
func budgetFailure(msg string, wait time.Duration) *loopFailure {
	return &loopFailure{status: http.StatusTooManyRequests, class: translate.ErrRateLimited, msg: msg, retryAfter: wait, noRetry: wait > keypool.MaxClientRetryAfter}
}

// scopeSpend is the spend counted for one budget scope and period scheme,
// by bucket (see budgetPeriod), process-wide.
type scopeSpend struct {
	mu      sync.Mutex
	buckets map[int64]float64 // this instance's figures, or the shared store's mirror
	pending map[int64]float64 // not yet added to the shared store
	shared  bool              // buckets mirror the shared store

	warned       bool  // the warning was raised ...
	warnedBucket int64 // ... in this bucket (calendar: this period)
	over         bool  // the limit was reported reached ...
	overBucket   int64
	heldUntil    time.Time // key budgets: the hold placed (zero: none)

	watchers []*budgetEntry // key budgets of live books that check it (see keyGate)
}

// spendLedger holds every scope's spend for the whole process, by
// "<scope>\x00<name>\x00<period signature>", so a reload keeps it; the
// usage file saves it across restarts.
var spendLedger = struct {
	sync.Mutex
	m map[string]*scopeSpend
}{m: map[string]*scopeSpend{}}

// ledgerScope returns the spend of a scope, created on first use.
func ledgerScope(id string) *scopeSpend {
	spendLedger.Lock()
	defer spendLedger.Unlock()
	s := spendLedger.m[id]
	if s == nil {
		s = &scopeSpend{buckets: map[int64]float64{}}
		spendLedger.m[id] = s
	}
	return s
}

// add counts usd in the bucket of at (pending for the shared store when
// the scope is shared).
func (s *scopeSpend) add(p budgetPeriod, at time.Time, usd float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := p.bucket(at)
	if s.shared {
		if s.pending == nil {
			s.pending = map[int64]float64{}
		}
		s.pending[b] += usd
	} else {
		s.buckets[b] += usd
	}
	for k := range s.buckets {
		if k < p.first(b) {
			delete(s.buckets, k)
		}
	}
	s.touchLocked(nil)
}

// takePending returns and clears the spend not yet shared.
func (s *scopeSpend) takePending() map[int64]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending
	s.pending = nil
	if len(p) > 0 {
		s.touchLocked(nil)
	}
	return p
}

// restorePending puts back spend a failed push took.
func (s *scopeSpend) restorePending(p map[int64]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[int64]float64{}
	}
	for b, v := range p {
		s.pending[b] += v
	}
	s.touchLocked(nil)
}

func (s *scopeSpend) hasPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) > 0
}

// mirror replaces the buckets with the shared store's figures (m, which
// it keeps). A bucket's spend only grows, so a figure lower than the one
// mirrored is an older read that crossed a newer one (a spend event):
// the higher is kept.
func (s *scopeSpend) mirror(m map[int64]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := len(m) != len(s.buckets)
	for b, v := range m {
		old, ok := s.buckets[b]
		switch {
		case old > v:
			m[b] = old
		case !ok || old != v:
			changed = true
		}
	}
	s.buckets = m
	if changed {
		s.touchLocked(nil)
	}
}

// state returns the spend in the window at now and, when it is at or
// over the limit, when it falls below it again: the end of the calendar
// period, or when enough of the oldest steps of a rolling window leave it.
func (s *scopeSpend) state(r *budgetRule, now time.Time) (spent float64, reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := r.period
	cur := p.bucket(now)
	first := p.first(cur)
	sum := func(m map[int64]float64, b int64) float64 { return m[b] }
	for b := first; b <= cur; b++ {
		spent += sum(s.buckets, b) + sum(s.pending, b)
	}
	if !reached(spent, r.limit) {
		return spent, time.Time{}
	}
	left := spent
	for b := first; b <= cur; b++ {
		left -= sum(s.buckets, b) + sum(s.pending, b)
		if !reached(left, r.limit) {
			return spent, p.dropAt(b)
		}
	}
	return spent, p.dropAt(cur)
}

// marks decides whether the warning and the limit are newly reached at
// now: each is raised once per period (once until the spend falls below
// it again for a rolling window).
func (s *scopeSpend) marks(r *budgetRule, now time.Time, spent float64, over bool) (warn, exceeded bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := r.period.bucket(now)
	if r.period.calendar != "" {
		if s.warnedBucket != cur {
			s.warned = false
		}
		if s.overBucket != cur {
			s.over = false
		}
	}
	if r.warn > 0 {
		switch {
		case !reached(spent, r.warn):
			s.warned = false
		case !s.warned:
			s.warned, s.warnedBucket, warn = true, cur, true
		}
	}
	switch {
	case !over:
		s.over = false
	case !s.over:
		s.over, s.overBucket, exceeded = true, cur, true
	}
	return warn, exceeded
}

// holdKey holds a key budget's key out of rotation until reset while the
// budget is used up, and lifts the hold when it is not (a new period, or
// the budget was raised). The pool is told only of changes.
func (s *scopeSpend) holdKey(e *budgetEntry, over bool, reset, now time.Time) {
	s.mu.Lock()
	prev := s.heldUntil
	if over {
		s.heldUntil = reset
	} else {
		s.heldUntil = time.Time{}
	}
	changed := !prev.Equal(s.heldUntil)
	if changed {
		// another configuration's entry (a reload under way, its budget
		// changed) reads the hold too
		s.touchLocked(e)
	}
	s.mu.Unlock()
	if !changed || e.kp == nil {
		return
	}
	if over {
		e.kp.Hold(e.fp, keypool.ReasonBudget, reset.Sub(now))
	} else {
		e.kp.Hold(e.fp, keypool.ReasonBudget, 0)
	}
}

// span is the time one window covers: a day or a month (31 days) for a
// calendar period, the window for a rolling one.
func (p budgetPeriod) span() time.Duration {
	switch p.calendar {
	case "daily":
		return 25 * time.Hour
	case "monthly":
		return 32 * 24 * time.Hour
	}
	return p.window + p.step
}

// spendStore is the cluster's shared spend (the state backend): one
// record per scope name with a figure per bucket.
type spendStore interface {
	// addSpend adds add (USD by bucket) to the record name, deletes the
	// buckets stale, keeps the record for ttl and returns its figures.
	addSpend(ctx context.Context, name string, add map[int64]float64, ttl time.Duration, stale []int64) (map[int64]float64, error)
	// loadSpend returns the figures of each record, in order (empty for
	// a missing one).
	loadSpend(ctx context.Context, names []string) ([]map[int64]float64, error)
}
