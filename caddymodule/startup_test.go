package caddymodule

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// startupLines returns the entries of the gateway's log with message msg.
func startupLines(t *testing.T, path, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range readJSONLines(t, path) {
		if e["logger"] == "http.handlers.llm_gateway" && e["msg"] == msg {
			out = append(out, e)
		}
	}
	return out
}

// TestStartupSummary: provisioning logs one info line per pool (keys,
// strategy, models) and says that the status page is unavailable when the
// admin endpoint is off; no secret is in them.
func TestStartupSummary(t *testing.T) {
	const secret = "sk-startup-secret-0123456789abcdef"
	_, base := mock(t, mockupstream.Config{})
	appLog := filepath.Join(t.TempDir(), "app.log")
	gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool main {\n\t\t\tmodels gpt-* o3*\n\t\t\tstrategy least_used\n"+
		"\t\t\tkey "+secret+" "+base+"\n\t\t\tkey sk-startup-second-0000000000 "+base+"\n\t\t}\n"+
		"\t\tpool spare {\n\t\t\tpriority 2\n\t\t\tkey sk-startup-third-00000000000 "+base+"\n\t\t}\n\t}",
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")

	pools := startupLines(t, appLog, "pool loaded")
	if len(pools) != 2 {
		t.Fatalf("%d pool lines, want 2: %v", len(pools), pools)
	}
	want := []string{
		`pool=main keys=2 strategy=least_used models=[gpt-* o3*] priority=0`,
		`pool=spare keys=1 strategy=round_robin models=[*] priority=2`,
	}
	for i, e := range pools {
		got := fmt.Sprintf("pool=%v keys=%v strategy=%v models=%v priority=%v", e["pool"], e["keys"], e["strategy"], e["models"], e["priority"])
		if got != want[i] {
			t.Errorf("pool line %d: %s, want %s", i, got, want[i])
		}
		if e["level"] != "info" {
			t.Errorf("pool line %d at level %v", i, e["level"])
		}
	}
	off := 0
	for _, e := range readJSONLines(t, appLog) {
		if s, _ := e["msg"].(string); strings.HasPrefix(s, "status page unavailable: Caddy's admin endpoint is off") {
			off++
		}
		if line := fmt.Sprint(e); strings.Contains(line, secret) || strings.Contains(line, secret4(secret)) {
			t.Errorf("log line shows a secret: %s", line)
		}
	}
	if off != 1 {
		t.Errorf("%d 'status page unavailable' lines, want 1", off)
	}
}

// TestStartupSummaryAdminAddress: with the admin endpoint on, the line
// gives the status page's URL, and that URL serves the page.
func TestStartupSummaryAdminAddress(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	appLog := filepath.Join(t.TempDir(), "app.log")
	adminPort, port := freePort(t), freePort(t)
	cf := fmt.Sprintf("{\n\tadmin 127.0.0.1:%d\n\tpersist_config off\n\tgrace_period 1ns\n"+
		"\tlog {\n\t\toutput file %s\n\t\tformat json\n\t\tlevel INFO\n\t}\n}\n"+
		"http://127.0.0.1:%d {\n\tllm_gateway {\n\t\tapi_key %s\n\t\tpool main {\n\t\t\tkey sk-admin-test-0000000000 %s\n\t\t}\n\t}\n}\n",
		adminPort, appLog, port, gatewayKey, base)
	loadCaddyfile(t, cf)
	t.Cleanup(func() { _ = caddy.Stop() })

	lines := startupLines(t, appLog, "status page")
	wantURL := fmt.Sprintf("http://127.0.0.1:%d/llm_gateway/", adminPort)
	if len(lines) != 1 || lines[0]["status_page"] != wantURL {
		t.Fatalf("status page lines %v, want one with %s", lines, wantURL)
	}
	resp, err := http.Get(wantURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET %s: %d %s", wantURL, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
