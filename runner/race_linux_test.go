package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox"
)

// TestSwappedBindSource is the symlink race on bind sources: the path
// granted for reading is swapped for a link to a secret after airlock
// checked it and before bubblewrap mounts it. Bound by path (bubblewrap
// started by hand), the box reads the secret; bound from airlock's pinned
// descriptor, it reads what was checked.
func TestSwappedBindSource(t *testing.T) {
	requireTier1(t)
	root := t.TempDir()
	data := filepath.Join(root, "data")
	secret := filepath.Join(root, "secret")
	os.Mkdir(data, 0o755)
	os.Mkdir(secret, 0o755)
	os.WriteFile(filepath.Join(data, "file"), []byte("checked"), 0o644)
	os.WriteFile(filepath.Join(secret, "file"), []byte("SECRET"), 0o644)
	swap := func() {
		if err := os.Rename(data, data+".orig"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, data); err != nil {
			t.Fatal(err)
		}
	}
	unswap := func() {
		os.Remove(data)
		os.Rename(data+".orig", data)
	}

	// Unconfined by airlock's pinning: the same bind by path.
	swap()
	out, err := exec.Command("/usr/bin/bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
		"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--ro-bind", data, data, "cat", data+"/file").CombinedOutput()
	unswap()
	if err != nil || string(out) != "SECRET" {
		t.Skipf("untested here: a bind by path did not follow the swapped link (%v: %s)", err, out)
	}

	for _, tc := range boxTiers() {
		t.Run(tc.name(), func(t *testing.T) {
			if tc.skip != "" {
				tc.gate(t)
			}
			swappedBindSource(t, tc.tier, data, swap, unswap)
		})
	}
}

// swappedBindSource plans a box reading data at tier, swaps data for the
// link, and runs the box: it must read what was checked, or refuse.
func swappedBindSource(t *testing.T, tier sandbox.Tier, data string, swap, unswap func()) {
	spec := baseSpec(t)
	spec.Read = []string{data}
	box, err := sandbox.Plan(spec, tier, testExe(t))
	if err != nil {
		t.Fatal(err)
	}
	swap()
	defer unswap()
	var o bytes.Buffer
	tr, err := runnerFor(box)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{req: Request{Argv: []string{"cat", data + "/file"}, Spec: spec, Stdout: &o, Stderr: &o}, box: box, tr: tr, exe: testExe(t), start: time.Now()}
	defer r.finish()
	var res Result
	cmd, err := r.launch()
	if err == nil {
		res, err = r.wait(context.Background(), cmd)
	}
	if err != nil {
		// Refusing is holding too: bubblewrap's own check or the init's.
		if !errs.Is(err, errs.Unavailable) {
			t.Fatalf("got %v, want the checked file or a refusal", err)
		}
		return
	}
	t.Logf("the box read %q", strings.TrimSpace(o.String()))
	if got := strings.TrimSpace(o.String()); got != "checked" || res.ExitCode != 0 {
		t.Errorf("the box read %q (exit %d), want the pinned %q", got, res.ExitCode, "checked")
	}
}

// TestBindThroughWritableLinkRefused: a read grant reached through a link
// in the writable working directory is refused with exit 125 and the path,
// and nothing runs.
func TestBindThroughWritableLinkRefused(t *testing.T) {
	requireTier1(t)
	wd := t.TempDir()
	os.Symlink("/etc", filepath.Join(wd, "cfg"))
	spec := fixSpec(t, wd)
	spec.Read = []string{filepath.Join(wd, "cfg")}
	o := runIn(t, sandbox.Tier1, spec, "", "cat", filepath.Join(wd, "cfg", "hostname"))
	if o.err == nil {
		t.Fatalf("the run went ahead (exit %d, %q)", o.res.ExitCode, o.stdout)
	}
	if errs.ExitCode(o.err) != errs.ExitCannotRun || !strings.Contains(o.err.Error(), filepath.Join(wd, "cfg")) || !strings.Contains(o.err.Error(), "symbolic link") {
		t.Errorf("got %v (exit %d), want exit 125 naming the path and the link", o.err, errs.ExitCode(o.err))
	}
}
