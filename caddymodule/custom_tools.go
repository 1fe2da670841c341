package caddymodule

import "github.com/llmgateway/llm_gateway/translate"

// responseOptions is how this attempt's answer is rendered for the
// client: the pool's options (reasoning_content) and, for an OpenAI
// Responses client whose request declared custom (freeform) tools answered
// by an upstream of another dialect, those tools' names, so that their
// calls reach the client as custom_tool_call items
// (translate.ResponseOptions.CustomTools), and the request's tools and
// tool_choice, which its response objects echo.
func (x *exchange) responseOptions() translate.ResponseOptions {
	o := x.p.respOpts
	if c := x.c; c.req != nil && c.dialect == translate.OpenAIResponses && x.d != c.dialect {
		o.CustomTools = c.req.CustomTools()
		o.Tools, o.ToolChoice = c.req.ResponsesEcho()
	}
	return o
}
