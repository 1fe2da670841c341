// Package llmgateway plugs the llm_gateway modules into Caddy: importing it
// registers the HTTP handlers http.handlers.llm_gateway and
// http.handlers.llm_mock_upstream and their Caddyfile directives. Build a
// Caddy with it through xcaddy.sh (`xcaddy build --with <module path>=.`).
package llmgateway

import (
	// the Caddy glue registers every module in its init functions
	_ "github.com/llmgateway/llm_gateway/caddymodule"
)
