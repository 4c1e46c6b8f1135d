package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenRefusesSteeredStoreDirectory: a store path that runs through a
// link someone else could have placed (in a directory anyone may write),
// or that lies in a directory the box may write, is refused and nothing is
// created where it points. ensureDir alone (the old way) is first seen to
// create the store's directories outside.
func TestOpenRefusesSteeredStoreDirectory(t *testing.T) {
	base, outside := t.TempDir(), t.TempDir()
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o777)
	if err := os.Symlink(outside, filepath.Join(shared, "store")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(shared, "store")
	if err := ensureDir(filepath.Join(dir, "blobs")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "blobs")); err != nil {
		t.Fatalf("the old way did not create the store outside: the test shows nothing (%v)", err)
	}
	os.Remove(filepath.Join(outside, "blobs"))

	tests := []struct {
		name string
		dir  string
		opt  Options
		want string
	}{
		{"through a planted link", dir, Options{}, "others"},
		{"in a box-writable directory", filepath.Join(outside, "store"), Options{BoxWritable: []string{outside}}, "writable by the box"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(tt.dir, tt.opt)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s): got no error", tt.dir)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want it to mention %q", err, tt.want)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("outside got %d entries; want none", len(ents))
			}
		})
	}
}
