package caddymodule

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The egress metrics, registered with the gateway's (registerMetrics):
//
//	llm_gateway_egress_requests_total{exit,outcome}   counter
//	llm_gateway_egress_cooling{exit}                  gauge
//
// exit is the exit's masked URL (credentials as ***), or "direct";
// outcome is "success" (an HTTP answer came back through the exit, any
// status), "unreachable" (the exit's connect or handshake failed or timed
// out; it cooled) or "error" (the upstream behind the exit failed).
var egressMetrics = struct {
	once     sync.Once
	requests *prometheus.CounterVec
	cooling  *egressCollector
}{}

func initEgressMetrics() {
	egressMetrics.once.Do(func() {
		egressMetrics.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace,
			Name:      "egress_requests_total",
			Help:      "Upstream requests by egress exit (masked URL) and outcome (success, unreachable, error).",
		}, []string{"exit", "outcome"})
		egressMetrics.cooling = &egressCollector{desc: prometheus.NewDesc(
			prometheus.BuildFQName(metricsNamespace, "", "egress_cooling"),
			"1 while an egress exit is cooling after a connect failure, else 0.", []string{"exit"}, nil)}
	})
}

// egressCollectors returns the egress collectors, for registerMetrics.
func egressCollectors() []prometheus.Collector {
	initEgressMetrics()
	return []prometheus.Collector{egressMetrics.requests, egressMetrics.cooling}
}

// egressMetricsInc counts one request through an exit.
func egressMetricsInc(exit, outcome string) {
	initEgressMetrics()
	egressMetrics.requests.WithLabelValues(exit, outcome).Inc()
}

// egressCollector exports llm_gateway_egress_cooling from the live exits
// at scrape time.
type egressCollector struct{ desc *prometheus.Desc }

// Describe implements prometheus.Collector.
func (c *egressCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *egressCollector) Collect(ch chan<- prometheus.Metric) {
	seen := map[string]bool{}
	for _, v := range egressViews() {
		if seen[v.Exit] {
			continue
		}
		seen[v.Exit] = true
		cooling := 0.0
		if v.State == "cooling" {
			cooling = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, cooling, v.Exit)
	}
}

// handleEgress serves GET /llm_gateway/egress: every exit of the process
// with its state, cooldown left, requests, failures and latency (masked
// URLs only).
func (adminAPI) handleEgress(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodGet); err != nil {
		return err
	}
	return writeAdminJSON(w, map[string]any{"exits": egressViews(), "time": time.Now().UTC().Format(time.RFC3339)})
}
