package files

import (
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestDiskFull fills a small tmpfs holding the whole store: the write that
// does not fit fails with a clear error, leaves no partial file, and the
// store stays whole and usable once space is freed.
func TestDiskFull(t *testing.T) {
	testsupport.Require(t, testsupport.Root) // to mount a small tmpfs
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=6m"); err != nil {
		testsupport.Missing(t, "cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	s, err := Open(mnt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sc := Scope{Tenant: "acme", Tree: "a"}
	var kept []Ref
	var full error
	for i := 0; i < 20; i++ {
		r, err := s.Put(ctx, sc, randomBytes(t, 1<<20))
		if err != nil {
			full = err
			break
		}
		kept = append(kept, r)
	}
	if full == nil {
		t.Fatal("20 MiB fit in a 6 MiB tmpfs")
	}
	t.Logf("the write that did not fit: %v", full)
	if errs.ClassOf(full) != errs.Unavailable || !strings.Contains(full.Error(), "full") {
		t.Errorf("got %v (%v), want unavailable saying the disk is full", full, errs.ClassOf(full))
	}
	if n := countTemps(t, mnt); n != 0 {
		t.Errorf("the failed write left %d temporary files", n)
	}
	check := func(when string) {
		t.Helper()
		n, probs, err := s.Verify(ctx)
		if err != nil || len(probs) > 0 || n != len(kept) {
			t.Fatalf("%s: Verify %d files (want %d), %v, %v", when, n, len(kept), probs, err)
		}
	}
	check("when full")
	if _, err := s.Erase(ctx, Erasure{Tenant: "acme", Tree: "a"}); err != nil {
		t.Fatalf("erase on a full disk: %v", err)
	}
	kept = nil
	check("after erasure")
	s2, err := Open(mnt, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s2.Close()
	r, err := s2.Put(ctx, sc, []byte("fits again"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Get(ctx, sc, r); err != nil {
		t.Fatal(err)
	}
}
