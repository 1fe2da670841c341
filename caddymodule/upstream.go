package caddymodule

import "github.com/llmgateway/llm_gateway/translate"

// target picks the upstream dialect and URL of the key for a client
// dialect. A key has one to three endpoints (Chat Completions, Anthropic
// Messages, OpenAI Responses). prefer "openai", "anthropic" or "responses"
// uses that endpoint when the key has it. Otherwise (prefer "auto", or the
// preferred endpoint missing) the client's own dialect is used when the
// key has its endpoint, so passthrough keeps every vendor feature
// (encrypted reasoning and built-in tools for Responses, prompt caching for
// Messages); failing that, the first the key has of Chat, Messages,
// Responses, which is the endpoint of the key's own dialect (an openai key
// always has Chat, an anthropic key Messages, a responses key only
// Responses).
func (k *upstreamKey) target(client translate.Dialect) (translate.Dialect, string) {
	preferred := client
	switch k.prefer {
	case PreferOpenAI:
		preferred = translate.OpenAIChat
	case PreferAnthropic:
		preferred = translate.AnthropicMessages
	case PreferResponses:
		preferred = translate.OpenAIResponses
	}
	if u := k.endpoint(preferred); u != "" {
		return preferred, u
	}
	if u := k.endpoint(client); u != "" {
		return client, u
	}
	for _, d := range [...]translate.Dialect{translate.OpenAIChat, translate.AnthropicMessages, translate.OpenAIResponses} {
		if u := k.endpoint(d); u != "" {
			return d, u
		}
	}
	return translate.OpenAIChat, k.chatURL // unreachable: provisionKey gives every key an endpoint
}

// endpoint returns the key's URL for an upstream dialect, "" when the key
// has none.
func (k *upstreamKey) endpoint(d translate.Dialect) string {
	switch d {
	case translate.OpenAIChat:
		return k.chatURL
	case translate.AnthropicMessages:
		return k.messageURL
	case translate.OpenAIResponses:
		return k.responsesURL
	}
	return ""
}

// upstreamDialects returns, by client dialect, the upstream dialect every
// key of pools serves a client of that dialect in, or 0 where keys differ
// (or there are none): when all keys translate a client's requests to one
// dialect, its requests are parsed for that dialect.
func upstreamDialects(pools []*pool) (out [4]translate.Dialect) {
	for _, d := range [...]translate.Dialect{translate.OpenAIChat, translate.AnthropicMessages, translate.OpenAIResponses} {
		var up translate.Dialect
		mixed := false
		for _, p := range pools {
			for _, uk := range p.keys {
				if u, _ := uk.target(d); up == 0 {
					up = u
				} else if u != up {
					mixed = true
				}
			}
		}
		if !mixed {
			out[d] = up
		}
	}
	return out
}
