package caddymodule

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestDeadKeyReasonsInSummary: 402, 401 and 403 show as their own reasons
// in the 503 summary, and a pool of 5 keys where 4 answer 401 still
// succeeds with max_retries 1 (dead keys do not spend the budget).
func TestDeadKeyReasonsInSummary(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"d-1": {Status: 402}, "d-2": {Status: 401}, "d-3": {Status: 403},
	}})
	gw := gateway(t, gatewayBlock("\t\tpool dead3 {\n\t\t\tkey d-1 "+base+" {\n\t\t\t\tid k1\n\t\t\t}\n\t\t\tkey d-2 "+base+" {\n\t\t\t\tid k2\n\t\t\t}\n\t\t\tkey d-3 "+base+" {\n\t\t\t\tid k3\n\t\t\t}\n\t\t}\n"))
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("m", "hi", false))
	msg := gjson.GetBytes(body, "error.message").String()
	if resp.StatusCode != 503 || !strings.Contains(msg, "k1 cooling (no_credit") || !strings.Contains(msg, "k2 cooling (invalid_key") || !strings.Contains(msg, "k3 cooling (forbidden") {
		t.Fatalf("%d %s", resp.StatusCode, msg)
	}
	for i := 1; i <= 3; i++ {
		// the client's request and the gateway's probe confirming the verdict
		eventually(t, 5*time.Second, "dead keys probed", func() bool { return m.Stats(fmt.Sprintf("d-%d", i)).Requests >= 2 })
		if n := m.Stats(fmt.Sprintf("d-%d", i)).Requests; n != 2 {
			t.Fatalf("d-%d got %d requests", i, n)
		}
	}

	m2, base2 := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{Status: 401}, Keys: map[string]mockupstream.KeyBehavior{"f-5": {}}})
	gw2 := gateway(t, gatewayBlock(poolBlock("four401", base2, 0, "\t\t\tmax_retries 1\n\t\t\tkey f-1 "+base2+"\n\t\t\tkey f-2 "+base2+"\n\t\t\tkey f-3 "+base2+"\n\t\t\tkey f-4 "+base2+"\n\t\t\tkey f-5 "+base2+"\n")))
	resp, body = post(t, gw2+"/v1/chat/completions", chatBody("m", "hi", false))
	if resp.StatusCode != 200 || m2.Stats("f-5").OK != 1 {
		t.Fatalf("4 of 5 keys 401, max_retries 1: %d %s", resp.StatusCode, body)
	}
}

// TestQuotaExhaustedSkippedUntilReset: a 429 saying the quota is spent
// cools the key until the reset the upstream names (else UTC midnight).
func TestQuotaExhaustedSkippedUntilReset(t *testing.T) {
	quota := rawUpstream(t, 429, "application/json", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
	m, good := mock(t, mockupstream.Config{})
	gw := gateway(t, gatewayBlock("\t\tpool quota {\n\t\t\tkey q-1 "+quota+" {\n\t\t\t\tid q1\n\t\t\t}\n\t\t\tkey q-2 "+good+" {\n\t\t\t\tid q2\n\t\t\t}\n\t\t}\n"))
	resp, _ := post(t, gw+"/v1/chat/completions", chatBody("m", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "quota/q2" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	// provisional until the gateway's own probe (a one-token completion)
	// meets the spent quota too
	eventually(t, 5*time.Second, "quota verdict confirmed", func() bool { return !keyStatus(t, "quota", "q1").Provisional })
	s := keyStatus(t, "quota", "q1")
	now := time.Now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	if s.Reason != "quota_exhausted" || s.Until.Sub(midnight).Abs() > 2*time.Second {
		t.Fatalf("q1 %+v, want quota_exhausted until %v", s, midnight)
	}
	for range 3 {
		post(t, gw+"/v1/chat/completions", chatBody("m", "hi", false))
	}
	if m.Stats("q-2").OK != 4 {
		t.Fatalf("q2 served %d", m.Stats("q-2").OK)
	}
}

// TestHalfOpenProbeRecovers: a key whose breaker opened is probed once the
// open period passes and recovers when the upstream has healed.
func TestHalfOpenProbeRecovers(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"h-1": {Status: 500}}})
	gw := gateway(t, gatewayBlock("\t\tpool probe {\n\t\t\tfailure_threshold 1\n\t\t\tbreaker_open 300ms\n\t\t\tmax_retries 0\n\t\t\tkey h-1 "+base+" {\n\t\t\t\tid h1\n\t\t\t}\n\t\t}\n"))
	resp, _ := post(t, gw+"/v1/chat/completions", chatBody("m", "hi", false))
	if resp.StatusCode != 502 {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	if s := keyStatus(t, "probe", "h1"); s.Breaker != "open" {
		t.Fatalf("breaker %+v", s)
	}
	m.SetKey("h-1", mockupstream.KeyBehavior{})
	time.Sleep(350 * time.Millisecond)
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("m", "hi", false))
	if resp.StatusCode != 200 {
		t.Fatalf("probe: %d %s", resp.StatusCode, body)
	}
	if s := keyStatus(t, "probe", "h1"); s.Breaker != "closed" || s.State != "ready" {
		t.Fatalf("after probe %+v", s)
	}
}

// TestStrategyPriorityAndAffinity: priority keeps traffic on the main key
// while it is eligible; affinity keeps a session on its key.
func TestStrategyPriorityAndAffinity(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw := gateway(t, gatewayBlock(
		"\t\tpool prio {\n\t\t\tmodels prio-*\n\t\t\tstrategy priority\n\t\t\tmax_concurrency_per_key 4\n"+
			"\t\t\tkey backup-key "+base+" {\n\t\t\t\tpriority 2\n\t\t\t}\n\t\t\tkey main-key "+base+" {\n\t\t\t\tpriority 1\n\t\t\t}\n\t\t}\n"+
			"\t\tpool aff {\n\t\t\tmodels aff-*\n\t\t\tmax_concurrency_per_key 4\n"+
			"\t\t\tkey a-1 "+base+"\n\t\t\tkey a-2 "+base+"\n\t\t\tkey a-3 "+base+"\n\t\t}\n"))
	for range 5 {
		post(t, gw+"/v1/chat/completions", chatBody("prio-x", "hi", false))
	}
	if m.Stats("main-key").OK != 5 || m.Stats("backup-key").Requests != 0 {
		t.Fatalf("priority: main %d backup %d", m.Stats("main-key").OK, m.Stats("backup-key").Requests)
	}
	var via []string
	for range 6 {
		resp, _ := post(t, gw+"/v1/chat/completions", chatBody("aff-x", "hi", false), "X-Session-Id", "conversation-42")
		via = append(via, resp.Header.Get("X-Routed-Via"))
	}
	for _, v := range via {
		if v != via[0] {
			t.Fatalf("session moved between keys: %v", via)
		}
	}
	// without a session header, different conversations spread out
	seen := map[string]bool{}
	for i := range 6 {
		resp, _ := post(t, gw+"/v1/chat/completions", chatBody("aff-x", fmt.Sprintf("conversation %d", i), false))
		seen[resp.Header.Get("X-Routed-Via")] = true
	}
	if len(seen) < 2 {
		t.Fatalf("distinct conversations all went to %v", seen)
	}
}

// TestHostDownSkipsSiblingKeys: when a host refuses connections, the other
// keys on the same host are not tried in that request.
func TestHostDownSkipsSiblingKeys(t *testing.T) {
	m, good := mock(t, mockupstream.Config{})
	dead := fmt.Sprintf("http://127.0.0.1:%d/v1", freePort(t))
	gw := gateway(t, gatewayBlock("\t\tpool hd {\n\t\t\tkey x-1 "+dead+" {\n\t\t\t\tid x1\n\t\t\t}\n\t\t\tkey x-2 "+dead+" {\n\t\t\t\tid x2\n\t\t\t}\n\t\t\tkey x-3 "+dead+" {\n\t\t\t\tid x3\n\t\t\t}\n\t\t\tkey ok-1 "+good+" {\n\t\t\t\tid ok\n\t\t\t}\n\t\t\tmax_retries 1\n\t\t}\n"))
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("m", "hi", false))
	if resp.StatusCode != http.StatusOK || m.Stats("ok-1").OK != 1 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	tried := 0
	for _, id := range []string{"x1", "x2", "x3"} {
		if keyStatus(t, "hd", id).Requests > 0 {
			tried++
		}
	}
	if tried != 1 {
		t.Fatalf("%d keys of the dead host were tried, want 1", tried)
	}
}
