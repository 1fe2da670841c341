package caddymodule

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestAttackRequestLargerThanKeyLimit: OpenAI's 429 "Request too large for
// <model> in organization <org> on tokens per min (TPM): Limit 30000,
// Requested 35064" says the request can never fit the key's limit, so it
// is the request's answer, not the key's state: the client gets it (a
// client can send such a request at will, and it used to cool every key
// of the pool in turn and hold the request for the whole search), with
// X-Should-Retry: false (the SDKs would retry a 429 in vain), and no key
// cools. A genuine "Rate limit reached ..." still cools the key.
func TestAttackRequestLargerThanKeyLimit(t *testing.T) {
	m, gw := streamPair(t)
	const tooLarge = `{"error":{"message":"Request too large for gpt-x in organization org-abc on tokens per min (TPM): Limit 30000, Requested 35064. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`
	for _, k := range []string{"oa-1", "oa-2"} {
		m.SetKey(k, mockupstream.KeyBehavior{ReplayBody: []byte(tooLarge), ReplayStatus: 429, ReplayContentType: "application/json"})
	}
	for _, stream := range []bool{false, true} {
		before := m.Stats("oa-1").Requests + m.Stats("oa-2").Requests
		seq := recentSeq()
		resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", "a long prompt", stream))
		if resp.StatusCode != 429 || resp.Header.Get("X-Should-Retry") != "false" || !strings.HasPrefix(gjson.GetBytes(b, "error.message").Str, "Request too large for gpt-x") ||
			gjson.GetBytes(b, "error.code").Str != "rate_limit_exceeded" {
			t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, b)
		}
		if n := m.Stats("oa-1").Requests + m.Stats("oa-2").Requests - before; n != 1 {
			t.Errorf("stream %v: the upstream was asked %d times", stream, n)
		}
		keyUntouched(t, "oa", "o1")
		keyUntouched(t, "oa", "o2")
		if rr := recentAfter(t, seq); rr.Status != 429 || attemptOutcomes(rr) != "o1:client_error" {
			t.Errorf("stream %v: request log %d %q", stream, rr.Status, attemptOutcomes(rr))
		}
	}
	// the same words from the client's model name change nothing: a real
	// rate limit still cools the key
	m.SetKey("oa-1", mockupstream.KeyBehavior{ReplayStatus: 429, ReplayContentType: "application/json", ReplayBody: []byte(
		`{"error":{"message":"Rate limit reached for Request too large for x in organization o on tokens per min (TPM): Limit 1, Requested 2 in organization org-abc on tokens per min (TPM): Limit 30000, Used 29990, Requested 50. Please try again in 20s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`)})
	m.SetKey("oa-2", mockupstream.KeyBehavior{})
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", "short", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "oa/o2" {
		t.Fatalf("after a real rate limit: %d %s", resp.StatusCode, b)
	}
	if s := keyStatus(t, "oa", "o1"); s.Reason != "rate_limited" || s.SecondsLeft < 18 {
		t.Fatalf("a real rate limit: %+v", s)
	}
}
