package policy

import (
	"strings"
	"testing"
)

// Positive controls for the attack table: everyday strings a reader that
// refuses too much would break. Shell builtins are not programs: with a
// shell.allow list they are decided as builtins, never refused as "the
// program … is not allowed".
func TestShellControlsAllowed(t *testing.T) {
	cases := []struct{ name, src string }{
		{"while read", "while read -r l; do echo \"$l\"; done < f"},
		{"read", "read -r x < f; echo \"$x\""},
		{"printf", "printf '%s\\n' a b"},
		{"unset", "x=1; unset x"},
		{"trap", "trap 'echo bye' EXIT; echo hi"},
		{"command -v", "command -v git"},
		{"command -V", "command -V ls >/dev/null"},
		{"kill own shell", "kill -0 $$"},
		{"kill last job", "true & kill $! 2>/dev/null; wait"},
		{"hash", "hash -r"},
		{"ulimit", "ulimit -n 256; ls"},
		{"exec fd", "exec 3>&1; echo hi >&3"},
		{"exec close", "exec 3>&-"},
		{"umask", "umask 022"},
		{"set", "set -eu; ls"},
		{"function call", "f() { echo hi; }; f; f"},
		{"getopts", "while getopts ab o; do echo $o; done"},
		{"wait", "wait"},
		{"git push", "git push origin HEAD:dev"},
		{"cat heredoc", "cat <<EOF\nhello\nEOF"},
		{"sh -c", "sh -c 'echo hi'"},
		{"bash -c", "bash -c 'echo hi'"},
		{"bash counter", `bash -c 'i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i'`},
		{"bash c loop", `bash -c 'for ((i=0; i<3; i++)); do echo $((i*2)); done'`},
		{"bash literal loop", `bash -c 'for n in 1 2 3; do echo $((n+1)); done'`},
		{"bash array", `bash -c 'a=(x y z); n=1; echo "${a[n]}" "${a[@]}" $((RANDOM % 6))'`},
		{"sh arithmetic on read", "read n < f; echo $((n+1))"},
	}
	c := attackChecker(t, "allow")
	box := boxChecker(t)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if d := c.Shell(tt.src).Overall; d.Verdict != Allow && !strings.Contains(tt.src, "&") {
				t.Errorf("%q: got %s %s (%s), want allow", tt.src, d.Verdict, d.Rule, d.Reason)
			}
			if d := box.Shell(tt.src).Overall; d.Verdict != Allow {
				t.Errorf("in a box: %q: got %s %s (%s), want allow", tt.src, d.Verdict, d.Rule, d.Reason)
			}
		})
	}
}

// In a box (tier 1) background jobs end with the box and every process
// is the box's own: no shell.spawn is needed, and kill is a builtin.
func TestShellControlsInBox(t *testing.T) {
	box := boxChecker(t)
	host := attackChecker(t, "allow")
	cases := []struct {
		name, src string
		host      Verdict // the verdict outside a box
	}{
		{"server and client", "git daemon --base-path=. & sleep_done=1; git ls-remote git://127.0.0.1/x", Deny},
		{"kill a pid", "kill -TERM 1234", Deny},
		{"kill a variable", "pid=$(cat pidfile); kill \"$pid\"", Deny},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if d := box.Shell(tt.src).Overall; d.Verdict != Allow {
				t.Errorf("in a box: %q: got %s %s (%s), want allow", tt.src, d.Verdict, d.Rule, d.Reason)
			}
			if d := host.Shell(tt.src).Overall; d.Verdict != tt.host {
				t.Errorf("on the host: %q: got %s %s, want %s", tt.src, d.Verdict, d.Rule, tt.host)
			}
		})
	}
}

// Positive controls for the built-in rules: a box's own /tmp is scratch,
// and a function calling the program it shadows is no fork bomb.
func TestShellControlsBuiltinRules(t *testing.T) {
	host := attackChecker(t, "workspace")
	w := testWorld(Fix)
	w.Box = true
	box, err := Workspace().Compile(w)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, src string
		host      string // the rule on the host ("" = allow)
		box       string // the rule in a box
	}{
		{"tmp build dir", "rm -rf /tmp/build", "builtin.rm-outside", ""},
		{"TMPDIR in a trap", `trap 'rm -rf "$TMPDIR/work"' EXIT; echo hi`, "builtin.rm-outside", ""},
		{"TMPDIR climbing out", `rm -rf "$TMPDIR/../etc"`, "builtin.rm-outside", "builtin.rm-outside"},
		{"TMPDIR itself", `rm -rf "$TMPDIR"`, "builtin.rm-outside", "builtin.rm-outside"},
		{"TMPDIR reassigned", `trap 'rm -rf "$TMPDIR/x"' EXIT; TMPDIR=/`, "builtin.rm-outside", "builtin.env-assign"},
		{"TMPDIR read", `trap 'rm -rf "$TMPDIR/x"' EXIT; read TMPDIR < f`, "builtin.rm-outside", "builtin.env-assign"},
		{"tmp itself glob", "rm -rf /tmp/../*", "builtin.rm-root", "builtin.rm-root"},
		{"wrapper function", "ls() { command ls -l | head; }; ls", "", ""},
		{"plain calls", "f() { echo hi; }; f; f | cat", "", ""},
		{"real bomb", "b() { b | b & }; b", "shell.spawn", "builtin.fork-bomb"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []struct {
				where string
				c     *Checker
				want  string
			}{{"host", host, tt.host}, {"box", box, tt.box}} {
				d := k.c.Shell(tt.src).Overall
				got := ""
				if d.Verdict != Allow {
					got = d.Rule
				}
				if got != k.want {
					t.Errorf("%s: %q: got %s %s, want %q", k.where, tt.src, d.Verdict, d.Rule, k.want)
				}
			}
		})
	}
}

func boxChecker(t *testing.T) *Checker {
	t.Helper()
	p, err := Parse("allow.yaml", []byte(attackAllowList))
	if err != nil {
		t.Fatal(err)
	}
	w := testWorld(Fix)
	w.Box = true
	c, err := p.Compile(w)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A YAML boolean where a program name is expected is an error that says
// to quote it; quoted, it is the program.
func TestShellAllowBoolean(t *testing.T) {
	_, err := Parse("a.yaml", []byte("shell:\n  allow: [true, ls]\n"))
	if err == nil || !strings.Contains(err.Error(), `quote it: "true"`) {
		t.Fatalf("allow: [true]: got %v, want an error that says to quote it", err)
	}
	p, err := Parse("a.yaml", []byte("shell:\n  allow: [\"true\", ls]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Compile(testWorld(Fix))
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Argv([]string{"true"}); d.Verdict != Allow {
		t.Errorf(`allow: ["true"]: true got %s %s, want allow`, d.Verdict, d.Rule)
	}
}
