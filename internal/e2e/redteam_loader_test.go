package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/sandbox"
)

// TestExecWallLoaderOnWritten: the dynamic loader is executable in a
// walled box (it is every listed program's PT_INTERP), and it maps the
// program it is given with mmap(PROT_EXEC), which Landlock does not check.
// A program the box wrote (here: a copy of rm the host placed in the
// writable directory, as the box could with printf) or one that lies
// outside the hidden PATH directories must not run through it.
func TestExecWallLoaderOnWritten(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	requireLandlock(t)
	rm, err := os.ReadFile("/usr/bin/rm")
	if err != nil {
		t.Skipf("no /usr/bin/rm: %v", err)
	}
	for _, net := range []bool{false, true} {
		for _, place := range []string{"./x", "/tmp/x", "/dev/shm/x"} {
			t.Run(place, func(t *testing.T) {
				cmd := "cat x.bin > " + place + "; /lib64/ld-linux-x86-64.so.2 " + place + " -f victim; echo alive"
				// The attack, in the same box with the seal off
				// (shell.run_written): the loader runs the written rm.
				wd := loaderWorkdir(t, rm)
				res, out := wallRun(t, wd, &sandbox.ExecSpec{Programs: wallPrograms, RunWritten: true}, net, "sh", "-c", cmd)
				if exists(filepath.Join(wd, "victim")) {
					t.Fatalf("net=%v: the attack did not work with written files runnable (exit %d): %s", net, res.ExitCode, out)
				}
				wd = loaderWorkdir(t, rm)
				res, out = wallRun(t, wd, &sandbox.ExecSpec{Programs: wallPrograms}, net, "sh", "-c", cmd)
				if !exists(filepath.Join(wd, "victim")) {
					t.Fatalf("net=%v: the loader ran a written rm (exit %d): %s", net, res.ExitCode, out)
				}
				// The box ran (the refusal is the loader's, not a box
				// that failed to start), and the loader was refused.
				if !strings.Contains(out, "alive") || !strings.Contains(out, "map") && !strings.Contains(out, "denied") && !strings.Contains(out, "not permitted") {
					t.Errorf("net=%v: exit %d, %q: want the loader refused in a box that ran", net, res.ExitCode, out)
				}
			})
		}
	}
}

// loaderWorkdir is a working directory holding a victim file and x.bin, a
// copy of rm placed by the host as the box could write it with printf.
func loaderWorkdir(t *testing.T, rm []byte) string {
	wd := t.TempDir()
	if err := os.WriteFile(filepath.Join(wd, "victim"), []byte("v"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "x.bin"), rm, 0o644); err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestExecWallLoaderOnUnhidden: the wall hides (refuses to read) the
// programs of the PATH's directories, but a program kept elsewhere
// (/usr/lib/git-core/git, /usr/libexec/..., /usr/lib/systemd/...) was
// readable, so the loader ran it although the list does not name it. It is
// hidden too now, unless a listed program's helpers are there (git listed:
// git's own helpers run).
func TestExecWallLoaderOnUnhidden(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	requireLandlock(t)
	const git = "/usr/lib/git-core/git"
	if _, err := os.Stat(git); err != nil {
		t.Skipf("no %s: %v", git, err)
	}
	cmd := "/lib64/ld-linux-x86-64.so.2 " + git + " --version; echo alive"
	for _, net := range []bool{false, true} {
		// The attack, in the same box without a list: the loader runs it.
		res, out := wallRun(t, t.TempDir(), nil, net, "sh", "-c", cmd)
		if !strings.Contains(out, "git version") {
			t.Fatalf("net=%v: the loader did not run git without a wall (exit %d): %s", net, res.ExitCode, out)
		}
		res, out = wallRun(t, t.TempDir(), &sandbox.ExecSpec{Programs: wallPrograms}, net, "sh", "-c", cmd)
		if strings.Contains(out, "git version") || !strings.Contains(out, "alive") {
			t.Fatalf("net=%v: the loader ran the unlisted git, or the box did not run (exit %d): %s", net, res.ExitCode, out)
		}
		// git listed: its helper directory is its own, readable and
		// executable.
		res, out = wallRun(t, t.TempDir(), &sandbox.ExecSpec{Programs: append([]string{"git"}, wallPrograms...)}, net, "sh", "-c", cmd)
		if !strings.Contains(out, "git version") {
			t.Errorf("net=%v: with git listed, its helper directory is hidden (exit %d): %s", net, res.ExitCode, out)
		}
	}
}

// TestExecWallPreloadWritten: LD_PRELOAD of a library the box wrote runs
// its code inside a listed program. The library here is a copy of a host
// library in the writable working directory; the loader maps it with
// PROT_EXEC, which the noexec seal refuses.
func TestExecWallPreloadWritten(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	requireLandlock(t)
	lib, err := filepath.Glob("/usr/lib/x86_64-linux-gnu/libz.so.1*")
	if err != nil || len(lib) == 0 {
		t.Skip("no libz to copy")
	}
	so, err := os.ReadFile(lib[0])
	if err != nil {
		t.Skip(err)
	}
	const cmd = "cat lib.bin > ./l.so; LD_PRELOAD=$PWD/l.so cat mark"
	for _, net := range []bool{false, true} {
		for _, runWritten := range []bool{true, false} {
			wd := loaderWorkdir(t, nil)
			if err := os.WriteFile(filepath.Join(wd, "lib.bin"), so, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(wd, "mark"), []byte("cat-ran-here"), 0o644); err != nil {
				t.Fatal(err)
			}
			res, out := wallRun(t, wd, &sandbox.ExecSpec{Programs: wallPrograms, RunWritten: runWritten}, net, "sh", "-c", cmd)
			refused := strings.Contains(out, "cannot be preloaded")
			if !strings.Contains(out, "cat-ran-here") {
				t.Fatalf("net=%v run_written=%v: the listed cat did not run (exit %d): %s", net, runWritten, res.ExitCode, out)
			}
			if refused == runWritten {
				t.Errorf("net=%v run_written=%v: preload refused=%v (exit %d): %s", net, runWritten, refused, res.ExitCode, out)
			}
		}
	}
}
