package caddymodule

import (
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestPresets: each provider preset gives the base URL and dialect its
// vendor documents, and a key naming it is provisioned with the endpoint
// the gateway will call.
func TestPresets(t *testing.T) {
	cases := []struct {
		name, base, dialect, endpoint string
	}{
		{"openai", "https://api.openai.com/v1", "openai", "https://api.openai.com/v1/chat/completions"},
		{"anthropic", "https://api.anthropic.com", "anthropic", "https://api.anthropic.com/v1/messages"},
		{"openrouter", "https://openrouter.ai/api/v1", "openai", "https://openrouter.ai/api/v1/chat/completions"},
		{"deepseek", "https://api.deepseek.com", "openai", "https://api.deepseek.com/chat/completions"},
		{"groq", "https://api.groq.com/openai/v1", "openai", "https://api.groq.com/openai/v1/chat/completions"},
		{"gemini", "https://generativelanguage.googleapis.com/v1beta/openai", "openai",
			"https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"},
		{"mistral", "https://api.mistral.ai/v1", "openai", "https://api.mistral.ai/v1/chat/completions"},
		{"cerebras", "https://api.cerebras.ai/v1", "openai", "https://api.cerebras.ai/v1/chat/completions"},
		{"siliconflow", "https://api.siliconflow.cn/v1", "openai", "https://api.siliconflow.cn/v1/chat/completions"},
		{"siliconflow-global", "https://api.siliconflow.com/v1", "openai", "https://api.siliconflow.com/v1/chat/completions"},
		{"zhipu", "https://open.bigmodel.cn/api/paas/v4", "openai", "https://open.bigmodel.cn/api/paas/v4/chat/completions"},
		{"zai", "https://api.z.ai/api/paas/v4", "openai", "https://api.z.ai/api/paas/v4/chat/completions"},
		{"moonshot", "https://api.moonshot.ai/v1", "openai", "https://api.moonshot.ai/v1/chat/completions"},
		{"moonshot-cn", "https://api.moonshot.cn/v1", "openai", "https://api.moonshot.cn/v1/chat/completions"},
		{"together", "https://api.together.ai/v1", "openai", "https://api.together.ai/v1/chat/completions"},
		{"fireworks", "https://api.fireworks.ai/inference/v1", "openai", "https://api.fireworks.ai/inference/v1/chat/completions"},
		{"xai", "https://api.x.ai/v1", "openai", "https://api.x.ai/v1/chat/completions"},
		{"ollama", "http://127.0.0.1:11434/v1", "openai", "http://127.0.0.1:11434/v1/chat/completions"},
		{"lmstudio", "http://127.0.0.1:1234/v1", "openai", "http://127.0.0.1:1234/v1/chat/completions"},
	}
	if len(cases) != len(Presets()) {
		t.Fatalf("%d presets, %d in this table: every preset needs a row", len(Presets()), len(cases))
	}
	repl := caddy.NewReplacer()
	for _, c := range cases {
		p, ok := LookupPreset(c.name)
		if !ok {
			t.Errorf("%s: no preset", c.name)
			continue
		}
		if p.BaseURL != c.base || p.Dialect != c.dialect {
			t.Errorf("%s: base %q dialect %q, want %q %q", c.name, p.BaseURL, p.Dialect, c.base, c.dialect)
		}
		if u, err := url.Parse(p.Doc); err != nil || u.Scheme != "https" || u.Host == "" || p.Title == "" {
			t.Errorf("%s: doc %q / title %q: want the vendor's https page and a title", c.name, p.Doc, p.Title)
		}
		uk, err := provisionKey(&KeyConfig{Secret: "sk-preset-test-0123456789", Provider: c.name}, repl, 1)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := uk.chatURL
		if c.dialect == "anthropic" {
			got = uk.messageURL
		}
		if got != c.endpoint {
			t.Errorf("%s: endpoint %q, want %q", c.name, got, c.endpoint)
		}
	}
	// an explicit base_url and dialect win over the preset's
	uk, err := provisionKey(&KeyConfig{Secret: "sk-preset-test-0123456789", Provider: "anthropic",
		BaseURL: "http://127.0.0.1:9/relay/", Dialect: "openai"}, repl, 1)
	if err != nil || uk.chatURL != "http://127.0.0.1:9/relay/chat/completions" || uk.messageURL != "" {
		t.Errorf("override: chat %q messages %q err %v", uk.chatURL, uk.messageURL, err)
	}
	uk, err = provisionKey(&KeyConfig{Secret: "sk-preset-test-0123456789", Provider: "anthropic",
		BaseURL: "http://127.0.0.1:9"}, repl, 1)
	if err != nil || uk.messageURL != "http://127.0.0.1:9/v1/messages" || uk.chatURL != "" {
		t.Errorf("base override keeps the preset's dialect: chat %q messages %q err %v", uk.chatURL, uk.messageURL, err)
	}
	_, err = provisionKey(&KeyConfig{Secret: "sk-preset-test-0123456789", Provider: "grok"}, repl, 1)
	if err == nil || !strings.Contains(err.Error(), `provider "grok": unknown (did you mean groq?)`) {
		t.Errorf("unknown provider: err = %v", err)
	}
}

// TestPresetCaddyfile: a provider stands where the base URL goes, or as
// `provider` in the key block, and reaches the JSON config as "provider".
func TestPresetCaddyfile(t *testing.T) {
	input := `llm_gateway {
		pool p {
			key {env.GROQ_KEY} groq
			key {env.DS_KEY} {
				provider deepseek
				id ds
			}
			key {env.ANT_KEY} https://relay.example.com {
				provider anthropic
			}
			key {env.OTHER} {env.OTHER_BASE}
		}
	}`
	checkAdaptedJSON(t, input, map[string]string{
		"pools.0.keys.0.provider": "groq",
		"pools.0.keys.0.base_url": "",
		"pools.0.keys.1.provider": "deepseek",
		"pools.0.keys.1.id":       "ds",
		"pools.0.keys.2.provider": "anthropic",
		"pools.0.keys.2.base_url": "https://relay.example.com",
		"pools.0.keys.3.base_url": "{env.OTHER_BASE}",
	})
}

// TestPresetKeyThroughGateway: keys that name a preset work through the
// real gateway against the mock, their base URL overridden: an anthropic
// preset keeps its dialect (the OpenAI client's request is translated to
// Messages), an openai-dialect preset is called at <base>/chat/completions.
func TestPresetKeyThroughGateway(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool claude {\n\t\t\tmodels claude-*\n\t\t\tkey sk-preset-anthropic-000000 anthropic {\n\t\t\t\tid ant\n\t\t\t\tbase_url "+root+"\n\t\t\t}\n\t\t}\n"+
		"\t\tpool fast {\n\t\t\tmodels *\n\t\t\tkey sk-preset-groq-0000000000 {\n\t\t\t\tprovider groq\n\t\t\t\tid groq\n\t\t\t\tbase_url "+base+"\n\t\t\t}\n\t\t}\n\t}")

	resp, body := post(t, gw+"/v1/chat/completions", chatBody("claude-sonnet-4-5", "via preset", false))
	if resp.StatusCode != 200 {
		t.Fatalf("anthropic preset: status %d: %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("X-Routed-Via"); got != "claude/ant" {
		t.Errorf("X-Routed-Via = %q, want claude/ant", got)
	}
	if got := gjson.GetBytes(body, "choices.0.message.content").String(); !strings.Contains(got, "via preset") {
		t.Errorf("answer %q, want the mock's echo", got)
	}
	if got := gjson.GetBytes(body, "object").String(); got != "chat.completion" {
		t.Errorf("object %q, want chat.completion (translated back from Messages)", got)
	}
	if s := m.Stats("sk-preset-anthropic-000000"); s.OK != 1 {
		t.Errorf("anthropic preset key: mock stats %+v, want 1 ok", s)
	}

	resp, body = post(t, gw+"/v1/chat/completions", chatBody("llama-3.3-70b", "via groq", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "fast/groq" {
		t.Fatalf("groq preset: status %d via %q: %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), body)
	}
	if s := m.Stats("sk-preset-groq-0000000000"); s.OK != 1 {
		t.Errorf("groq preset key: mock stats %+v, want 1 ok", s)
	}
}

// TestPresetsDocumented: docs/providers.md lists every preset with its base
// URL, dialect and source page.
func TestPresetsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, p := range Presets() {
		row := "| `" + p.Name + "` | " + p.Title + " | `" + p.BaseURL + "` | " + p.Dialect + " | <" + p.Doc + "> |"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/providers.md lacks the row %s", row)
		}
	}
}
