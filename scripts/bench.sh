#!/usr/bin/env bash
# bench.sh runs the benchmarks whose numbers define airlock's targets, each
# as a ratio against a baseline measured in the same run, and prints them.
# Run it on a quiet machine: these are shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
run() { echo "== $1"; shift; go test -run XXX -count=1 "$@" 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' || true; }  # a missed target is printed, and the rest still run
uptime
run "policy decisions (200-rule policy; target >= 1M/s, 0 allocs on the argv allow path)" -bench . -benchmem ./policy/
run "command reader" -bench . -benchmem ./policy/shellread/
run "airlock run -- /bin/true against bubblewrap by hand (target <= 1.3x)" -bench True -benchtime 30x ./runner/
run "egress: 256 MiB through box, forwarder and proxy against direct (target ratio-median >= 0.8x; bare-relay-ratio-median is the one-hop ceiling on this host, proxied/bare-relay-median what the proxy adds to it); set-up added-µs (target <= 500)" -bench . -benchtime 3x ./egress/
run "fit: Count against the exact tokenizer in CPU time (CountVsExact, target x-faster >= 20); 31 MiB to an 8,000-token summary (target < 200 ms)" -bench . -benchtime 3x ./fit/
echo "== fit: Count against cl100k per kind; held-out kinds (target <= 3% mean, <= 8% worst)"
go test -count=1 -run TestAccuracyKinds -v ./fit/ 2>&1 | grep -E '^ +(kind|[a-z0-9-]+ +[0-9]+ )|kinds:|^(ok|FAIL|---)' || true
run "files: 32 MiB put and get against a plain durable copy (target get/copy-median and put/copy-median >= 0.5)" -bench . -benchtime 5x ./files/
run "offload: a 5 MiB result end to end" -bench . -benchtime 5x ./offload/
run "audit append and verify" -bench . ./audit/
run "seccomp: a system call filtered against unfiltered" -bench . ./sandbox/seccomp/
run "MCP: a call through the gateway against direct; through airlock mcp serve" -bench . -benchtime 10x ./mcp/gateway/ ./mcp/serve/
