package caddymodule

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Label lookups of the per-request metrics, kept: a vector's
// WithLabelValues checks each value's UTF-8, hashes the values a byte at a
// time and takes the vector's lock on every call, and metrics.observe
// makes six or more of them per request. The children are those of the
// package-level vectors (gatewayMetrics), which nothing deletes, so a kept
// child is the one a lookup would return; the keys are bounded by the
// configured pools, keys and outcomes.

// poolObservers are a pool's children of request_duration_seconds,
// time_to_first_byte_seconds and acquire_wait_seconds.
type poolObservers struct {
	duration, ttfb, acquireWait prometheus.Observer
}

// attemptLabels are the labels of one upstream_attempts_total child (and
// of one tokens_total child: outcome is then the token kind).
type attemptLabels struct{ pool, key, outcome string }

// requestLabels are the labels of one requests_total child.
type requestLabels struct {
	pool, dialectIn, dialectOut, streamOutcome string
	code                                       int
}

var (
	poolObserverCache sync.Map // pool name -> *poolObservers
	tokenCache        sync.Map // attemptLabels{pool, key, token kind} -> prometheus.Counter
	attemptCache      sync.Map // attemptLabels -> prometheus.Counter
	requestCache      sync.Map // requestLabels -> prometheus.Counter
)

// observersFor returns pool's observers (initGatewayMetrics called).
func observersFor(pool string) *poolObservers {
	if v, ok := poolObserverCache.Load(pool); ok {
		return v.(*poolObservers)
	}
	gm := &gatewayMetrics
	v, _ := poolObserverCache.LoadOrStore(pool, &poolObservers{
		duration:    gm.duration.WithLabelValues(pool),
		ttfb:        gm.ttfb.WithLabelValues(pool),
		acquireWait: gm.acquireWait.WithLabelValues(pool),
	})
	return v.(*poolObservers)
}

// tokenCounter returns the tokens_total child of l (its outcome: the
// token kind). A child is made on the first tokens of its kind, as
// before: a kind never counted is not exported.
func tokenCounter(l attemptLabels) prometheus.Counter {
	if v, ok := tokenCache.Load(l); ok {
		return v.(prometheus.Counter)
	}
	v, _ := tokenCache.LoadOrStore(l, gatewayMetrics.tokens.WithLabelValues(l.pool, l.key, l.outcome))
	return v.(prometheus.Counter)
}

// attemptCounter returns the upstream_attempts_total child of l.
func attemptCounter(l attemptLabels) prometheus.Counter {
	if v, ok := attemptCache.Load(l); ok {
		return v.(prometheus.Counter)
	}
	v, _ := attemptCache.LoadOrStore(l, gatewayMetrics.attempts.WithLabelValues(l.pool, l.key, l.outcome))
	return v.(prometheus.Counter)
}

// requestCounter returns the requests_total child of l.
func requestCounter(l requestLabels) prometheus.Counter {
	if v, ok := requestCache.Load(l); ok {
		return v.(prometheus.Counter)
	}
	c := gatewayMetrics.requests.WithLabelValues(l.pool, l.dialectIn, l.dialectOut, strconv.Itoa(l.code), l.streamOutcome)
	v, _ := requestCache.LoadOrStore(l, c)
	return v.(prometheus.Counter)
}
