package caddymodule

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestLongWaitSaysDoNotRetry: when the pool cannot serve for longer than
// the official SDKs wait (every key rejected by its upstream and the
// verdict confirmed by the gateway's probe, or every key cooling for
// minutes), the gateway's failure says x-should-retry: false
// beside its Retry-After, so an SDK with default retries sends exactly one
// request and its user sees the wait. A short wait (keys merely busy)
// still says true (TestSDKRetries).
func TestLongWaitSaysDoNotRetry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("every key rejected (401)", func(t *testing.T) {
		_, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{Status: 401}})
		gw := gateway(t, gatewayBlock(poolBlock("dead", base, 2, "")))
		front, count := countingProxy(t, gw)
		// a first request meets the 401s; the keys are dead once the
		// gateway's probes confirm the verdicts (until then a wait:
		// TestTrustProvisionalVerdictIsAWait)
		post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
		deadline := time.Now().Add(10 * time.Second)
		for _, id := range []string{"k1", "k2"} {
			for st := keyStatus(t, "dead", id); st.Provisional || st.Reason != "invalid_key"; st = keyStatus(t, "dead", id) {
				if time.Now().After(deadline) {
					t.Fatalf("key %s not confirmed dead: %+v", id, st)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}

		c := openai.NewClient(option.WithBaseURL(front+"/v1"), option.WithAPIKey(gatewayKey))
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "mock-gpt",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("err = %v, want the gateway's 503", err)
		}
		if n := count.Load(); n != 1 {
			t.Fatalf("%d requests reached the gateway, want 1 (no SDK retry)", n)
		}
		h := apiErr.Response.Header
		if ra, _ := strconv.Atoi(h.Get("Retry-After")); ra <= int(keypool.MaxClientRetryAfter/time.Second) || h.Get("X-Should-Retry") != "false" {
			t.Fatalf("Retry-After %q, X-Should-Retry %q; want the confirmed invalid-key cooldown (300 s) and false", h.Get("Retry-After"), h.Get("X-Should-Retry"))
		}

		// the next request finds both keys benched: the same answer
		count.Store(0)
		ac := anthropic.NewClient(aopt.WithBaseURL(front), aopt.WithAPIKey(gatewayKey))
		_, err = ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "mock-gpt", MaxTokens: 5,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		var aErr *anthropic.Error
		if !errors.As(err, &aErr) || aErr.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("Anthropic SDK: err = %v, want the gateway's 503", err)
		}
		if n := count.Load(); n != 1 {
			t.Fatalf("Anthropic SDK: %d requests reached the gateway, want 1", n)
		}
		if got := gjson.Get(aErr.RawJSON(), "error.type").String(); got != "overloaded_error" && got != "api_error" {
			t.Errorf("Anthropic error type %q", got)
		}
	})

	t.Run("every key cooling 600s (429)", func(t *testing.T) {
		_, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{Status: 429, RetryAfter: "600"}})
		gw := gateway(t, gatewayBlock(poolBlock("cold", base, 2, "")))
		for i := range 2 {
			resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))
			ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			if resp.StatusCode != http.StatusTooManyRequests || ra < 590 || resp.Header.Get("X-Should-Retry") != "false" {
				t.Fatalf("request %d: %d, Retry-After %q, X-Should-Retry %q: %s", i, resp.StatusCode,
					resp.Header.Get("Retry-After"), resp.Header.Get("X-Should-Retry"), body)
			}
		}
	})

	t.Run("every key disabled", func(t *testing.T) {
		// nothing will change by itself: false, and no Retry-After beside
		// it (a new user saw "Retry-After: 1" with "X-Should-Retry: false")
		_, base := mock(t, mockupstream.Config{})
		gw := gateway(t, gatewayBlock(poolBlock("off", base, 2, "")))
		for _, id := range []string{"k1", "k2"} {
			if !poolFor(t, "off").SetDisabled(id, true) {
				t.Fatalf("disable %s: unknown key", id)
			}
		}
		for _, c := range []string{"chat", "messages", "responses"} {
			path, body, hdr := sessionClientBody(c, "mock-gpt", false)
			resp, b := post(t, gw+path, []byte(body), hdr...)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Should-Retry") != "false" || resp.Header.Get("Retry-After") != "" {
				t.Errorf("%s: %d, Retry-After %q, X-Should-Retry %q; want 503, none, false: %s", c, resp.StatusCode,
					resp.Header.Get("Retry-After"), resp.Header.Get("X-Should-Retry"), b)
			}
		}
	})

	// keys merely busy (a wait of 1-3 s) still say true: TestSDKRetries
}
