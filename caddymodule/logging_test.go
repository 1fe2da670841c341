package caddymodule

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// readJSONLines parses a JSON-lines log file.
func readJSONLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %s", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// requestEntries waits for n "llm request" entries in appLog and returns
// them in order.
func requestEntries(t *testing.T, appLog string, n int) []map[string]any {
	t.Helper()
	var es []map[string]any
	eventually(t, 5*time.Second, "the requests' log entries", func() bool {
		es = es[:0]
		for _, x := range readJSONLines(t, appLog) {
			if x["msg"] == "llm request" {
				es = append(es, x)
			}
		}
		return len(es) >= n
	})
	return es
}

// TestRequestLogAndNoSecrets: one entry per request with the documented
// fields; neither the gateway key (sent as X-Api-Key, which Caddy's access
// log does not redact) nor an upstream secret appears in any log.
func TestRequestLogAndNoSecrets(t *testing.T) {
	const upstreamSecret = "sk-upstream-secret-abcdef0123456789"
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"sk-bad-upstream-secret-0000000000": {Status: 401}}})
	dir := t.TempDir()
	appLog, accessLog := filepath.Join(dir, "app.log"), filepath.Join(dir, "access.log")
	t.Setenv("LLMGW_TEST_UPSTREAM", upstreamSecret)
	site := "\tlog {\n\t\toutput file " + accessLog + "\n\t\tformat json\n\t}\n" +
		"\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n\t\tpool logs {\n" +
		"\t\t\tmodel_map gpt-4o mock-large\n" +
		"\t\t\tkey sk-bad-upstream-secret-0000000000 " + base + "\n" +
		"\t\t\tkey {env.LLMGW_TEST_UPSTREAM} " + base + "\n\t\t}\n\t}\n"
	gw := gateway(t, site, "\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")

	resp, body := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "log me", false),
		"Authorization", "", "X-Api-Key", gatewayKey, "X-Request-Id", "log-req-1")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	streamReq := `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"stream me"}]}`
	resp, _ = post(t, gw+"/v1/chat/completions", []byte(streamReq), "X-Request-Id", "log-req-2")
	if resp.StatusCode != 200 {
		t.Fatalf("stream status %d", resp.StatusCode)
	}
	// the mock counts a stream once its handler returns, which may be
	// after the client has read the last event
	eventually(t, 2*time.Second, "upstream served both", func() bool { return m.Stats(upstreamSecret).OK == 2 })
	// wrong key: also never logged
	post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "x", false), "Authorization", "", "X-Api-Key", "sk-typo-of-a-real-key-99999")
	// embeddings: the same log line, told apart by its endpoint
	if resp, body := post(t, gw+"/v1/embeddings", []byte(`{"model":"gpt-4o","input":"embed me"}`)); resp.StatusCode != 200 {
		t.Fatalf("embeddings %d: %s", resp.StatusCode, body)
	}

	// a request's log line is written when its handler returns, which may
	// be after the client has read the answer
	entries := requestEntries(t, appLog, 4)
	if len(entries) != 4 {
		t.Fatalf("%d llm request entries, want 4", len(entries))
	}
	e := entries[0]
	want := map[string]any{
		"logger": "http.handlers.llm_gateway", "request_id": "log-req-1", "client_model": "gpt-4o",
		"upstream_model": "mock-large", "pool": "logs", "key": "sk-...89", "attempts": float64(2),
		"status": float64(200), "stream": false, "dialect": "openai_chat", "endpoint": "chat/completions",
	}
	for k, v := range want {
		if e[k] != v {
			t.Errorf("field %s = %v, want %v", k, e[k], v)
		}
	}
	for _, k := range []string{"ttfb", "duration", "input_tokens", "output_tokens", "acquire_wait"} {
		if _, ok := e[k]; !ok {
			t.Errorf("field %s missing", k)
		}
	}
	al, _ := e["attempt_log"].([]any)
	if len(al) != 2 || al[0].(map[string]any)["outcome"] != "invalid_key" || al[1].(map[string]any)["outcome"] != "success" {
		t.Errorf("attempt_log = %v", e["attempt_log"])
	}
	if s := entries[1]; s["stream"] != true || s["output_tokens"] == nil || s["request_id"] != "log-req-2" {
		t.Errorf("stream entry = %v", s)
	}
	if s := entries[2]; s["status"] != float64(401) {
		t.Errorf("unauthorised entry = %v", s)
	}
	if s := entries[3]; s["endpoint"] != "embeddings" || s["status"] != float64(200) || s["input_tokens"] == nil {
		t.Errorf("embeddings entry = %v", s)
	}

	access := readJSONLines(t, accessLog)
	if len(access) != 4 {
		t.Fatalf("%d access log entries, want 4", len(access))
	}
	hdrs, _ := access[0]["request"].(map[string]any)["headers"].(map[string]any)
	if v, _ := hdrs["X-Api-Key"].([]any); len(v) != 1 || v[0] != "REDACTED" {
		t.Errorf("access log X-Api-Key = %v, want [REDACTED]", hdrs["X-Api-Key"])
	}
	if access[0]["llm_pool"] != "logs" {
		t.Errorf("access log lacks llm_pool: %v", access[0])
	}
	for _, path := range []string{appLog, accessLog} {
		b, _ := os.ReadFile(path)
		for _, secret := range []string{gatewayKey, upstreamSecret, "sk-bad-upstream-secret-0000000000", "sk-typo-of-a-real-key-99999"} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s contains the secret %s", filepath.Base(path), secret[:8]+"...")
			}
		}
		if bytes.Contains(b, []byte(secret4(gatewayKey))) {
			t.Errorf("%s contains part of the gateway key", filepath.Base(path))
		}
	}
}

// secret4 is a distinctive middle part of a secret, to catch partial leaks.
func secret4(s string) string { return s[len(s)/2-4 : len(s)/2+4] }

// TestSecretPlaceholderErrors: an unset env placeholder fails provisioning
// with a message that never echoes a value.
func TestSecretPlaceholderErrors(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	cf := "{\n\tadmin off\n\tpersist_config off\n}\nhttp://127.0.0.1:1 {\n\tllm_gateway {\n\t\tapi_key " + gatewayKey +
		"\n\t\tpool p {\n\t\t\tkey {env.LLMGW_DEFINITELY_UNSET} " + base + "\n\t\t}\n\t}\n}\n"
	err := loadCaddyfileErr(cf)
	if err == nil || !strings.Contains(err.Error(), `pool "p": key #1: {env.LLMGW_DEFINITELY_UNSET} is unset or empty`) {
		t.Fatalf("err = %v", err)
	}
}

// TestConnectTimeLogged: an attempt that opened a connection to its
// upstream logs the set-up time ("connect", in the entry and its
// attempt_log), one on a kept-alive connection logs none (the attempt's
// trace hooks, see exchange.trace).
func TestConnectTimeLogged(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	appLog := filepath.Join(t.TempDir(), "app.log")
	gw := gateway(t, gatewayBlock("\t\tpool conntime {\n\t\t\tkey sk-conntime-1 "+base+"\n\t\t}\n"),
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")
	for i, stream := range []bool{false, true, false} {
		if resp, body := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "connect "+strconv.Itoa(i), stream)); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	entries := requestEntries(t, appLog, 3)
	for i, e := range entries {
		al, _ := e["attempt_log"].([]any)
		if len(al) != 1 {
			t.Fatalf("entry %d: attempt_log %v", i, e["attempt_log"])
		}
		got, _ := e["connect"].(float64)
		gotAttempt, _ := al[0].(map[string]any)["connect"].(float64)
		if i == 0 && (got <= 0 || gotAttempt != got) {
			t.Errorf("first request (new connection): connect %v, attempt's %v, want the same > 0", e["connect"], al[0])
		}
		if i > 0 && (e["connect"] != nil || gotAttempt != 0) {
			t.Errorf("request %d (kept-alive connection): connect %v, attempt's %v, want none", i, e["connect"], al[0])
		}
	}
}
