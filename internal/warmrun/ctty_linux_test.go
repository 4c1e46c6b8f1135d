package warmrun

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// pidReuseRole, in a pid namespace of its own, opens the /proc directory of
// a child, ends the child and has the kernel give its pid to a new one
// (ns_last_pid), then prints what a read of the pid's stat by number and
// one through the handle found.
func pidReuseRole() int {
	for try := 0; try < 20; try++ {
		a := exec.Command("sleep", "30")
		if err := a.Start(); err != nil {
			fmt.Printf("outcome=no-child reason=%v\n", err)
			return 0
		}
		pid := a.Process.Pid
		d, err := openProc(pid)
		a.Process.Kill()
		a.Wait()
		if err != nil {
			fmt.Printf("outcome=no-proc reason=%v\n", err)
			return 0
		}
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			fmt.Printf("outcome=no-ns_last_pid reason=%v\n", err)
			return 0
		}
		b := exec.Command("sleep", "30")
		if err := b.Start(); err != nil {
			fmt.Printf("outcome=no-child reason=%v\n", err)
			return 0
		}
		reused := b.Process.Pid == pid
		_, byNumber := os.ReadFile(proc(pid) + "/stat")
		_, throughHandle := cttyOf(d)
		d.close()
		b.Process.Kill()
		b.Wait()
		if reused {
			fmt.Printf("by-number=%v\nthrough-handle=%v\n", byNumber, throughHandle)
			return 0
		}
	}
	fmt.Println("outcome=no-reuse")
	return 0
}

// TestCttyReadThroughHandle: the caller's terminal is read through the
// /proc directory opened for it, as its other facts are. Its pid given to
// another process meanwhile, a read by number (the old shape) reads the
// other process's stat; the handle's read fails.
func TestCttyReadThroughHandle(t *testing.T) {
	got := testsupport.InPidNamespace(t, roleEnv+"=pid-reuse")
	t.Logf("%s", got)
	if !strings.Contains(got, "by-number=<nil>\n") {
		t.Fatalf("got %q, want the read by number to read the new process (the old shape's flaw)", got)
	}
	if strings.Contains(got, "through-handle=<nil>") || !strings.Contains(got, "through-handle=") {
		t.Fatalf("got %q, want the read through the handle to fail", got)
	}
}
