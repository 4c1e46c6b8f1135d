package policy

import (
	"strings"
	"testing"
)

// TestGitConfigWrites: a git command that changes the repository's config
// (which git on the host trusts and the box holds read-only) is decided as
// a write of .git/config, so it is refused with a reason that names it —
// never left to fail in the box as "Device or resource busy"; reading the
// config stays allowed.
func TestGitConfigWrites(t *testing.T) {
	p, err := Parse("p.yaml", []byte("shell: {allow: [git]}\nfs: {write: [.]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Compile(World{Workdir: "/w", Mode: Fix})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		argv  []string
		write bool
	}{
		{[]string{"git", "config", "core.fsmonitor", "./evil"}, true},
		{[]string{"git", "config", "--add", "remote.origin.push", "+HEAD:main"}, true},
		{[]string{"git", "config", "set", "user.name", "x"}, true},
		{[]string{"git", "-C", ".", "config", "--unset", "user.name"}, true},
		{[]string{"git", "remote", "add", "evil", "https://example.com/x.git"}, true},
		{[]string{"git", "remote", "-v", "set-url", "origin", "x"}, true},
		{[]string{"git", "branch", "--set-upstream-to=origin/main"}, true},
		{[]string{"git", "config", "user.name"}, false},
		{[]string{"git", "config", "--get", "user.name"}, false},
		{[]string{"git", "config", "-l"}, false},
		{[]string{"git", "config", "--global", "user.name", "x"}, false},
		{[]string{"git", "remote", "-v"}, false},
		{[]string{"git", "status"}, false},
	} {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			d := c.Argv(tt.argv)
			refused := d.Verdict != Allow
			if refused != tt.write {
				t.Fatalf("got %v (%s: %s), want refused=%v", d.Verdict, d.Rule, d.Reason, tt.write)
			}
			if refused && !strings.Contains(d.Reason, ".git/config") && !strings.Contains(d.Reason, "git config stores") {
				t.Errorf("reason %q names neither .git/config nor what git config stores", d.Reason)
			}
		})
	}
}
