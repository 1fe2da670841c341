package caddymodule

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestAttackRequestLargerThanKeyLimit: OpenAI's 429 "Request too large for
// <model> in organization <org> on tokens per min (TPM): Limit 30000,
// Requested 35064" says the request can never fit the key's limit, so it
// is the request's answer, not the key's state: no key cools (a client
// can send such a request at will, and it used to cool every key of the
// pool in turn and hold the request for the whole search). Another key
// is tried (it may have a larger limit, see overlimit_test.go); when it
// says the same, the client gets the answer, with X-Should-Retry: false
// (the SDKs would retry a 429 in vain). A genuine "Rate limit reached
// ..." still cools the key.
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
		if n := m.Stats("oa-1").Requests + m.Stats("oa-2").Requests - before; n != 2 {
			t.Errorf("stream %v: the upstream was asked %d times", stream, n)
		}
		keyUntouched(t, "oa", "o1")
		keyUntouched(t, "oa", "o2")
		if rr := recentAfter(t, seq); rr.Status != 429 || attemptOutcomes(rr) != "o1:client_error o2:client_error" {
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

// TestAttackGoogleInvalidKey400: Google (and its OpenAI-compatible
// endpoint, which wraps the error in an array) answers a bad key with 400
// INVALID_ARGUMENT, the key's fault said in a structured ErrorInfo
// (reason API_KEY_INVALID). The key is taken out of rotation (confirmed
// by the probe) and the next key answers; it used to be relayed to every
// client as a 400 of its own request, the dead key kept in rotation.
func TestAttackGoogleInvalidKey400(t *testing.T) {
	m, _ := mock(t, mockupstream.Config{})
	const invalid = `[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}]`
	ip, base := interpose(t, m, func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool {
		if key != "g-bad" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, invalid)
		return true
	})
	gw := gateway(t, gatewayBlock("\t\tpool g {\n\t\t\tmodels gemini-*\n\t\t\tstrategy priority\n\t\t\taffinity off\n"+
		"\t\t\tkey g-bad "+base+" {\n\t\t\t\tid bad\n\t\t\t\tpriority 1\n\t\t\t}\n"+
		"\t\t\tkey g-good "+base+" {\n\t\t\t\tid good\n\t\t\t\tpriority 2\n\t\t\t}\n\t\t}\n"))
	for i := 0; i < 3; i++ {
		resp, b := post(t, gw+"/v1/chat/completions", chatBody("gemini-2.5-flash", "hello", i == 1))
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "g/good" || !bytes.Contains(b, []byte("hello")) {
			t.Fatalf("request %d: %d via %q %s", i, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
		}
	}
	// the gateway's own probe confirms the verdict: out of rotation, and
	// only the first request and the probe reached the bad key
	eventually(t, 5*time.Second, "the bad key confirmed invalid", func() bool {
		s := keyStatus(t, "g", "bad")
		return s.State != keypool.StateReady && s.Reason == "invalid_key" && !s.Provisional
	})
	if n := ip.count("g-bad"); n != 2 {
		t.Fatalf("the bad key was asked %d times (the first request and the probe)", n)
	}
}
