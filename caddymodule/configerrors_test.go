package caddymodule

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// loadCaddyfileFileErr writes cf to a file, adapts it under that file name
// (so errors carry "<file>:<line>") and loads it; it returns the file's
// path and the error.
func loadCaddyfileFileErr(t *testing.T, cf string) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(path, []byte(cf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgJSON, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), map[string]any{"filename": path})
	if err != nil {
		return path, err
	}
	err = caddy.Load(cfgJSON, true)
	_ = caddy.Stop()
	return path, err
}

// lineOf returns the 1-based number of the first line of s containing sub.
func lineOf(t *testing.T, s, sub string) int {
	t.Helper()
	for i, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return i + 1
		}
	}
	t.Fatalf("no line contains %q", sub)
	return 0
}

// TestConfigMistakes: the configuration mistakes a new user makes get a
// message that names the thing (the placeholder, the directive, the
// nearest valid name) and, for Caddyfile mistakes, the line of the
// offending key or subdirective; no message shows a secret's value.
func TestConfigMistakes(t *testing.T) {
	const literalSecret = "sk-literal-secret-value-0123456789"
	t.Setenv("LLMGW_SET_KEY", "sk-env-secret-value-9876543210")
	os.Unsetenv("LLMGW_UNSET_3")
	os.Unsetenv("LLMGW_UNSET_GW")
	os.Unsetenv("LLMGW_UNSET_DOLLAR")
	cases := []struct {
		name  string
		block string // the llm_gateway block
		want  string // text the error must contain
		line  string // when set, the error must point at the line containing this
	}{
		{"unset env placeholder in a key",
			"api_key k\n\t\tpool main {\n\t\t\tkey {env.LLMGW_SET_KEY} http://127.0.0.1:1/v1 {\n\t\t\t\tid openai-1\n\t\t\t}\n" +
				"\t\t\tkey {env.LLMGW_UNSET_3} http://127.0.0.1:1/v1 {\n\t\t\t\tid openai-2\n\t\t\t}\n\t\t}",
			`pool "main": key openai-2: {env.LLMGW_UNSET_3} is unset or empty`, ""},
		{"unset env placeholder in a key without id",
			"api_key k\n\t\tpool main {\n\t\t\tkey {env.LLMGW_UNSET_3} http://127.0.0.1:1/v1\n\t\t}",
			`pool "main": key #1: {env.LLMGW_UNSET_3} is unset or empty`, ""},
		{"unset env placeholder in api_key",
			"api_key {env.LLMGW_UNSET_GW}\n\t\tpool main {\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1\n\t\t}",
			`api_key 1: {env.LLMGW_UNSET_GW} is unset or empty`, ""},
		{"unset env placeholder in a scoped api_key",
			"api_key {env.LLMGW_UNSET_GW} {\n\t\t\tid team-a\n\t\t}\n\t\tpool main {\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1\n\t\t}",
			`gateway key 1: {env.LLMGW_UNSET_GW} is unset or empty`, ""},
		{"unreadable file placeholder",
			"api_key k\n\t\tpool main {\n\t\t\tkey {file./nonexistent/llmgw-secret} http://127.0.0.1:1/v1\n\t\t}",
			`pool "main": key #1: {file./nonexistent/llmgw-secret} is empty or cannot be read`, ""},
		{"empty {$NAME} secret before a base URL",
			"api_key k\n\t\tpool main {\n\t\t\tkey {$LLMGW_UNSET_DOLLAR} https://api.example.com/v1\n\t\t}",
			"key: the secret is empty, 'https://api.example.com/v1' stands where the secret goes", "{$LLMGW_UNSET_DOLLAR}"},
		{"empty {$NAME} secret names the variable",
			"api_key k\n\t\tpool main {\n\t\t\tkey {$LLMGW_UNSET_DOLLAR} https://api.example.com/v1 {\n\t\t\t\tid a\n\t\t\t}\n\t\t}",
			"{$LLMGW_UNSET_DOLLAR} is unset or empty", "{$LLMGW_UNSET_DOLLAR}"},
		{"empty {$NAME} secret before a provider",
			"api_key k\n\t\tpool main {\n\t\t\tkey {$LLMGW_UNSET_DOLLAR} groq\n\t\t}",
			"key: the secret is empty, 'groq' stands where the secret goes", "{$LLMGW_UNSET_DOLLAR}"},
		{"empty {$NAME} api_key",
			"api_key {$LLMGW_UNSET_GW}\n\t\tpool main {\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1\n\t\t}",
			"api_key needs a token", "api_key"},
		{"missing base_url points at the key line",
			"api_key k\n\t\tpool main {\n\t\t\tkey " + literalSecret + " {\n\t\t\t\tid nobase\n\t\t\t\tweight 2\n\t\t\t}\n\t\t}",
			"key: base_url is required", "key " + literalSecret},
		{"pool subdirective typo",
			"api_key k\n\t\tpool main {\n\t\t\tmax_concurency_per_key 2\n\t\t}",
			"unrecognized pool subdirective 'max_concurency_per_key' (did you mean max_concurrency_per_key?)", "max_concurency_per_key"},
		{"handler subdirective typo",
			"api_key k\n\t\tmax_request_bdy 1MB",
			"unrecognized llm_gateway subdirective 'max_request_bdy' (did you mean max_request_body?)", "max_request_bdy"},
		{"key subdirective typo",
			"api_key k\n\t\tpool main {\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1 {\n\t\t\t\tdialet anthropic\n\t\t\t}\n\t\t}",
			"unrecognized key subdirective 'dialet' (did you mean dialect?)", "dialet"},
		{"responses_base_url typo",
			"api_key k\n\t\tpool main {\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1 {\n\t\t\t\tresponses_base_ur http://127.0.0.1:1/v1\n\t\t\t}\n\t\t}",
			"unrecognized key subdirective 'responses_base_ur' (did you mean responses_base_url?)", "responses_base_ur"},
		{"responses key with responses_base_url",
			"api_key k\n\t\tpool main {\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1 {\n\t\t\t\tdialect responses\n\t\t\t\tresponses_base_url http://127.0.0.1:2/v1\n\t\t\t}\n\t\t}",
			`pool "main": key #1: responses_base_url is for openai- and anthropic-dialect keys; a responses key uses base_url`, ""},
		{"prefer responses is accepted, a bogus prefer is not",
			"api_key k\n\t\tpool main {\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1 {\n\t\t\t\tprefer responses\n\t\t\t\tresponses_base_url http://127.0.0.1:1/v1\n\t\t\t}\n\t\t\tkey " + literalSecret + " http://127.0.0.1:2/v1 {\n\t\t\t\tprefer native\n\t\t\t}\n\t\t}",
			"prefer: want auto, openai, anthropic or responses, got 'native'", "prefer native"},
		{"prefer responses without a Responses endpoint",
			"api_key k\n\t\tpool main {\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1 {\n\t\t\t\tprefer responses\n\t\t\t}\n\t\t}",
			`pool "main": key #1: prefer responses: the key has no OpenAI Responses endpoint; set responses_base_url`, ""},
		{"prefer anthropic without an Anthropic endpoint",
			"api_key k\n\t\tpool main {\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1 {\n\t\t\t\tprefer anthropic\n\t\t\t}\n\t\t}",
			`pool "main": key #1: prefer anthropic: the key has no Anthropic Messages endpoint; set anthropic_base_url`, ""},
		{"api_key subdirective typo",
			"api_key k {\n\t\t\tmodel gpt-*\n\t\t}",
			"unrecognized api_key subdirective 'model' (did you mean models?)", "model gpt-*"},
		{"unknown word far from any name gets no suggestion",
			"api_key k\n\t\tpool main {\n\t\t\tcolour red\n\t\t}",
			"unrecognized pool subdirective 'colour', at ", "colour"},
		{"provider typo where the base URL goes",
			"api_key k\n\t\tpool main {\n\t\t\tkey " + literalSecret + " grok\n\t\t}",
			"key: 'grok' is neither a base URL (http:// or https://) nor a known provider (did you mean groq?)", "grok"},
		{"a secret in the base URL's place is not echoed",
			"api_key k\n\t\tpool main {\n\t\t\tkey my-label " + literalSecret + "\n\t\t}",
			"key: its second argument is neither a base URL (http:// or https://) nor a known provider", literalSecret},
		{"recent_requests out of range",
			"api_key k\n\t\trecent_requests 1000001\n\t\tpool main {\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1\n\t\t}",
			"recent_requests must be between 0 (the default, 1000) and 1000000, got 1000001", "recent_requests"},
		{"budget warn NaN on a key",
			"api_key k\n\t\tpool main {\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1 {\n\t\t\t\tbudget 5 usd per daily {\n\t\t\t\t\twarn NaN%\n\t\t\t\t}\n\t\t\t}\n\t\t}",
			"budget: warn wants a percentage between 0 and 100 such as 80%, got 'NaN%'", "warn NaN%"},
		{"budget warn NaN on a pool",
			"api_key k\n\t\tpool main {\n\t\t\tbudget 5 usd per 24h {\n\t\t\t\ttimezone UTC\n\t\t\t\twarn nan\n\t\t\t}\n\t\t\tkey " + literalSecret + " http://127.0.0.1:1/v1\n\t\t}",
			"budget: warn wants a percentage between 0 and 100 such as 80%, got 'nan'", "warn nan"},
		{"provider typo in the key block",
			"api_key k\n\t\tpool main {\n\t\t\tkey " + literalSecret + " {\n\t\t\t\tprovider deepsek\n\t\t\t}\n\t\t}",
			"provider: unknown provider 'deepsek' (did you mean deepseek?)", "deepsek"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cf := "{\n\tadmin off\n\tpersist_config off\n}\nhttp://127.0.0.1:1 {\n\tllm_gateway {\n\t\t" + c.block + "\n\t}\n}\n"
			path, err := loadCaddyfileFileErr(t, cf)
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) {
				t.Errorf("error = %q\nwant it to contain %q", msg, c.want)
			}
			if c.line != "" {
				at := fmt.Sprintf(", at %s:%d", path, lineOf(t, cf, c.line))
				if !strings.Contains(msg, at) {
					t.Errorf("error = %q\nwant it to point at %q", msg, at)
				}
			}
			for _, secret := range []string{literalSecret, os.Getenv("LLMGW_SET_KEY")} {
				if strings.Contains(msg, secret) || strings.Contains(msg, secret[len(secret)/2-4:len(secret)/2+4]) {
					t.Errorf("error shows a secret: %q", msg)
				}
			}
			if strings.Contains(msg, "base_url is required") && c.want != "key: base_url is required" {
				t.Errorf("misleading base_url message: %q", msg)
			}
		})
	}
}

// TestSubdirectiveListsAreAccepted: every name the suggestions may offer
// is one the block accepts (it fails, if at all, for its arguments, never
// as unrecognized).
func TestSubdirectiveListsAreAccepted(t *testing.T) {
	lists := []struct {
		block string
		names []string
		wrap  func(sub string) string
	}{
		{"llm_gateway", handlerSubdirectives, func(s string) string { return "llm_gateway {\n" + s + "\n}" }},
		{"api_key", apiKeySubdirectives, func(s string) string { return "llm_gateway {\napi_key k {\n" + s + "\n}\n}" }},
		{"pool", poolSubdirectives, func(s string) string { return "llm_gateway {\npool p {\n" + s + "\n}\n}" }},
		{"key", keySubdirectives, func(s string) string {
			return "llm_gateway {\npool p {\nkey sk-x http://127.0.0.1:1 {\n" + s + "\n}\n}\n}"
		}},
	}
	for _, l := range lists {
		for _, name := range l.names {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(l.wrap(name + " x")))
			if err != nil && strings.Contains(err.Error(), "unrecognized") {
				t.Errorf("%s: %q is listed but not accepted: %v", l.block, name, err)
			}
		}
	}
}

// TestNearest: the edit-distance suggestion picks the closest name within
// its limit and nothing beyond it.
func TestNearest(t *testing.T) {
	cases := []struct{ in, want string }{
		{"max_concurency_per_key", "max_concurrency_per_key"},
		{"MAX_RETRIES", "max_retries"},
		{"strategey", "strategy"},
		{"concurrency_per_key", "max_concurrency_per_key"}, // part of one valid name
		{"cooldown", ""},                                   // part of several: ambiguous
		{"modls", "models"},
		{"colour", ""},
		{"x", ""},
	}
	for _, c := range cases {
		if got := nearest(c.in, poolSubdirectives); got != c.want {
			t.Errorf("nearest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if d := boundedEditDistance("kitten", "sitting", 3); d != 3 {
		t.Errorf("boundedEditDistance(kitten, sitting, 3) = %d, want 3", d)
	}
}
