package caddymodule

import (
	"sort"
)

// Preset is a provider's API root and dialect, filled in for a key that
// names the provider (`key {env.GROQ_KEY} groq`, `provider groq` in a key
// block, or KeyConfig.Provider in JSON) instead of a base URL. The dialect
// decides the auth: "openai" sends `Authorization: Bearer <secret>` to
// <BaseURL>/chat/completions, "anthropic" sends `x-api-key: <secret>` and
// `anthropic-version: 2023-06-01` to <BaseURL>/v1/messages. A key's own
// base_url and dialect always win over its preset's. A preset with a
// ResponsesBaseURL (OpenAI) also gives its keys an OpenAI Responses
// endpoint, so Responses clients pass through natively.
type Preset struct {
	// Name is the name written in the config, lower case ("groq").
	Name string
	// Title is the provider's name for people ("Groq").
	Title string
	// BaseURL is the API root as the gateway's KeyConfig.BaseURL takes it.
	BaseURL string
	// Dialect is "openai" or "anthropic".
	Dialect string
	// Doc is the vendor's page the base URL comes from.
	Doc string
	// ResponsesBaseURL is the root of the provider's OpenAI Responses API
	// (the gateway appends "/responses"), given to the preset's keys as
	// KeyConfig.ResponsesBaseURL when the key takes the preset's base URL
	// and dialect; "" when the provider serves no Responses API. OpenAI
	// serves both Chat Completions and Responses at https://api.openai.com/v1
	// (per https://platform.openai.com/docs/api-reference/responses).
	ResponsesBaseURL string
}

// presets is the curated list. Each BaseURL is the one the vendor's page
// in Doc gives for its OpenAI-compatible (or Anthropic) API; local servers
// use 127.0.0.1 and their default port.
var presets = []Preset{
	{"openai", "OpenAI", "https://api.openai.com/v1", "openai",
		"https://platform.openai.com/docs/api-reference/introduction", "https://api.openai.com/v1"},
	{"anthropic", "Anthropic", "https://api.anthropic.com", "anthropic",
		"https://docs.anthropic.com/en/api/overview", ""},
	{"openrouter", "OpenRouter", "https://openrouter.ai/api/v1", "openai",
		"https://openrouter.ai/docs/quickstart", ""},
	{"deepseek", "DeepSeek", "https://api.deepseek.com", "openai",
		"https://api-docs.deepseek.com/", ""},
	{"groq", "Groq", "https://api.groq.com/openai/v1", "openai",
		"https://console.groq.com/docs/openai", ""},
	{"gemini", "Google Gemini (OpenAI compatibility)", "https://generativelanguage.googleapis.com/v1beta/openai", "openai",
		"https://ai.google.dev/gemini-api/docs/openai", ""},
	{"mistral", "Mistral AI", "https://api.mistral.ai/v1", "openai",
		"https://docs.mistral.ai/api/", ""},
	{"cerebras", "Cerebras", "https://api.cerebras.ai/v1", "openai",
		"https://inference-docs.cerebras.ai/resources/openai", ""},
	{"siliconflow", "SiliconFlow (China)", "https://api.siliconflow.cn/v1", "openai",
		"https://docs.siliconflow.cn/cn/userguide/quickstart", ""},
	{"siliconflow-global", "SiliconFlow (global)", "https://api.siliconflow.com/v1", "openai",
		"https://docs.siliconflow.com/en/api-reference/chat-completions/chat-completions", ""},
	{"zhipu", "Zhipu GLM (BigModel, China)", "https://open.bigmodel.cn/api/paas/v4", "openai",
		"https://docs.bigmodel.cn/", ""},
	{"zai", "Z.ai GLM (global)", "https://api.z.ai/api/paas/v4", "openai",
		"https://docs.z.ai/guides/develop/openai/python", ""},
	{"moonshot", "Moonshot Kimi (global)", "https://api.moonshot.ai/v1", "openai",
		"https://platform.moonshot.ai/docs/api/chat", ""},
	{"moonshot-cn", "Moonshot Kimi (China)", "https://api.moonshot.cn/v1", "openai",
		"https://platform.kimi.com/docs/api/overview", ""},
	{"together", "Together AI", "https://api.together.ai/v1", "openai",
		"https://docs.together.ai/docs/inference/openai-compatibility", ""},
	{"fireworks", "Fireworks AI", "https://api.fireworks.ai/inference/v1", "openai",
		"https://docs.fireworks.ai/tools-sdks/openai-compatibility", ""},
	{"xai", "xAI Grok", "https://api.x.ai/v1", "openai",
		"https://docs.x.ai/api/integrations", ""},
	{"ollama", "Ollama (local)", "http://127.0.0.1:11434/v1", "openai",
		"https://docs.ollama.com/api/openai-compatibility", ""},
	{"lmstudio", "LM Studio (local)", "http://127.0.0.1:1234/v1", "openai",
		"https://lmstudio.ai/docs/api/openai-api", ""},
}

var presetIndex = func() map[string]Preset {
	m := make(map[string]Preset, len(presets))
	for _, p := range presets {
		m[p.Name] = p
	}
	return m
}()

// LookupPreset returns the preset of the named provider (exact, lower-case
// name, e.g. "groq"), and false when there is none.
func LookupPreset(name string) (Preset, bool) {
	p, ok := presetIndex[name]
	return p, ok
}

// PresetNames returns the names of every provider preset, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for _, p := range presets {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// Presets returns a copy of the curated provider presets, in the order of
// the documentation.
func Presets() []Preset {
	return append([]Preset(nil), presets...)
}
