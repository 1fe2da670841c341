// Package llmgateway plugs the llm_gateway modules into Caddy: importing it
// registers the HTTP handlers http.handlers.llm_gateway (package caddymodule)
// and http.handlers.llm_mock_upstream (package mockupstream/caddymock, the
// fake upstream of the demo) and their Caddyfile directives. Build a Caddy
// with both through xcaddy.sh (`xcaddy build --with <module path>=.`); for a
// Caddy with the gateway alone, name the package caddymodule instead (see
// the README's build section).
package llmgateway

import (
	// the Caddy glue registers every module in its init functions
	_ "github.com/llmgateway/llm_gateway/caddymodule"
	_ "github.com/llmgateway/llm_gateway/mockupstream/caddymock"
)
