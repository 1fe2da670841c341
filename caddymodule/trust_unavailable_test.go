package caddymodule

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestUnfitKeysBesideRateLimited: a key skipped because it cannot serve
// the request at all (an Anthropic key for POST /v1/embeddings, a key
// whose models list lacks the learned model) beside keys cooling on
// their upstream's 429 leaves the answer 429 rate_limit_error with the
// upstream's wait, as when every key is rate limited, not 503: the key
// that cannot serve is no part of why the request failed. The summary
// says it does not serve the request (it did not fail it).
func TestUnfitKeysBesideRateLimited(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"unfit-emb-openai": {Status: 429, RetryAfter: "30"},
		"unfit-lrn-one":    {Models: []string{"lrn-limited"}},
		"unfit-lrn-two":    {Models: []string{"lrn-other"}},
	}})
	root := strings.TrimSuffix(base, "/v1")
	gw := gateway(t, gatewayBlock(
		"\t\tpool emb {\n\t\t\tmodels text-embedding-*\n\t\t\tacquire_timeout 100ms\n"+
			"\t\t\tkey unfit-emb-openai "+base+" {\n\t\t\t\tid k1\n\t\t\t}\n"+
			"\t\t\tkey unfit-emb-anthropic "+root+" {\n\t\t\t\tid k2\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n",
		"\t\tpool lrn {\n\t\t\tmodels auto\n\t\t\tacquire_timeout 100ms\n"+
			discKey("unfit-lrn-one", base, "l1")+discKey("unfit-lrn-two", base, "l2")+"\t\t}\n"))

	for i := range 2 {
		resp, b := post(t, gw+"/v1/embeddings", []byte(`{"model":"text-embedding-3-small","input":"hi"}`))
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusTooManyRequests || gjson.GetBytes(b, "error.type").Str != "rate_limit_error" || ra < 28 || ra > 30 {
			t.Fatalf("embeddings %d: %d Retry-After %q %s; want 429 rate_limit_error, Retry-After 28..30", i, resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
		if msg := gjson.GetBytes(b, "error.message").Str; !strings.Contains(msg, "k1 cooling (rate_limited, ") || !strings.Contains(msg, "k2 skipped (does not serve this request)") {
			t.Errorf("embeddings %d: message %q", i, msg)
		}
	}
	if st := m.Stats("unfit-emb-openai"); st.Requests != 1 {
		t.Errorf("the rate-limited key was asked %d times, want 1", st.Requests)
	}

	// the learned model is listed by l1 alone; l1 then answers 429
	eventually(t, 5*time.Second, "learned models listed", func() bool {
		ids, _ := listModels(t, gw, "/v1/models", false)
		return len(ids) == 2
	})
	m.SetKey("unfit-lrn-one", mockupstream.KeyBehavior{Models: []string{"lrn-limited"}, Status: 429, RetryAfter: "30"})
	listed := m.Stats("unfit-lrn-two").Requests
	for _, cd := range []string{"chat", "anthropic", "responses"} {
		o := sdkCall(gw, cd, "lrn-limited", false)
		ra, _ := strconv.Atoi(o.retryAfter)
		if o.ok || o.status != http.StatusTooManyRequests || o.typ != "rate_limit_error" || ra < 28 || ra > 30 {
			t.Fatalf("%s: %s; want 429 rate_limit_error with Retry-After 28..30", cd, o)
		}
		if !strings.Contains(o.msg, "l1 cooling (rate_limited, ") || !strings.Contains(o.msg, "l2 skipped (does not serve this request)") {
			t.Errorf("%s: message %q", cd, o.msg)
		}
	}
	if n := m.Stats("unfit-lrn-two").Requests - listed; n != 0 {
		t.Errorf("the key that does not list the model was sent %d requests", n)
	}
}

// TestEveryKeyBenchedForModelIs404: once every key of the pool is benched
// for a model (its upstream answered 404 for it, three times), a request
// for that model gets 404 model_not_found in the client's dialect (OpenAI
// invalid_request_error with param "model" and code "model_not_found",
// Anthropic not_found_error), as for a model no pool serves, not 503 with
// a ten-minute Retry-After: no key serves the model.
func TestEveryKeyBenchedForModelIs404(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"bench-key-one": {Status: 404},
		"bench-key-two": {Status: 404},
	}})
	gw := gateway(t, gatewayBlock(
		"\t\tpool gone {\n\t\t\tmodels gone-*\n"+discKey("bench-key-one", base, "g1")+discKey("bench-key-two", base, "g2")+"\t\t}\n"))
	// each request tries both keys (each answers the upstream's own 404)
	for i := range 3 {
		if resp, b := post(t, gw+"/v1/chat/completions", chatBody("gone-model", "hi", false)); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("request %d: %d %s; want the upstream's 404", i, resp.StatusCode, b)
		}
	}
	if a, b := m.Stats("bench-key-one").Requests, m.Stats("bench-key-two").Requests; a != 3 || b != 3 {
		t.Fatalf("upstream requests %d, %d; want 3 each", a, b)
	}
	for _, cd := range []string{"chat", "anthropic", "responses"} {
		for _, stream := range []bool{false, true} {
			o := sdkCall(gw, cd, "gone-model", stream)
			want := map[bool]string{true: "not_found_error", false: "invalid_request_error"}[cd == "anthropic"]
			if o.ok || o.status != http.StatusNotFound || o.typ != want || o.retryAfter != "" {
				t.Fatalf("%s stream %v: %s; want 404 %s without Retry-After", cd, stream, o, want)
			}
			if !strings.Contains(o.msg, `model "gone-model"`) || !strings.Contains(o.msg, "g1 benched (model_not_found, ") ||
				!strings.Contains(o.msg, "g2 benched (model_not_found, ") || strings.Contains(o.msg, "bench-key") {
				t.Errorf("%s: message %q", cd, o.msg)
			}
		}
	}
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("gone-model", "hi", false))
	if resp.StatusCode != http.StatusNotFound || gjson.GetBytes(b, "error.code").Str != "model_not_found" || gjson.GetBytes(b, "error.param").Str != "model" {
		t.Errorf("chat: %d %s; want code model_not_found, param model", resp.StatusCode, b)
	}
	if a, b := m.Stats("bench-key-one").Requests, m.Stats("bench-key-two").Requests; a != 3 || b != 3 {
		t.Errorf("benched keys were asked again: %d, %d", a, b)
	}
	// another model still goes to the keys
	if resp, _ := post(t, gw+"/v1/chat/completions", chatBody("gone-other", "hi", false)); resp.StatusCode != http.StatusNotFound || m.Stats("bench-key-one").Requests+m.Stats("bench-key-two").Requests != 8 {
		t.Errorf("another model: %d, upstream requests %d", resp.StatusCode, m.Stats("bench-key-one").Requests+m.Stats("bench-key-two").Requests)
	}
}

// TestAllAttempts429RetryAfterFromCooldowns: when every attempt of a
// request got a 429 that named no wait and the attempts ran out, the
// client's Retry-After is when the soonest key is back by the pool's own
// cooldown (its 429 backoff: rate_limit_cooldown doubling), not a generic
// 1 s that sends it back while every key still cools. Three client
// dialects, each on its own pool.
func TestAllAttempts429RetryAfterFromCooldowns(t *testing.T) {
	keys := map[string]mockupstream.KeyBehavior{}
	var pools []string
	for _, cd := range []string{"chat", "anthropic", "responses"} {
		secret := "ladder-key-" + cd
		keys[secret] = mockupstream.KeyBehavior{Status: 429, RetryAfter: "none"}
		pools = append(pools, "\t\tpool "+cd+" {\n\t\t\tmodels "+cd+"-*\n\t\t\tacquire_timeout 10s\n\t\t\tmax_retries 0\n\t\t\trate_limit_cooldown 500ms\n"+
			"\t\t\tkey "+secret+" BASE {\n\t\t\t\tid k1\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n")
	}
	m, base := mock(t, mockupstream.Config{Keys: keys})
	root := strings.TrimSuffix(base, "/v1")
	for i := range pools {
		pools[i] = strings.ReplaceAll(pools[i], "BASE", root)
	}
	gw := gateway(t, gatewayBlock(pools...))
	for _, cd := range []string{"chat", "anthropic", "responses"} {
		o := sdkCall(gw, cd, cd+"-model", false)
		if o.ok || o.status != http.StatusTooManyRequests || o.typ != "rate_limit_error" || !strings.Contains(o.msg, "all upstream attempts failed (3 attempts") {
			t.Fatalf("%s: %s; want 429 rate_limit_error after 3 attempts", cd, o)
		}
		// the third 429 started the key's third backoff: 2 s
		if o.retryAfter != "2" {
			t.Errorf("%s: Retry-After %q, want 2 (the key's cooldown)", cd, o.retryAfter)
		}
		if n := m.Stats("ladder-key-" + cd).Requests; n != 3 {
			t.Errorf("%s: upstream requests %d, want 3", cd, n)
		}
	}
}

// TestUnfitCoolingKeyBesideRateLimited: a key that does not list the
// learned model and cools on its own upstream's 500 (for the model it
// does serve) is no more part of the decision than a ready one: the
// request for the model only the rate-limited key lists gets 429
// rate_limit_error with that key's wait, not 503, and the summary says
// the cooling key does not serve the request.
func TestUnfitCoolingKeyBesideRateLimited(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"unfitc-lrn-one": {Models: []string{"lrnc-limited"}},
		"unfitc-lrn-two": {Models: []string{"lrnc-other"}},
	}})
	gw := gateway(t, gatewayBlock(
		"\t\tpool lrn {\n\t\t\tmodels auto\n\t\t\tacquire_timeout 100ms\n\t\t\tmax_retries 0\n"+
			discKey("unfitc-lrn-one", base, "l1")+discKey("unfitc-lrn-two", base, "l2")+"\t\t}\n"))
	eventually(t, 5*time.Second, "learned models listed", func() bool {
		ids, _ := listModels(t, gw, "/v1/models", false)
		return len(ids) == 2
	})
	// l2 cools on a 500 for the model it lists
	m.SetKey("unfitc-lrn-two", mockupstream.KeyBehavior{Models: []string{"lrnc-other"}, Status: 500})
	if resp, b := post(t, gw+"/v1/chat/completions", chatBody("lrnc-other", "hi", false)); resp.StatusCode < 500 {
		t.Fatalf("lrnc-other: %d %s; want a 5xx", resp.StatusCode, b)
	}
	m.SetKey("unfitc-lrn-one", mockupstream.KeyBehavior{Models: []string{"lrnc-limited"}, Status: 429, RetryAfter: "30"})
	for _, cd := range []string{"chat", "anthropic", "responses"} {
		o := sdkCall(gw, cd, "lrnc-limited", false)
		ra, _ := strconv.Atoi(o.retryAfter)
		if o.ok || o.status != http.StatusTooManyRequests || o.typ != "rate_limit_error" || ra < 28 || ra > 30 {
			t.Fatalf("%s: %s; want 429 rate_limit_error with Retry-After 28..30", cd, o)
		}
		if !strings.Contains(o.msg, "l1 cooling (rate_limited, ") || !strings.Contains(o.msg, "l2 skipped (does not serve this request)") {
			t.Errorf("%s: message %q", cd, o.msg)
		}
	}
}

// TestAll429RetryAfterIgnoresUnfitKeys: when every attempt got a 429
// naming no wait, Retry-After is when the soonest key that can serve the
// request is back by its own cooldown; a ready key that does not list
// the learned model does not make it the generic 1 s. (Anthropic keys:
// the mock's Anthropic 429 names no wait of any kind.)
func TestAll429RetryAfterIgnoresUnfitKeys(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"ladderu-one": {Models: []string{"ladderu-limited"}},
		"ladderu-two": {Models: []string{"ladderu-other"}},
	}})
	root := strings.TrimSuffix(base, "/v1")
	gw := gateway(t, gatewayBlock(
		"\t\tpool lrn {\n\t\t\tmodels auto\n\t\t\tacquire_timeout 10s\n\t\t\tmax_retries 0\n\t\t\trate_limit_cooldown 150ms\n"+
			"\t\t\tkey ladderu-one "+root+" {\n\t\t\t\tid l1\n\t\t\t\tdialect anthropic\n\t\t\t}\n"+
			"\t\t\tkey ladderu-two "+root+" {\n\t\t\t\tid l2\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n"))
	eventually(t, 5*time.Second, "learned models listed", func() bool {
		ids, _ := listModels(t, gw, "/v1/models", false)
		return len(ids) == 2
	})
	m.SetKey("ladderu-one", mockupstream.KeyBehavior{Models: []string{"ladderu-limited"}, Status: 429, RetryAfter: "none"})
	listed := m.Stats("ladderu-two").Requests
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("ladderu-limited", "hi", false))
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(gjson.GetBytes(b, "error.message").Str, "all upstream attempts failed (5 attempts") {
		t.Fatalf("%d %s; want 429 after 5 attempts", resp.StatusCode, b)
	}
	// the fifth 429 started l1's fifth backoff: 150 ms x 2^4 = 2.4 s
	if ra := resp.Header.Get("Retry-After"); ra != "2" && ra != "3" {
		t.Errorf("Retry-After %q, want 3 (l1's cooldown; 2 on a slow machine)", ra)
	}
	if n := m.Stats("ladderu-two").Requests - listed; n != 0 {
		t.Errorf("the key that does not list the model was sent %d requests", n)
	}
}
