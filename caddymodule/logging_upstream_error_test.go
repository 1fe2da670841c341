package caddymodule

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestRequestLogUpstreamError: a client_error the upstream answered (a
// 400 the request caused, relayed to the client) is logged with the
// upstream's message as upstream_error, the key it echoed masked and the
// message cut to maxErrorMessage bytes.
func TestRequestLogUpstreamError(t *testing.T) {
	const upKey = "sk-logged-upstream-0123456789abcdef"
	long := strings.Repeat("x", 6000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"Invalid 'temperature' for key %s: must be at most 2 %s","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`,
			strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), long)
	}))
	t.Cleanup(srv.Close)
	appLog := filepath.Join(t.TempDir(), "app.log")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tusage_file off\n\t\tpool uperr {\n\t\t\tkey "+upKey+" "+srv.URL+"/v1 {\n\t\t\t\tid ue1\n\t\t\t}\n\t\t\tmodels uperr-model\n\t\t}\n\t}\n",
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("uperr-model", "hi", false))
	if resp.StatusCode != 400 {
		t.Fatalf("client: %d %s", resp.StatusCode, b)
	}
	e := requestEntries(t, appLog, 1)[0]
	msg, _ := e["upstream_error"].(string)
	if !strings.HasPrefix(msg, "Invalid 'temperature' for key [redacted]: must be at most 2 xxx") {
		t.Fatalf("upstream_error %q, want the upstream's message with its key masked", msg[:min(len(msg), 200)])
	}
	for _, s := range []string{upKey, "0123456789abcdef"} {
		if strings.Contains(msg, s) {
			t.Fatalf("upstream_error shows %q", s)
		}
	}
	if len(msg) > maxErrorMessage+64 || len(msg) < 1000 {
		t.Fatalf("upstream_error is %d bytes, want cut near %d", len(msg), maxErrorMessage)
	}
	if num(e["status"]) != 400 || e["key"] != "ue1" || e["error"] != nil {
		t.Fatalf("log entry: status %v key %v error %v, want 400 ue1 and no gateway error", e["status"], e["key"], e["error"])
	}
}
