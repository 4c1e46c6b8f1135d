package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox/landlock"
)

// landlockHideEnv, set, makes this test binary a wrapper: it puts itself in
// a Landlock domain in which nothing beneath the directory named can be
// read, then executes its arguments there.
const landlockHideEnv = "AIRLOCK_TEST_LANDLOCK_HIDE"

func TestMain(m *testing.M) {
	if hide := os.Getenv(landlockHideEnv); hide != "" {
		os.Exit(landlockExec(hide, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// landlockExec executes argv in a domain that hides hide (and executes only
// from the system's directories and argv[0]'s). The domain sets
// no_new_privs, as the kernel asks of a process without CAP_SYS_ADMIN.
func landlockExec(hide string, argv []string) int {
	runtime.LockOSThread()
	exe := []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", filepath.Dir(argv[0])}
	if _, err := landlock.Restrict(landlock.Rules{ExecWall: true, Exec: exe, Hide: []string{hide}}); err != nil {
		os.Stderr.WriteString("landlock: " + err.Error() + "\n")
		return 111
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	os.Stderr.WriteString("exec: " + err.Error() + "\n")
	return 111
}

// TestWarmLandlockedCallerGoesCold: `airlock run -- cat F` from a process in
// a Landlock domain that hides F, with a warm server whose every /proc fact
// is the caller's (started with no_new_privs, as the domain sets it): the
// domain shows in none of them. Outside the domain the run is served warm
// and prints F; inside it, it goes cold, saying why, and is held by its
// own domain (which here lets no box be built at all). The server's side,
// a hand-written client answering anyway, is internal/warmrun's
// TestLandlockedCallerGoesCold.
func TestWarmLandlockedCallerGoesCold(t *testing.T) {
	if abi, err := landlock.ABI(); err != nil || abi < 1 {
		testsupport.Missing(t, "no Landlock here (ABI %d, %v)", abi, err)
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		testsupport.Missing(t, "setpriv is not installed: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := startWarm(t, func(c *exec.Cmd) {
		c.Path, c.Args = setpriv, append([]string{setpriv, "--no-new-privs"}, c.Args...)
	})
	dir := t.TempDir()
	hidden := filepath.Join(dir, "hidden")
	if err := os.Mkdir(hidden, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(hidden, "F")
	writeFile(t, hidden, "F", "the-hidden-text\n")
	args := []string{"run", "--", "cat", file}

	r := f.run(t, "verbose", dir, "", args, setpriv, "--no-new-privs")
	if r.code != 0 || r.stdout != "the-hidden-text\n" || strings.Contains(r.stderr, "running cold") {
		t.Fatalf("outside the domain: got %+v, want F printed by a warm run", r)
	}
	r = f.run(t, "verbose", dir, "", args, "env", landlockHideEnv+"="+hidden, self)
	if strings.Contains(r.stdout+r.stderr, "the-hidden-text") || r.code == 0 {
		t.Fatalf("inside the domain: got %+v, want F not read", r)
	}
	if !strings.Contains(r.stderr, "running cold: cannot read the warm server's process: this process is confined apart from it") {
		t.Fatalf("inside the domain: got %+v, want a cold run saying why", r)
	}
}
