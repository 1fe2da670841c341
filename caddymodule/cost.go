package caddymodule

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgateway/llm_gateway/translate"
)

// Cost of a request, from the usage its upstream reported.
//
// translate.Usage is normalised to OpenAI's semantics whatever the vendor:
// InputTokens counts every input token, cache reads and cache writes
// included (OpenAI prompt_tokens already includes cached_tokens;
// Anthropic's input_tokens excludes cache_read_input_tokens and
// cache_creation_input_tokens, so translate adds them back), and
// OutputTokens counts every output token, reasoning included. The cost is
// therefore, in US dollars with prices per million tokens:
//
//	(input - cache_read - cache_write) x input price
//	+ cache_read x cache_read price + cache_write x cache_write price
//	+ (output - reasoning) x output price + reasoning x reasoning price
//
// all divided by 1,000,000 (a missing cache or reasoning price is the
// input or output price, so a split the vendor does not bill apart changes
// nothing). A request whose upstream reported no input count (a stream the
// client abandoned before the usage event, an upstream that reports none)
// is costed with the request's own token estimate (its body's bytes / 4)
// for the input and what was reported of the output (0 when nothing), and
// marked estimated; so is any stream that began but did not complete
// (abandoned, truncated, interrupted, an in-band error), whose output
// count is partial even when the input was reported. A request answered
// with an upstream error and no usage costs 0: vendors do not bill
// refused requests.

// requestCost is the cost of one finished request.
type requestCost struct {
	usd       float64
	known     bool   // false: the model has no price
	estimated bool   // usage was (partly) estimated
	pattern   string // the price pattern used
	window    string // the time-of-day window that priced it ("peak", "off_peak"; "": none)
}

// costOf prices usage u at p (USD per million tokens). estIn is the
// request's input estimate, used when u has no input figure.
func costOf(p Price, u translate.Usage, estIn int64) (usd float64, estimated bool) {
	val := func(v *int64) float64 {
		if v == nil || *v < 0 {
			return 0
		}
		return float64(*v)
	}
	in := val(u.InputTokens)
	if u.InputTokens == nil {
		in, estimated = float64(max(estIn, 0)), true
	}
	cr, cw := val(u.CacheReadTokens), val(u.CacheWriteTokens)
	out, reas := val(u.OutputTokens), val(u.ReasoningTokens)
	plain := max(in-cr-cw, 0)
	text := max(out-reas, 0)
	or := func(v *float64, d float64) float64 {
		if v == nil {
			return d
		}
		return *v
	}
	micro := plain*p.Input + cr*or(p.CacheRead, p.Input) + cw*or(p.CacheWrite, p.Input) +
		text*p.Output + reas*or(p.Reasoning, p.Output)
	// rounded to a trillionth of a dollar: the binary float noise of the
	// sum (2.5499999999999997e-06 for 2.55e-06) never reaches the log,
	// the admin API or the CSV, and no bill is that fine
	return math.Round(micro*1e6) / 1e12, estimated
}

// provisionPrices checks the configured price overrides and builds the
// handler's and each pool's lookup tables.
func (h *Handler) provisionPrices() error {
	if err := validatePrices("llm_gateway", h.Prices); err != nil {
		return err
	}
	h.priceTab = priceTableOf(h.Prices)
	for i, pc := range h.Pools {
		if pc == nil || i >= len(h.pools) {
			continue
		}
		if err := validatePrices(fmt.Sprintf("pool '%s'", pc.Name), pc.Prices); err != nil {
			return err
		}
		h.pools[i].prices = priceTableOf(pc.Prices)
		h.pools[i].globalPrices = h.priceTab
	}
	loadBuiltinPrices()
	return nil
}

// priceFor returns the price of an upstream model served by pool p (nil
// when unknown): the pool's own prices, then the global ones, then the
// built-in table; in each the most specific pattern wins.
func (h *Handler) priceFor(p *pool, model string) (Price, string, bool) {
	if p != nil {
		if pr, pat, ok := p.prices.lookup(model); ok {
			return pr, pat, true
		}
	}
	if pr, pat, ok := h.priceTab.lookup(model); ok {
		return pr, pat, true
	}
	return loadBuiltinPrices().lookup(model)
}

// billable reports whether a finished request is charged: it reached a
// key, and its endpoint generates tokens (the models list and token
// counts are free).
func billable(rl *requestLog) bool {
	return rl.key != "" && rl.endpoint != "models" && rl.endpoint != "messages/count_tokens"
}

// costRequest prices a finished request (see billable) and books it: the
// request log's cost fields, the spend totals, the cost metric and the
// budgets. It is called once per request, from observe.
func (h *Handler) costRequest(rl *requestLog) {
	if !billable(rl) {
		return
	}
	c := requestCost{}
	p := h.poolByName(rl.pool)
	switch {
	case rl.status >= 400 && rl.status != 499 && rl.usage.IsZero():
		c.known = true // refused upstream: nothing billed
	default:
		pr, pat, ok := h.priceFor(p, rl.upstreamModel)
		if ok {
			// a time-of-day price is the one in force when the request started
			pr, c.window = pr.at(priceTime(rl.start))
			c.usd, c.estimated = costOf(pr, rl.usage, rl.estInput)
			// a stream that began but did not complete was cut before the
			// final usage: its output count is partial, whatever the
			// upstream reported of the input
			c.estimated = c.estimated || rl.streamOutcome != "" && rl.streamOutcome != streamComplete
			c.known, c.pattern = true, pat
		}
	}
	rl.cost = &c
	for i := len(rl.attempts) - 1; i >= 0; i-- {
		if rl.attempts[i].key == rl.key {
			rl.attempts[i].cost = &c // the attempt that served the request
			break
		}
	}
	model := boundedCostModel(rl.upstreamModel)
	keys := append(make([]costKey, 0, 3), costKey{kind: costByKey, a: rl.pool, b: rl.key}, costKey{kind: costByModel, a: model})
	if rl.gatewayKey != "" {
		keys = append(keys, costKey{kind: costByGatewayKey, a: rl.gatewayKey})
	}
	for _, k := range keys {
		costFor(k).add(c)
	}
	shareCost(poolBackend(p), keys, c)
	if !c.known {
		noteUnknownModel(rl.pool, rl.upstreamModel)
	} else if c.usd > 0 {
		initCostMetric()
		costMetric.WithLabelValues(rl.pool, rl.key, rl.gatewayKey, model).Add(c.usd)
	}
	h.budgets.charge(spendCharge{Pool: rl.pool, KeyID: rl.key, GatewayKey: rl.gatewayKey, Model: rl.upstreamModel,
		USD: c.usd, Known: c.known, Estimated: c.estimated, At: budgetNow()})
}

// costMetric is llm_gateway_cost_usd_total{pool,key,gateway_key,model}.
var (
	costMetric     *prometheus.CounterVec
	costMetricOnce sync.Once
)

func initCostMetric() {
	costMetricOnce.Do(func() {
		costMetric = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace,
			Name:      "cost_usd_total",
			Help:      "Cost in US dollars of finished requests, from the usage their upstreams reported and the price table, by pool, upstream key id, gateway key id (empty without auth) and upstream model. Requests whose model has no price are not counted here (see GET /llm_gateway/spend).",
		}, []string{"pool", "key", "gateway_key", "model"})
	})
}

// costCollector returns the cost counter for registerMetrics.
func costCollector() prometheus.Collector {
	initCostMetric()
	return costMetric
}

// The spend totals, process-wide (they survive config reloads) and saved
// in the usage file.
type costKind uint8

const (
	costByKey        costKind = iota + 1 // a: pool, b: key id
	costByGatewayKey                     // a: gateway key id
	costByModel                          // a: upstream model
)

type costKey struct {
	kind costKind
	a, b string
}

// costTotals are the totals of one key, gateway key or model.
type costTotals struct {
	mu sync.Mutex
	costFigures
}

// costFigures is a copy of spend totals (and their saved form).
type costFigures struct {
	// USD is the summed cost of the priced requests.
	USD float64 `json:"usd"`
	// Priced counts requests with a known cost, Estimated those of them
	// whose usage was (partly) estimated, Unknown requests whose model
	// had no price.
	Priced    int64 `json:"priced"`
	Estimated int64 `json:"estimated,omitempty"`
	Unknown   int64 `json:"unknown,omitempty"`
}

var costMap sync.Map // costKey -> *costTotals

func costFor(k costKey) *costTotals {
	if v, ok := costMap.Load(k); ok {
		return v.(*costTotals)
	}
	v, loaded := costMap.LoadOrStore(k, new(costTotals))
	if !loaded && k.kind == costByModel {
		costModels.Add(1)
	}
	return v.(*costTotals)
}

// costModels counts the costByModel entries of costMap.
var costModels atomic.Int64

// maxCostModels bounds the models the spend totals and the cost metric
// keep apart: model names come from clients (a wildcard pool passes any
// name upstream), so past this many the further ones are counted under
// otherCostModel rather than growing memory, the usage file, Redis and
// the metric's series without end.
const maxCostModels = 10000

// otherCostModel is the model name the models past maxCostModels are
// counted under.
const otherCostModel = "(other models)"

// boundedCostModel is the name model's spend is counted under: itself
// (clipped) while fewer than maxCostModels models have spend, or when it
// already has some; otherCostModel past that.
func boundedCostModel(model string) string {
	m := clipClient(model)
	if costModels.Load() < maxCostModels {
		return m
	}
	if _, ok := costMap.Load(costKey{kind: costByModel, a: m}); ok {
		return m
	}
	return otherCostModel
}

func (s *costTotals) add(c requestCost) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.known {
		s.Unknown++
		return
	}
	s.USD += c.usd
	s.Priced++
	if c.estimated {
		s.Estimated++
	}
}

func (s *costTotals) figures() costFigures {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.costFigures
}

// peekCost returns the totals under k, zero when there are none.
func peekCost(k costKey) costFigures {
	if v, ok := costMap.Load(k); ok {
		return v.(*costTotals).figures()
	}
	return costFigures{}
}

// unknownModels are the upstream models requested without a price, by
// pool, with the number of such requests.
var unknownModels = struct {
	sync.Mutex
	m map[[2]string]int64
}{m: map[[2]string]int64{}}

// maxUnknownModels bounds the unknown-model list (model names come from
// clients through model_map passthrough).
const maxUnknownModels = 1000

func noteUnknownModel(pool, model string) {
	unknownModels.Lock()
	defer unknownModels.Unlock()
	k := [2]string{pool, clipClient(model)}
	if _, ok := unknownModels.m[k]; !ok && len(unknownModels.m) >= maxUnknownModels {
		return
	}
	unknownModels.m[k]++
}

// savedCosts is the spend section of the usage file: totals by "key
// <pool>\x00<id>", "gateway_key <id>" and "model <name>".
type savedCosts map[string]costFigures

func (k costKey) String() string {
	switch k.kind {
	case costByKey:
		return "key " + k.a + "\x00" + k.b
	case costByGatewayKey:
		return "gateway_key " + k.a
	case costByModel:
		return "model " + k.a
	}
	return "?" + strconv.Itoa(int(k.kind))
}

func parseCostKey(s string) (costKey, bool) {
	kind, rest, ok := cutSpace(s)
	if !ok {
		return costKey{}, false
	}
	switch kind {
	case "key":
		a, b, ok := cutNul(rest)
		return costKey{kind: costByKey, a: a, b: b}, ok
	case "gateway_key":
		return costKey{kind: costByGatewayKey, a: rest}, true
	case "model":
		return costKey{kind: costByModel, a: rest}, true
	}
	return costKey{}, false
}

func cutSpace(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

func cutNul(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// snapshotCosts returns every spend total, for the usage file.
func snapshotCosts() savedCosts {
	out := savedCosts{}
	costMap.Range(func(k, v any) bool {
		out[k.(costKey).String()] = v.(*costTotals).figures()
		return true
	})
	return out
}

// restoreCosts adds saved totals to the live ones (once per process, when
// the usage file is read).
func restoreCosts(s savedCosts) {
	for ks, f := range s {
		k, ok := parseCostKey(ks)
		if !ok {
			continue
		}
		t := costFor(k)
		t.mu.Lock()
		t.USD += f.USD
		t.Priced += f.Priced
		t.Estimated += f.Estimated
		t.Unknown += f.Unknown
		t.mu.Unlock()
	}
}

// costView is one row of GET /llm_gateway/spend.
type costView struct {
	Pool       string `json:"pool,omitempty"`
	Key        string `json:"key,omitempty"`
	GatewayKey string `json:"gateway_key,omitempty"`
	Model      string `json:"model,omitempty"`
	costFigures
}

// unknownModelView is one model without a price.
type unknownModelView struct {
	Pool     string `json:"pool"`
	Model    string `json:"model"`
	Requests int64  `json:"requests"`
}

// costReport is GET /llm_gateway/spend: totals since the usage file was
// started, by upstream key, gateway key and model, and the models
// requested without a price; with `state redis`, Cluster holds the totals
// of every instance together.
type costReport struct {
	costTables
	UnknownModels []unknownModelView `json:"unknown_models"`
	Cluster       *clusterCostView   `json:"cluster,omitempty"`
}

// costTables are totals by upstream key, gateway key and model.
type costTables struct {
	Keys        []costView `json:"keys"`
	GatewayKeys []costView `json:"gateway_keys"`
	Models      []costView `json:"models"`
}

// clusterCostView is the cluster's totals (state redis); Error says why
// they could not be read.
type clusterCostView struct {
	costTables
	Error string `json:"error,omitempty"`
}

// costTablesOf sorts totals into their tables.
func costTablesOf(m map[costKey]costFigures) costTables {
	r := costTables{Keys: []costView{}, GatewayKeys: []costView{}, Models: []costView{}}
	for sk, f := range m {
		switch sk.kind {
		case costByKey:
			r.Keys = append(r.Keys, costView{Pool: sk.a, Key: sk.b, costFigures: f})
		case costByGatewayKey:
			r.GatewayKeys = append(r.GatewayKeys, costView{GatewayKey: sk.a, costFigures: f})
		case costByModel:
			r.Models = append(r.Models, costView{Model: sk.a, costFigures: f})
		}
	}
	sort.Slice(r.Keys, func(i, j int) bool {
		if r.Keys[i].Pool != r.Keys[j].Pool {
			return r.Keys[i].Pool < r.Keys[j].Pool
		}
		return r.Keys[i].Key < r.Keys[j].Key
	})
	sort.Slice(r.GatewayKeys, func(i, j int) bool { return r.GatewayKeys[i].GatewayKey < r.GatewayKeys[j].GatewayKey })
	sort.Slice(r.Models, func(i, j int) bool { return r.Models[i].Model < r.Models[j].Model })
	return r
}

func buildCostReport(ctx context.Context) costReport {
	local := map[costKey]costFigures{}
	costMap.Range(func(k, v any) bool {
		local[k.(costKey)] = v.(*costTotals).figures()
		return true
	})
	r := costReport{costTables: costTablesOf(local), UnknownModels: []unknownModelView{}}
	if b := liveRedisBackend(); b != nil {
		r.Cluster = &clusterCostView{}
		if m, err := clusterCosts(ctx, b); err != nil {
			r.Cluster.Error = "cluster totals unavailable: " + err.Error()
		} else {
			r.Cluster.costTables = costTablesOf(m)
		}
	}
	unknownModels.Lock()
	for k, n := range unknownModels.m {
		r.UnknownModels = append(r.UnknownModels, unknownModelView{Pool: k[0], Model: k[1], Requests: n})
	}
	unknownModels.Unlock()
	sort.Slice(r.UnknownModels, func(i, j int) bool {
		a, b := r.UnknownModels[i], r.UnknownModels[j]
		if a.Pool != b.Pool {
			return a.Pool < b.Pool
		}
		return a.Model < b.Model
	})
	return r
}
