package sandbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox/landlock"
)

// weakInstall stands in for sandbox/seccomp's install_linux.go in an
// airlock-box of another build whose protocol is this one's but whose
// filter is not: here it loads none.
const weakInstall = `//go:build linux

package seccomp

import "golang.org/x/sys/unix"

func Install(opts Options) error { return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }

func Supported() (bool, string) { return true, "" }
`

// TestBoxBinaryOfAnotherFilter: the fingerprint ties the in-box code to
// the host's protocol, not to what it enforces. An airlock-box built with
// another seccomp filter (an older one, left beside an airlock that fixed
// its filter) installed its own in every box whose in-box code loads the
// filter (the exec step that seals, every init), and the box ran under
// that. The host now hands the in-box code the filter it compiled, and the
// in-box code loads exactly that.
func TestBoxBinaryOfAnotherFilter(t *testing.T) {
	needTier1(t)
	dir, exe := airlockInBin(t)
	small := otherBoxBin(t, dir, "sandbox/seccomp/install_linux.go", func(string) string { return weakInstall })
	box, err := Plan(walledSpec(t), Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	if box.initBin != small || !strings.Contains(strings.Join(box.Notes, "\n"), "mounted noexec") {
		t.Fatalf("the box runs %s, want the other airlock-box sealing the box (its exec step loads the filter): %q", box.initBin, box.Notes)
	}
	o := runBox(t, box, []string{"/bin/sh", "-c", "cat /proc/self/status"})
	if o.code != 0 || !strings.Contains(o.out, "Seccomp:\t2\n") {
		t.Fatalf("the box ran without the host's filter under the other airlock-box (exit %d): %q", o.code, statusLine(o.out, "Seccomp"))
	}
}

// otherBoxBin builds an airlock-box of another build into dir: this
// checkout's, with the source file rel (from the module's root) replaced
// by what edit makes of it.
func otherBoxBin(t *testing.T, dir, rel string, edit func(src string) string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go toolchain to build airlock-box: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	orig := filepath.Join(root, rel)
	src, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	other := filepath.Join(work, filepath.Base(rel))
	if err := os.WriteFile(other, []byte(edit(string(src))), 0o644); err != nil {
		t.Fatal(err)
	}
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {orig: other}})
	overlay := filepath.Join(work, "overlay.json")
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(dir, BoxBinary)
	build := exec.Command("go", "build", "-overlay", overlay, "-o", small, "./cmd/airlock-box")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the other airlock-box: %v\n%s", err, out)
	}
	if err := os.Chmod(small, 0o755); err != nil {
		t.Fatal(err)
	}
	return small
}

// statusLine is the line of a /proc/PID/status dump naming key.
func statusLine(status, key string) string {
	for _, l := range strings.Split(status, "\n") {
		if strings.HasPrefix(l, key+":") {
			return l
		}
	}
	return status
}

// TestBoxBinaryOfOtherWalls: the same for the Landlock walls, which the
// in-box code builds from the paths the host sends: an airlock-box whose
// Landlock code handles other rights (here no scopes) put weaker walls on
// the box than the host planned and said, and the command signalled
// bubblewrap outside them. The host now sends the rights its own code
// handles for the walls, and the in-box code refuses walls it would build
// otherwise; nothing runs.
func TestBoxBinaryOfOtherWalls(t *testing.T) {
	needTier1(t)
	if abi, err := landlock.ABI(); err != nil || abi < 6 {
		testsupport.MissingPart(t, "Landlock scopes (ABI 6; this kernel has %d, %v)", abi, err)
	}
	dir, exe := airlockInBin(t)
	const scoped = "r.Scope && abi >= scopeABI"
	small := otherBoxBin(t, dir, "sandbox/landlock/landlock_linux.go", func(src string) string {
		if !strings.Contains(src, scoped) {
			t.Fatalf("landlock_linux.go no longer says %q; this test edits it", scoped)
		}
		return strings.Replace(src, scoped, "false", 1)
	})
	box, err := Plan(walledSpec(t), Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	if box.initBin != small {
		t.Fatalf("the box runs %s, want the other airlock-box: %q", box.initBin, box.Notes)
	}
	o := runBox(t, box, []string{"/bin/sh", "-c", "kill -0 1 && echo REACHED-BUBBLEWRAP"})
	if strings.Contains(o.out, "REACHED-BUBBLEWRAP") {
		t.Fatalf("the other airlock-box's walls let the command signal bubblewrap outside them: %q", o.out)
	}
	if o.code != 125 || !strings.Contains(o.out, "another build") {
		t.Fatalf("got exit %d and %q, want 125 and the other build named", o.code, o.out)
	}
}

// TestBoxBinaryOfAnotherProtocol: an airlock-box of a build whose
// protocol is another (a fingerprint of its own, as a build with other
// types or another walls' encoding has) runs nothing in a box the host
// planned: the exec step refuses the walls, naming the fix, and the run
// ends with 125.
func TestBoxBinaryOfAnotherProtocol(t *testing.T) {
	needTier1(t)
	dir, exe := airlockInBin(t)
	const decl = "const fingerprint = \""
	small := otherBoxBin(t, dir, "sandbox/boxconf/fingerprint.go", func(src string) string {
		if !strings.Contains(src, decl) {
			t.Fatalf("fingerprint.go no longer says %q; this test edits it", decl)
		}
		return strings.Replace(src, decl, decl+"stale-", 1)
	})
	box, err := Plan(walledSpec(t), Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	if box.initBin != small {
		t.Fatalf("the box runs %s, want the other airlock-box: %q", box.initBin, box.Notes)
	}
	o := runBox(t, box, []string{"/bin/sh", "-c", "echo RAN"})
	if strings.Contains(o.out, "RAN") || o.code != 125 || !strings.Contains(o.out, "another build") {
		t.Fatalf("got exit %d and %q, want 125, nothing run and the other build named", o.code, o.out)
	}
}
