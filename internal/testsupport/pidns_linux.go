package testsupport

import (
	"os"
	"os/exec"
	"testing"
)

// InPidNamespace runs this test binary again, with env added, as the first
// process of a pid namespace of its own (with its own /proc), and returns
// what it printed: a test whose pids must be given out again
// (ns_last_pid) does so there, away from every other process's. It needs
// root and unshare; elsewhere the test is missing them.
func InPidNamespace(t testing.TB, env ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "a pid namespace and ns_last_pid need root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		Missing(t, "unshare is not installed: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", self)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return string(out)
}
