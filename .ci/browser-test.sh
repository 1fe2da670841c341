#!/usr/bin/env bash
# Browser test of the operator console (the status page): runs ./caddy
# (built by ./xcaddy.sh when stale) with a gateway, a mock upstream and the
# admin endpoint on free loopback ports, plus a second gateway with 1,000
# keys, then drives every tab of GET /llm_gateway/ in headless Chromium
# (.ci/browser/console.mjs): pools (pacing vs trouble, 12 waiting, clear,
# disable, diagnose), requests (found by id, attempt log), usage (chart
# marks = the usage API), sessions (unpin), exits, playground (streamed in
# several paints), masking; no console error, no request off the admin
# endpoint. Prints the /llm_gateway/pools payload size and render time for
# 1,000 keys. Screenshots of every tab at 1280 and 420 px: .ci/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== status page in headless Chromium (.ci/browser-test.sh)"

work=$(mktemp -d)
caddy_pid=""
big_pid=""
cleanup() {
	for pid in $caddy_pid $big_pid; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
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
big_admin_port=$(free_port)
big_gw_port=$(free_port)
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
		# made-up prices, so that the console shows costs
		price mock-* input 3 output 15
		pool browser {
			models mock-gpt
			key healthy-key-0123456789 http://127.0.0.1:$mock_port/v1 {
				id healthy
			}
			key flaky-key-0123456789 http://127.0.0.1:$mock_port/v1 {
				id flaky
			}
		}
		# the demo's intended pacing: every key rests after a success
		pool demo {
			models mock-demo
			key demo-key-1-0123456789 http://127.0.0.1:$mock_port/v1 {
				id demo-1
			}
			key demo-key-2-0123456789 http://127.0.0.1:$mock_port/v1 {
				id demo-2
			}
			key demo-key-3-0123456789 http://127.0.0.1:$mock_port/v1 {
				id demo-3
			}
			key demo-key-4-0123456789 http://127.0.0.1:$mock_port/v1 {
				id demo-4
			}
			key demo-key-5-0123456789 http://127.0.0.1:$mock_port/v1 {
				id demo-5
			}
			max_concurrency_per_key 1
			cooldown_after_success 5s
		}
		# one slow key taking one request at a time: the rest wait
		pool queue {
			models mock-slow
			key slow-key-0123456789 http://127.0.0.1:$mock_port/v1 {
				id slow
			}
			max_concurrency_per_key 1
			acquire_timeout 60s
		}
		# the playground's model: an answer streamed word by word
		pool play {
			models mock-play
			key play-key-0123456789 http://127.0.0.1:$mock_port/v1 {
				id play
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
		key slow-key-0123456789 {
			latency 8s
		}
		key play-key-0123456789 {
			tokens_per_second 25
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

# a second gateway with 1,000 keys (never called): the pools payload and
# the page's render time at that size
{
	printf '{\n\tadmin 127.0.0.1:%s {\n\t\torigins "" 127.0.0.1:%s\n\t}\n\tpersist_config off\n}\n\n' "$big_admin_port" "$big_admin_port"
	printf 'http://127.0.0.1:%s {\n\tbind 127.0.0.1\n\tllm_gateway {\n\t\tapi_key %s\n\t\tusage_file off\n' "$big_gw_port" "$gateway_key"
	for p in 1 2 3 4; do
		printf '\t\tpool big%s {\n' "$p"
		for i in $(seq 1 250); do
			printf '\t\t\tkey big-key-%s-%04d-0123456789 http://127.0.0.1:%s/v1 {\n\t\t\t\tid big%s-%04d\n\t\t\t}\n' "$p" "$i" "$mock_port" "$p" "$i"
		done
		printf '\t\t\trefresh off\n\t\t}\n'
	done
	printf '\t}\n}\n'
} >"$work/Caddyfile.big"
XDG_DATA_HOME="$work/data-big" ./caddy run --config "$work/Caddyfile.big" --adapter caddyfile >"$work/caddy-big.log" 2>&1 &
big_pid=$!
for _ in $(seq 1 100); do
	curl -fsS "http://127.0.0.1:$big_admin_port/llm_gateway/pools" >/dev/null 2>&1 && break
	sleep 0.1
done

mkdir -p .ci/artifacts
if ! (cd .ci/browser && ADMIN="http://127.0.0.1:$admin_port" GATEWAY="http://127.0.0.1:$gw_port" \
	GATEWAY_KEY="$gateway_key" ADMIN_BIG="http://127.0.0.1:$big_admin_port" \
	ARTIFACTS="$PWD/../artifacts" node console.mjs); then
	echo "browser test failed; caddy log:" >&2
	tail -n 50 "$work/caddy.log" >&2
	tail -n 20 "$work/caddy-big.log" >&2
	exit 1
fi
echo "browser test ok; screenshots in .ci/artifacts/"
