#!/usr/bin/env bash
# fleet.sh starts a fleet on this machine — airlock-server and two nodes
# (airlock-node, which scripts/setup.sh builds beside airlock with the
# airlock-box their boxes run inside), one at sandbox
# tier 1 and one without a sandbox — runs jobs through it, shows
# where each ran, and stops everything. State lives in a directory of its own
# (FLEET_DIR, default a new temporary one), so it never touches a real fleet.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PATH:/usr/local/go/bin:$PWD/.airlock-ci/bin"
echo "fleet: building bin/airlock-server (the Temporal server is linked only into it; a first build takes minutes)"
go build -o bin/airlock-server ./cmd/airlock-server

dir=${FLEET_DIR:-$(mktemp -d /tmp/airlock-fleet.XXXXXX)}
server=$dir/server
pids=()
stop() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop EXIT

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say "airlock-server --state $server --listen 127.0.0.1:8420 --claim-timeout 20s &"
bin/airlock-server --state "$server" --listen 127.0.0.1:8420 --claim-timeout 20s 2>"$dir/server.log" &
pids+=($!)
for _ in $(seq 600); do grep -q "listening on" "$dir/server.log" 2>/dev/null && break; sleep 0.1; done
grep "listening on" "$dir/server.log" || { cat "$dir/server.log"; exit 1; }

client=(--server http://127.0.0.1:8420 --token-file "$server/token")
node() {
	local id=$1; shift
	say "airlock-node --server http://127.0.0.1:8420 --enroll-token-file $server/enroll-token --pool demo --id $id $* &"
	bin/airlock-node --server http://127.0.0.1:8420 --enroll-token-file "$server/enroll-token" --pool demo --id "$id" \
		--state "$dir/nodes/$id" "$@" 2>"$dir/$id.log" &
	pids+=($!)
}
node boxed --sandbox auto
node bare --sandbox off
for _ in $(seq 300); do
	[ "$(bin/airlock node list "${client[@]}" --json 2>/dev/null | grep -o '"live": *true' | wc -l)" -ge 2 ] && break
	sleep 0.2
done

say "airlock node list"
bin/airlock node list "${client[@]}"

say "airlock job start --pool demo --wait -- sh -c 'echo hello from the box; id -u'"
bin/airlock job start "${client[@]}" --pool demo --wait -- sh -c 'echo hello from the box; id -u'

say "airlock job start --pool demo --tier0 --wait -- uname -s   (consented to tier 0: either node may take it)"
bin/airlock job start "${client[@]}" --pool demo --tier0 --wait -- uname -s

say "airlock job list"
bin/airlock job list "${client[@]}"
echo
echo "fleet: the server's log is $dir/server.log; the nodes' are $dir/boxed.log and $dir/bare.log"
