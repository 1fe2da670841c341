#!/usr/bin/env bash
# Build a Caddy binary (./caddy) with the llm_gateway module, and run it.
#
#   ./xcaddy.sh          build ./caddy (installs xcaddy v0.4.5 when missing)
#   ./xcaddy.sh run      build if needed, then: ./caddy run --config Caddyfile.example
#   ./xcaddy.sh run -c F build if needed, then run with another config file
#   ./xcaddy.sh gateway  build ./caddy-gateway: Caddy's standard modules and
#                        the gateway module only (no llm_mock_upstream)
#
# ./caddy holds the gateway (package caddymodule) and the demo's mock
# upstream (package mockupstream/caddymock), both imported by imports.go.
# Environment: CADDY_VERSION (default v2.11.9), and any XCADDY_* variable
# xcaddy understands (e.g. XCADDY_RACE_DETECTOR=1).
set -euo pipefail
cd "$(dirname "$0")"

MODULE=$(go list -m)
CADDY_VERSION=${CADDY_VERSION:-v2.11.9}
XCADDY_VERSION=v0.4.5

xcaddy_bin() {
	if command -v xcaddy >/dev/null 2>&1; then
		command -v xcaddy
		return
	fi
	local gobin
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
	if [ ! -x "$gobin/xcaddy" ]; then
		echo "installing xcaddy $XCADDY_VERSION" >&2
		go install "github.com/caddyserver/xcaddy/cmd/xcaddy@$XCADDY_VERSION"
	fi
	echo "$gobin/xcaddy"
}

# stale: true when ./caddy is missing or older than any source file
stale() {
	[ -x ./caddy ] || return 0
	[ -n "$(find . -path ./.git -prune -o \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer ./caddy -print -quit)" ]
}

build() {
	local xc
	xc=$(xcaddy_bin)
	echo "building ./caddy ($CADDY_VERSION) with $MODULE" >&2
	# the pseudo-version keeps `go get` from asking the module proxy for a module
	# that only exists here; the replacement (=.) supplies the code
	"$xc" build "$CADDY_VERSION" --output ./caddy --with "$MODULE@v0.0.0-00010101000000-000000000000=."
}

case "${1:-build}" in
build)
	build
	;;
gateway)
	# xcaddy builds from a module root, whose package (imports.go) also
	# registers the demo's mock; so the main is written here instead: a
	# throwaway module that replaces this one with this directory and imports
	# Caddy's standard modules and package caddymodule only
	echo "building ./caddy-gateway ($CADDY_VERSION, gateway module only)" >&2
	src=$(mktemp -d)
	trap 'rm -rf "$src"' EXIT
	cat >"$src/main.go" <<GO
// Command caddy-gateway is Caddy with its standard modules and the
// llm_gateway module (no mock upstream).
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "$MODULE/caddymodule"
)

func main() { caddycmd.Main() }
GO
	here=$(pwd)
	(
		cd "$src"
		go mod init caddy-gateway >/dev/null 2>&1
		go mod edit -require "$MODULE@v0.0.0-00010101000000-000000000000" -replace "$MODULE=$here" \
			-require "github.com/caddyserver/caddy/v2@$CADDY_VERSION"
		go mod tidy >/dev/null
		go build -o "$here/caddy-gateway" .
	)
	;;
run)
	shift
	stale && build
	if [ $# -eq 0 ]; then
		set -- --config Caddyfile.example
	fi
	exec ./caddy run "$@"
	;;
*)
	echo "usage: $0 [build|gateway|run [caddy run flags]]" >&2
	exit 2
	;;
esac
