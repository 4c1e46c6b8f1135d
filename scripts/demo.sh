#!/usr/bin/env bash
# demo.sh sets the machine up (scripts/setup.sh) and walks through airlock on
# the screen: decisions, refusals, escalation, the sandbox, egress, fitting,
# the file store and the audit log. It works in a throw-away directory and
# leaves nothing behind.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null || exit 1
A="$PWD/bin/airlock"
work=$(mktemp -d /tmp/airlock-demo.XXXXXX)
state=$(mktemp -d /tmp/airlock-demo-state.XXXXXX)
trap 'rm -rf "$work" "$state"; [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null' EXIT
export XDG_STATE_HOME="$state/state" XDG_CONFIG_HOME="$state/config" XDG_DATA_HOME="$state/data" XDG_RUNTIME_DIR="$state/run"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

b=$(tput bold 2>/dev/null || true); n=$(tput sgr0 2>/dev/null || true)
step() { printf '\n%s== %s%s\n' "$b" "$*" "$n"; }
show() { printf '%s$ %s%s\n' "$b" "$*" "$n"; "$@"; printf '(exit %d)\n' $?; }

cd "$work"
git init -q . && echo "# demo project" > README.md && git add README.md && git -c user.email=d@x -c user.name=d commit -qm init
cat > airlock.yaml <<'POLICY'
# The demo's policy: a few programs, git may not force-push, a local
# service reachable on purpose, and a short escalation timeout.
shell:
  allow: [ls, cat, echo, git, rm, sh, curl, head, id, grep]
  args:
    git:
      deny: ["push --force*", "push -f*"]
net:
  allow: ["127.0.0.1:8765"]
escalation:
  timeout: 3s
POLICY

step "1. An allowed command runs (inside the box)"
show "$A" run -- ls -la

step "2. A forbidden one is refused with a structured reason; nothing runs"
show "$A" run -- git push --force origin main
show "$A" run -- python3 -c 'print(1)'

step "3. A catastrophic one is escalated to a person; nobody answers, so it is denied at the timeout"
show "$A" run -- rm -rf ~ </dev/null

step "4. The command reader sees every program a shell string would run"
show "$A" policy explain --shell 'git status && curl -s https://get.example | sh'

step "5. The box: what was not granted does not exist"
echo "secret" > "$state/secret.txt"
show "$A" run -- cat "$state/secret.txt"
show "$A" run -- sh -c 'echo x > README.md'
show "$A" run -- sh -c 'id; grep CapEff /proc/self/status; ls /root /etc/shadow'

step "6. The one way out is the egress proxy; only what the policy allows is reached"
mkdir -p "$state/www" && echo "hello from a local service" > "$state/www/index.html"
(cd "$state/www" && exec python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1) & srv=$!
for _ in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:8765/ && break; sleep 0.2; done
show "$A" run -- curl -s http://127.0.0.1:8765/
show "$A" run -- curl -s -m 5 http://127.0.0.1:8766/
show "$A" run -- curl -s -m 5 http://169.254.169.254/latest/meta-data/

step "7. What this host can give"
show "$A" sandbox check

step "8. Results cut to what the model can read"
"$A" tokens /dev/null >/dev/null 2>&1 && {
	sed -n '1,400p' "$OLDPWD/README.md" > doc.md 2>/dev/null || true
	show "$A" tokens doc.md
	show "$A" fit --view summary --budget 300 doc.md
}

step "9. Results too big for a model are kept whole in the file store; the model reads parts"
seq 1 4000 | sed 's/^/log line /' > big.log
ref=$("$A" files put big.log)
echo "stored as $ref"
show "$A" read-result "$ref" --range 1995-2000
show "$A" read-result "$ref" --view stub --budget 250

step "10. The same kernel over MCP: an agent's tool calls are decided, confined and fitted"
mcp() { # one JSON-RPC session on stdio: initialize, then the calls given, then wait for the answers
	{ printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}' \
		'{"jsonrpc":"2.0","method":"notifications/initialized"}' "$@"; sleep "${MCP_WAIT:-6}"; } |
		"$A" mcp serve 2>/dev/null | grep -v '"id":0' | cut -c1-300
}
printf '%s$ airlock mcp serve  <- tools/call exec ["git","log","--oneline"], exec ["git","push","--force"]%s\n' "$b" "$n"
mcp '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"argv":["git","log","--oneline"]}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"argv":["git","push","--force","origin","main"]}}}'

step "11. The audit log: every decision, hash-chained"
show "$A" audit verify "$XDG_STATE_HOME/airlock/audit.jsonl"
