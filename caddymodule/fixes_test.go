package caddymodule

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestZeroRetryAfterDoesNotTrapRequests: a key answering 429 with
// Retry-After: 0 is not hammered while another key can serve, even for a
// session pinned to it.
func TestZeroRetryAfterDoesNotTrapRequests(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"zero": {Status: 429, RetryAfter: "0"}}})
	gw := gateway(t, gatewayBlock("\t\tpool rz {\n\t\t\tkey zero "+base+" {\n\t\t\t\tid zero\n\t\t\t}\n\t\t\tkey good "+base+" {\n\t\t\t\tid good\n\t\t\t}\n\t\t}\n"))
	for i := range 6 {
		resp, body := post(t, gw+"/v1/chat/completions", chatBody("m", "same prompt", false))
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "rz/good" {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	if n := m.Stats("zero").Requests; n > 2 {
		t.Fatalf("the refusing key got %d requests", n)
	}
	if s := keyStatus(t, "rz", "zero"); s.State != "cooling" {
		t.Fatalf("zero %+v: a 0 s Retry-After should fall back to the backoff", s)
	}
}

// TestDeadKeysFirst503HasRetryAfter: the 503 that ends a request in which
// every key failed for its credentials says when to come back.
func TestDeadKeysFirst503HasRetryAfter(t *testing.T) {
	_, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{Status: 401}})
	gw := gateway(t, gatewayBlock(poolBlock("ra503", base, 2, "")))
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("m", "hi", false))
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// TestScopedModelList: /v1/models lists only what the gateway key may use,
// and <pool>/<model> works within the scope.
func TestScopedModelList(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key sk-team-a-000000001 {\n\t\t\tpools oa\n\t\t\tmodels mock-*\n\t\t}\n"+
		"\t\tpool oa {\n\t\t\tmodels mock-gpt gpt-4o\n\t\t\tkey oa-1 "+base+"\n\t\t}\n"+
		"\t\tpool other {\n\t\t\tmodels mock-other\n\t\t\tkey ot-1 "+base+"\n\t\t}\n\t}\n")
	req, _ := http.NewRequest(http.MethodGet, gw+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer sk-team-a-000000001")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	sb.Write(buf[:n])
	resp.Body.Close()
	if ids := gjson.Get(sb.String(), "data.#.id").String(); ids != `["mock-gpt"]` {
		t.Fatalf("models for the scoped key: %s", ids)
	}
	r2, body := post(t, gw+"/v1/chat/completions", chatBody("oa/mock-gpt", "hi", false), "Authorization", "Bearer sk-team-a-000000001")
	if r2.StatusCode != 200 || m.Stats("oa-1").OK != 1 {
		t.Fatalf("oa/mock-gpt: %d %s", r2.StatusCode, body)
	}
}

// TestLogRoutingKept: protecting the access log from X-Api-Key does not
// change which logs an entry goes to.
func TestLogRoutingKept(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	dir := t.TempDir()
	def, access := filepath.Join(dir, "default.log"), filepath.Join(dir, "access.log")
	gw := gateway(t, "\tlog {\n\t\toutput file "+access+"\n\t\tformat json\n\t}\n"+gatewayBlock(poolBlock("route", base, 1, "")),
		"\tlog default {\n\t\toutput file "+def+"\n\t\tformat json\n\t\texclude http.log.access http.handlers.llm_gateway\n\t}")
	for range 2 {
		post(t, gw+"/v1/chat/completions", chatBody("m", "hi", false), "Authorization", "", "X-Api-Key", gatewayKey)
	}
	a, _ := os.ReadFile(access)
	d, _ := os.ReadFile(def)
	if strings.Count(string(a), `"msg":"handled request"`) != 2 {
		t.Fatalf("access log: %s", a)
	}
	if strings.Contains(string(d), "handled request") || strings.Contains(string(d), "llm request") {
		t.Fatalf("excluded entries reached the default log: %s", d)
	}
	if strings.Contains(string(a), gatewayKey) {
		t.Fatal("gateway key in the access log")
	}
}

// TestClearAndVerifyUsesARealRequest: a key cooled for its credentials is
// verified with a completion, not with a models list that may not check
// the key.
func TestClearAndVerifyUsesARealRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `{"object":"list","data":[]}`)
			return
		}
		w.WriteHeader(401)
		fmt.Fprint(w, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	t.Cleanup(srv.Close)
	gw, admin := adminGateway(t, gatewayBlock("\t\tpool cv {\n\t\t\tkey cv-key-000000 "+srv.URL+"/v1 {\n\t\t\t\tid cv\n\t\t\t}\n\t\t}\n"), "")
	post(t, gw+"/v1/chat/completions", chatBody("m", "hi", false))
	if s := keyStatus(t, "cv", "cv"); s.Reason != "invalid_key" {
		t.Fatalf("setup: %+v", s)
	}
	status, body := adminDo(t, http.MethodPost, admin+"/llm_gateway/diagnose?pool=cv&clear=1")
	if status != 200 || gjson.GetBytes(body, "0.ok").Bool() || gjson.GetBytes(body, "0.action").String() == "cleared" {
		t.Fatalf("%d %s", status, body)
	}
	if s := keyStatus(t, "cv", "cv"); s.State != "cooling" {
		t.Fatalf("rejected key back in rotation: %+v", s)
	}
}
