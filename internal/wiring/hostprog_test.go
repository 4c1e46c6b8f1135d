package wiring

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-run/airlock/audit"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestNoHostProgramFromAPathABoxWrote: a directory an earlier run let a
// box write (the record of box-writable paths) is never where the host
// takes bubblewrap from, even when it is on PATH and root's: under root a
// box writes root's files.
func TestNoHostProgramFromAPathABoxWrote(t *testing.T) {
	testsupport.Require(t, testsupport.Root)
	root, work, getenv := privateWorld(t)
	_, planted := plantBwrapWhereABoxWrote(t, root, getenv)
	k, err := Build(Config{Dir: work, Getenv: getenv, Mode: "observe"})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if got := k.Caches.Probe().Bubblewrap.Path; got == planted {
		t.Errorf("bubblewrap taken from %s, which an earlier box could write", got)
	}
}

// plantBwrapWhereABoxWrote puts a bubblewrap of root's in root/granted/bin,
// first on PATH, and records granted as a path an earlier box of the
// world of getenv was let write; it returns granted and the bubblewrap.
func plantBwrapWhereABoxWrote(t *testing.T, root string, getenv func(string) string) (granted, planted string) {
	t.Helper()
	granted = filepath.Join(root, "granted")
	bin := filepath.Join(granted, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	planted = filepath.Join(bin, "bwrap")
	if err := os.WriteFile(planted, []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec, err := BoxWritableRecordPath(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if err := recordBoxWritable(rec, []string{granted}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	return granted, planted
}

// TestCacheDirHoldsTheHostCaches: kernels given one CacheDir (a node's
// jobs, each with a HOME of its own) keep the /etc views there, not under
// their own state, so a job's box reuses the view an earlier job's made;
// without one the views stay in airlock's state directory.
func TestCacheDirHoldsTheHostCaches(t *testing.T) {
	shared := t.TempDir()
	for _, tc := range []struct {
		name     string
		cacheDir string
		want     func(getenv func(string) string) string
	}{
		{"a cache directory given", shared, func(func(string) string) string { return filepath.Join(shared, EtcViewDir) }},
		{"none given", "", func(getenv func(string) string) string {
			state, err := audit.DefaultPath(getenv)
			if err != nil {
				t.Fatal(err)
			}
			return filepath.Join(filepath.Dir(state), EtcViewDir)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 2; i++ { // two kernels of different homes
				_, work, getenv := privateWorld(t)
				k, err := Build(Config{Dir: work, Getenv: getenv, Mode: "observe", CacheDir: tc.cacheDir})
				if err != nil {
					t.Fatal(err)
				}
				got := k.Caches.Config().EtcViewDir
				k.Close()
				if want := tc.want(getenv); got != want {
					t.Errorf("kernel %d: /etc views in %s, want %s", i, got, want)
				}
			}
		})
	}
}
