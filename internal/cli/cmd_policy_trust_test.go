package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyTrust: a policy inside its own writable grant that asks for
// more than the workspace profile is refused with the fix named; `airlock
// policy trust` puts it in force; a later change is refused again and
// trusting it shows the difference.
func TestPolicyTrust(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	file := filepath.Join(work, "policies", "agent.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("fs: {read: [.], write: [.]}\nnet: {allow: [\"example.com:443\"]}\n")
	show := func() (int, string) {
		code, _, stderr := runHome(t, work, home, "policy", "show", "--policy", "policies/agent.yaml")
		return code, stderr
	}
	if code, stderr := show(); code != 126 || !strings.Contains(stderr, "airlock policy trust "+file) {
		t.Fatalf("untrusted: exit %d, %q; want 126 naming airlock policy trust %s", code, stderr, file)
	}
	code, stdout, stderr := runHome(t, work, home, "policy", "trust", "policies/agent.yaml")
	if code != 0 || !strings.Contains(stdout, "trusted "+file) {
		t.Fatalf("trust: exit %d, %q %q", code, stdout, stderr)
	}
	if st, err := os.Stat(filepath.Join(home, "config", "airlock", "trusted.yaml")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("trusted list: %v, %v; want a 0600 file", st, err)
	}
	if code, stderr := show(); code != 0 {
		t.Fatalf("trusted: exit %d, %s", code, stderr)
	}

	write("isolation: none\nfs: {read: [.], write: [.]}\nnet: {allow: [\"example.com:443\"]}\n")
	if code, stderr := show(); code != 126 || !strings.Contains(stderr, "isolation: none") {
		t.Fatalf("changed: exit %d, %q; want 126 naming what it widens", code, stderr)
	}
	code, stdout, _ = runHome(t, work, home, "policy", "trust", "policies/agent.yaml")
	if code != 0 || !strings.Contains(stdout, "changed since it was trusted") || !strings.Contains(stdout, "\n+isolation: none\n") {
		t.Fatalf("trust again: exit %d, %q; want the difference", code, stdout)
	}
	if code, stderr := show(); code != 0 {
		t.Fatalf("trusted again: exit %d, %s", code, stderr)
	}
	code, stdout, _ = runHome(t, work, home, "policy", "trust", "policies/agent.yaml")
	if code != 0 || !strings.Contains(stdout, "already trusted") {
		t.Fatalf("trust unchanged: exit %d, %q", code, stdout)
	}
}

func TestWriteDiff(t *testing.T) {
	tests := []struct{ name, old, new, want string }{
		{"same", "a\nb\n", "a\nb\n", ""},
		{"added", "a\nb\n", "a\nx\nb\n", "+x\n"},
		{"removed", "a\nb\nc\n", "a\nc\n", "-b\n"},
		{"changed", "a\nb\nc\n", "a\nB\nc\n", "-b\n+B\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeDiff(&b, tt.old, tt.new)
			if b.String() != tt.want {
				t.Errorf("got %q, want %q", b.String(), tt.want)
			}
		})
	}
}
