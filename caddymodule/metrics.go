package caddymodule

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
)

// The gateway's Prometheus metrics, exposed on Caddy's metrics registry
// (the admin endpoint's /metrics, or the `metrics` handler):
//
//	llm_gateway_requests_total{pool,dialect_in,dialect_out,code}   counter
//	llm_gateway_upstream_attempts_total{pool,key,outcome}         counter
//	llm_gateway_request_duration_seconds{pool}                    histogram
//	llm_gateway_time_to_first_byte_seconds{pool}                  histogram
//	llm_gateway_acquire_wait_seconds{pool}                        histogram
//	llm_gateway_tokens_total{pool,key,kind}                       counter
//	llm_gateway_cost_usd_total{pool,key,gateway_key,model}        counter (cost.go)
//	llm_gateway_key_in_flight{pool,key}                           gauge
//	llm_gateway_key_cooling{pool,key,reason}                      gauge
//	llm_gateway_egress_requests_total{exit,outcome}               counter (egress_metrics.go)
//	llm_gateway_egress_cooling{exit}                              gauge
//
// key is the key's id (configured label or masked secret), never the
// secret. The collectors are package-level and re-registered into each
// config's registry, so counters survive config reloads. The two gauges
// are computed from the live pools at scrape time.
const metricsNamespace = "llm_gateway"

// gatewayMetrics holds the process-wide collectors.
var gatewayMetrics = struct {
	once        sync.Once
	requests    *prometheus.CounterVec
	attempts    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	ttfb        *prometheus.HistogramVec
	acquireWait *prometheus.HistogramVec
	tokens      *prometheus.CounterVec
	keys        *keyCollector
}{}

// latencyBuckets suit LLM calls: tens of milliseconds to several minutes.
var latencyBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}

// waitBuckets suit the wait for a free key.
var waitBuckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

func initGatewayMetrics() {
	gatewayMetrics.once.Do(func() {
		const ns = metricsNamespace
		gatewayMetrics.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns,
			Name:      "requests_total",
			Help:      "Finished client requests by pool, client dialect, upstream dialect, HTTP status and, for streams, how the stream ended (complete, error, truncated, interrupted, canceled; empty when not streamed).",
		}, []string{"pool", "dialect_in", "dialect_out", "code", "stream_outcome"})
		gatewayMetrics.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns,
			Name:      "upstream_attempts_total",
			Help:      "Upstream attempts by pool, key id and outcome (success, rate_limited, server_error, ...).",
		}, []string{"pool", "key", "outcome"})
		gatewayMetrics.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns,
			Name:      "request_duration_seconds",
			Help:      "Time from receiving a client request to its last response byte.",
			Buckets:   latencyBuckets,
		}, []string{"pool"})
		gatewayMetrics.ttfb = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns,
			Name:      "time_to_first_byte_seconds",
			Help:      "Time from receiving a client request to the first response byte sent to the client.",
			Buckets:   latencyBuckets,
		}, []string{"pool"})
		gatewayMetrics.acquireWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns,
			Name:      "acquire_wait_seconds",
			Help:      "Time requests waited for a free upstream key.",
			Buckets:   waitBuckets,
		}, []string{"pool"})
		gatewayMetrics.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns,
			Name:      "tokens_total",
			Help:      "Tokens reported by upstreams, by pool, key id and kind (input, output, cache_read, cache_write, reasoning).",
		}, []string{"pool", "key", "kind"})
		gatewayMetrics.keys = &keyCollector{
			inFlight: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "key_in_flight"),
				"Requests in flight on an upstream key.", []string{"pool", "key"}, nil),
			cooling: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "key_cooling"),
				"1 while an upstream key is cooling down or its breaker is open, by the reason.", []string{"pool", "key", "reason"}, nil),
		}
	})
}

// registerMetrics adds the package-level collectors to a config's
// registry; a collector that is already there is fine.
func registerMetrics(reg *prometheus.Registry) error {
	initGatewayMetrics()
	for _, c := range append([]prometheus.Collector{
		gatewayMetrics.requests,
		gatewayMetrics.attempts,
		gatewayMetrics.duration,
		gatewayMetrics.ttfb,
		gatewayMetrics.acquireWait,
		gatewayMetrics.tokens,
		gatewayMetrics.keys,
		costCollector(),
		stateMetrics().up,
		stateMetrics().requests,
		stateMetrics().duration,
	}, append(budgetCollectorList(), egressCollectors()...)...) {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}

// metrics feeds the collectors and the per-key statistics of the admin
// API from finished requests (see observe).
type metrics struct{}

// provisionInstrumentation registers the metrics into the config's
// registry and publishes the handler's pools to the admin API (until ctx
// is cancelled). It returns the handler's metrics hook, nil when the
// collectors could not be registered.
func (h *Handler) provisionInstrumentation(ctx caddy.Context) *metrics {
	publishPools(ctx, h.pools)
	publishHandler(ctx, h)
	if err := registerMetrics(ctx.GetMetricsRegistry()); err != nil {
		if h.logger != nil {
			h.logger.Error("registering metrics", zap.Error(err))
		}
		return nil
	}
	return &metrics{}
}

// observe records one finished request.
func (m *metrics) observe(rl *requestLog) {
	initGatewayMetrics()
	requestCounter(requestLabels{rl.pool, upstreamDialectName(rl.dialect), upstreamDialectName(rl.upstreamDialect), rl.streamOutcome, rl.status}).Inc()
	if rl.pool != "" {
		po := observersFor(rl.pool)
		if !rl.start.IsZero() {
			po.duration.Observe(time.Since(rl.start).Seconds())
		}
		if rl.ttfb > 0 {
			po.ttfb.Observe(rl.ttfb.Seconds())
		}
		if len(rl.attempts) > 0 || rl.acquireWait > 0 {
			po.acquireWait.Observe(rl.acquireWait.Seconds())
		}
	}
	for _, a := range rl.attempts {
		attemptCounter(attemptLabels{rl.pool, a.key, a.outcome}).Inc()
		keyStatsFor(rl.pool, a.key).attempt(a.outcome, a.dur)
	}
	if rl.key == "" {
		return
	}
	u := rl.usage
	var add [numTokenKinds]int64
	for i, v := range []*int64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens} {
		if v != nil && *v > 0 {
			add[i] = *v
			tokenCounter(attemptLabels{rl.pool, rl.key, tokenKinds[i]}).Add(float64(*v))
		}
	}
	keyStatsFor(rl.pool, rl.key).addTokens(add)
}

// tokenKinds are the kind label values of llm_gateway_tokens_total, in
// the order of keyStats.tokens.
var tokenKinds = [...]string{"input", "output", "cache_read", "cache_write", "reasoning"}

const numTokenKinds = len(tokenKinds)

// keyCollector exports the live gauges of every key of every pool,
// computed from keypool snapshots at scrape time.
type keyCollector struct {
	inFlight *prometheus.Desc
	cooling  *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (c *keyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inFlight
	ch <- c.cooling
}

// Collect implements prometheus.Collector.
func (c *keyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range livePools() {
		name := p.Name()
		seen := map[string]bool{}
		for _, st := range p.Snapshot() {
			if seen[st.ID] {
				continue // ids are labels: the first of a duplicate wins
			}
			seen[st.ID] = true
			ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(st.InFlight), name, st.ID)
			if st.State == keypool.StateCooling || st.State == keypool.StateBreakerOpen {
				reason := string(st.Reason)
				if reason == "" {
					reason = string(st.State)
				}
				ch <- prometheus.MustNewConstMetric(c.cooling, prometheus.GaugeValue, 1, name, st.ID, reason)
			}
		}
	}
}

// livePools returns every pool in the process-wide registry, by name.
// The registry's read lock is held only while collecting (pool methods
// are called after Range returns).
func livePools() []*keypool.Pool {
	var out []*keypool.Pool
	registry.Range(func(_, v any) bool {
		if ps, ok := v.(*poolState); ok && ps.pool != nil {
			out = append(out, ps.pool)
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// latencyWindow is how many recent successful attempts per key the admin
// API's p50/p95 latencies are computed over.
const latencyWindow = 100

// latencyEMAWeight is the weight of a new sample in the latency moving
// average.
const latencyEMAWeight = 0.2

// keyStats are the per-key figures the admin API shows beyond keypool's
// own counters: tokens, and the latency of successful attempts. They are process-wide and
// keyed by pool name and key id, so they survive config reloads.
type keyStats struct {
	mu      sync.Mutex
	tokens  [numTokenKinds]int64
	ema     float64 // seconds; 0: no sample yet
	samples []time.Duration
	next    int
}

var keyStatsMap sync.Map // "<pool>\x00<key id>" -> *keyStats

func keyStatsFor(pool, key string) *keyStats {
	k := pool + "\x00" + key
	if v, ok := keyStatsMap.Load(k); ok {
		return v.(*keyStats)
	}
	v, _ := keyStatsMap.LoadOrStore(k, new(keyStats))
	return v.(*keyStats)
}

// peekKeyStats returns the figures of a key, zero when it has none.
func peekKeyStats(pool, key string) keyFigures {
	v, ok := keyStatsMap.Load(pool + "\x00" + key)
	if !ok {
		return keyFigures{}
	}
	return v.(*keyStats).figures()
}

func (s *keyStats) attempt(outcome string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch outcome {
	case "success":
	default:
		return // failures are counted by keypool
	}
	if s.ema == 0 {
		s.ema = d.Seconds()
	} else {
		s.ema += latencyEMAWeight * (d.Seconds() - s.ema)
	}
	if len(s.samples) < latencyWindow {
		s.samples = append(s.samples, d)
	} else {
		s.samples[s.next] = d
		s.next = (s.next + 1) % latencyWindow
	}
}

func (s *keyStats) addTokens(add [numTokenKinds]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, v := range add {
		s.tokens[i] += v
	}
}

// keyFigures is a copy of a key's statistics.
type keyFigures struct {
	tokens        [numTokenKinds]int64
	ema, p50, p95 time.Duration
	n             int
}

func (s *keyStats) figures() keyFigures {
	s.mu.Lock()
	f := keyFigures{tokens: s.tokens, ema: time.Duration(s.ema * float64(time.Second)), n: len(s.samples)}
	sorted := append([]time.Duration(nil), s.samples...)
	s.mu.Unlock()
	if len(sorted) > 0 {
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		f.p50, f.p95 = percentile(sorted, 0.50), percentile(sorted, 0.95)
	}
	return f
}

// percentile returns the nearest-rank percentile of sorted samples.
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
