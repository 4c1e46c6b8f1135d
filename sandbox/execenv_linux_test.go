package sandbox

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// preloadC is a library that, loaded into a process no seccomp filter
// holds yet (airlock's exec step before its walls), says so and uses the
// capability the step holds for its seal to make the read grant
// $PRELOAD_TARGET writable and overwrite its file f on the host. Loaded
// into the walled command it does nothing.
const preloadC = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>
__attribute__((constructor)) static void early(void) {
	char buf[8192];
	int fd = open("/proc/self/status", O_RDONLY);
	int n = fd < 0 ? 0 : read(fd, buf, sizeof buf - 1);
	buf[n > 0 ? n : 0] = 0;
	if (!strstr(buf, "Seccomp:\t0")) return;
	fprintf(stderr, "PRELOAD-BEFORE-WALLS\n");
	const char *t = getenv("PRELOAD_TARGET");
	if (!t || mount(NULL, t, NULL, MS_REMOUNT | MS_BIND, NULL) != 0) return;
	char p[4096];
	snprintf(p, sizeof p, "%s/f", t);
	int w = open(p, O_WRONLY | O_TRUNC);
	if (w >= 0) { write(w, "OVERWRITTEN\n", 12); close(w); }
}
`

// TestExecStepEnvironment: the box's environment (the policy's env) is the
// command's, never that of airlock's code in the box. The exec step of a
// box without an init runs before the walls and the seccomp filter, with
// CAP_SYS_ADMIN for its seal; started with the box's environment, a
// GODEBUG reached its Go runtime and an LD_PRELOAD (or LD_LIBRARY_PATH)
// the dynamic loader of a cgo-built in-box binary, which ran the named
// library there: it remounted a read grant writable and overwrote the
// host's file. The step now starts with no environment and hands the
// command its own.
func TestExecStepEnvironment(t *testing.T) {
	needTier1(t)
	t.Run("go runtime of airlock-box", func(t *testing.T) {
		dir := t.TempDir()
		exe := airlockIn(t, dir)
		testsupport.CopyBin(t, testsupport.BoxBin(t), filepath.Join(dir, BoxBinary), 0o755)
		goDebugNotInStep(t, exe, true)
	})
	t.Run("go runtime of the airlock binary", func(t *testing.T) {
		goDebugNotInStep(t, airlockIn(t, t.TempDir()), false)
	})
	t.Run("an environment larger than a pipe", func(t *testing.T) {
		// Each variable under the kernel's 128 KiB for one string.
		big := strings.Repeat("x", 40<<10)
		spec := walledSpec(t)
		spec.Env = append(spec.Env, "BIG="+big, "BIG2="+big, "BIG3="+big)
		box, err := Plan(spec, Tier1, airlockIn(t, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		o := runBox(t, box, []string{"/bin/sh", "-c", `echo ${#BIG}${#BIG2}${#BIG3}`})
		n := len(big)
		if want := fmt.Sprintf("%d%d%d\n", n, n, n); o.code != 0 || o.out != want {
			t.Fatalf("got exit %d and %.200q, want 0 and %q", o.code, o.out, want)
		}
	})
	t.Run("loader of the airlock binary", func(t *testing.T) {
		exe := airlockIn(t, t.TempDir())
		if !dynamicELF(t, exe) {
			t.Skipf("%s is linked statically: no loader reads the environment", exe)
		}
		gcc, err := exec.LookPath("gcc")
		if err != nil {
			testsupport.MissingPart(t, "gcc, to build the preloaded library: %v", err)
		}
		ro := t.TempDir()
		src, lib, file := filepath.Join(ro, "early.c"), filepath.Join(ro, "early.so"), filepath.Join(ro, "f")
		if err := os.WriteFile(src, []byte(preloadC), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
		if err := os.WriteFile(file, []byte("original\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		spec := walledSpec(t)
		spec.Read = []string{ro}
		spec.Env = append(spec.Env, "LD_PRELOAD="+lib, "PRELOAD_TARGET="+ro)
		box, err := Plan(spec, Tier1, exe)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(box.Notes, "\n"), "mounted noexec") {
			t.Fatalf("the box is not sealed, so its exec step holds no capability and this case shows nothing: %q", box.Notes)
		}
		o := runBox(t, box, []string{"/bin/sh", "-c", "cat " + file})
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(o.out, "PRELOAD-BEFORE-WALLS") || string(got) != "original\n" {
			t.Fatalf("the box's LD_PRELOAD ran in the exec step before the walls: output %q, the read grant's file now %q", o.out, got)
		}
		// The command's own loader is given the library too, and refuses
		// it from the box's noexec /tmp, saying so.
		if o.code != 0 || !strings.HasSuffix(o.out, "original\n") {
			t.Fatalf("got exit %d and %q, want 0 and the file", o.code, o.out)
		}
	})
}

// goDebugNotInStep runs a walled box of exe with GODEBUG=inittrace=1 in
// its environment: the Go runtime of the exec step must not see it (it
// would print its init trace), the command must.
func goDebugNotInStep(t *testing.T, exe string, small bool) {
	t.Helper()
	spec := walledSpec(t)
	spec.Env = append(spec.Env, "GODEBUG=inittrace=1")
	box, err := Plan(spec, Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	if got := box.initBin == filepath.Join(filepath.Dir(exe), BoxBinary); got != small {
		t.Fatalf("the box runs %s, want airlock-box %v: %q", box.initBin, small, box.Notes)
	}
	o := runBox(t, box, []string{"/bin/sh", "-c", `echo "GODEBUG=$GODEBUG"`})
	if strings.Contains(o.out, "init ") {
		t.Fatalf("the box's GODEBUG reached the exec step's Go runtime (%s): %q", box.initBin, o.out)
	}
	if o.code != 0 || o.out != "GODEBUG=inittrace=1\n" {
		t.Fatalf("got exit %d and %q, want 0 and the command's own environment", o.code, o.out)
	}
}

// dynamicELF reports whether path names an interpreter (the dynamic loader).
func dynamicELF(t *testing.T, path string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}
