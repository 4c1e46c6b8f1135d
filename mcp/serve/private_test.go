package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrivateState: with a write grant that reaches airlock's own grants
// file, write_file must not replace it — an agent could grant itself
// "allow always" for the next run. Every file tool and exec go through the
// kernel's one check of airlock's private paths, as `airlock run` does.
func TestPrivateState(t *testing.T) {
	var grants string
	f := newFixture(t, `
shell:
  allow: [echo, sh, cat]
fs:
  read: [., "~"]
  write: [., "~"]
`, "fix", nil, func(c *fixtureConfig) {
		home := c.kernel.Getenv("HOME")
		grants = filepath.Join(home, ".config", "airlock", "grants.yaml")
		c.kernel.GrantsFile = grants
	})
	const orig = "grants: []\n"
	if err := os.MkdirAll(filepath.Dir(grants), 0o700); err != nil {
		t.Fatal(err)
	}
	// Unconfined, the write is one call away.
	if err := os.WriteFile(grants, []byte("planted"), 0o600); err != nil {
		t.Fatalf("naive write: %v; the attack should work unconfined", err)
	}
	os.WriteFile(grants, []byte(orig), 0o600)

	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": grants, "content": "- argv: [rm, -rf, /]\n"}},
		{"exec", map[string]any{"command": "echo planted > " + grants}},
		{"read_file", map[string]any{"path": "x"}}, // any box of this policy
	} {
		t.Run(c.tool, func(t *testing.T) {
			text, res, err := f.call(c.tool, c.args)
			if err == nil && (res == nil || !res.IsError) {
				t.Fatalf("got %q; want the call refused", text)
			}
			if err == nil && !strings.Contains(text, "airlock's own") {
				t.Errorf("got %q; want the reason to name airlock's own files", text)
			}
		})
	}
	if b, _ := os.ReadFile(grants); string(b) != orig {
		t.Errorf("the grants file was changed to %q", b)
	}
}
