#!/usr/bin/env bash
# bench.sh runs the benchmarks whose numbers define airlock's targets, each
# as a ratio against a baseline measured in the same run, and prints them.
# Run it on a quiet machine: these are shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
run() { echo "== $1"; shift; go test -run XXX -count=1 "$@" 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' ; }
uptime
run "policy decisions (200-rule policy; target >= 1M/s, 0 allocs on the argv allow path)" -bench . -benchmem ./policy/
run "command reader" -bench . -benchmem ./policy/shellread/
run "airlock run -- /bin/true against bubblewrap by hand (target <= 1.3x)" -bench True -benchtime 30x ./runner/
run "egress: 256 MiB through box, forwarder and proxy against direct (target >= 0.8x); set-up overhead (target <= 1 ms)" -bench . -benchtime 3x ./egress/
run "fit: estimate against the exact tokenizer (target >= 10x); 31 MiB to an 8,000-token summary (target < 200 ms)" -bench . -benchtime 3x ./fit/
run "files: 32 MiB put and get against a plain copy (target >= 0.5x)" -bench . -benchtime 5x ./files/
run "offload: a 5 MiB result end to end" -bench . -benchtime 5x ./offload/
run "audit append and verify" -bench . ./audit/
run "seccomp: a system call filtered against unfiltered" -bench . ./sandbox/seccomp/
run "MCP: a call through the gateway against direct; through airlock mcp serve" -bench . -benchtime 10x ./mcp/gateway/ ./mcp/serve/
