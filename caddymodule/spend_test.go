package caddymodule

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// forgetCostState drops the cost totals, unpriced models and usage
// series a process keeps in memory (as a restart would).
func forgetCostState() {
	costMap.Range(func(k, _ any) bool {
		costMap.Delete(k)
		return true
	})
	costModels.Store(0)
	unknownModels.Lock()
	unknownModels.m = map[[2]string]int64{}
	unknownModels.Unlock()
	callerUsage = newUsageSeries(time.Now)
}

// The scripted upstream answers: usage fixed exactly per key.
const (
	// sk-sp-oa1: 1000 prompt tokens (200 cached), 500 completion (100 reasoning)
	spendOA1 = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"one"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500,"prompt_tokens_details":{"cached_tokens":200},"completion_tokens_details":{"reasoning_tokens":100}}}`
	// sk-sp-oa2: 2000 prompt, 100 completion
	spendOA2 = `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"two"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2000,"completion_tokens":100,"total_tokens":2100}}`
	// sk-sp-an: Anthropic, input 100 + cache read 300 + cache write 50, output 40
	spendAN = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"three"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"cache_read_input_tokens":300,"cache_creation_input_tokens":50,"output_tokens":40}}`
	// sk-sp-st: a stream, 300 prompt, 30 completion in its last chunk
	spendST = "data: {\"id\":\"s\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"s\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"id\":\"s\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":300,\"completion_tokens\":30,\"total_tokens\":330}}\n\n" +
		"data: [DONE]\n\n"
)

// spendCost is the expected cost of one request by serving key and
// model, from the prices of the Caddyfile below and the built-in table:
//
//	mock-priced (pool price 2/8, cache_read 0.5, reasoning 10):
//	  oa1: 800x2 + 200x0.5 + 400x8 + 100x10 = 5900 -> 0.0059
//	  oa2: 2000x2 + 100x8 = 4800 -> 0.0048
//	mock-other (global mock-* 1/2): oa1 1000x1 + 500x2 -> 0.002; oa2 2000 + 200 -> 0.0022
//	claude-sonnet-4-5 (built-in 3/15, cache read 0.3, write 3.75):
//	  100x3 + 300x0.3 + 50x3.75 + 40x15 = 1177.5 -> 0.0011775
//	stream-x (global 10/100): 300x10 + 30x100 = 6000 -> 0.006
//	unpriced-x: unknown
var spendCost = map[string]float64{
	"oa1 mock-priced": 0.0059, "oa2 mock-priced": 0.0048,
	"oa1 mock-other": 0.002, "oa2 mock-other": 0.0022,
	"an claude-sonnet-4-5": 0.0011775, "st stream-x": 0.006,
}

func spendSite(base, root, file string) string {
	return "\tllm_gateway {\n\t\tusage_file " + file + "\n" +
		"\t\tapi_key gw-alice-token-0001 {\n\t\t\tid alice\n\t\t}\n" +
		"\t\tapi_key gw-bob-token-0002 {\n\t\t\tid bob\n\t\t}\n" +
		"\t\tprice mock-* input 1 output 2\n" +
		"\t\tprice stream-x input 10 output 100\n" +
		"\t\tpool spend-oa {\n\t\t\tmodels mock-* unpriced-*\n" +
		"\t\t\tprice mock-priced input 2 output 8 cache_read 0.5 reasoning 10\n" +
		"\t\t\tkey sk-sp-oa1 " + base + " {\n\t\t\t\tid oa1\n\t\t\t}\n" +
		"\t\t\tkey sk-sp-oa2 " + base + " {\n\t\t\t\tid oa2\n\t\t\t}\n\t\t}\n" +
		"\t\tpool spend-an {\n\t\t\tmodels claude-*\n" +
		"\t\t\tkey sk-sp-an " + root + " {\n\t\t\t\tid an\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n" +
		"\t\tpool spend-st {\n\t\t\tmodels stream-*\n" +
		"\t\t\tkey sk-sp-st " + base + " {\n\t\t\t\tid st\n\t\t\t}\n\t\t}\n\t}\n"
}

// TestSpendScripted: a scripted run through the mock, usage known
// exactly, gives exact cost_usd per request, and the same totals per key,
// gateway key and model in the request log, the admin API (pools, spend,
// usage JSON and CSV), the cost metric, and after a restart.
func TestSpendScripted(t *testing.T) {
	_, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"sk-sp-oa1": {ReplayBody: []byte(spendOA1), ReplayContentType: "application/json"},
		"sk-sp-oa2": {ReplayBody: []byte(spendOA2), ReplayContentType: "application/json"},
		"sk-sp-an":  {ReplayBody: []byte(spendAN), ReplayContentType: "application/json"},
		"sk-sp-st":  {ReplayBody: []byte(spendST), ReplayContentType: "text/event-stream"},
	}})
	root := strings.TrimSuffix(base, "/v1")
	dir := t.TempDir()
	file, appLog := filepath.Join(dir, "usage.json"), filepath.Join(dir, "app.log")
	forgetProcessState()
	forgetCostState()
	t.Cleanup(func() { forgetProcessState(); forgetCostState() })
	start := time.Now()
	logOpt := "\tlog {\n\t\toutput file " + appLog + "\n\t\tformat json\n\t\tlevel INFO\n\t}"
	gw, admin := adminGatewayWithGlobals(t, spendSite(base, root, file), logOpt)

	metricBefore := map[string]float64{}
	labels := [][4]string{}
	for _, k := range []string{"oa1", "oa2"} {
		for _, g := range []string{"alice", "bob"} {
			for _, m := range []string{"mock-priced", "mock-other"} {
				labels = append(labels, [4]string{"spend-oa", k, g, m})
			}
		}
	}
	for _, g := range []string{"alice", "bob"} {
		labels = append(labels, [4]string{"spend-an", "an", g, "claude-sonnet-4-5"}, [4]string{"spend-st", "st", g, "stream-x"})
	}
	initCostMetric()
	for _, l := range labels {
		metricBefore[strings.Join(l[:], "|")] = testutil.ToFloat64(costMetric.WithLabelValues(l[0], l[1], l[2], l[3]))
	}

	// the script: who asks for what
	type step struct{ token, model, path string }
	script := []step{
		{"gw-alice-token-0001", "mock-priced", "chat"}, {"gw-alice-token-0001", "mock-priced", "chat"},
		{"gw-bob-token-0002", "mock-other", "chat"}, {"gw-bob-token-0002", "mock-other", "chat"},
		{"gw-alice-token-0001", "mock-other", "chat"}, {"gw-bob-token-0002", "mock-priced", "chat"},
		{"gw-alice-token-0001", "claude-sonnet-4-5", "messages"}, {"gw-bob-token-0002", "claude-sonnet-4-5", "chat"},
		{"gw-alice-token-0001", "stream-x", "stream"}, {"gw-bob-token-0002", "unpriced-x", "chat"},
	}
	wantReq := map[string]float64{} // request id -> cost
	wantKey := map[string]float64{}
	wantGK := map[string]float64{"alice": 0, "bob": 0}
	wantModel := map[string]float64{}
	for i, s := range script {
		id := "spend-" + strconv.Itoa(i)
		var resp *http.Response
		var body []byte
		switch s.path {
		case "chat":
			resp, body = post(t, gw+"/v1/chat/completions", chatBody(s.model, "hello "+id, false), "Authorization", "Bearer "+s.token, "X-Request-Id", id)
		case "stream":
			resp, body = post(t, gw+"/v1/chat/completions", chatBody(s.model, "hello "+id, true), "Authorization", "Bearer "+s.token, "X-Request-Id", id)
		case "messages":
			resp, body = post(t, gw+"/v1/messages", []byte(`{"model":"`+s.model+`","max_tokens":10,"messages":[{"role":"user","content":"hello"}]}`),
				"Authorization", "Bearer "+s.token, "X-Request-Id", id, "Anthropic-Version", "2023-06-01")
		}
		if resp.StatusCode != 200 {
			t.Fatalf("step %d: %d %s", i, resp.StatusCode, body)
		}
		via := resp.Header.Get("X-Routed-Via") // pool/<public id>
		key := via[strings.Index(via, "/")+1:]
		gk := strings.Split(s.token, "-")[1] // gw-<id>-token-...
		if s.model == "unpriced-x" {
			wantReq[id] = -1
			continue
		}
		c, ok := spendCost[key+" "+s.model]
		if !ok {
			t.Fatalf("step %d: served by %q: no expected cost", i, via)
		}
		wantReq[id] = c
		pool := via[:strings.Index(via, "/")]
		wantKey[pool+"/"+key] += c
		wantGK[gk] += c
		wantModel[s.model] += c
	}

	if len(wantKey) != 4 {
		t.Fatalf("keys served: %v, want oa1, oa2, an and st", wantKey)
	}

	// the request log: exact cost_usd per request
	entries := requestEntries(t, appLog, len(script))
	if len(entries) != len(script) {
		t.Fatalf("%d log entries, want %d", len(entries), len(script))
	}
	logKey, logGK, logModel := map[string]float64{}, map[string]float64{}, map[string]float64{}
	var logReqs, logIn, logOut int64
	for _, e := range entries {
		id, _ := e["request_id"].(string)
		want := wantReq[id]
		logReqs++
		logIn += int64(num(e["input_tokens"]))
		logOut += int64(num(e["output_tokens"]))
		if want < 0 {
			if e["cost"] != "unknown" || e["cost_usd"] != nil {
				t.Fatalf("%s: cost %v cost_usd %v, want unknown", id, e["cost"], e["cost_usd"])
			}
			continue
		}
		got, ok := e["cost_usd"].(float64)
		if !ok || math.Abs(got-want) > 1e-15 || e["cost"] != "known" {
			t.Fatalf("%s: cost_usd %v (%v), want %v", id, e["cost_usd"], e["cost"], want)
		}
		if as, _ := e["attempt_log"].([]any); len(as) == 0 || num(as[len(as)-1].(map[string]any)["cost_usd"]) != got {
			t.Fatalf("%s: attempt_log %v, want the serving attempt's cost_usd %v", id, e["attempt_log"], got)
		}
		logKey[e["pool"].(string)+"/"+e["key"].(string)] += got
		logGK[e["gateway_key"].(string)] += got
		logModel[e["upstream_model"].(string)] += got
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	for k, v := range wantKey {
		near("log key "+k, logKey[k], v)
	}
	for k, v := range wantGK {
		near("log gateway key "+k, logGK[k], v)
	}
	for k, v := range wantModel {
		near("log model "+k, logModel[k], v)
	}

	// the admin API: spend totals and the unpriced model
	checkSpend := func(when string) {
		t.Helper()
		code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/spend")
		if code != 200 {
			t.Fatalf("%s: spend %d %s", when, code, b)
		}
		var r costReport
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		for _, v := range r.Keys {
			near(when+" spend key "+v.Pool+"/"+v.Key, v.USD, wantKey[v.Pool+"/"+v.Key])
		}
		for _, v := range r.GatewayKeys {
			near(when+" spend gateway key "+v.GatewayKey, v.USD, wantGK[v.GatewayKey])
		}
		for _, v := range r.Models {
			near(when+" spend model "+v.Model, v.USD, wantModel[v.Model])
			if v.Model == "unpriced-x" && (v.Unknown != 1 || v.Priced != 0) {
				t.Fatalf("%s: unpriced-x %+v", when, v)
			}
		}
		if len(r.Keys) != len(wantKey) || len(r.GatewayKeys) != 2 || len(r.Models) != len(wantModel)+1 {
			t.Fatalf("%s: spend rows %+v", when, r)
		}
		pv := adminPools(t, admin)
		for k, v := range wantKey {
			pool, id, _ := strings.Cut(k, "/")
			near(when+" pools spend "+k, findKeyView(t, pv, pool, id).Spend.USD, v)
		}
	}
	checkSpend("live")
	code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/spend")
	if code != 200 || !strings.Contains(string(b), `"model": "unpriced-x"`) {
		t.Fatalf("unknown models not listed: %s", b)
	}

	// the metrics
	for _, l := range labels {
		got := testutil.ToFloat64(costMetric.WithLabelValues(l[0], l[1], l[2], l[3])) - metricBefore[strings.Join(l[:], "|")]
		want := 0.0
		for _, e := range entries {
			if e["pool"] == l[0] && e["key"] == l[1] && e["gateway_key"] == l[2] && e["upstream_model"] == l[3] {
				if c, ok := e["cost_usd"].(float64); ok {
					want += c
				}
			}
		}
		near("metric "+strings.Join(l[:], "|"), got, want)
	}

	// the usage API and its CSV: totals equal the request log's sums
	from := strconv.FormatInt(start.Add(-time.Hour).Unix(), 10)
	for _, by := range []string{"gateway_key", "key", "model", "pool"} {
		code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/usage?by="+by+"&from="+from)
		if code != 200 {
			t.Fatalf("usage by %s: %d %s", by, code, b)
		}
		var q usageQuery
		if err := json.Unmarshal(b, &q); err != nil {
			t.Fatal(err)
		}
		if q.Total.Requests != logReqs || q.Total.InputTokens != logIn || q.Total.OutputTokens != logOut || q.Total.CostUnknown != 1 {
			t.Fatalf("usage by %s: total %+v, log %d requests %d in %d out", by, q.Total, logReqs, logIn, logOut)
		}
		near("usage by "+by+" cost", q.Total.CostUSD, sum(wantGK))
		switch by {
		case "gateway_key":
			for k, v := range wantGK {
				near("usage gateway key "+k, q.Totals[k].CostUSD, v)
			}
		case "key":
			for k, v := range wantKey {
				near("usage key "+k, q.Totals[k].CostUSD, v)
			}
		case "model":
			for k, v := range wantModel {
				near("usage model "+k, q.Totals[k].CostUSD, v)
			}
		}
		code, b = adminDo(t, http.MethodGet, admin+"/llm_gateway/usage?by="+by+"&from="+from+"&format=csv")
		rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
		if code != 200 || err != nil || len(rows) < 2 {
			t.Fatalf("csv by %s: %d %v %s", by, code, err, b)
		}
		var reqs, in int64
		var cost float64
		for _, r := range rows[1:] {
			n, _ := strconv.ParseInt(r[3], 10, 64)
			x, _ := strconv.ParseInt(r[5], 10, 64)
			c, _ := strconv.ParseFloat(r[10], 64)
			reqs, in, cost = reqs+n, in+x, cost+c
		}
		if reqs != logReqs || in != logIn {
			t.Fatalf("csv by %s: %d requests %d in, log %d %d", by, reqs, in, logReqs, logIn)
		}
		near("csv by "+by+" cost", cost, sum(wantGK))
	}

	// daily buckets give the same totals; bad parameters are 400s
	code, b = adminDo(t, http.MethodGet, admin+"/llm_gateway/usage?by=pool&granularity=day&from="+start.UTC().Format(time.RFC3339))
	var day usageQuery
	if code != 200 || json.Unmarshal(b, &day) != nil || day.Granularity != "day" || day.Total.Requests != logReqs {
		t.Fatalf("daily usage: %d %s", code, b)
	}
	near("daily usage cost", day.Total.CostUSD, sum(wantGK))
	for _, q := range []string{"by=secret", "by=key&from=yesterday", "by=key&to=soon", "by=key&granularity=week", "by=key&format=xml"} {
		if code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/usage?"+q); code != http.StatusBadRequest {
			t.Fatalf("usage?%s: %d %s, want 400", q, code, b)
		}
	}
	if code, _ := adminDo(t, http.MethodPost, admin+"/llm_gateway/usage"); code != http.StatusMethodNotAllowed {
		t.Fatalf("POST usage: %d, want 405", code)
	}

	// restart: the totals and the series come back from the usage file
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	forgetProcessState()
	forgetCostState()
	_, admin = adminGatewayWithGlobals(t, spendSite(base, root, file), logOpt)
	code, b = adminDo(t, http.MethodGet, admin+"/llm_gateway/spend")
	if code != 200 {
		t.Fatalf("after restart: %d %s", code, b)
	}
	checkSpend("after restart")
	code, b = adminDo(t, http.MethodGet, admin+"/llm_gateway/usage?by=gateway_key&from="+from)
	var q usageQuery
	if code != 200 || json.Unmarshal(b, &q) != nil || q.Total.Requests != logReqs {
		t.Fatalf("usage after restart: %d %s", code, b)
	}
	near("usage after restart", q.Total.CostUSD, sum(wantGK))
}

// adminGatewayWithGlobals is adminGateway with extra global options.
func adminGatewayWithGlobals(t testing.TB, siteBody string, globals string) (gw, admin string) {
	t.Helper()
	port, aport := freePort(t), freePort(t)
	cf := fmt.Sprintf("{\n\tadmin 127.0.0.1:%d\n\tpersist_config off\n\tgrace_period 1ns\n%s\n}\nhttp://127.0.0.1:%d {\n%s\n}\n",
		aport, globals, port, siteBody)
	loadCaddyfile(t, cf)
	t.Cleanup(func() { _ = caddy.Stop() })
	return fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("http://127.0.0.1:%d", aport)
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// TestSpendAbandonedStream: a stream the client abandons is charged once,
// when it ends, from the request's token estimate (the upstream never
// reported usage), and marked estimated in the log and the totals.
func TestSpendAbandonedStream(t *testing.T) {
	// the stream holds after its first content event until the client has
	// gone: it is abandoned part-way, whatever the timing
	m, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{StreamHold: true, StreamHoldAfter: 1}})
	appLog := filepath.Join(t.TempDir(), "app.log")
	forgetCostState()
	t.Cleanup(forgetCostState)
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tusage_file off\n\t\tprice mock-gpt input 4 output 8\n"+
		"\t\tpool abandon {\n\t\t\tkey mk-ab "+base+" {\n\t\t\t\tid ab\n\t\t\t}\n\t\t}\n\t}\n",
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")
	body := chatBody("mock-gpt", "a long answer with many words to stream slowly", true)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	e := abandonStream(t, req, cancel, appLog, func(line string) bool { return strings.HasPrefix(line, "data: ") })
	// input: the estimate (body bytes / 4) at $4 per million; output: none reported
	want := float64(len(body)/4) * 4 / 1e6
	if e["cost"] != "estimated" || math.Abs(num(e["cost_usd"])-want) > 1e-15 || num(e["status"]) != 499 {
		t.Fatalf("log entry: cost %v cost_usd %v status %v, want estimated %v", e["cost"], e["cost_usd"], e["status"], want)
	}
	if f := peekCost(costKey{kind: costByKey, a: "abandon", b: "ab"}); f.Priced != 1 || f.Estimated != 1 || math.Abs(f.USD-want) > 1e-15 {
		t.Fatalf("key totals %+v, want one estimated request of %v", f, want)
	}
	eventually(t, 5*time.Second, "the upstream stream abandoned", func() bool {
		st := m.Stats("mk-ab")
		return st.Canceled == 1 && st.OK == 0 && st.InFlight == 0
	})
}

// TestSpendAbandonedAnthropicStream: an abandoned Anthropic stream whose
// message_start reported the input is still marked estimated (its output
// count is partial), in the log and the totals.
func TestSpendAbandonedAnthropicStream(t *testing.T) {
	// the stream holds after its first content event until the client has
	// gone: it is abandoned part-way, whatever the timing
	m, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{StreamHold: true, StreamHoldAfter: 1}})
	appLog := filepath.Join(t.TempDir(), "app.log")
	forgetCostState()
	t.Cleanup(forgetCostState)
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tusage_file off\n\t\tprice claude-ab input 4 output 8\n"+
		"\t\tpool abandon {\n\t\t\tkey mk-ab "+base+" {\n\t\t\t\tid ab\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n\t}\n",
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")
	body := []byte(`{"model":"claude-ab","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"a long answer with many words to stream slowly"}]}`)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	e := abandonStream(t, req, cancel, appLog, func(line string) bool { return strings.Contains(line, "content_block_delta") })
	// message_start reported 9 input tokens (the mock counts the prompt's
	// words) and 1 output token; nothing later reached the gateway:
	// 9 × $4 + 1 × $8 per million = $0.000044
	const wantUSD = 0.000044
	if e["cost"] != "estimated" || num(e["cost_usd"]) != wantUSD || num(e["status"]) != 499 || num(e["input_tokens"]) != 9 || num(e["output_tokens"]) != 1 {
		t.Fatalf("log entry: cost %v cost_usd %v status %v input_tokens %v output_tokens %v, want estimated, %v, 499, 9, 1", e["cost"], e["cost_usd"], e["status"], e["input_tokens"], e["output_tokens"], wantUSD)
	}
	if f := peekCost(costKey{kind: costByKey, a: "abandon", b: "ab"}); f.Priced != 1 || f.Estimated != 1 || f.USD != num(e["cost_usd"]) {
		t.Fatalf("key totals %+v, want one estimated request of %v", f, e["cost_usd"])
	}
	eventually(t, 5*time.Second, "the upstream stream abandoned", func() bool {
		st := m.Stats("mk-ab")
		return st.Canceled == 1 && st.OK == 0 && st.InFlight == 0
	})
}

// TestClusterSpendShared: with state redis, two instances add their
// requests' cost to the cluster totals; GET /llm_gateway/spend on either
// shows its own totals and the cluster's, which sum both.
func TestClusterSpendShared(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	_, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{ReplayBody: []byte(spendOA2), ReplayContentType: "application/json"}})
	site := clusterBlock(addr, prefix, "",
		"\t\tprice mock-x input 1 output 2\n",
		cpool("cs", []string{"models mock-* other-*"}, ckey("cs-1", base, "cs1"), ckey("cs-2", base, "cs2")))
	insts := startCluster(t, 2, site)
	c := clusterClient(t)
	// 2000 input at $1, 100 output at $2 per million: 0.0022 each
	const each = 0.0022
	for i, n := range []int{3, 2} {
		for range n {
			if r := send(c, insts[i], i, "mock-x", "spend"); r.err != nil || r.code != 200 {
				t.Fatalf("instance %d: %v %d %s", i, r.err, r.code, r.body)
			}
		}
	}
	if r := send(c, insts[1], 1, "other-x", "unpriced"); r.err != nil || r.code != 200 {
		t.Fatalf("unpriced: %v %d", r.err, r.code)
	}
	report := func(i int) costReport {
		t.Helper()
		code, b := adminDo(t, http.MethodGet, insts[i].Admin+"/llm_gateway/spend")
		var r costReport
		if code != 200 || json.Unmarshal(b, &r) != nil {
			t.Fatalf("instance %d spend: %d %s", i, code, b)
		}
		return r
	}
	total := func(vs []costView) (usd float64, priced, unknown int64) {
		for _, v := range vs {
			usd, priced, unknown = usd+v.USD, priced+v.Priced, unknown+v.Unknown
		}
		return
	}
	for i, want := range []int64{3, 2} {
		var r costReport
		eventually(t, 5*time.Second, "the cluster totals", func() bool {
			r = report(i)
			if r.Cluster == nil {
				return false
			}
			_, p, u := total(r.Cluster.Keys)
			return p == 5 && u == 1
		})
		if usd, p, _ := total(r.Keys); p != want || math.Abs(usd-float64(want)*each) > 1e-12 {
			t.Fatalf("instance %d: own totals %v USD over %d requests, want %d", i, usd, p, want)
		}
		if usd, _, _ := total(r.Cluster.Keys); math.Abs(usd-5*each) > 1e-12 || r.Cluster.Error != "" {
			t.Fatalf("instance %d: cluster totals %+v, want %v USD", i, r.Cluster, 5*each)
		}
		if usd, p, _ := total(r.Cluster.GatewayKeys); p != 5 || math.Abs(usd-5*each) > 1e-12 {
			t.Fatalf("instance %d: cluster gateway-key totals %+v", i, r.Cluster.GatewayKeys)
		}
		var mx costView
		for _, v := range r.Cluster.Models {
			if v.Model == "mock-x" {
				mx = v
			}
		}
		if mx.Priced != 5 || math.Abs(mx.USD-5*each) > 1e-12 {
			t.Fatalf("instance %d: cluster model totals %+v", i, r.Cluster.Models)
		}
	}
}

// abandonStream sends req (made with the context cancel ends), reads the
// stream until a line for which reached is true, then cancels and closes
// it, and returns the "llm request" entry the gateway logs to appLog.
func abandonStream(t *testing.T, req *http.Request, cancel context.CancelFunc, appLog string, reached func(line string) bool) map[string]any {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !reached(sc.Text()) {
	}
	cancel()
	resp.Body.Close()
	return requestEntries(t, appLog, 1)[0]
}
