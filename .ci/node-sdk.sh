#!/usr/bin/env bash
# The official Node SDKs (openai, @anthropic-ai/sdk) and Vercel's ai SDK
# (@ai-sdk/openai, @ai-sdk/anthropic) through the gateway, loopback only:
# TestNodeSDKs replays every healthy fixture (testdata/ and
# ../shared/fixtures), upstream errors and failing streams to each client,
# streamed and whole, and testdata/node-sdk/harness.cjs prints every value
# that differs from the fixture. Not part of .ci/run: the install alone
# takes about 40 s.
# Usage: .ci/node-sdk.sh
set -euo pipefail
cd "$(dirname "$0")/.."

OPENAI_VERSION=${OPENAI_VERSION:-6.49.0}
ANTHROPIC_VERSION=${ANTHROPIC_VERSION:-1.16.0}
AI_VERSION=${AI_VERSION:-6.0.326}
AI_OPENAI_VERSION=${AI_OPENAI_VERSION:-3.0.141}
AI_ANTHROPIC_VERSION=${AI_ANTHROPIC_VERSION:-3.0.140}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "-- installing openai@$OPENAI_VERSION @anthropic-ai/sdk@$ANTHROPIC_VERSION ai@$AI_VERSION @ai-sdk/openai@$AI_OPENAI_VERSION @ai-sdk/anthropic@$AI_ANTHROPIC_VERSION"
npm install --prefix "$work" --no-audit --no-fund --loglevel=error \
	"openai@$OPENAI_VERSION" "@anthropic-ai/sdk@$ANTHROPIC_VERSION" "ai@$AI_VERSION" \
	"@ai-sdk/openai@$AI_OPENAI_VERSION" "@ai-sdk/anthropic@$AI_ANTHROPIC_VERSION" >/dev/null

LLMGW_NODE_MODULES="$work" go test -count=1 -run '^TestNodeSDKs$' -v ./caddymodule/ | grep -E 'MISMATCH|cases \(|^(--- |ok|FAIL|PASS)'
