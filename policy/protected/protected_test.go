package protected

import (
	"os"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		path string
		want string // "" when nothing matches
	}{
		{".bashrc", ".bashrc"},
		{"/home/u/work/.bashrc", ".bashrc"},
		{"src/.bashrc.bak", ""},
		{".cursor/mcp.json", ".cursor/"},
		{"a/b/.vscode", ".vscode/"},
		{".config/fish/config.fish", ".config/fish/"},
		{".config/x", ""},
		{"fish/.config", ""},
		{".git/hooks/pre-commit", ""}, // git's own rule
		{"airlock.yaml", ""},          // the policy-file rule
		{"Makefile", ""},              // only with unattended builds
		{".pre-commit-config.yaml", ".pre-commit-config.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			e, ok := Match(tt.path, false)
			if got := map[bool]string{true: e.Path}[ok]; got != tt.want {
				t.Errorf("Match(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
	if _, ok := Match("sub/Makefile", true); !ok {
		t.Errorf("Makefile is not matched with unattended builds")
	}
}

func TestCheckUnprotect(t *testing.T) {
	tests := []struct {
		list []string
		bad  bool
	}{
		{[]string{".vscode/"}, false},
		{[]string{".vscode", ".envrc"}, false},
		{[]string{".vscode/tasks.json"}, true},
		{[]string{".git/"}, true},
		{[]string{"airlock.yaml"}, true},
		{[]string{"nothing"}, true},
	}
	for _, tt := range tests {
		if err := CheckUnprotect(tt.list); (err != nil) != tt.bad {
			t.Errorf("CheckUnprotect(%q) = %v, want error %v", tt.list, err, tt.bad)
		}
	}
}

func TestNames(t *testing.T) {
	nested := " " + strings.Join(Names(false, nil, true), " ") + " "
	if strings.Contains(nested, " .bashrc ") || strings.Contains(nested, " airlock.yaml ") || !strings.Contains(nested, " .vscode ") {
		t.Errorf("at a nested repository's top: %s", nested)
	}
	names := strings.Join(Names(false, []string{".vscode/"}, false), " ")
	for _, want := range []string{".bashrc", ".config/fish", "airlock.yaml", ".cursor"} {
		if !strings.Contains(" "+names+" ", " "+want+" ") {
			t.Errorf("Names lacks %s", want)
		}
	}
	for _, not := range []string{".vscode", "Makefile", ".git"} {
		if strings.Contains(" "+names+" ", " "+not+" ") {
			t.Errorf("Names holds %s", not)
		}
	}
}

// TestDocumented keeps docs/policy.md's table in step with the list.
func TestDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	_, table, ok := strings.Cut(doc, "<!-- protected-list")
	table, _, ok2 := strings.Cut(table, "<!-- end protected-list -->")
	if !ok || !ok2 {
		t.Fatal("docs/policy.md has no protected-list table")
	}
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "| `") {
			rows++
		}
	}
	if rows != len(entries) {
		t.Errorf("docs/policy.md lists %d protected paths, the list has %d", rows, len(entries))
	}
	for _, e := range entries {
		if !strings.Contains(table, "| `"+e.Path+"` | "+e.Tool+" |") {
			t.Errorf("docs/policy.md does not list %s (%s)", e.Path, e.Tool)
		}
	}
}
