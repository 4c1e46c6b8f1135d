#!/usr/bin/env bash
# test.sh sets the machine up (scripts/setup.sh) and runs airlock's whole test
# suite: every package, including the sandbox, egress, escape-matrix and MCP
# tests, which need root and run as root here and in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PATH:/usr/local/go/bin:$PWD/.airlock-ci/bin"
export AIRLOCK_BIN="$PWD/bin/airlock" AIRLOCK_NODE_BIN="$PWD/bin/airlock-node"
go vet ./...
# airlock ships for linux/amd64 and linux/arm64, and the mediator alone
# (tier 0) elsewhere: every platform must at least build, the node and the
# MCP front ends too.
for target in linux/arm64 darwin/arm64; do
	for cmd in airlock airlock-box airlock-node airlock-mcp; do
		GOOS=${target%/*} GOARCH=${target#*/} go build -o /dev/null ./cmd/$cmd || { echo "build of $cmd for $target failed" >&2; exit 1; }
	done
done
go test -count=1 -timeout 60m ./... "$@"
