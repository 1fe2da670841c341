package caddymodule

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestAttackUpstreamEchoesKey: an upstream (a careless relay) that echoes
// the key it was sent in its error messages and headers: neither the
// client's answer, the playground's, the request log nor the pools view
// shows the upstream key or the gateway key.
func TestAttackUpstreamEchoesKey(t *testing.T) {
	const upKey = "sk-echoed-upstream-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Debug-Auth", auth)
		status := http.StatusBadRequest
		if strings.Contains(r.URL.Path, "chat") && strings.Contains(auth, "x") {
			status = http.StatusUnauthorized
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s (header %q)","type":"invalid_request_error","code":"invalid_api_key"}}`,
			strings.TrimPrefix(auth, "Bearer "), auth)
	}))
	t.Cleanup(srv.Close)
	gw, admin := adminGateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tpool echo {\n\t\t\tkey "+upKey+" "+srv.URL+"/v1 {\n\t\t\t\tid k1\n\t\t\t}\n\t\t\tmodels echo-model\n\t\t}\n\t}\n", "")
	// echoed: the upstream's message reached label, its key masked (so
	// the check below is not passed by an answer that dropped it)
	echoed := func(label string, b []byte) {
		t.Helper()
		if !bytes.Contains(b, []byte("Incorrect API key provided: [redacted]")) {
			t.Errorf("%s does not carry the upstream's message, masked: %s", label, b[:min(len(b), 400)])
		}
	}
	check := func(label string, b []byte) {
		t.Helper()
		for _, s := range []string{upKey, gatewayKey, "0123456789abcdef"} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s shows %q: %s", label, s, b[:min(len(b), 400)])
			}
		}
	}
	seq := recentSeq()
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("echo-model", "hi", false))
	if resp.StatusCode < 400 {
		t.Fatalf("client: %d %s", resp.StatusCode, b)
	}
	echoed("client answer", b)
	check("client answer", b)
	check("client headers", []byte(fmt.Sprint(resp.Header)))
	pr, err := http.Post(admin+"/llm_gateway/playground", "application/json",
		strings.NewReader(`{"model":"echo-model","dialect":"anthropic","stream":true,"prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	var pb bytes.Buffer
	_, _ = pb.ReadFrom(pr.Body)
	pr.Body.Close()
	if pr.StatusCode != 400 {
		t.Errorf("playground: %d %s", pr.StatusCode, pb.Bytes())
	}
	echoed("playground answer", pb.Bytes())
	check("playground answer", pb.Bytes())
	check("playground headers", []byte(fmt.Sprint(pr.Header)))
	// a request is logged as it ends, maybe just after its answer
	eventually(t, 2*time.Second, "the client's and the playground's requests in the request log", func() bool { return recentSeq()-seq == 2 })
	for _, route := range []string{"requests", "pools", "sessions", "usage?by=key", "spend", "egress", "budgets", "models"} {
		code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/"+route)
		if code != 200 {
			t.Errorf("%s: %d %s", route, code, b)
		}
		check(route, b)
	}
}
