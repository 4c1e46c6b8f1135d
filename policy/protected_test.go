package policy

import (
	"strings"
	"testing"
)

// TestProtectedList checks the reader against the one protected list: a
// write to an entry asks a person, unless the policy takes it off; build
// files count only for unattended builds.
func TestProtectedList(t *testing.T) {
	base := "fs:\n  read: [.]\n  write: [.]\n"
	tests := []struct {
		name, extra, shell string
		want               Verdict
		rule               string
	}{
		{"an agent's MCP servers", "", "echo x > .cursor/mcp.json", Escalate, "builtin.protected"},
		{"nested", "", "echo x > pkg/.gemini/settings.json", Escalate, "builtin.protected"},
		{"pre-commit", "", "cp a .pre-commit-config.yaml", Escalate, "builtin.protected"},
		{"an ordinary file", "", "echo x > notes.txt", Allow, ""},
		{"taken off", "  unprotect: [.cursor/]\n", "echo x > .cursor/mcp.json", Allow, ""},
		{"taken off, another stays", "  unprotect: [.cursor]\n", "echo x > .zed/settings.json", Escalate, "builtin.protected"},
		{"Makefile normally", "", "echo x > Makefile", Allow, ""},
		{"Makefile built unattended", "  unattended_build: true\n", "echo x > Makefile", Escalate, "builtin.protected"},
		{"git's own rule first", "", "echo x > .git/hooks/pre-commit", Escalate, "builtin.git-hooks"},
		{"commondir", "", "echo ../evil > .git/commondir", Escalate, "builtin.git-hooks"},
		{"a worktree's commondir", "", "echo x > .git/worktrees/wt/commondir", Escalate, "builtin.git-hooks"},
		{"a worktree's gitdir", "", "echo x > .git/worktrees/wt/gitdir", Escalate, "builtin.git-hooks"},
		{"config.worktree", "", "echo x > .git/config.worktree", Escalate, "builtin.git-hooks"},
		{"info/exclude steers, runs nothing", "", "echo x >> .git/info/exclude", Allow, ""},
		{"objects stay writable", "", "echo x > .git/objects/ab/cd", Allow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(base+tt.extra+"shell:\n  allow: [echo, cp]\n"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := p.Compile(World{Workdir: "/w", Mode: Fix})
			if err != nil {
				t.Fatal(err)
			}
			d := c.Shell(tt.shell).Overall
			if d.Verdict != tt.want || tt.rule != "" && d.Rule != tt.rule {
				t.Errorf("%q: got %v %s (%s), want %v %s", tt.shell, d.Verdict, d.Rule, d.Reason, tt.want, tt.rule)
			}
		})
	}
}

func TestUnprotectValidated(t *testing.T) {
	for _, bad := range []string{"[.git/]", "[airlock.yaml]", "[.vscode/tasks.json]", "[nothing]"} {
		_, err := Parse("p.yaml", []byte("fs:\n  write: [.]\n  unprotect: "+bad+"\n"))
		if err == nil || !strings.Contains(err.Error(), "fs.unprotect") {
			t.Errorf("unprotect %s: error %v, want one naming fs.unprotect", bad, err)
		}
	}
}

func TestNarrowUnprotect(t *testing.T) {
	p, _ := Parse("p.yaml", []byte("fs:\n  write: [.]\n  unprotect: [.vscode, .idea]\n"))
	n, _ := ParseNarrowing("n.yaml", []byte("fs:\n  unprotect: [.idea, .zed]\n  unattended_build: true\n"))
	q := p.Narrow(n)
	if strings.Join(q.FS.Unprotect, ",") != ".idea" || !q.FS.UnattendedBuild {
		t.Errorf("narrowed: unprotect %q, unattended %v; want .idea, true", q.FS.Unprotect, q.FS.UnattendedBuild)
	}
}
