package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestBoxBinaryLinkedIntoAProject: an airlock-box beside airlock that is a
// link to a file elsewhere is trusted only as far as what holds that
// file. Here it leads into a project that a box of one run may write (that
// box itself is given the airlock binary); the box rewrites the file in
// place, and every later box, of another project, ran what it wrote as its
// exec step, before the walls and the filter. airlock-box is now taken
// only as a file of its own in the airlock binary's own directory, which no
// box may write (a box that could is refused), reached by no link.
func TestBoxBinaryLinkedIntoAProject(t *testing.T) {
	needTier1(t)
	dir, exe := airlockInBin(t)
	proj := t.TempDir()
	target := filepath.Join(proj, "out", BoxBinary)
	if err := os.Mkdir(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	testsupport.CopyBin(t, testsupport.BoxBin(t), target, 0o755)
	if err := os.Symlink(target, filepath.Join(dir, BoxBinary)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		boxBins.Lock()
		delete(boxBins.m, exe)
		boxBins.Unlock()
	})

	// The project's own box, writable: it rewrites the file in place.
	spec := walledSpec(t)
	spec.Workdir, spec.Writable, spec.Write = proj, true, []string{proj}
	spec.Exec.RunWritten = true // so its own listed sh may lie anywhere
	box, err := Plan(spec, Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	o := runBox(t, box, []string{"/bin/sh", "-c", "printf '%s' '" + planted + "' > " + target + " && echo rewrote"})
	if o.code != 0 || !strings.Contains(o.out, "rewrote") {
		t.Fatalf("the project's box could not rewrite %s (exit %d, %q), so this case shows nothing", target, o.code, o.out)
	}
	if data, _ := os.ReadFile(target); string(data) != planted {
		t.Fatalf("%s was not rewritten: %q", target, data)
	}

	// A box of another project.
	box, err = Plan(walledSpec(t), Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	o = runBox(t, box, []string{"/bin/sh", "-c", "echo ran"})
	if strings.Contains(o.out, plantedMark) {
		t.Fatalf("what the project's box wrote ran as the next box's exec step: %q", o.out)
	}
	if o.code != 0 || o.out != "ran\n" || box.initBin != realPath(t, exe) {
		t.Fatalf("got exit %d and %q binding %s, want the command's output and the airlock binary %s", o.code, o.out, box.initBin, exe)
	}
	if note := lastNote(box.Notes, "in-box code"); !strings.Contains(note, "link") {
		t.Errorf("the plan does not say the link was passed over: %q", note)
	}
}

// TestBoxBinaryWithAnotherName: the same file under a second name (a hard
// link) is as writable as the most writable place that name lies in. Here
// the other name is in a box's kept home, which the box writes: it
// rewrites the file through it, and the next box ran that as its exec
// step. airlock-box is now taken only when it has no other name.
func TestBoxBinaryWithAnotherName(t *testing.T) {
	needTier1(t)
	dir, exe := airlockInBin(t)
	small := filepath.Join(dir, BoxBinary)
	testsupport.CopyBin(t, testsupport.BoxBin(t), small, 0o755)
	home := t.TempDir()
	other := filepath.Join(home, "tool")
	if err := os.Link(small, other); err != nil {
		t.Skipf("no hard link here: %v", err)
	}
	t.Cleanup(func() {
		boxBins.Lock()
		delete(boxBins.m, exe)
		boxBins.Unlock()
	})

	spec := walledSpec(t)
	spec.HomeDir = home
	spec.Env = append(spec.Env, "HOME=/home/box")
	spec.Exec.RunWritten = true
	box, err := Plan(spec, Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	o := runBox(t, box, []string{"/bin/sh", "-c", "printf '%s' '" + planted + "' > /home/box/tool && echo rewrote"})
	if data, _ := os.ReadFile(small); string(data) != planted {
		t.Fatalf("the kept home's box could not rewrite %s through its other name (exit %d, %q), so this case shows nothing", small, o.code, o.out)
	}

	box, err = Plan(walledSpec(t), Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	o = runBox(t, box, []string{"/bin/sh", "-c", "echo ran"})
	if strings.Contains(o.out, plantedMark) {
		t.Fatalf("what a box wrote through the other name ran as the next box's exec step: %q", o.out)
	}
	if o.code != 0 || o.out != "ran\n" || box.initBin != realPath(t, exe) {
		t.Fatalf("got exit %d and %q binding %s, want the command's output and the airlock binary %s", o.code, o.out, box.initBin, exe)
	}
}
