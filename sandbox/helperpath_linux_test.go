package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestHelpersNotFromDirsOthersMayWrite: bubblewrap and runsc, which the
// host runs itself (bubblewrap as the box's start, often with more rights
// than the box), are taken from a PATH directory only when no one but root
// could have put a program there: a directory of a user's (where any box
// of that user may write, e.g. a workspace's bin on PATH) or one others may
// write is passed over, and the system's copy is taken.
func TestHelpersNotFromDirsOthersMayWrite(t *testing.T) {
	testsupport.Require(t, testsupport.Root)
	root := t.TempDir()
	planted := func(name string, uid int, mode os.FileMode) string {
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, b := range []string{"bwrap", "runsc"} {
			if err := os.WriteFile(filepath.Join(d, b), []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		name string
		dir  string
	}{
		{"a user's directory", planted("user", 1234, 0o755)},
		{"group-writable", planted("group", 0, 0o775)},
		{"world-writable, sticky", planted("sticky", 0, 0o1777)},
		{"beneath a user's directory", func() string {
			d := planted("parent", 1234, 0o755)
			sub := filepath.Join(d, "bin")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "bwrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "runsc"), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			return sub
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.dir + ":/usr/bin:/bin"
			if bw := findBwrap(path, nil); bw.Path == filepath.Join(tc.dir, "bwrap") {
				t.Errorf("bubblewrap taken from %s", bw.Path)
			}
			if p := probeGVisor(path, nil); p == filepath.Join(tc.dir, "runsc") {
				t.Errorf("runsc taken from %s", p)
			}
		})
	}
	// A root-owned directory no one else may write is still searched.
	ok := planted("system", 0, 0o755)
	if bw := findBwrap(ok+":/usr/bin", nil); bw.Path != filepath.Join(ok, "bwrap") {
		t.Errorf("bubblewrap from a root-owned directory: got %q", bw.Path)
	}
}

// TestHelpersNotFromTheWorkingDirectory: under root a box writes root's
// files, so a root-owned directory beneath the working directory (a
// workspace's bin) is passed over too.
func TestHelpersNotFromTheWorkingDirectory(t *testing.T) {
	testsupport.Require(t, testsupport.Root)
	ws := t.TempDir()
	bin := filepath.Join(ws, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "bwrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(ws)
	if bw := findBwrap(bin+":/usr/bin:/bin", nil); bw.Path == filepath.Join(bin, "bwrap") {
		t.Errorf("bubblewrap taken from the working directory: %s", bw.Path)
	}
}
