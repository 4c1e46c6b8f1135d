#!/usr/bin/env bash
# setup.sh installs what airlock's build, demo and tests need on a Debian or
# Ubuntu machine, as root, and builds bin/airlock. It is safe to run again:
# it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v ip >/dev/null || need+=(iproute2)
command -v curl >/dev/null || need+=(curl)
command -v python3 >/dev/null || need+=(python3)
command -v git >/dev/null || need+=(git)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
# The JDK: the sandbox test that compiles Java in a box (its /etc binds).
command -v javac >/dev/null || need+=(openjdk-17-jdk-headless)
[ -e /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
# socat and ripgrep: what Anthropic's sandbox-runtime needs, for the start
# benchmark that runs it beside airlock.
command -v socat >/dev/null || need+=(socat)
command -v rg >/dev/null || need+=(ripgrep)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "setup: missing ${need[*]}; run this script as root (sudo) so it can install them" >&2
		exit 1
	fi
	echo "setup: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# Go: the toolchain named by go.mod, from /usr/local/go or PATH.
export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null; then
	echo "setup: Go is not installed; install Go $(sed -n 's/^go //p' go.mod) or newer to /usr/local/go (https://go.dev/doc/install) and run this again" >&2
	exit 1
fi

# gVisor (tier 2): runsc from the Go module proxy, built static. Debian's
# runsc package is too old to run a box (statx with AT_NO_AUTOMOUNT fails),
# and a cgo build dies at start (its umounter re-executes /proc/self/exe).
# Installed into the project's tool directory; skipped when that version is
# already there. Put .airlock-ci/bin on PATH (scripts/test.sh does) or copy
# the binary to /usr/local/bin for airlock to find it.
RUNSC_VERSION=v0.0.0-20260701204157-69c2d17aea96
mkdir -p .airlock-ci/bin
if ! cmp -s <(echo "$RUNSC_VERSION") .airlock-ci/bin/.runsc-version 2>/dev/null || [ ! -x .airlock-ci/bin/runsc ]; then
	echo "setup: building runsc $RUNSC_VERSION (static, about a minute)"
	CGO_ENABLED=0 GOFLAGS=-mod=mod GOBIN="$PWD/.airlock-ci/bin" \
		go install -ldflags='-s -w' "gvisor.dev/gvisor/runsc@$RUNSC_VERSION"
	echo "$RUNSC_VERSION" > .airlock-ci/bin/.runsc-version
fi

mkdir -p bin
# Static (no cgo) as well: every `airlock run` and every box's guard start
# it, and a static binary starts without the dynamic loader and libc (about
# a millisecond and a hundred page faults here). Users and hosts are then
# read from /etc (passwd, group, hosts, resolv.conf) by Go itself, never
# through NSS modules.
CGO_ENABLED=0 go build -o bin/airlock ./cmd/airlock
# The code that runs inside every box (its init, exec step and proxy
# command), which airlock's boxes run in place of the whole airlock binary
# when it lies beside it; static (no cgo), as it starts in half the time.
CGO_ENABLED=0 go build -o bin/airlock-box ./cmd/airlock-box
# The node links the Temporal SDK, which the airlock binary leaves out;
# `airlock node` runs the airlock-node beside it.
go build -o bin/airlock-node ./cmd/airlock-node
# The MCP front ends link the MCP SDK, and the file store's commands its
# SQLite driver, which the airlock binary leaves out too: `airlock mcp
# serve|wrap`, `airlock files` and `airlock read-result` run the airlock-mcp
# beside it. Static, as airlock: it is the guard of every box it starts.
CGO_ENABLED=0 go build -o bin/airlock-mcp ./cmd/airlock-mcp
echo "setup: built bin/airlock, bin/airlock-box, bin/airlock-node and bin/airlock-mcp ($(go version | cut -d' ' -f3), $(bwrap --version 2>/dev/null || echo 'no bubblewrap'))"

# The MCP tests run real third-party servers and the conformance suite,
# installed from the npm registry into a folder of the project's own.
if [ -f scripts/npm-peers.txt ]; then
	mkdir -p .airlock-ci/npm
	if ! cmp -s scripts/npm-peers.txt .airlock-ci/npm/.installed 2>/dev/null; then
		echo "setup: installing MCP peers from npm"
		(cd .airlock-ci/npm && npm init -y >/dev/null 2>&1 && npm install --no-audit --no-fund --silent $(grep -v '^#' ../../scripts/npm-peers.txt)) \
			&& cp scripts/npm-peers.txt .airlock-ci/npm/.installed
	fi
fi
