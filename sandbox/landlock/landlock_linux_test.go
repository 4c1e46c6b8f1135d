//go:build linux

package landlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// childEnv selects the child mode: a ruleset cannot be taken off a process,
// so the test re-executes itself and restricts the child.
const childEnv = "AIRLOCK_LANDLOCK_TEST_CHILD"

type childReq struct {
	Restrict bool     // apply RestrictExec(Paths) first
	Paths    []string // allowed
	Hide     []string
	Run      []string // programs to execute, each with no arguments
	Read     []string // files to open for reading
	Write    []string // with Restrict: a write wall with these
	Touch    []string // files to create
	Scope    bool     // with Restrict: scopes only
	Signal   bool     // send signal 0 to the parent
}

type childOut struct {
	Skipped []string
	Err     string
	Exec    map[string]string // program: "ok" or the error
	Read    map[string]string // file: "ok" or the error
	Touch   map[string]string
	Signal  string
}

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		os.Exit(childMain(v))
	}
	os.Exit(m.Run())
}

func childMain(spec string) int {
	var req childReq
	if err := json.Unmarshal([]byte(spec), &req); err != nil {
		return 3
	}
	out := childOut{Exec: map[string]string{}, Read: map[string]string{}, Touch: map[string]string{}}
	runtime.LockOSThread()
	if req.Restrict && req.Scope {
		if _, err := Restrict(Rules{Scope: true}); err != nil {
			out.Err = err.Error()
		}
	} else if req.Restrict && req.Write != nil {
		_, err := Restrict(Rules{WriteWall: true, Write: req.Write})
		if err != nil {
			out.Err = err.Error()
		}
	} else if req.Restrict {
		sk, err := RestrictExec(req.Paths, req.Hide)
		out.Skipped = sk
		if err != nil {
			out.Err = err.Error()
		}
	}
	for _, p := range req.Run {
		// Started from this (restricted) thread.
		proc, err := os.StartProcess(p, []string{p}, &os.ProcAttr{})
		if err == nil {
			_, err = proc.Wait()
		}
		out.Exec[p] = "ok"
		if err != nil {
			out.Exec[p] = err.Error()
		}
	}
	if req.Signal {
		out.Signal = "ok"
		if err := unix.Kill(os.Getppid(), 0); err != nil {
			out.Signal = err.Error()
		}
	}
	for _, p := range req.Touch {
		out.Touch[p] = "ok"
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			out.Touch[p] = err.Error()
		}
	}
	for _, p := range req.Read {
		out.Read[p] = "ok"
		if f, err := os.Open(p); err != nil {
			out.Read[p] = err.Error()
		} else {
			f.Close()
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

func runChild(t *testing.T, req childReq) childOut {
	t.Helper()
	spec, _ := json.Marshal(req)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{childEnv + "=" + string(spec)}
	cmd.Stderr = os.Stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	var out childOut
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("child said %q: %v", data, err)
	}
	return out
}

// requireLandlock skips (or, in CI, fails) where the kernel has no Landlock.
func requireLandlock(t *testing.T) int {
	t.Helper()
	abi, err := ABI()
	if err != nil {
		t.Fatal(err)
	}
	if abi < 1 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this kernel has no Landlock")
		}
		t.Skip("this kernel has no Landlock")
	}
	return abi
}

// loader is the dynamic loader that /usr/bin/true names (PT_INTERP), found
// the way the kernel finds it.
func loader(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"} {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
	}
	t.Skip("no known dynamic loader here")
	return ""
}

// TestRestrictExec: without the ruleset both programs run; with it only the
// listed one (and its loader) does, and the other is refused with EACCES.
func TestRestrictExec(t *testing.T) {
	abi := requireLandlock(t)
	t.Logf("Landlock ABI %d", abi)
	run := []string{"/usr/bin/true", "/usr/bin/false"}
	control := runChild(t, childReq{Run: run})
	for _, p := range run {
		if control.Exec[p] != "ok" {
			t.Fatalf("control: %s: %s", p, control.Exec[p])
		}
	}
	got := runChild(t, childReq{Restrict: true, Paths: []string{"/usr/bin/true", loader(t), "/no/such/program"}, Run: run})
	if got.Exec["/usr/bin/false"] == "ok" {
		t.Fatal("an unlisted program ran")
	}
	if got.Err != "" {
		t.Fatalf("RestrictExec: %s", got.Err)
	}
	if got.Exec["/usr/bin/true"] != "ok" {
		t.Errorf("listed /usr/bin/true: %s, want it to run", got.Exec["/usr/bin/true"])
	}
	if want := (&os.PathError{Op: "fork/exec", Path: "/usr/bin/false", Err: unix.EACCES}).Error(); got.Exec["/usr/bin/false"] != want {
		t.Errorf("unlisted /usr/bin/false: %q, want %q", got.Exec["/usr/bin/false"], want)
	}
	if fmt.Sprint(got.Skipped) != "[/no/such/program]" {
		t.Errorf("skipped %v, want [/no/such/program]", got.Skipped)
	}
}

func TestErrorNamesTheStep(t *testing.T) {
	e := &Error{Op: "landlock_add_rule", Path: "/usr/bin/x", Err: unix.EINVAL}
	if got, want := e.Error(), "landlock: landlock_add_rule /usr/bin/x: invalid argument"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(e, unix.EINVAL) {
		t.Error("Error does not unwrap to its errno")
	}
}

// TestRestrictExecHide: with the PATH's directory hidden, an unlisted
// program there cannot be read (so the loader cannot load it as its
// argument), while listed programs and the rest of the system still can.
func TestRestrictExecHide(t *testing.T) {
	requireLandlock(t)
	ld := loader(t)
	dir, err := filepath.EvalSymlinks("/usr/bin")
	if err != nil {
		t.Skip(err)
	}
	reads := []string{"/usr/bin/true", "/usr/bin/false", "/etc/passwd", ld}
	control := runChild(t, childReq{Read: reads})
	for _, p := range reads {
		if control.Read[p] != "ok" {
			t.Fatalf("control: read %s: %s", p, control.Read[p])
		}
	}
	got := runChild(t, childReq{Restrict: true, Paths: []string{"/usr/bin/true", ld}, Hide: []string{dir}, Read: reads,
		Run: []string{"/usr/bin/true"}})
	if got.Err != "" {
		t.Fatalf("RestrictExec: %s", got.Err)
	}
	for p, want := range map[string]string{"/usr/bin/true": "ok", "/etc/passwd": "ok", ld: "ok",
		"/usr/bin/false": "open /usr/bin/false: permission denied"} {
		if got.Read[p] != want {
			t.Errorf("read %s: got %q, want %q", p, got.Read[p], want)
		}
	}
	if got.Exec["/usr/bin/true"] != "ok" {
		t.Errorf("listed /usr/bin/true: %s, want it to run", got.Exec["/usr/bin/true"])
	}
}

// TestRestrictWrite: with the write wall, files are made only beneath the
// granted directory; without it, anywhere the process may write.
func TestRestrictWrite(t *testing.T) {
	requireLandlock(t)
	granted, other := t.TempDir(), t.TempDir()
	a, b := filepath.Join(granted, "a"), filepath.Join(other, "b")
	control := runChild(t, childReq{Touch: []string{a, b}})
	if control.Touch[a] != "ok" || control.Touch[b] != "ok" {
		t.Fatalf("control: %v", control.Touch)
	}
	os.Remove(a)
	os.Remove(b)
	got := runChild(t, childReq{Restrict: true, Write: []string{granted}, Touch: []string{a, b}})
	if got.Err != "" {
		t.Fatal(got.Err)
	}
	if got.Touch[a] != "ok" {
		t.Errorf("granted %s: %s", a, got.Touch[a])
	}
	if want := "open " + b + ": permission denied"; got.Touch[b] != want {
		t.Errorf("outside the grant: %q, want %q", got.Touch[b], want)
	}
}

// TestRestrictScope: a scoped process cannot signal its parent, which is
// outside its ruleset; without the scope it can.
func TestRestrictScope(t *testing.T) {
	if abi := requireLandlock(t); abi < scopeABI {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and Landlock ABI %d has no scopes (needs %d)", abi, scopeABI)
		}
		t.Skipf("Landlock ABI %d has no scopes", abi)
	}
	if got := runChild(t, childReq{Signal: true}); got.Signal != "ok" {
		t.Fatalf("control: signal the parent: %s", got.Signal)
	}
	got := runChild(t, childReq{Restrict: true, Scope: true, Signal: true})
	if got.Err != "" {
		t.Fatal(got.Err)
	}
	if got.Signal != unix.EPERM.Error() {
		t.Errorf("scoped: signal the parent: %q, want %q", got.Signal, unix.EPERM.Error())
	}
}
