package caddymodule

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestSlowAnswerNotBlamed: keys whose upstream takes the request and
// answers after attempt_timeout (700 ms for 300 ms: a long generation,
// non-streamed headers or a stream's first content) are not cooled by
// the client's request: every key is tried, the client gets 504 in its
// dialect, and the gateway's own probe (answered) leaves every key ready,
// with no failure and no breaker count.
func TestSlowAnswerNotBlamed(t *testing.T) {
	slow := mockupstream.KeyBehavior{Latency: 700 * time.Millisecond}
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"mk-1": slow, "mk-2": slow}})
	gw := gateway(t, gatewayBlock(poolBlock("slow", base, 2,
		"\t\t\tattempt_timeout 300ms\n\t\t\ttotal_timeout 30s\n\t\t\tfailure_threshold 1\n")))
	ready := func(step string, probes int64) {
		t.Helper()
		// the probes are the only requests the mock answers
		eventually(t, 5*time.Second, step+": the gateway's probes answered", func() bool {
			return m.Stats("mk-1").OK == probes && m.Stats("mk-2").OK == probes
		})
		for _, id := range []string{"k1", "k2"} {
			st := keyStatus(t, "slow", id)
			if st.State != "ready" || st.Breaker != "closed" || st.Failures != 0 || st.ConsecutiveFailures != 0 || st.Reason != "" {
				t.Fatalf("%s: key %s %+v, want ready and not blamed", step, id, st)
			}
		}
	}

	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "think long", false))
	if resp.StatusCode != 504 || !strings.HasPrefix(gjson.GetBytes(body, "error.message").String(), "all upstream attempts failed (2 attempts") {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	ready("chat", 1)

	resp, body = post(t, gw+"/v1/messages", []byte(`{"model":"mock-gpt","max_tokens":64000,"messages":[{"role":"user","content":"think long"}]}`),
		"Anthropic-Version", "2023-06-01")
	if resp.StatusCode != 504 || gjson.GetBytes(body, "type").String() != "error" || gjson.GetBytes(body, "error.type").String() == "" ||
		!strings.Contains(gjson.GetBytes(body, "error.message").String(), "2 attempts") {
		t.Fatalf("messages: %d %s", resp.StatusCode, body)
	}
	ready("messages", 2)

	// a stream whose headers come at once and whose first content is slow
	m.SetKey("mk-1", mockupstream.KeyBehavior{TokensPerSecond: 1.4})
	m.SetKey("mk-2", mockupstream.KeyBehavior{TokensPerSecond: 1.4})
	resp, body = post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "think long", true))
	if resp.StatusCode != 504 || !strings.Contains(gjson.GetBytes(body, "error.message").String(), "2 attempts") {
		t.Fatalf("stream: %d %s", resp.StatusCode, body)
	}
	ready("stream", 3)
}

// TestHungKeyConfirmedByProbe: a key whose upstream takes the request and
// never answers is still benched: the client's attempt times out and moves
// on, the gateway's probe (bounded by probe_timeout) times out too, and
// that confirms the timeout: the breaker opens (failure_threshold 1); the
// healthy key serves the request and stays ready.
func TestHungKeyConfirmedByProbe(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"mk-1": {Latency: time.Minute}}})
	gw := gateway(t, gatewayBlock(poolBlock("hungp", base, 2,
		"\t\t\tstrategy priority\n\t\t\tattempt_timeout 300ms\n\t\t\tprobe_timeout 300ms\n\t\t\tfailure_threshold 1\n\t\t\ttotal_timeout 30s\n")))
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "hungp/k2" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), body)
	}
	eventually(t, 5*time.Second, "the probe confirmed the hung key", func() bool {
		return keyStatus(t, "hungp", "k1").Breaker == "open"
	})
	st := keyStatus(t, "hungp", "k1")
	if st.State != "breaker_open" || st.Failures != 1 || st.ConsecutiveFailures != 1 || !strings.Contains(st.LastMessage, "probe_timeout") {
		t.Fatalf("hung key: %+v", st)
	}
	if st := keyStatus(t, "hungp", "k2"); st.State != "ready" || st.Failures != 0 {
		t.Fatalf("healthy key: %+v", st)
	}
	if n := m.Stats("mk-1").Requests; n != 2 {
		t.Fatalf("hung key asked %d times, want 2 (the client's attempt and one probe)", n)
	}
}
