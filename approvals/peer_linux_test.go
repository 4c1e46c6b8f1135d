package approvals

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// pidRoleEnv, set in a child's environment, makes the test binary play a
// role of TestNamespacesOfTheConnector (TestMain): "connect" connects to
// the socket $AIRLOCK_APPROVALS_SOCK and exits; "reuse", in a pid namespace
// of its own, has a "connect" child's pid go to another process after the
// connection's peer is taken, and prints what each shape of the check said.
const (
	pidRoleEnv = "AIRLOCK_APPROVALS_PID_ROLE"
	pidSockEnv = "AIRLOCK_APPROVALS_SOCK"
)

func pidRole(role string) int {
	if role == "connect" {
		c, err := net.Dial("unix", os.Getenv(pidSockEnv))
		if err != nil {
			fmt.Println(err)
			return 1
		}
		c.Close()
		return 0
	}
	for try := 0; try < 20; try++ {
		if done := reuseOnce(); done != "" {
			fmt.Print(done)
			return 0
		}
	}
	fmt.Println("outcome=no-reuse")
	return 0
}

// reuseOnce is what the two shapes of the check said once a connector's
// pid went to another process, "" when the kernel gave the pid to another
// than the one started for it.
func reuseOnce() string {
	dir, err := os.MkdirTemp("", "approvals-pid")
	if err != nil {
		return "outcome=" + err.Error() + "\n"
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return "outcome=" + err.Error() + "\n"
	}
	defer ln.Close()
	self, _ := os.Executable()
	a := exec.Command(self)
	a.Env = append(os.Environ(), pidRoleEnv+"=connect", pidSockEnv+"="+sock)
	if err := a.Start(); err != nil {
		return "outcome=" + err.Error() + "\n"
	}
	c, err := ln.AcceptUnix()
	if err != nil {
		return "outcome=" + err.Error() + "\n"
	}
	defer c.Close()
	cred, err := peerCred(c)
	if err != nil {
		return "outcome=" + err.Error() + "\n"
	}
	defer cred.close()
	a.Wait()
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(cred.Pid-1)), 0); err != nil {
		return "outcome=no-ns_last_pid: " + err.Error() + "\n"
	}
	b := exec.Command("sleep", "30")
	if err := b.Start(); err != nil {
		return "outcome=" + err.Error() + "\n"
	}
	defer func() { b.Process.Kill(); b.Wait() }()
	if b.Process.Pid != cred.Pid {
		return ""
	}
	return fmt.Sprintf("by-number=%v\npinned=%v\n", namespacesByNumber(cred.Pid), cred.sameNamespaces())
}

// namespacesByNumber is the old shape of the check: /proc/<pid> read by
// number after SO_PEERCRED.
func namespacesByNumber(pid int) error {
	for _, ns := range namespaces {
		mine, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return err
		}
		theirs, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/" + ns)
		if err != nil {
			return err
		}
		if mine != theirs {
			return fmt.Errorf("%s namespace %s is not %s", ns, theirs, mine)
		}
	}
	return nil
}

// TestNamespacesOfTheConnector: the namespaces checked are the connecting
// process's own. Its pid given to another process after it connected (in a
// pid namespace of the test's own, with ns_last_pid), a check by number
// (the old shape) reads the other process and passes; the check pinned by
// the connector's pidfd fails.
func TestNamespacesOfTheConnector(t *testing.T) {
	got := testsupport.InPidNamespace(t, pidRoleEnv+"=reuse")
	t.Logf("%s", got)
	if !strings.Contains(got, "by-number=<nil>\n") {
		t.Fatalf("got %q, want the check by number to pass on the new process (the old shape's flaw)", got)
	}
	if strings.Contains(got, "pinned=<nil>") || !strings.Contains(got, "pinned=") {
		t.Fatalf("got %q, want the pinned check to fail", got)
	}
}
