package caddymodule

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestFallbackAcrossPools: when the first pool cannot serve, the next
// matching pool does, and the response says which pool it fell back from.
func TestFallbackAcrossPools(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"p-1": {Status: 503}}})
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool backup {\n\t\t\tpriority 10\n\t\t\tkey b-1 "+base+" {\n\t\t\t\tid b1\n\t\t\t}\n\t\t}\n"+
		"\t\tpool primary {\n\t\t\tpriority 1\n\t\t\tmax_retries 0\n\t\t\tkey p-1 "+base+" {\n\t\t\t\tid p1\n\t\t\t}\n\t\t}\n\t}\n")
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Fallback-From") != "primary" || resp.Header.Get("X-Routed-Via") != "backup/b1" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	if m.Stats("p-1").Requests != 1 || m.Stats("b-1").OK != 1 {
		t.Fatalf("primary %d, backup %d", m.Stats("p-1").Requests, m.Stats("b-1").OK)
	}
	// primary now cooling: straight to the backup, no waiting, no new primary attempt
	start := time.Now()
	resp, _ = post(t, gw+"/v1/chat/completions", chatBody("gpt-x", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Fallback-From") != "primary" || time.Since(start) > 2*time.Second {
		t.Fatalf("second: %d %v after %v", resp.StatusCode, resp.Header, time.Since(start))
	}
	if m.Stats("p-1").Requests != 1 {
		t.Fatal("cooling primary key was tried")
	}
	// addressing a pool explicitly: <pool>/<model>
	resp, body = post(t, gw+"/v1/chat/completions", chatBody("backup/gpt-explicit", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Fallback-From") != "" || m.Stats("b-1").LastModel != "gpt-explicit" || gjson.GetBytes(body, "model").String() != "backup/gpt-explicit" {
		t.Fatalf("explicit pool: %d %v %s (upstream model %q)", resp.StatusCode, resp.Header, body, m.Stats("b-1").LastModel)
	}
	// the primary heals: it serves again, no fallback header
	m.SetKey("p-1", mockupstream.KeyBehavior{})
	poolFor(t, "primary").ClearCooldown("")
	resp, _ = post(t, gw+"/v1/chat/completions", chatBody("gpt-x", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "primary/p1" || resp.Header.Get("X-Fallback-From") != "" {
		t.Fatalf("healed: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestModelAuto: "auto" tries every pool in priority order with each
// pool's default model.
func TestModelAuto(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"a-1": {Status: 500}}})
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool first {\n\t\t\tmodels gpt-*\n\t\t\tdefault_model model-a\n\t\t\tkey a-1 "+base+"\n\t\t}\n"+
		"\t\tpool second {\n\t\t\tmodels claude-*\n\t\t\tdefault_model model-b\n\t\t\tkey b-1 "+base+"\n\t\t}\n\t}\n")
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("auto", "hi", false))
	if resp.StatusCode != 200 || m.Stats("b-1").LastModel != "model-b" || m.Stats("a-1").LastModel != "model-a" {
		t.Fatalf("%d %s; upstream models %q %q", resp.StatusCode, body, m.Stats("a-1").LastModel, m.Stats("b-1").LastModel)
	}
	if gjson.GetBytes(body, "model").String() != "auto" {
		t.Fatalf("client sees model %q", gjson.GetBytes(body, "model").String())
	}
}

// TestGatewayKeyScopesAndLimits: scoped gateway keys get 403 outside their
// models or pools and 429 over their rpm or concurrency.
func TestGatewayKeyScopesAndLimits(t *testing.T) {
	_, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"slow": {Latency: 300 * time.Millisecond}}})
	gw := gateway(t, "\tllm_gateway {\n"+
		"\t\tapi_key sk-scope-models-0001 {\n\t\t\tid team-gpt\n\t\t\tmodels gpt-*\n\t\t}\n"+
		"\t\tapi_key sk-scope-pools-0002 {\n\t\t\tid team-b\n\t\t\tpools b\n\t\t}\n"+
		"\t\tapi_key sk-scope-rpm-00003 {\n\t\t\tid limited\n\t\t\trpm 2\n\t\t}\n"+
		"\t\tapi_key sk-scope-conc-00004 {\n\t\t\tid single\n\t\t\tmax_concurrency 1\n\t\t}\n"+
		"\t\tpool a {\n\t\t\tmodels gpt-*\n\t\t\tkey a-1 "+base+" {\n\t\t\t\tid a1\n\t\t\t\tmax_concurrency 10\n\t\t\t}\n\t\t}\n"+
		"\t\tpool b {\n\t\t\tmodels gpt-* claude-*\n\t\t\tkey b-1 "+base+" {\n\t\t\t\tid b1\n\t\t\t\tmax_concurrency 10\n\t\t\t}\n\t\t}\n"+
		"\t\tpool slow {\n\t\t\tmodels slow-*\n\t\t\tkey slow "+base+" {\n\t\t\t\tmax_concurrency 10\n\t\t\t}\n\t\t}\n\t}\n")
	as := func(key string) []string { return []string{"Authorization", "Bearer " + key} }
	if resp, _ := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "hi", false), as("sk-scope-models-0001")...); resp.StatusCode != 200 {
		t.Fatalf("in scope: %d", resp.StatusCode)
	}
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("claude-x", "hi", false), as("sk-scope-models-0001")...)
	if resp.StatusCode != 403 || !strings.Contains(gjson.GetBytes(body, "error.message").String(), "may not use model") {
		t.Fatalf("out of model scope: %d %s", resp.StatusCode, body)
	}
	// Anthropic client: 403 in Anthropic's shape
	resp, body = post(t, gw+"/v1/messages", []byte(`{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`),
		"Authorization", "", "X-Api-Key", "sk-scope-models-0001", "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != 403 || gjson.GetBytes(body, "error.type").String() != "permission_error" {
		t.Fatalf("anthropic 403: %d %s", resp.StatusCode, body)
	}
	// pool scope: the model matches pools a and b; team-b only ever reaches b
	for range 3 {
		resp, _ := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "hi", false), as("sk-scope-pools-0002")...)
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "b/b1" {
			t.Fatalf("pool scope: %d %v", resp.StatusCode, resp.Header.Get("X-Routed-Via"))
		}
	}
	// rpm 2: the third request within the minute is refused with Retry-After
	for i := range 3 {
		resp, body := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "hi", false), as("sk-scope-rpm-00003")...)
		want := 200
		if i == 2 {
			want = 429
		}
		if resp.StatusCode != want {
			t.Fatalf("rpm request %d: %d %s", i, resp.StatusCode, body)
		}
		if i == 2 && (resp.Header.Get("Retry-After") == "" || gjson.GetBytes(body, "error.type").String() == "") {
			t.Fatalf("rpm 429 without Retry-After or error body: %v %s", resp.Header, body)
		}
	}
	// max_concurrency 1: a second concurrent request is refused
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Go(func() {
			if i == 1 {
				time.Sleep(100 * time.Millisecond)
			}
			resp, _ := post(t, gw+"/v1/chat/completions", chatBody("slow-x", "hi", false), as("sk-scope-conc-00004")...)
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	if codes[0] != 200 || codes[1] != 429 {
		t.Fatalf("concurrency codes %v, want [200 429]", codes)
	}
}

// TestAttemptAndTotalTimeouts: a key slow to first byte is abandoned after
// attempt_timeout for the next one, and cooled for timeout once the
// gateway's own probe gets no answer within probe_timeout either;
// total_timeout bounds the search.
func TestAttemptAndTotalTimeouts(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"t-1": {Latency: 5 * time.Second}}})
	gw := gateway(t, gatewayBlock("\t\tpool tmo {\n\t\t\tattempt_timeout 200ms\n\t\t\tprobe_timeout 300ms\n\t\t\tkey t-1 "+base+" {\n\t\t\t\tid t1\n\t\t\t}\n\t\t\tkey t-2 "+base+" {\n\t\t\t\tid t2\n\t\t\t}\n\t\t}\n"))
	start := time.Now()
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", "hi", true))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "tmo/t2" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("took %v: the slow key was not abandoned", el)
	}
	eventually(t, 3*time.Second, "slow key cooling for timeout", func() bool { return keyStatus(t, "tmo", "t1").Reason == "timeout" })
	// the slow attempt and the gateway's probe
	eventually(t, 2*time.Second, "mock saw the slow attempt cancelled", func() bool { return m.Stats("t-1").Canceled == 2 })

	// total_timeout: every key slow, the search stops at the deadline with 504
	m.SetKey("t-2", mockupstream.KeyBehavior{Latency: 5 * time.Second})
	gw2 := gateway(t, gatewayBlock("\t\tpool tmo2 {\n\t\t\trequest_timeout 2s\n\t\t\ttotal_timeout 500ms\n\t\t\tkey t-1 "+base+"\n\t\t\tkey t-2 "+base+"\n\t\t}\n"))
	start = time.Now()
	resp, body = post(t, gw2+"/v1/chat/completions", chatBody("gpt-x", "hi", false))
	el := time.Since(start)
	if resp.StatusCode != http.StatusGatewayTimeout || el > 2*time.Second {
		t.Fatalf("total timeout: %d after %v: %s", resp.StatusCode, el, body)
	}
}
