package caddymodule

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	_ "github.com/caddyserver/caddy/v2/modules/metrics" // the admin endpoint's /metrics
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// scrape reads the admin endpoint's /metrics and returns the families
// named llm_gateway_*.
func scrape(t testing.TB, admin string) map[string]*dto.MetricFamily {
	t.Helper()
	code, b := adminDo(t, http.MethodGet, admin+"/metrics")
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, b)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for name, f := range fams {
		if strings.HasPrefix(name, "llm_gateway_") {
			out[name] = f
		}
	}
	return out
}

// metricValue returns the value of the sample of family name whose labels
// include all of want (as "k=v" pairs), or -1 when there is none. For a
// histogram it returns the sample count.
func metricValue(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for _, kv := range want {
			k, v, _ := strings.Cut(kv, "=")
			if labels[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

func TestMetricsAfterScriptedRun(t *testing.T) {
	_, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"mk-2": {Status: 401}}})
	site := gatewayBlock(poolBlock("met", base, 2, ""))
	gw, admin := adminGateway(t, site, "")
	in, out := scriptedRun(t, gw)
	// a request the gateway refuses itself: no pool, no attempt (the
	// counters are process-wide: other tests' refusals are counted too)
	refused := []string{"pool=", "dialect_in=openai_chat", "code=401"}
	before := max(0, metricValue(scrape(t, admin), "llm_gateway_requests_total", refused...))
	resp, _ := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "x", false), "Authorization", "Bearer wrong")
	if resp.StatusCode != 401 {
		t.Fatalf("bad gateway key: %d", resp.StatusCode)
	}

	check := func(fams map[string]*dto.MetricFamily) {
		t.Helper()
		for _, c := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"llm_gateway_requests_total", []string{"pool=met", "dialect_in=openai_chat", "dialect_out=openai_chat", "code=200"}, 4},
			{"llm_gateway_upstream_attempts_total", []string{"pool=met", "key=k1", "outcome=success"}, 4},
			{"llm_gateway_upstream_attempts_total", []string{"pool=met", "key=k2", "outcome=invalid_key"}, 1},
			{"llm_gateway_tokens_total", []string{"pool=met", "key=k1", "kind=input"}, float64(in)},
			{"llm_gateway_tokens_total", []string{"pool=met", "key=k1", "kind=output"}, float64(out)},
			{"llm_gateway_tokens_total", []string{"pool=met", "key=k2"}, -1},
			{"llm_gateway_request_duration_seconds", []string{"pool=met"}, 4},
			{"llm_gateway_time_to_first_byte_seconds", []string{"pool=met"}, 4},
			{"llm_gateway_acquire_wait_seconds", []string{"pool=met"}, 4},
			{"llm_gateway_key_in_flight", []string{"pool=met", "key=k1"}, 0},
			{"llm_gateway_key_in_flight", []string{"pool=met", "key=k2"}, 0},
			{"llm_gateway_key_cooling", []string{"pool=met", "key=k2", "reason=invalid_key"}, 1},
			{"llm_gateway_key_cooling", []string{"pool=met", "key=k1"}, -1},
			{"llm_gateway_requests_total", refused, before + 1},
		} {
			if got := metricValue(fams, c.name, c.labels...); got != c.want {
				t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
			}
		}
	}
	fams := scrape(t, admin)
	check(fams)

	// a reload (another setting, same pool) keeps the counters
	site2 := gatewayBlock(poolBlock("met", base, 2, "\t\t\terror_cooldown 7s\n"))
	port := strings.TrimPrefix(gw, "http://127.0.0.1:")
	aport := strings.TrimPrefix(admin, "http://127.0.0.1:")
	loadCaddyfile(t, fmt.Sprintf("{\n\tadmin 127.0.0.1:%s\n\tpersist_config off\n\tgrace_period 1ns\n}\nhttp://127.0.0.1:%s {\n%s\n}\n", aport, port, site2))
	if s := poolFor(t, "met").Settings().ErrorCooldown.String(); s != "7s" {
		t.Fatalf("reload not applied: error cooldown %s", s)
	}
	check(scrape(t, admin))
}

func TestMetricsRegistration(t *testing.T) {
	// registering twice into one registry, and into a fresh one, is fine
	for range 2 {
		reg := newTestRegistry()
		if err := registerMetrics(reg); err != nil {
			t.Fatal(err)
		}
		if err := registerMetrics(reg); err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
}

func newTestRegistry() *prometheus.Registry { return prometheus.NewPedanticRegistry() }
