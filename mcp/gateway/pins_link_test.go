package gateway

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPinsNeverFollowALink: whoever can write beside the pins file (a
// box given the directory, a second user) may plant a symbolic link where
// the pins are written, at the temporary file or the file itself; the
// pins' writer (the node, root) must replace what is there, never write
// through it into the file it names. Before, os.WriteFile of FILE.tmp
// followed a planted link and overwrote its target.
func TestPinsNeverFollowALink(t *testing.T) {
	for _, at := range []string{".tmp", ""} {
		t.Run("a link at pins"+at, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "pins.json")
			p, err := OpenPins(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, file+at); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Check(mustDef(t, `{"name":"echo","inputSchema":{"type":"object"}}`)); err != nil {
				t.Logf("Check: %v", err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
				t.Fatalf("the pins were written through the link into %s:\n%s", victim, b)
			}
			if fi, err := os.Lstat(file); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("pins file: %v %v, want a regular file", fi, err)
			}
			q, err := OpenPins(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := q.Pinned("echo"); !ok {
				t.Errorf("the pin was not saved")
			}
		})
	}
	t.Run("a link where the pins are read", func(t *testing.T) {
		dir := t.TempDir()
		other := filepath.Join(t.TempDir(), "other.json")
		os.WriteFile(other, []byte(`{"tools":{}}`), 0o600)
		file := filepath.Join(dir, "pins.json")
		os.Symlink(other, file)
		if _, err := OpenPins(file); err == nil {
			t.Fatal("OpenPins read the pins through a link")
		}
	})
}
