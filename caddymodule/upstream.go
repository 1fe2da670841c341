package caddymodule

import "github.com/llmgateway/llm_gateway/translate"

// target picks the upstream dialect and URL of the key for a client
// dialect: a key with one endpoint always uses it; a key with both follows
// prefer ("auto": Anthropic clients go native, others to OpenAI).
func (k *upstreamKey) target(client translate.Dialect) (translate.Dialect, string) {
	switch {
	case k.messageURL == "":
		return translate.OpenAIChat, k.chatURL
	case k.chatURL == "":
		return translate.AnthropicMessages, k.messageURL
	case k.prefer == "anthropic" || (k.prefer == "auto" && client == translate.AnthropicMessages):
		return translate.AnthropicMessages, k.messageURL
	}
	return translate.OpenAIChat, k.chatURL
}
