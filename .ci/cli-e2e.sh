#!/usr/bin/env bash
# Real CLIs through the gateway, loopback only: Claude Code answered by an
# OpenAI-dialect upstream, Codex answered by an Anthropic-dialect one and by
# a Responses-dialect one (passthrough), each once with a plain prompt and once with a tool call that the CLI
# executes and whose result it sends back through the gateway; then Claude
# Code with a wrong gateway key, which must exit with the gateway's 401
# message within 5 s (no retry loop).
# Usage: .ci/cli-e2e.sh (after ./xcaddy.sh build)
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_CODE_VERSION=${CLAUDE_CODE_VERSION:-2.1.197}
CODEX_VERSION=${CODEX_VERSION:-0.171.0}

work=$(mktemp -d)
caddy_pid=""
cleanup() {
	[ -n "$caddy_pid" ] && kill "$caddy_pid" 2>/dev/null && wait "$caddy_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

echo "-- installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION and @openai/codex@$CODEX_VERSION"
npm install --prefix "$work/npm" --no-audit --no-fund --loglevel=error \
	"@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION" >/dev/null
bin="$work/npm/node_modules/.bin"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export GW_PORT=$(free_port) MOCK_PORT=$(free_port)
export XDG_CONFIG_HOME="$work/xdg-config" XDG_DATA_HOME="$work/xdg-data"
./caddy run --config .ci/cli-e2e.Caddyfile >"$work/caddy.log" 2>&1 &
caddy_pid=$!
for _ in $(seq 1 100); do
	curl -fsS "http://127.0.0.1:$GW_PORT/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done

export HOME="$work/home" CODEX_HOME="$work/codex"
mkdir -p "$HOME" "$CODEX_HOME" "$work/project"
cat >"$CODEX_HOME/config.toml" <<TOML
model = "gpt-5-codex"
model_provider = "gateway"

[model_providers.gateway]
name = "llm_gateway"
base_url = "http://127.0.0.1:$GW_PORT/v1"
env_key = "GATEWAY_API_KEY"
wire_api = "responses"
TOML

fail() {
	echo "FAIL: $1" >&2
	echo "--- output:" >&2
	cat "$work/out" >&2
	echo "--- gateway log (last 20 lines):" >&2
	tail -20 "$work/caddy.log" >&2
	exit 1
}
expect() { # expect <file> <text> <what>
	grep -qF -- "$2" "$1" || fail "$3: output lacks '$2'"
}

cd "$work/project"
claude() {
	ANTHROPIC_BASE_URL="http://127.0.0.1:$GW_PORT" ANTHROPIC_API_KEY=sk-e2e-gateway \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
		timeout 120 "$bin/claude" "$@" </dev/null >"$work/out" 2>&1 || fail "claude $* exited $?"
}
codex() {
	GATEWAY_API_KEY=sk-e2e-gateway timeout 120 "$bin/codex" exec --skip-git-repo-check "$@" </dev/null >"$work/out" 2>&1 ||
		fail "codex exec $* exited $?"
}

echo "-- Claude Code -> /v1/messages -> OpenAI-dialect upstream"
claude -p "say hello"
expect "$work/out" "Mock answer to:" "claude plain"
claude --allowedTools "Bash(echo:*)" -p "RUNTOOL please"
expect "$work/out" "Tool said: hello-from-tool" "claude tool call"

echo "-- Codex -> /v1/responses -> Anthropic-dialect upstream"
codex "say hello"
expect "$work/out" "Mock answer to:" "codex plain"
codex "RUNTOOL please"
expect "$work/out" "hello-from-tool" "codex tool execution"
expect "$work/out" "Tool said:" "codex tool result"

echo "-- Codex -> /v1/responses -> Responses-dialect upstream (passthrough)"
codex -m gpt-5.1-codex "say hello"
expect "$work/out" "Mock answer to:" "codex passthrough plain"
codex -m gpt-5.1-codex "RUNTOOL please"
expect "$work/out" "hello-from-tool" "codex passthrough tool execution"
expect "$work/out" "Tool said:" "codex passthrough tool result"

echo "-- Claude Code with a wrong gateway key exits with the gateway's 401 message within 5 s"
# the gateway's own errors carry x-should-retry: false where retrying
# cannot help, which the Anthropic SDK honours: no retries with backoff
start_ns=$(date +%s%N)
rc=0
ANTHROPIC_BASE_URL="http://127.0.0.1:$GW_PORT" ANTHROPIC_API_KEY=sk-e2e-wrong-key \
	CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
	timeout 60 "$bin/claude" -p "say hello" </dev/null >"$work/out" 2>&1 || rc=$?
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
[ "$rc" -ne 124 ] || fail "claude with a wrong gateway key still running after 60 s"
[ "$rc" -ne 0 ] || fail "claude with a wrong gateway key exited 0"
expect "$work/out" "invalid gateway API key" "claude wrong gateway key"
[ "$elapsed_ms" -lt 5000 ] || fail "claude with a wrong gateway key took $elapsed_ms ms to exit (want < 5000)"
n_401=$(grep '"llm request"' "$work/caddy.log" | grep -c '"status":401' || true)
echo "   exit $rc after $elapsed_ms ms, $n_401 request(s) answered 401"

cd - >/dev/null
n_claude=$(grep '"llm request"' "$work/caddy.log" | grep -c '"dialect":"anthropic_messages","upstream_dialect":"openai_chat"' || true)
n_codex=$(grep '"llm request"' "$work/caddy.log" | grep -c '"dialect":"openai_responses","upstream_dialect":"anthropic_messages"' || true)
[ "$n_claude" -ge 3 ] || fail "expected >= 3 Claude Code requests through the gateway, saw $n_claude"
n_codex_rs=$(grep '"llm request"' "$work/caddy.log" | grep -c '"dialect":"openai_responses","upstream_dialect":"openai_responses"' || true)
[ "$n_codex" -ge 3 ] || fail "expected >= 3 Codex requests through the gateway, saw $n_codex"
[ "$n_codex_rs" -ge 3 ] || fail "expected >= 3 Codex requests passed through to the Responses-dialect key, saw $n_codex_rs"
if grep -q '"status":5' "$work/caddy.log"; then fail "a request failed with 5xx"; fi
echo "-- CLI end-to-end ok (Claude Code: $n_claude requests, Codex: $n_codex translated + $n_codex_rs passed through)"
