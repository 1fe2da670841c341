package caddymodule

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestClientRecipeModelMap: the model_map recipe of docs/clients.md, as
// written there (its provider presets pointed at the mock), serves the
// model names Claude Code and Codex send: each reaches the upstream model
// the recipe maps it to, through the pool meant for it.
func TestClientRecipeModelMap(t *testing.T) {
	b, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "pool claude-code {")
	if i < 0 {
		t.Fatal("docs/clients.md has no pool claude-code recipe")
	}
	start := strings.LastIndex(doc[:i], "```caddyfile\n") + len("```caddyfile\n")
	recipe := doc[start : start+strings.Index(doc[start:], "```")]

	_, base := mock(t, mockupstream.Config{})
	port := freePort(t)
	recipe = strings.Replace(recipe, "http://127.0.0.1:8787", fmt.Sprintf("http://127.0.0.1:%d", port), 1)
	recipe = strings.ReplaceAll(recipe, " deepseek\n", " "+base+"\n")
	recipe = strings.ReplaceAll(recipe, " openrouter\n", " "+base+"\n")
	for _, v := range []string{"DEEPSEEK_KEY_1", "DEEPSEEK_KEY_2", "OPENROUTER_KEY"} {
		t.Setenv(v, "sk-recipe-"+strings.ToLower(v)+"-0000000000")
	}
	t.Setenv("GATEWAY_API_KEY", gatewayKey)
	appLog := filepath.Join(t.TempDir(), "app.log")
	loadCaddyfile(t, "{\n\tadmin off\n\tpersist_config off\n\tgrace_period 1ns\n\tlog {\n\t\toutput file "+appLog+
		"\n\t\tformat json\n\t\tlevel INFO\n\t}\n}\n"+recipe)
	t.Cleanup(func() { _ = caddy.Stop() })
	gw := fmt.Sprintf("http://127.0.0.1:%d", port)

	cases := []struct{ model, path, pool, upstream string }{
		{"claude-opus-4-8", "/v1/messages", "claude-code", "deepseek-v4-pro"},
		{"claude-opus-4-8[1m]", "/v1/messages", "claude-code", "deepseek-v4-pro"},
		{"claude-sonnet-5", "/v1/messages", "claude-code", "deepseek-v4-pro"},
		{"claude-haiku-4-5-20251001", "/v1/messages", "claude-code", "deepseek-flash"},
		{"claude-3-7-sonnet-latest", "/v1/messages", "claude-code", "deepseek-flash"}, // default_model
		{"gpt-6.2-sol", "/v1/responses", "codex", "qwen/qwen3-coder"},
		{"gpt-5-codex", "/v1/responses", "codex", "qwen/qwen3-coder"},
	}
	for _, c := range cases {
		body := fmt.Sprintf(`{"model":%q,"max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, c.model)
		hdr := []string{"Authorization", "", "X-Api-Key", gatewayKey, "Anthropic-Version", "2023-06-01", "X-Request-Id", "recipe-" + c.model}
		if c.path == "/v1/responses" {
			body = fmt.Sprintf(`{"model":%q,"input":"hi","store":false}`, c.model)
			hdr = []string{"X-Request-Id", "recipe-" + c.model}
		}
		resp, rb := post(t, gw+c.path, []byte(body), hdr...)
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d: %s", c.model, resp.StatusCode, rb)
		}
	}
	seen := map[string]map[string]any{}
	for _, e := range readJSONLines(t, appLog) {
		if e["msg"] == "llm request" {
			seen[fmt.Sprint(e["request_id"])] = e
		}
	}
	for _, c := range cases {
		e := seen["recipe-"+c.model]
		if e == nil {
			t.Errorf("%s: no request log entry", c.model)
			continue
		}
		if e["client_model"] != c.model || e["pool"] != c.pool || e["upstream_model"] != c.upstream {
			t.Errorf("%s: client_model %v pool %v upstream_model %v, want pool %s upstream %s",
				c.model, e["client_model"], e["pool"], e["upstream_model"], c.pool, c.upstream)
		}
	}
}
