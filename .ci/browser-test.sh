#!/usr/bin/env bash
# Browser test of the status page: runs ./caddy (built by ./xcaddy.sh) with
# a gateway, a mock upstream and the admin endpoint on free loopback ports,
# then drives GET /llm_gateway/ in headless Chromium (.ci/browser/): a key
# forced into a cooldown by the mock must show as cooling, and return to
# ready when its Clear button is clicked. Screenshots go to .ci/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== status page in headless Chromium (.ci/browser-test.sh)"

work=$(mktemp -d)
caddy_pid=""
cleanup() {
	if [ -n "$caddy_pid" ]; then
		kill "$caddy_pid" 2>/dev/null || true
		wait "$caddy_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
export XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data"

if ! command -v chromium >/dev/null; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
command -v node >/dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null; }
# ./caddy embeds the status page: rebuild it when it is missing or stale
if [ ! -x ./caddy ] || [ -n "$(find caddymodule keypool translate mockupstream go.mod go.sum -newer ./caddy -print -quit)" ]; then
	./xcaddy.sh build
fi
(cd .ci/browser && npm ci --no-audit --no-fund --silent)

free_port() {
	node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
admin_port=$(free_port)
gw_port=$(free_port)
mock_port=$(free_port)
gateway_key=sk-browser-test-0123456789

cat >"$work/Caddyfile" <<EOF
{
	admin 127.0.0.1:$admin_port {
		# let a browser open the status page by typing its address (a
		# navigation has no Origin header); see docs/operations.md
		origins "" 127.0.0.1:$admin_port localhost:$admin_port
	}
	persist_config off
}

http://127.0.0.1:$gw_port {
	bind 127.0.0.1
	llm_gateway {
		api_key $gateway_key
		pool browser {
			key healthy-key-0123456789 http://127.0.0.1:$mock_port/v1 {
				id healthy
			}
			key flaky-key-0123456789 http://127.0.0.1:$mock_port/v1 {
				id flaky
			}
		}
	}
}

http://127.0.0.1:$mock_port {
	bind 127.0.0.1
	llm_mock_upstream {
		key flaky-key-0123456789 {
			status 429
			retry_after 600
		}
	}
}
EOF

./caddy run --config "$work/Caddyfile" --adapter caddyfile >"$work/caddy.log" 2>&1 &
caddy_pid=$!
for _ in $(seq 1 100); do
	curl -fsS "http://127.0.0.1:$admin_port/llm_gateway/pools" >/dev/null 2>&1 && break
	sleep 0.1
done

mkdir -p .ci/artifacts
if ! (cd .ci/browser && ADMIN="http://127.0.0.1:$admin_port" GATEWAY="http://127.0.0.1:$gw_port" \
	GATEWAY_KEY="$gateway_key" POOL=browser COOLED_KEY=flaky HEALTHY_KEY=healthy \
	ARTIFACTS="$PWD/../artifacts" node status-page.mjs); then
	echo "browser test failed; caddy log:" >&2
	tail -n 50 "$work/caddy.log" >&2
	exit 1
fi
echo "browser test ok; screenshots in .ci/artifacts/"
