package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAirlockDirThroughABindAlias: a bind mount shows the airlock binary's
// directory at a second path, and a box granted that path writes the
// first. Compared as path strings the grant covers nothing of airlock's,
// so the box was planned and could replace the airlock binary (and the
// airlock-box beside it) that the host runs next. The directories are now
// also compared by device and inode: the plan is refused.
func TestAirlockDirThroughABindAlias(t *testing.T) {
	needTier1(t)
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("a bind mount needs root")
		}
		t.Skip("a bind mount needs root")
	}
	dir, exe := airlockInBin(t)
	alias := t.TempDir()
	if err := unix.Mount(dir, alias, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s at %s: %v", dir, alias, err)
	}
	t.Cleanup(func() { unix.Unmount(alias, unix.MNT_DETACH) })
	real := realPath(t, exe)
	if w := withinAny(real, []string{alias}); w != "" {
		t.Fatalf("%s lies lexically in %s, so this case shows nothing", real, w)
	}
	if _, err := os.Stat(filepath.Join(alias, filepath.Base(real))); err != nil {
		t.Fatalf("the alias does not show the airlock binary: %v", err)
	}

	spec := walledSpec(t)
	spec.Workdir, spec.Writable, spec.Write = t.TempDir(), true, []string{alias}
	box, err := Plan(spec, Tier1, exe)
	if err == nil {
		box.Close()
		t.Fatalf("a box granted %s, the airlock binary's directory under another name, was planned", alias)
	}
	if !strings.Contains(err.Error(), "the airlock binary lies inside the writable directory") {
		t.Fatalf("refused for another reason: %v", err)
	}
}
