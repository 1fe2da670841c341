// Command caddy-gateway is Caddy with its standard modules and the
// llm_gateway module only (package caddymodule): no mock upstream. Build it
// with `go build -o caddy-gateway ./cmd/caddy-gateway` (the Caddy version is
// the one go.mod requires); run it as any Caddy, e.g.
// `./caddy-gateway run --config Caddyfile`.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	// Caddy's standard modules, as in the official build
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	// the gateway module and its Caddyfile directive
	_ "github.com/llmgateway/llm_gateway/caddymodule"
)

func main() {
	caddycmd.Main()
}
