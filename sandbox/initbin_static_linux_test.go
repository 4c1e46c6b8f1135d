package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// cgoBoxBin builds cmd/airlock-box with cgo into dir: a real dynamically
// linked airlock-box (the package net's resolver links libc).
func cgoBoxBin(t *testing.T, dir string) string {
	t.Helper()
	testsupport.Require(t, testsupport.Program("go"), testsupport.Program("gcc"))
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(dir, BoxBinary)
	build := exec.Command("go", "build", "-o", small, "./cmd/airlock-box")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build airlock-box with cgo: %v\n%s", err, out)
	}
	return small
}

// TestStaticELF: what staticELF takes and refuses, each from a real file:
// airlock-box as scripts/setup.sh builds it, the same built with cgo, a
// shared library that needs another (DT_NEEDED, no interpreter), and a
// script.
func TestStaticELF(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte(planted), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path func(t *testing.T) string
		want string // "" takes it; else what the refusal says
	}{
		{"static (CGO_ENABLED=0)", func(t *testing.T) string { return testsupport.BoxBin(t) }, ""},
		{"built with cgo", func(t *testing.T) string { return cgoBoxBin(t, t.TempDir()) }, "program interpreter"},
		{"a library needing another", func(t *testing.T) string { return neededOnly(t) }, "needs shared libraries"},
		{"a script", func(t *testing.T) string { return script }, "not an ELF executable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pn, err := pin(tc.path(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer pn.f.Close()
			err = staticELF(pn)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("staticELF: %v, want it taken", err)
			case tc.want != "" && err == nil:
				t.Fatalf("staticELF took it, want a refusal saying %q", tc.want)
			case tc.want != "" && (!strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "CGO_ENABLED=0")):
				t.Errorf("refusal %q, want it to say %q and name the fix", err, tc.want)
			}
		})
	}
}

// neededOnly is a shared library of the host's that needs another and
// names no interpreter (libm needs libc), found through ldconfig's cache
// or the usual places.
func neededOnly(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6", "/usr/lib64/libm.so.6", "/lib64/libm.so.6"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("no libm.so.6 in the usual places")
	return ""
}

// TestCgoBoxBinaryPassedOver: an airlock-box built with cgo beside the
// airlock binary, otherwise as trusted as TestBoxRunsAirlockBox's, is
// passed over for the airlock binary, and the plan's notes say why and
// how to build it; the box runs as before.
func TestCgoBoxBinaryPassedOver(t *testing.T) {
	needTier1(t)
	dir := t.TempDir()
	exe := airlockIn(t, dir)
	cgoBoxBin(t, dir)
	box, err := Plan(walledSpec(t), Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	if box.initBin != realPath(t, exe) {
		t.Errorf("the box binds %s at %s, want the airlock binary %s", box.initBin, InitPath, exe)
	}
	note := lastNote(box.Notes, "in-box code")
	if !strings.Contains(note, "was passed over") || !strings.Contains(note, "dynamically linked") || !strings.Contains(note, "CGO_ENABLED=0") {
		t.Errorf("the plan's note %q does not say the cgo build was passed over, and why", note)
	}
	o := runBox(t, box, []string{"/bin/sh", "-c", "echo ran; stat -L -c %D:%i " + InitPath})
	if want := "ran\n" + fileID(t, exe) + "\n"; o.code != 0 || o.out != want {
		t.Fatalf("got exit %d and %q, want 0 and %q", o.code, o.out, want)
	}
}
