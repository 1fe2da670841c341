package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/translate"
)

// TestTargetEveryCombination: for each set of endpoints a key can have
// (C = Chat Completions, M = Anthropic Messages, R = OpenAI Responses),
// each prefer and each client dialect, target picks the documented
// endpoint: the preferred one when the key has it, else the client's own,
// else the first of C, M, R the key has.
func TestTargetEveryCombination(t *testing.T) {
	const (
		chat = "http://127.0.0.1:1/v1/chat/completions"
		msgs = "http://127.0.0.1:2/v1/messages"
		resp = "http://127.0.0.1:3/v1/responses"
	)
	letter := map[translate.Dialect]string{translate.OpenAIChat: "C", translate.AnthropicMessages: "M", translate.OpenAIResponses: "R"}
	url := map[string]string{"C": chat, "M": msgs, "R": resp}
	// endpoints, prefer, then the upstream chosen for a Chat, a Messages
	// and a Responses client
	table := []struct{ endpoints, prefer, want string }{
		{"C", "auto", "CCC"}, {"C", "openai", "CCC"}, {"C", "anthropic", "CCC"}, {"C", "responses", "CCC"},
		{"M", "auto", "MMM"}, {"M", "openai", "MMM"}, {"M", "anthropic", "MMM"}, {"M", "responses", "MMM"},
		{"R", "auto", "RRR"}, {"R", "openai", "RRR"}, {"R", "anthropic", "RRR"}, {"R", "responses", "RRR"},
		{"CM", "auto", "CMC"}, {"CM", "openai", "CCC"}, {"CM", "anthropic", "MMM"}, {"CM", "responses", "CMC"},
		{"CR", "auto", "CCR"}, {"CR", "openai", "CCC"}, {"CR", "anthropic", "CCR"}, {"CR", "responses", "RRR"},
		{"MR", "auto", "MMR"}, {"MR", "openai", "MMR"}, {"MR", "anthropic", "MMM"}, {"MR", "responses", "RRR"},
		{"CMR", "auto", "CMR"}, {"CMR", "openai", "CCC"}, {"CMR", "anthropic", "MMM"}, {"CMR", "responses", "RRR"},
	}
	if len(table) != 7*4 {
		t.Fatalf("%d rows, want 28 (7 endpoint sets x 4 prefers)", len(table))
	}
	clients := []translate.Dialect{translate.OpenAIChat, translate.AnthropicMessages, translate.OpenAIResponses}
	for _, row := range table {
		k := &upstreamKey{prefer: PreferEndpoint(row.prefer)}
		if strings.Contains(row.endpoints, "C") {
			k.chatURL = chat
		}
		if strings.Contains(row.endpoints, "M") {
			k.messageURL = msgs
		}
		if strings.Contains(row.endpoints, "R") {
			k.responsesURL = resp
		}
		for i, client := range clients {
			d, u := k.target(client)
			want := row.want[i : i+1]
			if letter[d] != want || u != url[want] {
				t.Errorf("endpoints %s prefer %s client %s: got %s %s, want %s %s",
					row.endpoints, row.prefer, letter[client], letter[d], u, want, url[want])
			}
		}
		// a client dialect the key cannot match (0) gets the preferred
		// endpoint, else the first of C, M, R
		d, u := k.target(0)
		want := row.endpoints[:1]
		if p := map[string]string{"openai": "C", "anthropic": "M", "responses": "R"}[row.prefer]; p != "" && strings.Contains(row.endpoints, p) {
			want = p
		}
		if letter[d] != want || u != url[want] {
			t.Errorf("endpoints %s prefer %s, no client dialect: got %s %s, want %s", row.endpoints, row.prefer, letter[d], u, want)
		}
	}
}

// TestResponsesKeyProvision: dialect responses (and its alias
// openai_responses), responses_base_url and the OpenAI preset give a key
// its Responses endpoint; the combinations that make no sense are refused
// with a message naming the option.
func TestResponsesKeyProvision(t *testing.T) {
	repl := caddy.NewReplacer()
	const secret = "sk-responses-test-0123456789"
	ok := []struct {
		name                 string
		kc                   KeyConfig
		chat, messages, resp string
	}{
		{"dialect responses", KeyConfig{BaseURL: "https://api.openai.com/v1/", Dialect: "responses"},
			"", "", "https://api.openai.com/v1/responses"},
		{"alias openai_responses", KeyConfig{BaseURL: "http://127.0.0.1:9/v1", Dialect: "openai_responses"},
			"", "", "http://127.0.0.1:9/v1/responses"},
		{"openai key with responses_base_url", KeyConfig{BaseURL: "http://127.0.0.1:9/v1", ResponsesBaseURL: "http://127.0.0.1:8/openai/v1/"},
			"http://127.0.0.1:9/v1/chat/completions", "", "http://127.0.0.1:8/openai/v1/responses"},
		{"openai key with all three", KeyConfig{BaseURL: "http://127.0.0.1:9/v1", AnthropicBaseURL: "http://127.0.0.1:9/anthropic",
			ResponsesBaseURL: "http://127.0.0.1:9/v1", Prefer: "responses"},
			"http://127.0.0.1:9/v1/chat/completions", "http://127.0.0.1:9/anthropic/v1/messages", "http://127.0.0.1:9/v1/responses"},
		{"anthropic key with responses_base_url", KeyConfig{BaseURL: "http://127.0.0.1:9", Dialect: "anthropic", ResponsesBaseURL: "http://127.0.0.1:7/v1"},
			"", "http://127.0.0.1:9/v1/messages", "http://127.0.0.1:7/v1/responses"},
		{"openai preset gets Responses", KeyConfig{Provider: "openai"},
			"https://api.openai.com/v1/chat/completions", "", "https://api.openai.com/v1/responses"},
		{"openai preset with its own base URL written out", KeyConfig{Provider: "openai", BaseURL: "https://api.openai.com/v1/"},
			"https://api.openai.com/v1/chat/completions", "", "https://api.openai.com/v1/responses"},
		{"openai preset, base overridden: no Responses", KeyConfig{Provider: "openai", BaseURL: "http://127.0.0.1:9/v1"},
			"http://127.0.0.1:9/v1/chat/completions", "", ""},
		{"openai preset, dialect responses", KeyConfig{Provider: "openai", Dialect: "responses"},
			"", "", "https://api.openai.com/v1/responses"},
		{"openai preset, explicit responses_base_url wins", KeyConfig{Provider: "openai", ResponsesBaseURL: "http://127.0.0.1:6/v1"},
			"https://api.openai.com/v1/chat/completions", "", "http://127.0.0.1:6/v1/responses"},
		{"groq preset: no Responses", KeyConfig{Provider: "groq"},
			"https://api.groq.com/openai/v1/chat/completions", "", ""},
		{"anthropic preset: no Responses", KeyConfig{Provider: "anthropic"},
			"", "https://api.anthropic.com/v1/messages", ""},
	}
	for _, c := range ok {
		kc := c.kc
		kc.Secret = secret
		uk, err := provisionKey(&kc, repl, 1)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if uk.chatURL != c.chat || uk.messageURL != c.messages || uk.responsesURL != c.resp {
			t.Errorf("%s: chat %q messages %q responses %q, want %q %q %q",
				c.name, uk.chatURL, uk.messageURL, uk.responsesURL, c.chat, c.messages, c.resp)
		}
		if uk.authHeader != "Bearer "+secret {
			t.Errorf("%s: auth header is not Bearer", c.name)
		}
	}
	bad := []struct {
		name string
		kc   KeyConfig
		want string
	}{
		{"responses key without base_url", KeyConfig{Dialect: "responses"},
			"base_url is required: dialect responses calls <base_url>/responses"},
		{"responses key with responses_base_url", KeyConfig{BaseURL: "http://127.0.0.1:9/v1", Dialect: "responses", ResponsesBaseURL: "http://127.0.0.1:9/v1"},
			"responses_base_url is for openai- and anthropic-dialect keys; a responses key uses base_url"},
		{"responses key with anthropic_base_url", KeyConfig{BaseURL: "http://127.0.0.1:9/v1", Dialect: "responses", AnthropicBaseURL: "http://127.0.0.1:9"},
			"anthropic_base_url is for openai-dialect keys"},
		{"bad responses_base_url", KeyConfig{BaseURL: "http://127.0.0.1:9/v1", ResponsesBaseURL: "ftp://x"},
			`responses_base_url "ftp://x": want an absolute http(s) URL`},
		{"unknown dialect", KeyConfig{BaseURL: "http://127.0.0.1:9/v1", Dialect: "gemini"},
			`dialect "gemini": want openai, anthropic or responses`},
		{"unknown prefer", KeyConfig{BaseURL: "http://127.0.0.1:9/v1", Prefer: "chat"},
			`prefer "chat": want auto, openai, anthropic or responses`},
	}
	for _, c := range bad {
		kc := c.kc
		kc.Secret = secret
		_, err := provisionKey(&kc, repl, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// TestCaddyfileResponsesKey: dialect responses, responses_base_url and
// prefer responses reach the JSON config; bad values are refused with the
// accepted ones named.
func TestCaddyfileResponsesKey(t *testing.T) {
	input := `llm_gateway {
		pool p {
			key {env.CODEX_KEY} https://api.openai.com/v1 {
				dialect responses
			}
			key {env.RELAY_KEY} https://relay.example.com/v1 {
				anthropic_base_url https://relay.example.com/anthropic
				responses_base_url https://relay.example.com/v1
				prefer responses
			}
			key {env.ALIAS_KEY} http://127.0.0.1:9/v1 {
				dialect openai_responses
			}
		}
	}`
	checkAdaptedJSON(t, input, map[string]string{
		"pools.0.keys.0.dialect":            "responses",
		"pools.0.keys.0.base_url":           "https://api.openai.com/v1",
		"pools.0.keys.1.responses_base_url": "https://relay.example.com/v1",
		"pools.0.keys.1.anthropic_base_url": "https://relay.example.com/anthropic",
		"pools.0.keys.1.prefer":             "responses",
		"pools.0.keys.2.dialect":            "openai_responses",
	})
	for _, c := range []struct{ name, input, want string }{
		{"bad dialect", "llm_gateway {\n pool p {\n key sk-x http://a {\n dialect gemini\n }\n }\n}",
			"dialect: want openai, anthropic or responses, got 'gemini'"},
		{"bad prefer", "llm_gateway {\n pool p {\n key sk-x http://a {\n prefer chat\n }\n }\n}",
			"prefer: want auto, openai, anthropic or responses, got 'chat'"},
		{"responses_base_url without a URL", "llm_gateway {\n pool p {\n key sk-x http://a {\n responses_base_url\n }\n }\n}",
			"wrong argument count"},
		{"responses_base_url typo", "llm_gateway {\n pool p {\n key sk-x http://a {\n response_base_url http://b\n }\n }\n}",
			"unrecognized key subdirective 'response_base_url' (did you mean responses_base_url?)"},
	} {
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(c.input))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

// checkAdaptedJSON parses an llm_gateway Caddyfile block and checks the
// JSON config it gives: each gjson path has the wanted string value.
func checkAdaptedJSON(t *testing.T, input string, want map[string]string) {
	t.Helper()
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	for path, w := range want {
		if got := gjson.GetBytes(b, path).String(); got != w {
			t.Errorf("%s = %q, want %q (%s)", path, got, w, b)
		}
	}
}

func TestUpstreamDialects(t *testing.T) {
	k := func(chat, msg, rs string) *upstreamKey {
		return &upstreamKey{chatURL: chat, messageURL: msg, responsesURL: rs, prefer: "auto"}
	}
	pools := func(keys ...*upstreamKey) []*pool {
		p := &pool{keys: map[string]*upstreamKey{}}
		for i, uk := range keys {
			p.keys[string(rune('a'+i))] = uk
		}
		return []*pool{p}
	}
	// OpenAI-only keys: Anthropic and Responses clients are translated
	// to Chat, Chat clients pass through
	got := upstreamDialects(pools(k("c", "", ""), k("c2", "", "")))
	if got[translate.OpenAIChat] != translate.OpenAIChat || got[translate.AnthropicMessages] != translate.OpenAIChat || got[translate.OpenAIResponses] != translate.OpenAIChat {
		t.Fatalf("openai-only %v", got)
	}
	// an OpenAI key and an Anthropic key: an Anthropic client goes native
	// on one and is translated on the other
	got = upstreamDialects(pools(k("c", "", ""), k("", "m", "")))
	if got[translate.AnthropicMessages] != 0 || got[translate.OpenAIChat] != 0 {
		t.Fatalf("mixed %v", got)
	}
	if got = upstreamDialects(nil); got != [4]translate.Dialect{} {
		t.Fatalf("no keys %v", got)
	}
}
