package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// plantedMark is what a planted airlock-box prints when it runs.
const plantedMark = "PLANTED-BOX-BINARY-RAN"

// planted is a program that, run as the box's exec step, prints the mark
// instead of starting the command.
const planted = "#!/bin/sh\necho " + plantedMark + "\nexit 0\n"

// needTier1 skips (fails under CI=true) where bubblewrap cannot run a box.
func needTier1(t *testing.T) {
	t.Helper()
	if r := Probe(); r.Tier() < Tier1 {
		testsupport.Missing(t, "tier 1 unavailable here: %s", r.Why)
	}
}

// airlockIn puts the airlock binary in dir (a hard link where it can,
// else a copy) and returns its path there: what lies beside it is the
// test's to choose.
func airlockIn(t *testing.T, dir string) string {
	t.Helper()
	src := testsupport.AirlockBin(t)
	dst := filepath.Join(dir, "airlock")
	if err := os.Link(src, dst); err == nil {
		return dst
	}
	testsupport.CopyBin(t, src, dst, 0o755)
	return dst
}

// airlockInBin puts the airlock binary, as airlockIn does, in a new
// directory of its own, and returns both.
func airlockInBin(t *testing.T) (dir, exe string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, airlockIn(t, dir)
}

// boxOut is how a box's command ended.
type boxOut struct {
	out  string
	code int
}

// runBox runs argv in box as the runner would (start bubblewrap with the
// box's descriptors, send the init its configuration, read its status)
// and closes the box.
func runBox(t *testing.T, box *Box, argv []string) boxOut {
	t.Helper()
	defer box.Close()
	line := box.CommandLine(argv)
	cmd := exec.Command(box.Path, line[1:]...)
	cmd.Env = []string{}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.ExtraFiles = box.ExtraFiles
	if err := cmd.Start(); err != nil {
		t.Fatalf("start bubblewrap: %v", err)
	}
	box.Started()
	if err := box.SendConfig(argv); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("send the config: %v", err)
	}
	err := cmd.Wait()
	o := boxOut{out: buf.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("bubblewrap: %v", err)
	}
	if !box.Direct() {
		st, err := box.ReadStatus()
		if err != nil {
			t.Fatalf("read the init's status: %v (output %q)", err, o.out)
		}
		o.code = st.Exit
		if st.Error != "" {
			o.code = 125
		}
	}
	return o
}

// walledSpec is a box whose exec step (the in-box code at InitPath) runs
// before the command: an exec wall listing the shell.
func walledSpec(t *testing.T) Spec {
	return Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, Exec: &ExecSpec{Programs: []string{"sh", "stat", "cat"}}}
}

// fileID is the device and inode of path, as the box's stat prints
// them for its bind of the same file.
func fileID(t *testing.T, path string) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x:%d", st.Dev, st.Ino)
}

// withBoxBin puts the airlock binary and a static airlock-box beside it
// in a directory of the test's own, and returns both paths.
func withBoxBin(t *testing.T) (exe, small string) {
	t.Helper()
	dir := t.TempDir()
	exe = airlockIn(t, dir)
	small = filepath.Join(dir, BoxBinary)
	testsupport.CopyBin(t, testsupport.BoxBin(t), small, 0o755)
	return exe, small
}

// TestBoxRunsAirlockBox: with airlock-box beside the airlock binary, the
// box's exec step is airlock-box: the file bound at InitPath is it (the
// box's stat shows its inode), the plan says so, and the command runs
// walled as before.
func TestBoxRunsAirlockBox(t *testing.T) {
	needTier1(t)
	exe, small := withBoxBin(t)
	box, err := Plan(walledSpec(t), Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	if box.initBin != small {
		t.Errorf("the box binds %s at %s, want %s", box.initBin, InitPath, small)
	}
	if !strings.Contains(strings.Join(box.Notes, "\n"), "in-box code: "+BoxBinary) {
		t.Errorf("the plan's notes do not name %s: %q", BoxBinary, box.Notes)
	}
	o := runBox(t, box, []string{"/bin/sh", "-c", "echo ran; stat -L -c %D:%i " + InitPath})
	want := "ran\n" + fileID(t, small) + "\n"
	if o.code != 0 || o.out != want {
		t.Fatalf("got exit %d and %q, want 0 and %q (the command, and %s being %s)", o.code, o.out, want, InitPath, small)
	}
	if path, ok := InitBinary(exe); path != small || !ok {
		t.Errorf("InitBinary(%s) = %s, %v; want %s, true", exe, path, ok, small)
	}

	// A box whose exec wall lets git run its proxy command: what the box
	// may run at InitPath is airlock-box, and the plan says so.
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git to list")
	}
	sock := filepath.Join(t.TempDir(), "egress.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	spec := walledSpec(t)
	spec.Exec.Programs = append(spec.Exec.Programs, "git")
	spec.Net = &NetSpec{ProxySocket: sock, Token: "t"}
	box, err = Plan(spec, Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	if note := lastNote(box.Notes, "proxy command:"); box.initBin != small || !strings.Contains(note, "run "+BoxBinary+" as their proxy command") {
		t.Errorf("a box with git listed binds %s, notes %q; want %s and a note saying the proxy command is it", box.initBin, box.Notes, small)
	}
}

// TestBoxBinaryFallback: with no airlock-box beside it, the box runs the
// airlock binary itself, as before (a program embedding the runner does
// the same with its own binary).
func TestBoxBinaryFallback(t *testing.T) {
	needTier1(t)
	exe := airlockIn(t, t.TempDir())
	box, err := Plan(walledSpec(t), Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	if box.initBin != exe {
		t.Errorf("the box binds %s at %s, want the airlock binary %s", box.initBin, InitPath, exe)
	}
	o := runBox(t, box, []string{"/bin/sh", "-c", "echo ran; stat -L -c %D:%i " + InitPath})
	if want := "ran\n" + fileID(t, exe) + "\n"; o.code != 0 || o.out != want {
		t.Fatalf("got exit %d and %q, want 0 and %q", o.code, o.out, want)
	}
}

// TestPlantedBoxBinary: an airlock-box that someone other than its owner
// could have put or changed there is passed over; the box runs the
// airlock binary and the planted file never runs. Each case is first run
// against the naive choice (the file beside, unchecked), where the planted
// file is what the box runs.
func TestPlantedBoxBinary(t *testing.T) {
	needTier1(t)
	testsupport.Require(t, testsupport.Root) // chown to another user
	tests := []struct {
		name  string
		plant func(t *testing.T, dir string, spec *Spec) // puts a planted airlock-box beside dir/airlock
	}{
		{"group-writable", func(t *testing.T, dir string, _ *Spec) {
			plantFile(t, filepath.Join(dir, BoxBinary), 0o775)
		}},
		{"other-writable", func(t *testing.T, dir string, _ *Spec) {
			plantFile(t, filepath.Join(dir, BoxBinary), 0o757)
		}},
		{"another user's", func(t *testing.T, dir string, _ *Spec) {
			p := filepath.Join(dir, BoxBinary)
			plantFile(t, p, 0o755)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
		{"in a directory others may write", func(t *testing.T, dir string, _ *Spec) {
			plantFile(t, filepath.Join(dir, BoxBinary), 0o755)
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"a link to a writable directory's file", func(t *testing.T, dir string, _ *Spec) {
			w := filepath.Join(t.TempDir(), "w")
			if err := os.Mkdir(w, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(w, 0o777); err != nil {
				t.Fatal(err)
			}
			plantFile(t, filepath.Join(w, BoxBinary), 0o755)
			if err := os.Symlink(filepath.Join(w, BoxBinary), filepath.Join(dir, BoxBinary)); err != nil {
				t.Fatal(err)
			}
		}},
		{"a link into the box's writable directory", func(t *testing.T, dir string, spec *Spec) {
			spec.Writable, spec.Write = true, []string{spec.Workdir}
			plantFile(t, filepath.Join(spec.Workdir, BoxBinary), 0o755)
			if err := os.Symlink(filepath.Join(spec.Workdir, BoxBinary), filepath.Join(dir, BoxBinary)); err != nil {
				t.Fatal(err)
			}
		}},
		{"under the working directory", func(t *testing.T, dir string, _ *Spec) {
			plantFile(t, filepath.Join(dir, BoxBinary), 0o755)
			t.Chdir(filepath.Dir(dir))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, naive := range []bool{true, false} {
				dir := filepath.Join(t.TempDir(), "bin")
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				exe := airlockIn(t, dir)
				spec := walledSpec(t)
				tc.plant(t, dir, &spec)
				naiveBoxBin = naive
				box, err := Plan(spec, Tier1, exe)
				naiveBoxBin = false
				if err != nil {
					t.Fatal(err)
				}
				o := runBox(t, box, []string{"/bin/sh", "-c", "echo ran"})
				ran := strings.Contains(o.out, plantedMark)
				switch {
				case naive && !ran:
					t.Fatalf("naive choice: the planted file did not run (exit %d, %q), so this case shows nothing", o.code, o.out)
				case naive:
					t.Logf("naive choice: the planted file ran (%q)", strings.TrimSpace(o.out))
				case ran:
					t.Fatalf("the planted %s ran in the box: %q", BoxBinary, o.out)
				case o.code != 0 || o.out != "ran\n":
					t.Fatalf("fallback: got exit %d and %q, want 0 and the command's output", o.code, o.out)
				case box.initBin != realPath(t, exe):
					t.Fatalf("the box binds %s, want the airlock binary %s", box.initBin, exe)
				case !strings.Contains(strings.Join(box.Notes, "\n"), "was passed over"):
					t.Errorf("the plan does not say why %s was passed over: %q", BoxBinary, box.Notes)
				default:
					t.Logf("passed over: %s", lastNote(box.Notes, "in-box code"))
				}
			}
		})
	}
}

func plantFile(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(planted), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func lastNote(notes []string, prefix string) string {
	for i := len(notes) - 1; i >= 0; i-- {
		if strings.HasPrefix(notes[i], prefix) {
			return notes[i]
		}
	}
	return ""
}

// TestBoxBinaryFromRoot: a process working in / (a service) still uses
// the airlock-box beside it: / names no place a box writes.
func TestBoxBinaryFromRoot(t *testing.T) {
	needTier1(t)
	dir := t.TempDir()
	exe := airlockIn(t, dir)
	small := filepath.Join(dir, BoxBinary)
	testsupport.CopyBin(t, testsupport.BoxBin(t), small, 0o755)
	t.Chdir("/")
	box, err := Plan(walledSpec(t), Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	if box.initBin != small {
		t.Fatalf("working in /, the box binds %s (notes %q), want %s", box.initBin, box.Notes, small)
	}
}

// TestBoxBinaryNotAFile: a directory named airlock-box is passed over.
func TestBoxBinaryNotAFile(t *testing.T) {
	needTier1(t)
	dir := t.TempDir()
	exe := airlockIn(t, dir)
	if err := os.Mkdir(filepath.Join(dir, BoxBinary), 0o755); err != nil {
		t.Fatal(err)
	}
	box, err := Plan(walledSpec(t), Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	if box.initBin != exe || !strings.Contains(lastNote(box.Notes, "in-box code"), "not a regular file") {
		t.Fatalf("the box binds %s (notes %q), want the airlock binary, passed over as not a regular file", box.initBin, box.Notes)
	}
}

// TestBoxBinaryByHand: every mode of airlock-box run by hand inside a box
// fails closed: each wants descriptors that only airlock hands the box's
// init, and none starts the command it is given.
func TestBoxBinaryByHand(t *testing.T) {
	needTier1(t)
	dir := t.TempDir()
	exe := airlockIn(t, dir)
	testsupport.CopyBin(t, testsupport.BoxBin(t), filepath.Join(dir, BoxBinary), 0o755)
	const cmd = "-- /bin/sh -c 'echo COMMAND-RAN'"
	tests := []struct {
		name, args string
	}{
		{"no mode", ""},
		{"init without descriptors", InitArg},
		{"init with closed descriptors", InitArg + " " + boxconf.FlagConfig + " 7 " + boxconf.FlagStatus + " 8"},
		{"exec wall on a closed descriptor", InitArg + " " + boxconf.FlagExecWall + " 7 " + cmd},
		{"exec wall on stdin", InitArg + " " + boxconf.FlagExecWall + " 0 " + cmd},
		{"seal", InitArg + " " + boxconf.FlagSeal + " /tmp " + boxconf.FlagConfig + " 7 " + boxconf.FlagStatus + " 8"},
		{"warm server", InitArg + " " + boxconf.FlagServe + " 7 " + boxconf.FlagConfig + " 8 " + boxconf.FlagStatus + " 9"},
		{"the host's guard", InitArg + " " + GuardArg},
		{"tier 2's launcher", InitArg + " " + boxconf.GVisorLaunchArg + " " + cmd},
		{"proxy command without a proxy", "__airlock-connect example.com 22"},
		{"the airlock CLI", "run -- /bin/sh -c 'echo COMMAND-RAN'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			box, err := Plan(Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}, Tier1, exe)
			if err != nil {
				t.Fatal(err)
			}
			o := runBox(t, box, []string{"/bin/sh", "-c", InitPath + " " + tc.args + "; echo exit=$?"})
			if strings.Contains(o.out, "COMMAND-RAN") || strings.Contains(o.out, "exit=0\n") || !strings.Contains(o.out, "exit=") {
				t.Fatalf("%s %s inside the box: %q, want a refusal and no command", InitPath, tc.args, o.out)
			}
			t.Logf("%s", strings.TrimSpace(o.out))
		})
	}
}
