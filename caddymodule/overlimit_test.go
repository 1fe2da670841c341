package caddymodule

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/llmgateway/llm_gateway/translate"
)

// ovKey is one mock key of an over-limit test: its vendor tpm (the mock
// answers a request larger than it with the vendor's "request too large"
// 429) and organization.
type ovKey struct {
	secret, id string
	tpm        int64
	org        string
}

// overLimitGateway starts the mock and a gateway with pool "oa" (gpt-*,
// OpenAI keys) and pool "an" (claude-*, Anthropic keys), both by priority
// in the order given. With learn false the pools do not learn limits
// from the vendors' headers: the mock reports a spent budget after a
// refusal, and the learned gate would then hold a small key back from a
// large request until the window's reset (within a second), so the keys
// asked would depend on timing.
func overLimitGateway(t *testing.T, learn bool, oa, an []ovKey) (*mockupstream.Server, string) {
	t.Helper()
	cfg := mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{}}
	for _, k := range append(append([]ovKey(nil), oa...), an...) {
		cfg.Keys[k.secret] = mockupstream.KeyBehavior{TPM: k.tpm, Organization: k.org}
	}
	m, base := mock(t, cfg)
	root := strings.TrimSuffix(base, "/v1")
	block := func(name, models, url, extra string, keys []ovKey) string {
		s := "\t\tpool " + name + " {\n\t\t\tmodels " + models + "\n\t\t\tstrategy priority\n\t\t\taffinity off\n"
		if !learn {
			s += "\t\t\tlearn_limits off\n"
		}
		for i, k := range keys {
			s += "\t\t\tkey " + k.secret + " " + url + " {\n\t\t\t\tid " + k.id + "\n" + extra +
				"\t\t\t\tpriority " + string(rune('1'+i)) + "\n\t\t\t}\n"
		}
		return s + "\t\t}\n"
	}
	site := gatewayBlock(block("oa", "gpt-*", base, "", oa))
	if len(an) > 0 {
		site = gatewayBlock(block("oa", "gpt-*", base, "", oa), block("an", "claude-*", root, "\t\t\t\tdialect anthropic\n", an))
	}
	return m, gateway(t, site)
}

// bigPrompt is 400 words: 400 tokens as the mock counts them, about 200
// as the gateway bounds them from below (two bytes a word).
var bigPrompt = strings.Repeat("w ", 400)

// keysUnblamed checks that the keys of a pool are ready with no failure
// at all: an over-limit answer is not the key's.
func keysUnblamed(t *testing.T, pool string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if st := keyStatus(t, pool, id); st.State != keypool.StateReady || st.Failures != 0 || st.ConsecutiveFailures != 0 || st.Reason != "" {
			t.Fatalf("key %s/%s blamed for a request larger than its limit: %+v", pool, id, st)
		}
	}
}

// TestOverLimitMovesToLargerKey: a request larger than the first key's
// whole per-minute limit (OpenAI "Request too large ... Limit 100,
// Requested 400"; Anthropic's input-tokens 429 with
// anthropic-ratelimit-input-tokens-limit 100) is answered by the key with
// the larger limit, streamed or not, whatever the client's dialect, and
// neither key is cooled or counts a failure.
func TestOverLimitMovesToLargerKey(t *testing.T) {
	m, gw := overLimitGateway(t, false,
		[]ovKey{{"oa-small", "small", 100, "org-a"}, {"oa-large", "large", 100_000, "org-b"}},
		[]ovKey{{"an-small", "asmall", 100, "org-c"}, {"an-large", "alarge", 100_000, "org-d"}})
	for _, stream := range []bool{false, true} {
		seq := recentSeq()
		resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", bigPrompt, stream))
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "oa/large" {
			t.Fatalf("chat, stream %v: %d via %q %s", stream, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
		}
		if rr := recentAfter(t, seq); rr.Status != 200 || attemptOutcomes(rr) != "small:client_error large:success" {
			t.Fatalf("chat, stream %v: logged %d %q", stream, rr.Status, attemptOutcomes(rr))
		}
		seq = recentSeq()
		resp, b = post(t, gw+"/v1/messages", []byte(`{"model":"claude-x","max_tokens":50,"stream":`+map[bool]string{false: "false", true: "true"}[stream]+
			`,"messages":[{"role":"user","content":"`+bigPrompt+`"}]}`))
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "an/alarge" {
			t.Fatalf("messages, stream %v: %d via %q %s", stream, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
		}
		if rr := recentAfter(t, seq); rr.Status != 200 || attemptOutcomes(rr) != "asmall:client_error alarge:success" {
			t.Fatalf("messages, stream %v: logged %d %q", stream, rr.Status, attemptOutcomes(rr))
		}
	}
	if n := m.Stats("oa-small").RateLimited + m.Stats("an-small").RateLimited; n != 4 {
		t.Fatalf("the small keys refused %d requests, want 4", n)
	}
	keysUnblamed(t, "oa", "small", "large")
	keysUnblamed(t, "an", "asmall", "alarge")
}

// TestOverLimitSecondKeySaysTheSame: when every key has the same limit,
// the second key's "request too large" is the request's answer: relayed
// in the client's dialect with X-Should-Retry: false and no Retry-After,
// after two upstream attempts (the third key is not asked), and no key is
// blamed. Anthropic's input-tokens 429 alike.
func TestOverLimitSecondKeySaysTheSame(t *testing.T) {
	m, gw := overLimitGateway(t, false,
		[]ovKey{{"oa-1", "o1", 100, ""}, {"oa-2", "o2", 100, ""}, {"oa-3", "o3", 100, ""}},
		[]ovKey{{"an-1", "a1", 100, ""}, {"an-2", "a2", 100, ""}, {"an-3", "a3", 100, ""}})
	asked := func(keys ...string) (n int64) {
		for _, k := range keys {
			n += m.Stats(k).Requests
		}
		return n
	}
	cases := []struct {
		name, path, body, pool, first, third, typ, msg string
		keys                                           []string
	}{
		{"openai key, chat client", "/v1/chat/completions", string(chatBody("gpt-x", bigPrompt, false)), "oa", "o1", "oa-3",
			"tokens", "Request too large for gpt-x in organization org-mock on tokens per min (TPM): Limit 100, Requested 400.", []string{"oa-1", "oa-2", "oa-3"}},
		{"openai key, anthropic client", "/v1/messages", `{"model":"gpt-x","max_tokens":50,"messages":[{"role":"user","content":"` + bigPrompt + `"}]}`, "oa", "o1", "oa-3",
			"rate_limit_error", "Request too large for gpt-x in organization org-mock on tokens per min (TPM): Limit 100, Requested 400.", []string{"oa-1", "oa-2", "oa-3"}},
		{"anthropic key, anthropic client", "/v1/messages", `{"model":"claude-x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"` + bigPrompt + `"}]}`, "an", "a1", "an-3",
			"rate_limit_error", "This request would exceed the rate limit for your organization (org-mock) of 100 input tokens per minute.", []string{"an-1", "an-2", "an-3"}},
	}
	for _, c := range cases {
		before, third := asked(c.keys...), m.Stats(c.third).Requests
		seq := recentSeq()
		resp, b := post(t, gw+c.path, []byte(c.body))
		if resp.StatusCode != 429 || resp.Header.Get("X-Should-Retry") != "false" || resp.Header.Get("Retry-After") != "" ||
			gjson.GetBytes(b, "error.type").Str != c.typ || !strings.HasPrefix(gjson.GetBytes(b, "error.message").Str, c.msg) {
			t.Fatalf("%s: %d %v %s", c.name, resp.StatusCode, resp.Header, b)
		}
		if n := asked(c.keys...) - before; n != 2 || m.Stats(c.third).Requests != third {
			t.Fatalf("%s: %d upstream attempts (third key asked: %v)", c.name, n, m.Stats(c.third).Requests != third)
		}
		second := map[string]string{"o1": "o2", "a1": "a2"}[c.first]
		if rr := recentAfter(t, seq); rr.Status != 429 || attemptOutcomes(rr) != c.first+":client_error "+second+":client_error" {
			t.Fatalf("%s: logged %d %q", c.name, rr.Status, attemptOutcomes(rr))
		}
	}
	keysUnblamed(t, "oa", "o1", "o2", "o3")
	keysUnblamed(t, "an", "a1", "a2", "a3")
}

// TestOverLimitSkipsKeysKnownTooSmall: keys of other organizations with
// other limits are tried in turn (each may be larger); the limits learned
// from their answers then spare a later request the keys known to be no
// larger than one that refused it. When no key can take a request, the
// last refusal is relayed. (The request's estimate, about 210 tokens,
// stays below every limit, so that the learned gate, which holds a key
// whose remaining tokens are fewer until the window's reset, does not
// decide first.)
func TestOverLimitSkipsKeysKnownTooSmall(t *testing.T) {
	m, gw := overLimitGateway(t, true, []ovKey{{"oa-1", "k1", 300, "org-a"}, {"oa-2", "k2", 250, "org-b"}, {"oa-3", "k3", 100_000, "org-c"}}, nil)
	for i, want := range []string{"k1:client_error k2:client_error k3:success", "k1:client_error k3:success"} {
		k2 := m.Stats("oa-2").Requests
		seq := recentSeq()
		resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", bigPrompt, false))
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "oa/k3" {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
		if rr := recentAfter(t, seq); attemptOutcomes(rr) != want {
			t.Fatalf("request %d: attempts %q, want %q", i, attemptOutcomes(rr), want)
		}
		if i == 1 && m.Stats("oa-2").Requests != k2 {
			t.Fatal("the key known to be too small was asked")
		}
	}
	keysUnblamed(t, "oa", "k1", "k2", "k3")
	// the large key gone: both refusals heard, none left to try
	m.SetKey("oa-3", mockupstream.KeyBehavior{TPM: 350, Organization: "org-c"})
	seq := recentSeq()
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", bigPrompt, false))
	if resp.StatusCode != 429 || resp.Header.Get("X-Should-Retry") != "false" ||
		!strings.HasPrefix(gjson.GetBytes(b, "error.message").Str, "Request too large for gpt-x in organization org-c on tokens per min (TPM): Limit 350,") || resp.Header.Get("Retry-After") != "" {
		t.Fatalf("no key large enough: %d %s", resp.StatusCode, b)
	}
	if rr := recentAfter(t, seq); rr.Status != 429 || attemptOutcomes(rr) != "k1:client_error k3:client_error" {
		t.Fatalf("no key large enough: logged %d %q", rr.Status, attemptOutcomes(rr))
	}
	keysUnblamed(t, "oa", "k1", "k2")
	// k3's last success reported its budget spent (the learned gate holds
	// it until the reset): the vendor's word, not a failure
	if st := keyStatus(t, "oa", "k3"); st.Failures != 0 || st.ConsecutiveFailures != 0 || st.Reason != keypool.ReasonLearned {
		t.Fatalf("k3: %+v", st)
	}
}

// TestInputLimitRateLimitStillCools: Anthropic's input-tokens 429 for a
// request within the key's limit (the minute's budget is spent) stays a
// rate limit: the key cools until Retry-After and the next key answers.
// A request larger than the limit counting its cached prefix does not
// cool the key: a prefix not yet in the cache counts toward the limit
// (cache writes do), so a client's cache_control breakpoint cannot turn
// its too-large request into a spent window that benches keys.
func TestInputLimitRateLimitStillCools(t *testing.T) {
	_, gw := overLimitGateway(t, false, []ovKey{{"oa-x", "ox", 0, ""}},
		[]ovKey{{"an-1", "a1", 500, ""}, {"an-2", "a2", 0, ""}})
	mid := `{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"` + strings.Repeat("w ", 300) + `"}]}`
	for i, want := range []string{"an/a1", "an/a2"} {
		resp, b := post(t, gw+"/v1/messages", []byte(mid))
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != want {
			t.Fatalf("request %d: %d via %q %s", i, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
		}
	}
	if st := keyStatus(t, "an", "a1"); st.Reason != "rate_limited" || st.SecondsLeft < 30 {
		t.Fatalf("a spent budget: %+v", st)
	}
	_, gw = overLimitGateway(t, false, []ovKey{{"oa-y", "oy", 0, ""}},
		[]ovKey{{"an-3", "a3", 100, ""}, {"an-4", "a4", 0, ""}})
	cached := `{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":[{"type":"text","text":"` + bigPrompt +
		`","cache_control":{"type":"ephemeral"}}]}]}`
	resp, b := post(t, gw+"/v1/messages", []byte(cached))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "an/a4" {
		t.Fatalf("cached: %d via %q %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
	}
	keysUnblamed(t, "an", "a3")
}

// TestInputTokensFloor: the estimate counts the decoded text of system,
// messages and tools at four bytes a token, the floor its
// whitespace-separated words (a JSON escape counts as the
// character it stands for, so escaped text is not counted larger than
// it is), leaves out base64 payloads ("data" fields, data: URLs),
// thinking text and signatures; with prompt caching the words are counted
// only after the last cache_control breakpoint (tools, system, messages),
// the estimate over the whole text (a prefix not yet cached counts).
func TestInputTokensFloor(t *testing.T) {
	cjk := strings.Repeat(`\u4e2d`, 400) // 400 characters of 3 bytes, 2400 bytes escaped
	blob := strings.Repeat("QUFB", 1000)
	cases := []struct {
		name, body  string
		want, words int64
	}{
		// "user" 4 + 1200 bytes of text
		{"escaped text", `{"model":"claude-x","messages":[{"role":"user","content":"` + cjk + `"}]}`, 301, 2},
		// "sys prompt!!" 12 + "user" 4 + "image" 5 + "base64" 6 + "image/png" 9 + "text" 4 + 40 + "thinking" 8
		// + "tool" 4 + "does a thing" 12 + "object" 6 (the data, data: URL, thinking and signature left out)
		{"payloads left out", `{"model":"claude-x","system":"sys prompt!!","messages":[{"role":"user","content":[` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + blob + `"}},` +
			`{"type":"text","text":"` + strings.Repeat("abcd", 10) + `"},` +
			`{"type":"thinking","thinking":"` + blob + `","signature":"` + blob + `"},` +
			`{"type":"image","source":{"url":"data:image/png;base64,` + blob + `"}}]}],` +
			`"tools":[{"name":"tool","description":"does a thing","input_schema":{"type":"object"}}]}`, (12 + 4 + 5 + 6 + 9 + 4 + 40 + 8 + 5 + 4 + 12 + 6) / 4, 2 + 10 + 3},
		{"prompt caching", `{"model":"claude-x","messages":[{"role":"user","content":[{"type":"text","text":"` + blob +
			`","cache_control":{"type":"ephemeral"}}]}]}`, (4 + 4 + 4000) / 4, 0},
		// "user" 4 + 40 + "assistant" 9 + "x" 1 + "user" 4 + "text" 4 + 40: the cached tool and system left out
		{"after the breakpoint", `{"model":"claude-x","tools":[{"name":"tool","description":"` + blob + `","cache_control":{"type":"ephemeral"}}],` +
			`"system":[{"type":"text","text":"` + blob + `","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"` + strings.Repeat("abcd", 10) +
			`"},{"role":"assistant","content":"x"},{"role":"user","content":[{"type":"text","text":"` + strings.Repeat("abcd", 10) + `"}]}]}`, (4 + 4000 + 4 + 4000 + 4 + 40 + 9 + 1 + 4 + 4 + 40) / 4, 7},
		{"automatic caching", `{"model":"claude-x","cache_control":{"type":"ephemeral"},"messages":[{"role":"user","content":"` + blob + `"}]}`, (4 + 4000) / 4, 0},
	}
	for _, c := range cases {
		if got, words := inputTokensFloor([]byte(c.body)); got != c.want || words != c.words {
			t.Errorf("%s: %d tokens, %d words; want %d, %d", c.name, got, words, c.want, c.words)
		}
	}
}

// TestOverLimitKnownLargerKeyIsTried: a second key that names the same
// limit as the first does not end the request while a key of the pool is
// known (learned from its answers) to have a larger one: that key
// answers. (Estimate about 210 tokens, below every limit, as in
// TestOverLimitSkipsKeysKnownTooSmall.)
func TestOverLimitKnownLargerKeyIsTried(t *testing.T) {
	m, gw := overLimitGateway(t, true, []ovKey{{"oa-1", "k1", 300, "org-a"}, {"oa-2", "k2", 350, "org-b"}, {"oa-3", "k3", 100_000, "org-c"}}, nil)
	seq := recentSeq()
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", bigPrompt, false))
	if rr := recentAfter(t, seq); resp.StatusCode != 200 || attemptOutcomes(rr) != "k1:client_error k2:client_error k3:success" {
		t.Fatalf("first request: %d %q %s", resp.StatusCode, attemptOutcomes(rr), b)
	}
	// k2 now has k1's limit: its refusal says the same as k1's, but k3
	// is known to be larger
	m.SetKey("oa-2", mockupstream.KeyBehavior{TPM: 300, Organization: "org-b"})
	seq = recentSeq()
	resp, b = post(t, gw+"/v1/chat/completions", chatBody("gpt-x", bigPrompt, false))
	if rr := recentAfter(t, seq); resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "oa/k3" ||
		attemptOutcomes(rr) != "k1:client_error k2:client_error k3:success" {
		t.Fatalf("second request: %d via %q, %q %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), attemptOutcomes(rr), b)
	}
	keysUnblamed(t, "oa", "k1", "k2")
}

// TestInputLimitCachedPrefixStillOverLimit: prompt caching covers only
// the prefix up to the last cache_control breakpoint (tools, system,
// messages, in that order, per Anthropic's prompt caching docs); the text
// after it is counted input however warm the cache. A client that marks
// a short system prompt for caching and sends a message larger than the
// key's whole input-tokens limit after it must not cool the key (else
// such requests bench every key of the pool in turn): the next key
// answers and the first stays ready, unblamed.
func TestInputLimitCachedPrefixStillOverLimit(t *testing.T) {
	_, gw := overLimitGateway(t, false, []ovKey{{"oa-z", "oz", 0, ""}},
		[]ovKey{{"an-5", "a5", 100, ""}, {"an-6", "a6", 0, ""}})
	body := `{"model":"claude-x","max_tokens":50,"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],` +
		`"messages":[{"role":"user","content":"` + bigPrompt + `"}]}`
	resp, b := post(t, gw+"/v1/messages", []byte(body))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "an/a6" {
		t.Fatalf("%d via %q %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
	}
	keysUnblamed(t, "an", "a5")
}

// TestOverLimitKeptWhenLaterKeyFails: the first key answers "request too
// large", the only other key fails with a 500. The client gets the
// vendor's 429 (X-Should-Retry not false: the failed key may take the
// request once it recovers), not the gateway's error for the 500, and the
// first key is not blamed.
func TestOverLimitKeptWhenLaterKeyFails(t *testing.T) {
	m, gw := overLimitGateway(t, false, []ovKey{{"oa-small", "small", 100, "org-a"}, {"oa-broken", "broken", 100_000, "org-b"}}, nil)
	m.SetKey("oa-broken", mockupstream.KeyBehavior{Status: 500})
	seq := recentSeq()
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", bigPrompt, false))
	if resp.StatusCode != 429 || resp.Header.Get("X-Should-Retry") == "false" ||
		!strings.HasPrefix(gjson.GetBytes(b, "error.message").Str, "Request too large for gpt-x in organization org-a on tokens per min (TPM): Limit 100,") {
		t.Fatalf("%d X-Should-Retry %q: %s", resp.StatusCode, resp.Header.Get("X-Should-Retry"), b)
	}
	if rr := recentAfter(t, seq); rr.Status != 429 || attemptOutcomes(rr) != "small:client_error broken:server_error" {
		t.Fatalf("logged %d %q", rr.Status, attemptOutcomes(rr))
	}
	keysUnblamed(t, "oa", "small")
}

// poolNamed returns the live keypool of the named pool.
func poolNamed(t *testing.T, name string) *keypool.Pool {
	t.Helper()
	for _, p := range livePools() {
		if p.Name() == name {
			return p
		}
	}
	t.Fatalf("no live pool %q", name)
	return nil
}

// TestOverLimitUnaskedKeyMayTakeIt: the only key asked answers "request
// too large"; the pool's other key could not be asked (taken out of
// rotation) and its limit is unknown, so it may take the request later.
// The client gets the vendor's 429 but is not told never to retry it
// (X-Should-Retry is not false); once the first key's limit is the only
// one left (the other removed from the candidates by its model), it is.
func TestOverLimitUnaskedKeyMayTakeIt(t *testing.T) {
	_, gw := overLimitGateway(t, false, []ovKey{{"oa-s", "s", 100, "org-a"}, {"oa-big", "big", 100_000, "org-b"}}, nil)
	if !poolNamed(t, "oa").SetDisabled("big", true) {
		t.Fatal("no key big")
	}
	seq := recentSeq()
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", bigPrompt, false))
	if resp.StatusCode != 429 || resp.Header.Get("X-Should-Retry") == "false" ||
		!strings.HasPrefix(gjson.GetBytes(b, "error.message").Str, "Request too large for gpt-x in organization org-a") {
		t.Fatalf("%d X-Should-Retry %q: %s", resp.StatusCode, resp.Header.Get("X-Should-Retry"), b)
	}
	if rr := recentAfter(t, seq); attemptOutcomes(rr) != "s:client_error" {
		t.Fatalf("logged %q", attemptOutcomes(rr))
	}
	keysUnblamed(t, "oa", "s")
	// back in rotation, the larger key answers
	poolNamed(t, "oa").SetDisabled("big", false)
	resp, b = post(t, gw+"/v1/chat/completions", chatBody("gpt-x", bigPrompt, false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "oa/big" {
		t.Fatalf("with the larger key back: %d via %q %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
	}
	// a pool whose only key refused: nothing can take it
	_, gw = overLimitGateway(t, false, []ovKey{{"oa-only", "only", 100, "org-a"}}, nil)
	resp, b = post(t, gw+"/v1/chat/completions", chatBody("gpt-x", bigPrompt, false))
	if resp.StatusCode != 429 || resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("single key: %d X-Should-Retry %q: %s", resp.StatusCode, resp.Header.Get("X-Should-Retry"), b)
	}
}

// TestInputLimitEstimateOnly: Anthropic's input-tokens 429 for a request
// whose estimate (four bytes a token: 50 long words, 125 tokens) is over
// the key's limit of 100 while its words (50) are not, from a key whose
// window others had used (60 of 100 spent). The gateway cannot tell a
// request too large for the key from a spent window: the key is not
// cooled (as for any over-limit answer), but the client is not told that
// retrying is in vain (X-Should-Retry "true"); a request that fits what
// is left of the window is answered by the key. From an idle key (its whole
// window left), the same refusal is known to be about the request's size.
func TestInputLimitEstimateOnly(t *testing.T) {
	m, gw := overLimitGateway(t, false, []ovKey{{"oa-e", "oe", 0, ""}}, []ovKey{{"an-e", "ae", 100, "org-a"}})
	spend := `{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"` + strings.Repeat("w ", 60) + `"}]}`
	if resp, b := post(t, gw+"/v1/messages", []byte(spend)); resp.StatusCode != 200 {
		t.Fatalf("spending 60 tokens: %d %s", resp.StatusCode, b)
	}
	long := `{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"` + strings.Repeat("wwwwwwwww ", 50) + `"}]}`
	seq := recentSeq()
	resp, b := post(t, gw+"/v1/messages", []byte(long))
	if resp.StatusCode != 429 || resp.Header.Get("X-Should-Retry") != "true" || gjson.GetBytes(b, "error.type").Str != "rate_limit_error" {
		t.Fatalf("estimate only: %d X-Should-Retry %q %s", resp.StatusCode, resp.Header.Get("X-Should-Retry"), b)
	}
	if rr := recentAfter(t, seq); attemptOutcomes(rr) != "ae:client_error" {
		t.Fatalf("logged %q", attemptOutcomes(rr))
	}
	keysUnblamed(t, "an", "ae")
	// not cooled: a request that fits what is left of the window is answered by it
	small := `{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"` + strings.Repeat("w ", 30) + `"}]}`
	if resp, b := post(t, gw+"/v1/messages", []byte(small)); resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "an/ae" || m.Stats("an-e").OK != 2 {
		t.Fatalf("a request that fits: %d via %q, %d answered %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), m.Stats("an-e").OK, b)
	}
	// an idle key that refuses: sure
	_, gw = overLimitGateway(t, false, []ovKey{{"oa-f", "of", 0, ""}}, []ovKey{{"an-f", "af", 40, "org-a"}})
	resp, b = post(t, gw+"/v1/messages", []byte(long))
	if resp.StatusCode != 429 || resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("idle key: %d X-Should-Retry %q %s", resp.StatusCode, resp.Header.Get("X-Should-Retry"), b)
	}
	keysUnblamed(t, "an", "af")
	// a key whose window others used (20 of 40): sure by the words
	// alone (50) over its limit (the window's remaining 20 says nothing)
	_, gw = overLimitGateway(t, false, []ovKey{{"oa-g", "og", 0, ""}}, []ovKey{{"an-g", "ag", 40, "org-a"}})
	spend20 := `{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"` + strings.Repeat("w ", 20) + `"}]}`
	if resp, b := post(t, gw+"/v1/messages", []byte(spend20)); resp.StatusCode != 200 {
		t.Fatalf("spending 20 tokens: %d %s", resp.StatusCode, b)
	}
	resp, b = post(t, gw+"/v1/messages", []byte(long))
	if resp.StatusCode != 429 || resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("words over the limit: %d X-Should-Retry %q %s", resp.StatusCode, resp.Header.Get("X-Should-Retry"), b)
	}
	keysUnblamed(t, "an", "ag")
}

// TestInputLimitOtherWindow: an Anthropic 429 for a request whose words
// alone exceed the key's input-tokens limit is the request's size (sure)
// when its message names input tokens; one whose words fit but whose
// estimate does not is sure only with the key's whole window left
// (anthropic-ratelimit-input-tokens-remaining) and a message that does
// not name output tokens per minute; a 429 stays the rate
// limit it is (the key cools) when the message names the key's requests
// per minute: the request's size does not decide for a spent requests
// window.
func TestInputLimitOtherWindow(t *testing.T) {
	body := []byte(`{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"` + strings.Repeat("wwwwwwwww ", 200) + `"}]}`)
	x := &exchange{c: &call{upstreamModel: "claude-x"}, d: translate.AnthropicMessages}
	x.c.bodies[x.d] = &body
	hdr := http.Header{}
	hdr.Set("Anthropic-Ratelimit-Input-Tokens-Limit", "100")
	rate := keypool.Outcome{Kind: keypool.RateLimited, Status: 429}
	msg := func(m string) []byte {
		return []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"` + m + `"}}`)
	}
	o, sure := x.overInputLimit(rate, hdr, msg("This request would exceed the rate limit for your organization (org-a) of 100 input tokens per minute."))
	if o.Kind != keypool.ClientError || o.OverLimit != 100 || !sure {
		t.Fatalf("input tokens: %v over %d sure %v", o.Kind, o.OverLimit, sure)
	}
	// words within the limit (50 of 100), the estimate over it (125): sure
	// only when the key had its whole window left
	inTok := msg("This request would exceed the rate limit for your organization (org-a) of 100 input tokens per minute.")
	fewer := []byte(`{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"` + strings.Repeat("wwwwwwwww ", 50) + `"}]}`)
	x.c.bodies[x.d] = &fewer
	for _, c := range []struct {
		remaining string
		sure      bool
	}{{"100", true}, {"0", false}, {"", false}} {
		hdr.Set("Anthropic-Ratelimit-Input-Tokens-Remaining", c.remaining)
		if o, sure := x.overInputLimit(rate, hdr, inTok); o.Kind != keypool.ClientError || o.OverLimit != 100 || sure != c.sure {
			t.Errorf("remaining %q: %v over %d sure %v, want over 100 sure %v", c.remaining, o.Kind, o.OverLimit, sure, c.sure)
		}
	}
	hdr.Set("Anthropic-Ratelimit-Input-Tokens-Remaining", "100")
	otpm := msg("This request would exceed the rate limit for your organization (org-a) of 8,000 output tokens per minute.")
	if o, sure := x.overInputLimit(rate, hdr, otpm); o.Kind != keypool.ClientError || o.OverLimit != 100 || sure {
		t.Errorf("output tokens, whole input window: %v over %d sure %v, want over 100 not sure", o.Kind, o.OverLimit, sure)
	}
	m := "This request would exceed the rate limit for your organization (org-a) of 50 requests per minute."
	if o, sure := x.overInputLimit(rate, hdr, msg(m)); o.Kind != keypool.RateLimited || o.OverLimit != 0 || sure {
		t.Errorf("%q: %v over %d sure %v, want the rate limit", m, o.Kind, o.OverLimit, sure)
	}
}

// TestFieldCount: fieldCount counts as strings.Fields splits (Unicode
// white space, runs and ends, invalid UTF-8 as a letter).
func TestFieldCount(t *testing.T) {
	for _, s := range []string{"", " ", "a", " a ", "a  b\tc\n", "\u00a0x\u2003y\u3000", "中文 字", "\xff \xfe\xfd", "  lead", "trail  "} {
		if got, want := fieldCount(s), int64(len(strings.Fields(s))); got != want {
			t.Errorf("%q: %d, want %d", s, got, want)
		}
	}
}
