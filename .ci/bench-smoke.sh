#!/usr/bin/env bash
# Benchmark harness smoke check (10-20 s, loopback only): vet the harness,
# then run every target once with short durations against ./caddy (build it
# first with ./xcaddy.sh build). Results go to a temp file, not BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
go vet ./bench/...
go run ./bench -smoke
