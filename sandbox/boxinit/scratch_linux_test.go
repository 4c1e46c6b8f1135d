package boxinit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// scratchBox is a tmpfs (as a box's /tmp is) with a host directory bound
// inside it (as a grant below /tmp is), and a file in that directory that
// must survive every clearing.
func scratchBox(t *testing.T) (scratch, kept string) {
	t.Helper()
	testsupport.Require(t, testsupport.Root)
	scratch, host := t.TempDir(), t.TempDir()
	if err := unix.Mount("tmpfs", scratch, "tmpfs", 0, "mode=0755"); err != nil {
		testsupport.Missing(t, "mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(scratch, unix.MNT_DETACH) })
	grant := filepath.Join(scratch, "grant")
	os.Mkdir(grant, 0o755)
	if err := unix.Mount(host, grant, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(grant, unix.MNT_DETACH) })
	kept = filepath.Join(grant, "kept")
	if err := os.WriteFile(kept, []byte("host data"), 0o644); err != nil {
		t.Fatal(err)
	}
	return scratch, kept
}

// TestScratchKeepsMountPoints: bringing a scratch directory back removes
// what calls made and never enters a mount point below it. Against the
// naive shape first (remove every entry), which empties the host
// directory bound inside.
func TestScratchKeepsMountPoints(t *testing.T) {
	naive, naiveKept := scratchBox(t)
	ents, _ := os.ReadDir(naive)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(naive, e.Name()))
	}
	if _, err := os.Stat(naiveKept); err == nil {
		t.Fatal("removing every entry kept the bound host file, so this test shows nothing")
	}

	scratch, kept := scratchBox(t)
	roots, err := snapshotScratch([]string{scratch, filepath.Join(scratch, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	if len(roots) != 1 {
		t.Fatalf("got %d roots, want the one that exists", len(roots))
	}
	// What a call leaves: files, a deep tree made unreadable, a link
	// pointing into the grant, the directory's own bits taken away.
	os.WriteFile(filepath.Join(scratch, "left"), nil, 0o600)
	os.MkdirAll(filepath.Join(scratch, "d", "e"), 0o700)
	os.WriteFile(filepath.Join(scratch, "d", "e", "f"), nil, 0o600)
	os.Chmod(filepath.Join(scratch, "d"), 0)
	os.Symlink(kept, filepath.Join(scratch, "link"))
	os.Chmod(scratch, 0)
	if dirty := restoreAll(roots); len(dirty) > 0 {
		t.Fatalf("clearing reported %q", dirty)
	}
	var names []string
	ents, _ = os.ReadDir(scratch)
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "grant" {
		t.Errorf("after clearing the scratch holds %v, want only the mount point grant", names)
	}
	if data, err := os.ReadFile(kept); err != nil || string(data) != "host data" {
		t.Errorf("the bound host file was touched: %q, %v", data, err)
	}
	if st, err := os.Stat(scratch); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("the scratch's mode was not brought back: %v %v", st.Mode(), err)
	}
}

// TestIPCOnlyInTheBox: outside a box's PID 1 the IPC clearing touches
// nothing (the host's objects are not a call's) and says so.
func TestIPCOnlyInTheBox(t *testing.T) {
	if os.Getpid() == 1 {
		t.Skip("this test runs as PID 1")
	}
	if err := clearIPC(); err == nil || !strings.Contains(err.Error(), "PID 1") {
		t.Errorf("got %v, want a refusal naming PID 1", err)
	}
}

// TestScratchReplacedIsDirty: an entry of the first state that a call
// replaced cannot be put back as it was, and the box is reported dirty.
func TestScratchReplacedIsDirty(t *testing.T) {
	scratch, _ := scratchBox(t)
	os.WriteFile(filepath.Join(scratch, "first"), []byte("a"), 0o644)
	roots, err := snapshotScratch([]string{scratch})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(scratch, "first"))
	os.WriteFile(filepath.Join(scratch, "first"), []byte("b"), 0o644)
	if dirty := strings.Join(restoreAll(roots), "; "); !strings.Contains(dirty, "first was replaced") {
		t.Errorf("got %q, want the replaced entry named", dirty)
	}
}
