package sandbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go toolchain to build airlock-box: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	weak := filepath.Join(work, "install_linux.go")
	if err := os.WriteFile(weak, []byte(weakInstall), 0o644); err != nil {
		t.Fatal(err)
	}
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, "sandbox", "seccomp", "install_linux.go"): weak}})
	overlay := filepath.Join(work, "overlay.json")
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := airlockIn(t, dir)
	small := filepath.Join(dir, BoxBinary)
	build := exec.Command("go", "build", "-overlay", overlay, "-o", small, "./cmd/airlock-box")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the other airlock-box: %v\n%s", err, out)
	}
	if err := os.Chmod(small, 0o755); err != nil {
		t.Fatal(err)
	}
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

// statusLine is the line of a /proc/PID/status dump naming key.
func statusLine(status, key string) string {
	for _, l := range strings.Split(status, "\n") {
		if strings.HasPrefix(l, key+":") {
			return l
		}
	}
	return status
}
