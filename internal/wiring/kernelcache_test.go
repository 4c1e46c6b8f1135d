package wiring

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestKernelsKeepTheirOwnBoxWritableList: two kernels in one process (a
// node's jobs, each with a HOME and a record of box-writable paths of its
// own) keep their own lists, but the host's programs are the host's: the
// first kernel's record says an earlier box was let write the directory a
// bubblewrap on PATH lies in; the second's says nothing of it. Neither
// takes that bubblewrap: the host would run as itself, for the second
// job, a program a box of the first planted.
func TestKernelsKeepTheirOwnBoxWritableList(t *testing.T) {
	testsupport.Require(t, testsupport.Root)
	root, workA, getenvA := privateWorld(t)
	_, workB, getenvB := privateWorld(t)
	granted, planted := plantBwrapWhereABoxWrote(t, root, getenvA)
	shared := t.TempDir()
	a, err := Build(Config{Dir: workA, Getenv: getenvA, Mode: "observe", CacheDir: shared})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Build(Config{Dir: workB, Getenv: getenvB, Mode: "observe", CacheDir: shared})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := a.Caches.Probe().Bubblewrap.Path; got == planted {
		t.Errorf("kernel A: bubblewrap taken from %s, which an earlier box of A's could write", got)
	}
	if got := b.Caches.Probe().Bubblewrap.Path; got == planted {
		t.Errorf("kernel B: bubblewrap taken from %s, which an earlier box of A's could write", got)
	}
	for name, k := range map[string]*Kernel{"A": a, "B": b} {
		if got, want := k.Caches.Config().EtcViewDir, filepath.Join(shared, EtcViewDir); got != want {
			t.Errorf("kernel %s: /etc views in %s, want the shared %s", name, got, want)
		}
	}
	if got := a.Caches.Config().BoxWritable; !slices.Contains(got, granted) {
		t.Errorf("kernel A's box-writable list %v lacks %s, which its record names", got, granted)
	}
	if got := b.Caches.Config().BoxWritable; slices.Contains(got, granted) {
		t.Errorf("kernel B's box-writable list %v holds %s, which only A's record names", got, granted)
	}
}

// TestSharedCachesKeepEveryKernelsRecord: kernels given one cache
// directory but a HOME each (a node's jobs) share what their boxes were
// let write: a kernel built later, in this process or after a restart,
// whose own record names nothing, lists the directory the first kernel's
// fix-mode boxes may write, so it takes no host program from there.
func TestSharedCachesKeepEveryKernelsRecord(t *testing.T) {
	_, workA, getenvA := privateWorld(t)
	_, workB, getenvB := privateWorld(t)
	writeFile(t, filepath.Join(workA, "airlock.yaml"), "fs: {read: [.], write: [.]}\n")
	shared := t.TempDir()
	a, err := Build(Config{Dir: workA, Getenv: getenvA, Mode: "fix", CacheDir: shared})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	b, err := Build(Config{Dir: workB, Getenv: getenvB, Mode: "observe", CacheDir: shared})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := b.Caches.Config().BoxWritable; !slices.Contains(got, workA) {
		t.Errorf("kernel B's box-writable list %v lacks %s, which kernel A's boxes may write", got, workA)
	}
}
