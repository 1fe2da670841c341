package caddymodule

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmgateway/llm_gateway/keypool"
)

// TestAttackStreamWithoutTerminalEvent: an upstream stream that sends its
// finish reason (Chat finish_reason, Anthropic message_delta) and then
// ends cleanly without its terminal event (data: [DONE], message_stop),
// as some OpenAI-compatible servers always do, is whole: passed through,
// the client gets exactly what the upstream sent (no terminator added, no
// error); translated, it gets its own dialect's terminator. Either way
// the request is complete, the key's outcome a success and the key ready.
func TestAttackStreamWithoutTerminalEvent(t *testing.T) {
	m, gw := streamPair(t)
	anthropicFinish := "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n"
	chatFinish := "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
	m.SetKey("an-1", replay(anthropicStart+anthropicText+anthropicFinish))
	m.SetKey("oa-1", replay(chatRole+chatText+chatFinish))
	upstreamBytes := map[string]string{"anthropic_messages": anthropicStart + anthropicText + anthropicFinish, "openai_chat": chatRole + chatText + chatFinish}
	clients := []struct {
		dialect, path, body string
		hdr                 []string
		errForm, terminator string
	}{
		{"openai_chat", "/v1/chat/completions", `{"model":%q,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil,
			"\"error\"", "data: [DONE]"},
		{"anthropic_messages", "/v1/messages", `{"model":%q,"max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, []string{"Anthropic-Version", "2023-06-01"},
			"event: error", "event: message_stop"},
		{"openai_responses", "/v1/responses", `{"model":%q,"stream":true,"store":false,"input":"hi"}`, nil,
			"event: response.failed", "event: response.completed"},
	}
	for _, up := range []struct{ pool, model, key, dialect string }{{"an", "claude-x", "a1", "anthropic_messages"}, {"oa", "gpt-x", "o1", "openai_chat"}} {
		for _, c := range clients {
			name := up.dialect + "->" + c.dialect
			poolFor(t, up.pool).ClearCooldown("")
			complete := gatewayMetrics.requests.WithLabelValues(up.pool, c.dialect, up.dialect, "200", streamComplete)
			before := testutil.ToFloat64(complete)
			seq := recentSeq()
			resp, b := post(t, gw+c.path, []byte(fmt.Sprintf(c.body, up.model)), c.hdr...)
			if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != up.pool+"/"+up.key || !bytes.Contains(b, []byte("Partial")) || bytes.Contains(b, []byte(c.errForm)) {
				t.Errorf("%s: %d via %q, want the content and no %q:\n%s", name, resp.StatusCode, resp.Header.Get("X-Routed-Via"), c.errForm, b)
			}
			if up.dialect == c.dialect {
				if string(b) != upstreamBytes[up.dialect] {
					t.Errorf("%s: passthrough differs from the upstream's bytes:\n%s\nwant\n%s", name, b, upstreamBytes[up.dialect])
				}
			} else if !bytes.Contains(b, []byte(c.terminator)) {
				t.Errorf("%s: no %q:\n%s", name, c.terminator, b)
			}
			eventually(t, 2*time.Second, name+": requests_total{stream_outcome=complete}", func() bool {
				return testutil.ToFloat64(complete) == before+1
			})
			if rr := recentAfter(t, seq); rr.StreamOutcome != streamComplete || attemptOutcomes(rr) != up.key+":success" {
				t.Errorf("%s: request log %q %q", name, rr.StreamOutcome, attemptOutcomes(rr))
			}
			if s := keyStatus(t, up.pool, up.key); s.State != keypool.StateReady {
				t.Errorf("%s: key %s %s", name, s.State, s.Reason)
			}
		}
	}
}

// TestAttackFinishReasonError: OpenRouter's normalised finish_reason
// "error" says the generation failed (a provider that broke off); it is
// an upstream error, never a finish: after content the client gets its
// dialect's error and no terminator, and the request log says error_event
// with the key blamed (server_error); before content the next key answers.
func TestAttackFinishReasonError(t *testing.T) {
	m, gw := streamPair(t)
	finErr := "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"error\"}]}\n\n"
	for _, c := range []struct {
		name, path, body, errForm, terminator string
		hdr                                   []string
	}{
		{"chat", "/v1/chat/completions", string(chatBody("gpt-x", "hi", true)), "data: {\"error\":", "data: [DONE]", nil},
		{"anthropic", "/v1/messages", `{"model":"gpt-x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "event: error", "event: message_stop", []string{"Anthropic-Version", "2023-06-01"}},
	} {
		poolFor(t, "oa").ClearCooldown("")
		m.SetKey("oa-1", replay(chatRole+chatText+finErr+"data: [DONE]\n\n"))
		seq := recentSeq()
		resp, b := post(t, gw+c.path, []byte(c.body), c.hdr...)
		rr := recentAfter(t, seq)
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "oa/o1" || !bytes.Contains(b, []byte("Partial")) ||
			!bytes.Contains(b, []byte(c.errForm)) || bytes.Contains(b, []byte(c.terminator)) || bytes.Contains(b, []byte("end_turn")) {
			t.Errorf("%s: %d via %q:\n%s", c.name, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
		}
		if rr.StreamOutcome != streamErrorEvent || attemptOutcomes(rr) != "o1:server_error" {
			t.Errorf("%s: request log %q %q", c.name, rr.StreamOutcome, attemptOutcomes(rr))
		}
		if s := keyStatus(t, "oa", "o1"); s.State != keypool.StateCooling || s.Reason != "server_error" {
			t.Errorf("%s: key %s %s", c.name, s.State, s.Reason)
		}
		// before any content: the next key answers
		poolFor(t, "oa").ClearCooldown("")
		m.SetKey("oa-1", replay(chatRole+finErr+"data: [DONE]\n\n"))
		resp, b = post(t, gw+c.path, []byte(c.body), c.hdr...)
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "oa/o2" || !bytes.Contains(b, []byte(c.terminator)) {
			t.Errorf("%s before content: %d via %q:\n%s", c.name, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
		}
	}
}
