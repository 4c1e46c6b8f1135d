package boxinit

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// nsLastPid is the sysctl that names the last process id given out in the
// writer's own PID namespace (the one it was started in), whatever
// namespace the /proc it is opened through belongs to.
const nsLastPid = "/proc/sys/kernel/ns_last_pid"

// resetUID is the user the reset server runs as: none a box's process is
// (a box maps only the runner's own uid, root), so no call may signal it
// (the init's own kill(-1) between calls included).
const resetUID = 65534

// resetPids serves a warm box for as long as it lives: for each byte read
// on stdin it sets the last PID of the namespace it was started in back to
// 1, so the next process made there is given the lowest free id above the
// init's (and its own), as in a box no call has run in yet, and answers
// "ok" or why not on stdout; at EOF it ends. The runner starts it once, in
// the host's mounts, inside a warm box's PID namespace; writing needs
// CAP_CHECKPOINT_RESTORE over that namespace, which the runner has and no
// process of the box does.
func resetPids() int {
	// The capability is kept by this thread alone, which makes every
	// write (a goroutine locked to a thread makes its system calls there).
	runtime.LockOSThread()
	if err := keepOnlyReset(); err != nil {
		fmt.Printf("drop privileges: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 125
	}
	var b [1]byte
	for {
		if _, err := os.Stdin.Read(b[:]); err != nil {
			return 0 // the runner is done with the box
		}
		answer := "ok\n"
		if err := os.WriteFile(nsLastPid, []byte("1\n"), 0); err != nil {
			answer = strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
		}
		if _, err := os.Stdout.WriteString(answer); err != nil {
			return 125
		}
	}
}

// keepOnlyReset makes this process the unprivileged resetUID, every
// thread of it without a capability but the calling one, which keeps
// CAP_CHECKPOINT_RESTORE alone; and the process not dumpable. It lives
// beside a box's calls, in their PID namespace, for the box's life. It
// never executes anything, so its bounding set is moot.
func keepOnlyReset() error {
	// This thread's own: the others lose every capability with root.
	if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("keep capabilities: %w", err)
	}
	// These three change every thread (libc's or the runtime's broadcast).
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(resetUID, resetUID, resetUID); err != nil {
		return fmt.Errorf("setresgid: %w", err)
	}
	if err := syscall.Setresuid(resetUID, resetUID, resetUID); err != nil {
		return fmt.Errorf("setresuid: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	bit := uint32(1) << (unix.CAP_CHECKPOINT_RESTORE % 32)
	data[unix.CAP_CHECKPOINT_RESTORE/32].Effective = bit
	data[unix.CAP_CHECKPOINT_RESTORE/32].Permitted = bit
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	// After the uid change, which resets it to the system's default.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("not dumpable: %w", err)
	}
	return nil
}
