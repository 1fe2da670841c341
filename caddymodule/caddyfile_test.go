package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/tidwall/gjson"
)

func TestCaddyfileFullGrammar(t *testing.T) {
	input := `llm_gateway {
		api_key {env.GW_KEY}
		api_key sk-second
		max_request_body 2MB
		pool main {
			models gpt-* claude-*
			model_map gpt-4o upstream-4o
			model_map gpt-* upstream-default
			default_model fallback
			key {env.KEY_A} https://api.example.com/v1/ {
				id alpha
				max_concurrency 2
				weight 3
			}
			key {file./run/secrets/b} {
				base_url https://relay.example.net/v1
			}
			max_concurrency_per_key 1
			cooldown_after_success 3s
			rate_limit_cooldown 2s
			error_cooldown 4s
			max_cooldown 10m
			failure_threshold 5
			breaker_open 45s
			max_retries 0
			acquire_timeout 20s
			request_timeout 2m
		}
		pool backup {
			key {env.KEY_C} http://127.0.0.1:9999
		}
	}`
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(h)
	j := string(b)
	checks := map[string]any{
		"api_keys.0":                      "{env.GW_KEY}",
		"api_keys.1":                      "sk-second",
		"max_request_body":                2000000,
		"pools.0.name":                    "main",
		"pools.0.models.1":                "claude-*",
		"pools.0.model_map.0.pattern":     "gpt-4o",
		"pools.0.model_map.1.model":       "upstream-default",
		"pools.0.default_model":           "fallback",
		"pools.0.keys.0.secret":           "{env.KEY_A}",
		"pools.0.keys.0.base_url":         "https://api.example.com/v1/",
		"pools.0.keys.0.id":               "alpha",
		"pools.0.keys.0.max_concurrency":  2,
		"pools.0.keys.0.weight":           3,
		"pools.0.keys.1.secret":           "{file./run/secrets/b}",
		"pools.0.keys.1.base_url":         "https://relay.example.net/v1",
		"pools.0.max_concurrency_per_key": 1,
		"pools.0.cooldown_after_success":  3e9,
		"pools.0.rate_limit_cooldown":     2e9,
		"pools.0.error_cooldown":          4e9,
		"pools.0.max_cooldown":            600e9,
		"pools.0.failure_threshold":       5,
		"pools.0.breaker_open":            45e9,
		"pools.0.max_retries":             0,
		"pools.0.acquire_timeout":         20e9,
		"pools.0.request_timeout":         120e9,
		"pools.1.keys.0.base_url":         "http://127.0.0.1:9999",
	}
	for path, want := range checks {
		got := gjson.Get(j, path)
		if !got.Exists() {
			t.Errorf("%s missing in %s", path, j)
			continue
		}
		switch w := want.(type) {
		case string:
			if got.String() != w {
				t.Errorf("%s = %q, want %q", path, got.String(), w)
			}
		case int:
			if got.Int() != int64(w) {
				t.Errorf("%s = %v, want %d", path, got.Int(), w)
			}
		case float64:
			if got.Float() != w {
				t.Errorf("%s = %v, want %v", path, got.Float(), w)
			}
		}
	}
	// round trip: the JSON decodes back strictly into the same config
	var back Handler
	dec := json.NewDecoder(strings.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	if *back.Pools[0].MaxRetries != 0 {
		t.Fatal("explicit max_retries 0 lost")
	}
}

func TestCaddyfileErrors(t *testing.T) {
	cases := []struct{ name, input, want string }{
		{"unknown subdirective", "llm_gateway {\n bogus 1\n}", "unrecognized llm_gateway subdirective 'bogus'"},
		{"pool without name", "llm_gateway {\n pool {\n }\n}", "pool needs a name"},
		{"key without base_url", "llm_gateway {\n pool p {\n key sk-x\n }\n}", "base_url is required"},
		{"bad duration", "llm_gateway {\n pool p {\n cooldown_after_success soon\n }\n}", "cooldown_after_success: bad duration 'soon'"},
		{"negative retries", "llm_gateway {\n pool p {\n max_retries -1\n }\n}", "max_retries: want an integer >= 0"},
		{"zero concurrency", "llm_gateway {\n pool p {\n max_concurrency_per_key 0\n }\n}", "max_concurrency_per_key: want an integer >= 1"},
		{"model_map one arg", "llm_gateway {\n pool p {\n model_map gpt-4o\n }\n}", "model_map needs <pattern> <upstream-model>"},
		{"duplicate pool", "llm_gateway {\n pool p {\n }\n pool p {\n }\n}", "pool 'p' is defined twice"},
		{"auth bogus", "llm_gateway {\n auth maybe\n}", "auth: want 'off' or 'on'"},
		{"unknown key option", "llm_gateway {\n pool p {\n key sk-x http://a {\n colour red\n }\n }\n}", "unrecognized key subdirective 'colour'"},
		{"argument on directive", "llm_gateway extra {\n}", "wrong argument count"},
	}
	for _, c := range cases {
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(c.input))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

// TestProvisionErrors: configs that adapt but cannot run are rejected by
// caddy.Load with a clear message that never contains a secret.
func TestProvisionErrors(t *testing.T) {
	cases := []struct {
		name, block, want string
	}{
		{"no pools", "llm_gateway {\n\t\tapi_key k\n\t}", "at least one pool is required"},
		{"no keys", "llm_gateway {\n\t\tapi_key k\n\t\tpool p {\n\t\t}\n\t}", "at least one key is required"},
		{"bad base_url", "llm_gateway {\n\t\tapi_key k\n\t\tpool p {\n\t\t\tkey sk-secret-value-123456 ftp://x\n\t\t}\n\t}", "want an absolute http(s) URL"},
		{"auth off with keys", "llm_gateway {\n\t\tapi_key k\n\t\tauth off\n\t\tpool p {\n\t\t\tkey sk-secret-value-123456 http://127.0.0.1:1\n\t\t}\n\t}", "choose one"},
		{"same key twice", "llm_gateway {\n\t\tapi_key k\n\t\tpool p {\n\t\t\tkey sk-secret-value-123456 http://127.0.0.1:1\n\t\t\tkey sk-secret-value-123456 http://127.0.0.1:1/\n\t\t}\n\t}", "configured twice"},
	}
	for _, c := range cases {
		cf := "{\n\tadmin off\n\tpersist_config off\n}\nhttp://127.0.0.1:1 {\n\t" + c.block + "\n}\n"
		err := loadCaddyfileErr(cf)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "sk-secret-value-123456") {
			t.Errorf("%s: error leaks the secret: %v", c.name, err)
		}
	}
}
