package caddymodule

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestEgressVisibleAndSecretsNeverShow: exits are named (masked) in
// X-Routed-Via, the request log, the admin API, the metrics and diagnose;
// proxy credentials given as placeholders appear in no log line, admin
// response, metric label or error body, in any spelling (grep).
func TestEgressVisibleAndSecretsNeverShow(t *testing.T) {
	const (
		httpUser, httpPass   = "tpuser-4411", "tp-secret-pass-7731"
		socksUser, socksPass = "suser-5522", "socks-secret-pass-8842"
		badPass              = "wrong-secret-pass-9953"
	)
	t.Setenv("LLMGW_EG_HU", httpUser)
	t.Setenv("LLMGW_EG_HP", httpPass)
	t.Setenv("LLMGW_EG_SU", socksUser)
	t.Setenv("LLMGW_EG_SP", socksPass)
	t.Setenv("LLMGW_EG_BAD", badPass)
	hp := startTinyproxy(t, httpUser, httpPass)
	sp := startMicrosocks(t, socksUser, socksPass)
	bad := startTinyproxy(t, httpUser, httpPass) // configured below with a wrong password: 407
	_, base := mockPerRequest(t)

	dir := t.TempDir()
	appLog, accessLog := filepath.Join(dir, "app.log"), filepath.Join(dir, "access.log")
	port, aport := freePort(t), freePort(t)
	httpURL := hp.url("http", "{env.LLMGW_EG_HU}:{env.LLMGW_EG_HP}")
	socksURL := sp.url("socks5", "{env.LLMGW_EG_SU}:{env.LLMGW_EG_SP}")
	badURL := bad.url("http", "{env.LLMGW_EG_HU}:{env.LLMGW_EG_BAD}")
	cf := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	persist_config off
	grace_period 1ns
	log {
		output file %s
		format json
		level DEBUG
	}
}
http://127.0.0.1:%d {
	log {
		output file %s
		format json
	}
	llm_gateway {
		api_key %s
		egress {
			proxy %s
			proxy %s
			proxy %s
			strategy failover
			cooldown 1m
		}
		pool main {
			affinity off
			key mk-1 %s {
				id k1
			}
		}
	}
}
`, aport, appLog, port, accessLog, gatewayKey, badURL, httpURL, socksURL, base)
	loadCaddyfile(t, cf)
	t.Cleanup(func() { _ = caddy.Stop() })
	gw, admin := fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("http://127.0.0.1:%d", aport)

	var seen strings.Builder // everything a client or an operator can see
	// the first exit refuses the wrong password (tinyproxy answers 401): it cools and the
	// request goes on through the second, never failing
	for i := 0; i < 3; i++ {
		resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		via := resp.Header.Get("X-Routed-Via")
		if want := "main/k1 via " + hp.url("http", "***"); via != want {
			t.Fatalf("X-Routed-Via %q, want %q", via, want)
		}
		seen.WriteString(via + "\n" + string(body))
	}
	if hp.count() != 3 {
		t.Fatalf("the authenticated proxy logged %d requests, want 3", hp.count())
	}
	views := map[string]egressView{}
	code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/egress")
	seen.Write(b)
	if code != 200 {
		t.Fatalf("admin egress: %d %s", code, b)
	}
	var out struct{ Exits []egressView }
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	for _, v := range out.Exits {
		views[v.Exit] = v
	}
	if v := views[bad.url("http", "***")]; v.State != "cooling" || v.Failures != 1 || v.LastError != "proxy refused CONNECT: 401 Unauthorized" {
		t.Fatalf("the refusing exit: %+v (all: %s)", v, b)
	}
	if v := views[hp.url("http", "***")]; v.State != "healthy" || v.Requests != 3 || v.LatencyMS <= 0 {
		t.Fatalf("the working exit: %+v", v)
	}
	if st := keyStatus(t, "main", "k1"); st.Failures != 0 {
		t.Fatalf("key charged for a proxy's refusal: %+v", st)
	}

	// diagnose probes the key through its exit
	rows := diagnoseRows(t, admin, "?pool=main")
	if r := rows["k1"]; !r.OK || r.Exit != hp.url("http", "***") {
		t.Fatalf("diagnose: %+v", r)
	}
	rb, _ := json.Marshal(rows)
	seen.Write(rb)

	// metrics
	fams := scrape(t, admin)
	if v := metricValue(fams, "llm_gateway_egress_requests_total", "exit="+hp.url("http", "***"), "outcome=success"); v < 3 {
		t.Fatalf("egress_requests_total success = %v", v)
	}
	if v := metricValue(fams, "llm_gateway_egress_requests_total", "exit="+bad.url("http", "***"), "outcome=unreachable"); v != 1 {
		t.Fatalf("egress_requests_total unreachable = %v", v)
	}
	if v := metricValue(fams, "llm_gateway_egress_cooling", "exit="+bad.url("http", "***")); v != 1 {
		t.Fatalf("egress_cooling of the refusing exit = %v", v)
	}
	if v := metricValue(fams, "llm_gateway_egress_cooling", "exit="+hp.url("http", "***")); v != 0 {
		t.Fatalf("egress_cooling of the working exit = %v", v)
	}
	_, mb := adminDo(t, http.MethodGet, admin+"/metrics")
	seen.Write(mb)

	// every exit down: the client's 503 names them, masked
	hp.stop()
	sp.stop()
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", true))
	seen.Write(body)
	if resp.StatusCode != 503 || !strings.Contains(gjson.GetBytes(body, "error.message").String(), "egress exits unreachable: "+bad.url("http", "***")) {
		t.Fatalf("all down: %d %s", resp.StatusCode, body)
	}
	_, pb := adminDo(t, http.MethodGet, admin+"/llm_gateway/pools")
	var got []string
	for _, r := range gjson.GetBytes(pb, `#(name=="main").keys.0.egress`).Array() {
		got = append(got, r.String())
	}
	if strings.Join(got, " ") != strings.Join([]string{bad.url("http", "***"), hp.url("http", "***"), sp.url("socks5", "***")}, " ") {
		t.Fatalf("the pools view's key egress: %s", got)
	}
	for _, path := range []string{"/llm_gateway/egress", "/llm_gateway/pools", "/config/", "/llm_gateway/"} {
		_, b := adminDo(t, http.MethodGet, admin+path)
		seen.Write(b)
		if path == "/llm_gateway/" && !strings.Contains(string(b), `id="egress"`) {
			t.Fatal("the status page has no egress section")
		}
		if path == "/config/" && !strings.Contains(string(b), "{env.LLMGW_EG_HP}") {
			t.Fatalf("/config/ lost the placeholder: %s", b)
		}
	}
	rows = diagnoseRows(t, admin, "?pool=main")
	if r := rows["k1"]; r.OK || r.Error != "egress_unreachable" {
		t.Fatalf("diagnose with every exit down: %+v", r)
	}
	rb, _ = json.Marshal(rows)
	seen.Write(rb)

	_ = caddy.Stop()
	for _, f := range []string{appLog, accessLog} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seen.Write(b)
	}
	app, _ := os.ReadFile(appLog)
	if !strings.Contains(string(app), `"exit":"`+hp.url("http", "***")+`"`) {
		t.Fatalf("the request log does not name the exit")
	}
	text := seen.String()
	for _, secret := range []string{httpPass, socksPass, badPass, httpUser, socksUser} {
		forms := []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)),
			base64.StdEncoding.EncodeToString([]byte(httpUser + ":" + secret))}
		for _, f := range forms {
			if strings.Contains(text, f) {
				i := strings.Index(text, f)
				t.Fatalf("%q shows up: ...%s...", f, text[max(0, i-200):min(len(text), i+100)])
			}
		}
	}
}

// TestEgressLiteralCredentialsWarned: exits are logged at load, masked;
// credentials written literally get a warning naming the exit (never the
// credentials), placeholders none.
func TestEgressLiteralCredentialsWarned(t *testing.T) {
	t.Setenv("LLMGW_EG_PASS2", "placeholder-pass-0042")
	appLog := filepath.Join(t.TempDir(), "app.log")
	_, base := mock(t, mockupstream.Config{})
	block := "\t\t\tegress {\n\t\t\t\tproxy http://lituser:literal-pass-7788@127.0.0.1:3128\n" +
		"\t\t\t\tproxy socks5://u:{env.LLMGW_EG_PASS2}@127.0.0.1:1080\n\t\t\t}\n"
	gateway(t, gatewayBlock(egressPool(base, 1, block)), "\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")
	_ = caddy.Stop()
	var exits, warned []any
	for _, e := range readJSONLines(t, appLog) {
		switch e["msg"] {
		case "egress exits":
			exits = e["exits"].([]any)
		default:
			if strings.HasPrefix(fmt.Sprint(e["msg"]), "proxy credentials written literally") {
				warned = e["exits"].([]any)
			}
		}
	}
	if fmt.Sprint(exits) != "[http://***@127.0.0.1:3128 socks5://***@127.0.0.1:1080]" {
		t.Fatalf("exits logged: %v", exits)
	}
	if fmt.Sprint(warned) != "[http://***@127.0.0.1:3128]" {
		t.Fatalf("literal credentials warned for: %v", warned)
	}
	b, _ := os.ReadFile(appLog)
	for _, s := range []string{"literal-pass-7788", "lituser", "placeholder-pass-0042"} {
		if strings.Contains(string(b), s) {
			t.Fatalf("the log shows %q", s)
		}
	}
}
