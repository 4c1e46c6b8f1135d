#!/usr/bin/env bash
# bench.sh runs the benchmarks whose numbers define airlock's targets, each
# as a ratio against a baseline measured in the same run, and prints them.
# Run it on a quiet machine: these are shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
run() { echo "== $1"; shift; go test -run XXX -count=1 "$@" 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' || true; }  # a missed target is printed, and the rest still run
# start: the built binary's `airlock run -- /bin/true` against a bare
# bubblewrap and the peer sandboxes, alternating in one run, with the
# breakdown of airlock's start (AIRLOCK_TRACE_START) and the ratio lines.
start() {
	echo "== start: airlock run -- /bin/true against a bare bubblewrap (target <= 1.5x; with network <= 2x), the peers beside it"
	mkdir -p bin
	CGO_ENABLED=0 go build -o bin/airlock ./cmd/airlock                 # static, as scripts/setup.sh builds it
	CGO_ENABLED=0 go build -o bin/airlock-box ./cmd/airlock-box # what the boxes run inside (scripts/setup.sh)
	local out
	out=$(AIRLOCK_BIN="$PWD/bin/airlock" go test -run XXX -count=1 -bench 'Start$' -benchtime "${START_RUNS:-30}x" ./runner/ 2>&1) || { echo "$out"; return 1; }
	echo "$out" | grep -E '^(Benchmark|ok|FAIL|---|start trace:|    bench_start)|^ +[0-9]+'$'\t'
	echo "$out" | grep -E '^ +[0-9]+'$'\t' | tail -1 | awk '{
		for (i = 2; i < NF; i += 2) v[$(i+1)] = $i
		printf "ratio airlock/bwrap      %6.2f  (target <= 1.5; %s ms against %s ms)\n", v["airlock/bwrap"], v["airlock-ms"], v["bwrap-ms"]
		printf "ratio airlock-net/bwrap  %6.2f  (target <= 2)\n", v["airlock-net/bwrap"]
		if ("codex/bwrap" in v) printf "ratio codex/bwrap        %6.2f  (%s ms)\n", v["codex/bwrap"], v["codex-ms"]
		if ("srt/bwrap" in v) printf "ratio srt/bwrap          %6.2f  (%s ms)\n", v["srt/bwrap"], v["srt-ms"]
		printf "in-box init start        %6.2f ms (airlock-box beside bin/airlock, before it reads its configuration)\n", v["init-start-ms"]
	}'
}
uptime
run "policy decisions (200-rule policy; target >= 1M/s, 0 allocs on the argv allow path)" -bench . -benchmem ./policy/
run "command reader" -bench . -benchmem ./policy/shellread/
run "airlock run -- /bin/true against bubblewrap by hand with airlock's own plan" -bench True -benchtime 30x ./runner/
start || true
run "egress: 256 MiB through box, forwarder and proxy against direct (target ratio-median >= 0.8x; bare-relay-ratio-median is the one-hop ceiling on this host, proxied/bare-relay-median what the proxy adds to it); set-up added-µs (target <= 500)" -bench . -benchtime 3x ./egress/
run "fit: Count against the exact tokenizer in CPU time (CountVsExact, target x-faster >= 20); 31 MiB to an 8,000-token summary (target < 200 ms)" -bench . -benchtime 3x ./fit/
echo "== fit: Count against cl100k per kind; held-out kinds (target <= 3% mean, <= 8% worst)"
go test -count=1 -run TestAccuracyKinds -v ./fit/ 2>&1 | grep -E '^ +(kind|[a-z0-9-]+ +[0-9]+ )|kinds:|^(ok|FAIL|---)' || true
run "files: 32 MiB put and get against a plain durable copy (target get/copy-median and put/copy-median >= 0.5)" -bench . -benchtime 5x ./files/
run "offload: a 5 MiB result end to end" -bench . -benchtime 5x ./offload/
run "audit append and verify" -bench . ./audit/
run "seccomp: a system call filtered against unfiltered" -bench . ./sandbox/seccomp/
run "MCP: a call through the gateway against direct; through airlock mcp serve" -bench . -benchtime 10x ./mcp/gateway/ ./mcp/serve/
