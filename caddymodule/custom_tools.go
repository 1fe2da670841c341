package caddymodule

import "github.com/llmgateway/llm_gateway/translate"

// responseOptions is how this attempt's answer is rendered for the
// client: the pool's options (reasoning_content) and, for an OpenAI
// Responses or Chat client whose request declared custom (freeform) tools
// answered by an upstream of another dialect, those tools' names, so that
// their calls reach the client as custom_tool_call items or "custom"
// tool_calls entries (translate.ResponseOptions.CustomTools), and a
// Responses request's tools, tool_choice and settings (temperature,
// instructions, metadata…), which its response objects echo; and for any
// translated answer the request's stop strings (see
// translate.ResponseOptions.StopSequences and EmulateStops), and for an
// Anthropic client's stream the request's estimated input tokens, which
// message_start states until the upstream's usage ends the stream
// (translate.ResponseOptions.InputTokensEstimate).
func (x *exchange) responseOptions() translate.ResponseOptions {
	o := x.p.respOpts
	if c := x.c; c.req != nil && x.d != c.dialect {
		// each is nil for a request of a dialect without it (read once,
		// kept by the request)
		o.CustomTools = c.req.CustomTools()
		o.Tools, o.ToolChoice = c.req.ResponsesEcho()
		o.Echo = c.req.ResponsesEchoMembers()
		// the request's stop strings: which stop_reason a Chat upstream
		// may name, and those this upstream was not sent, which the
		// gateway applies itself (translate.ResponseOptions.EmulateStops)
		o.StopSequences = c.req.StopSequences()
		o.EmulateStops = c.req.UnsentStopSequences(x.d, c.upstreamModel)
		if c.dialect == translate.AnthropicMessages && c.stream {
			// message_start's input_tokens until the upstream's own
			// figures end the stream (count_tokens' local estimate)
			o.InputTokensEstimate = int64(estimateTokens(c.raw))
		}
	}
	return o
}
