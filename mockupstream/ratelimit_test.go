package mockupstream

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRateWindowArithmetic(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var w rateWindow
	for i := 0; i < 3; i++ {
		ok, rh := w.admit(3, 100, 30, t0.Add(time.Duration(i)*10*time.Second))
		if !ok || rh.remReq != int64(2-i) || rh.remTok != int64(70-30*i) || rh.resetReq != time.Minute || rh.resetTok != time.Minute {
			t.Fatalf("request %d: ok %v %+v", i, ok, rh)
		}
	}
	// the 4th at 25s: over rpm 3; fits when the first (at 0s) leaves, at 60s
	ok, rh := w.admit(3, 100, 5, t0.Add(25*time.Second))
	if ok || rh.retry != 35*time.Second || rh.remReq != 0 || rh.resetReq != 55*time.Second {
		t.Fatalf("over rpm: ok %v %+v", ok, rh)
	}
	// at 61s the first has left: one more request fits, 45 more tokens do not (60+45 > 100) until 70s
	ok, rh = w.admit(3, 100, 45, t0.Add(61*time.Second))
	if ok || rh.retry != 9*time.Second {
		t.Fatalf("over tpm: ok %v %+v", ok, rh)
	}
	ok, rh = w.admit(3, 100, 40, t0.Add(61*time.Second))
	if !ok || rh.remReq != 0 || rh.remTok != 0 {
		t.Fatalf("fits: ok %v %+v", ok, rh)
	}
	// a request larger than the whole tpm never fits
	if ok, rh := w.admit(0, 100, 500, t0.Add(200*time.Second)); ok || rh.retry != time.Minute {
		t.Fatalf("too large: ok %v %+v", ok, rh)
	}
}

func TestRPMAnswers429WithBothHeaderFamilies(t *testing.T) {
	_, ts := start(t, Config{Keys: map[string]KeyBehavior{"k": {RPM: 2, TPM: 1000}}})
	chat := `{"model":"gpt-x","messages":[{"role":"user","content":"one two three four"}]}`
	for i := 0; i < 2; i++ {
		st, h, _ := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "k", chat)
		if st != 200 {
			t.Fatalf("request %d: %d", i, st)
		}
		rem := strconv.Itoa(1 - i)
		if h.Get("x-ratelimit-limit-requests") != "2" || h.Get("x-ratelimit-remaining-requests") != rem ||
			h.Get("anthropic-ratelimit-requests-limit") != "2" || h.Get("anthropic-ratelimit-requests-remaining") != rem ||
			h.Get("x-ratelimit-limit-tokens") != "1000" || h.Get("x-ratelimit-remaining-tokens") != strconv.Itoa(1000-4*(i+1)) ||
			h.Get("anthropic-ratelimit-input-tokens-remaining") != strconv.Itoa(1000-4*(i+1)) {
			t.Fatalf("request %d headers: %v", i, h)
		}
		if d, err := time.ParseDuration(h.Get("x-ratelimit-reset-requests")); err != nil || d <= 59*time.Second || d > time.Minute {
			t.Fatalf("reset %q", h.Get("x-ratelimit-reset-requests"))
		}
		if at, err := time.Parse(time.RFC3339, h.Get("anthropic-ratelimit-requests-reset")); err != nil || time.Until(at) < 58*time.Second || time.Until(at) > 61*time.Second {
			t.Fatalf("anthropic reset %q", h.Get("anthropic-ratelimit-requests-reset"))
		}
	}
	// the third, streamed, on the Messages path: the vendor's 429
	msg := `{"model":"claude-x","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	st, h, body := mustDo(t, "POST", ts.URL+"/v1/messages", "k", msg)
	if st != http.StatusTooManyRequests || h.Get("anthropic-ratelimit-requests-remaining") != "0" || h.Get("Retry-After") == "" || h.Get("Retry-After-Ms") == "" {
		t.Fatalf("over rpm: %d %v", st, h)
	}
	if m := decode(t, body); path(m, "error", "type") != "rate_limit_error" {
		t.Fatalf("body %s", body)
	}
}

func TestRateLimitHeadersOnStreams(t *testing.T) {
	_, ts := start(t, Config{Keys: map[string]KeyBehavior{"k": {RPM: 10}}})
	msg := `{"model":"claude-x","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	st, h, _ := mustDo(t, "POST", ts.URL+"/v1/messages", "k", msg)
	if st != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || h.Get("anthropic-ratelimit-requests-remaining") != "9" || h.Get("x-ratelimit-remaining-requests") != "9" {
		t.Fatalf("stream: %d %v", st, h)
	}
	if h.Get("x-ratelimit-limit-tokens") != "" {
		t.Fatal("tokens reported without a tpm")
	}
	// a key without rpm or tpm reports nothing
	st, h, _ = mustDo(t, "POST", ts.URL+"/v1/messages", "other", msg)
	if st != 200 || h.Get("x-ratelimit-remaining-requests") != "" || h.Get("anthropic-ratelimit-requests-remaining") != "" {
		t.Fatalf("unlimited key: %d %v", st, h)
	}
}

// TestRequestLargerThanTPM: a request whose input tokens alone exceed the
// key's tpm gets the vendor's own answer: OpenAI's "Request too large ...
// Limit L, Requested R" (no Retry-After) on the OpenAI paths, Anthropic's
// input-tokens rate_limit_error with anthropic-ratelimit-input-tokens-limit
// on /v1/messages; the key's organization is named. A request that fits
// the limit but not what is left still gets the ordinary 429.
func TestRequestLargerThanTPM(t *testing.T) {
	_, ts := start(t, Config{Keys: map[string]KeyBehavior{"k": {TPM: 5, Organization: "org-small"}}})
	words := `one two three four five six seven`
	st, h, body := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "k", `{"model":"gpt-x","messages":[{"role":"user","content":"`+words+`"}]}`)
	m := decode(t, body)
	if st != 429 || h.Get("Retry-After") != "" || h.Get("x-ratelimit-limit-tokens") != "5" ||
		path(m, "error", "message") != "Request too large for gpt-x in organization org-small on tokens per min (TPM): Limit 5, Requested 7. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more." ||
		path(m, "error", "code") != "rate_limit_exceeded" || path(m, "error", "type") != "tokens" {
		t.Fatalf("chat: %d %v %s", st, h, body)
	}
	st, h, body = mustDo(t, "POST", ts.URL+"/v1/messages", "k", `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"`+words+`"}]}`)
	m = decode(t, body)
	if st != 429 || h.Get("anthropic-ratelimit-input-tokens-limit") != "5" || h.Get("Retry-After") == "" ||
		path(m, "error", "type") != "rate_limit_error" ||
		!strings.HasPrefix(fmt.Sprint(path(m, "error", "message")), "This request would exceed the rate limit for your organization (org-small) of 5 input tokens per minute.") {
		t.Fatalf("messages: %d %v %s", st, h, body)
	}
	// within the limit: served, then the ordinary rate limit
	small := `{"model":"gpt-x","messages":[{"role":"user","content":"one two three"}]}`
	if st, _, _ := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "k", small); st != 200 {
		t.Fatalf("small: %d", st)
	}
	st, h, body = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "k", small)
	if m := decode(t, body); st != 429 || h.Get("Retry-After") == "" || strings.HasPrefix(fmt.Sprint(path(m, "error", "message")), "Request too large") {
		t.Fatalf("rate limited: %d %v %s", st, h, body)
	}
}
