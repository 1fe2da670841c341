package caddymodule

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmgateway/llm_gateway/translate"
)

// TestMetricsCacheSameChild: every kept label lookup is the child a
// lookup of the vector returns (what metrics.observe called before), so a
// request counts where it did; a second call returns the kept one, and a
// token kind never counted is not exported.
func TestMetricsCacheSameChild(t *testing.T) {
	initGatewayMetrics()
	gm := &gatewayMetrics
	pool, key := "cache-pool", "cache-key"
	po := observersFor(pool)
	for name, pair := range map[string][2]prometheus.Observer{
		"duration":     {po.duration, gm.duration.WithLabelValues(pool)},
		"ttfb":         {po.ttfb, gm.ttfb.WithLabelValues(pool)},
		"acquire_wait": {po.acquireWait, gm.acquireWait.WithLabelValues(pool)},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: kept observer is not the vector's child", name)
		}
	}
	if observersFor(pool) != po {
		t.Error("observersFor: a second lookup made new observers")
	}
	if a := attemptCounter(attemptLabels{pool, key, "success"}); a != gm.attempts.WithLabelValues(pool, key, "success") || a != attemptCounter(attemptLabels{pool, key, "success"}) {
		t.Error("attemptCounter: not the vector's child")
	}
	if r := requestCounter(requestLabels{pool, "openai-chat", "anthropic-messages", "complete", 200}); r != gm.requests.WithLabelValues(pool, "openai-chat", "anthropic-messages", "200", "complete") {
		t.Error("requestCounter: not the vector's child")
	}
	before := testutil.CollectAndCount(gm.tokens)
	out := tokenCounter(attemptLabels{pool, key, "output"})
	if out != gm.tokens.WithLabelValues(pool, key, "output") {
		t.Error("tokenCounter: not the vector's child")
	}
	if got := testutil.CollectAndCount(gm.tokens); got != before+1 {
		t.Errorf("tokens_total children %d after one kind counted, want %d", got, before+1)
	}

	// a request observed counts in the children a lookup finds
	in, outN := int64(7), int64(3)
	(&metrics{}).observe(&requestLog{pool: pool, key: key, status: 200, ttfb: 1,
		usage:    translate.Usage{InputTokens: &in, OutputTokens: &outN},
		attempts: []attemptLog{{key: key, outcome: "success", status: 200}}})
	if v := testutil.ToFloat64(gm.tokens.WithLabelValues(pool, key, "input")); v != 7 {
		t.Errorf("input tokens %v, want 7", v)
	}
	if v := testutil.ToFloat64(gm.attempts.WithLabelValues(pool, key, "success")); v != 1 {
		t.Errorf("attempts %v, want 1", v)
	}
	if v := testutil.ToFloat64(gm.requests.WithLabelValues(pool, "", "", "200", "")); v != 1 {
		t.Errorf("requests %v, want 1", v)
	}
}
