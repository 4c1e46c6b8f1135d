package runner

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// What a warm box's PID namespace would tell a call of the calls before it
// in that box, and the runner takes away (docs/warm.md lists what is left):
//
//   - the process ids: the kernel gives them out in turn, so the first id
//     a call is given (and /proc/loadavg, ns_last_pid) counts every
//     process the box ran before. Between calls, once nothing of the last
//     call is left, the runner sets the namespace's last id back to 1
//     (resetPids), and each call is given the ids the first call was.
//   - the init's own counters: /proc/1/stat is readable by any process
//     however undumpable the init, and its children's CPU time and page
//     faults (cutime, cminflt) add up every call it reaped, as its context
//     switches and schedstat add up its work for each. As the box begins,
//     the box's /proc is made to show a call only the processes it may
//     trace (hidepid=invisible, hidePids): its own, never the init or its
//     threads.
//
// Both need CAP_SYS_ADMIN over the box's namespaces, which the runner has
// when it runs as root and no process in the box has; a runner without it
// keeps the box as it was, and the call's description says so.

// privateNote is the note of a warm box whose /proc and process ids are
// kept so.
const privateNote = "warm box: its /proc shows a call only the processes it may trace (its own, not the box's init), and its process ids are set back before every call"

// privacyNote is the note of a warm box whose process ids and init are not
// kept from its calls.
const privacyNote = "warm box: its calls share its process ids and see its init's counters (the runner cannot reset them without CAP_SYS_ADMIN): a call can tell how many processes, and how much CPU, the calls before it in this box used"

// fspick flags (linux/mount.h).
const (
	fspickCloexec   = 0x1
	fspickEmptyPath = 0x8
)

// hidePids makes the /proc of the box whose PID 1 the pidfd names show
// each process only the processes it may trace (hidepid=invisible): the
// init is not dumpable, so no call sees it or its threads. The proc is
// the box's own (a superblock of its PID namespace): the host's and other
// boxes' are not touched.
func hidePids(pidfd int) error {
	pid, err := pidOf(pidfd)
	if err != nil {
		return err
	}
	dir, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root/proc", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("the box's /proc: %w", err)
	}
	defer unix.Close(dir)
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return err // ended while opened: the pid may name another process
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(dir, &fs); err != nil || fs.Type != unix.PROC_SUPER_MAGIC {
		return fmt.Errorf("the box's /proc is not a proc (%v)", err)
	}
	// A proc of another PID namespace than this process's has no "self"
	// for it: one that names this process is the host's (bound into the
	// box), whose options are not the box's to change.
	if self, err := readlinkAt(dir, "self"); !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("the box's /proc is not of the box's PID namespace (self %q, %v)", self, err)
	}
	empty, err := unix.BytePtrFromString("")
	if err != nil {
		return err
	}
	r, _, e := unix.Syscall(unix.SYS_FSPICK, uintptr(dir), uintptr(unsafe.Pointer(empty)), fspickCloexec|fspickEmptyPath)
	if e != 0 {
		return fmt.Errorf("fspick the box's /proc: %w", e)
	}
	fc := int(r)
	defer unix.Close(fc)
	if err := unix.FsconfigSetString(fc, "hidepid", "ptraceable"); err != nil {
		return fmt.Errorf("hidepid: %w", err)
	}
	if err := unix.FsconfigReconfigure(fc); err != nil {
		return fmt.Errorf("reconfigure the box's /proc: %w", err)
	}
	return nil
}

// resetPidsTimeout bounds the run of the init binary that resets a box's
// process ids.
const resetPidsTimeout = 5 * time.Second

// resetPids sets the last process id of the PID namespace of the box whose
// PID 1 the pidfd names back to 1. Only a process started in that
// namespace can (ns_last_pid speaks for its writer's namespace): the box's
// init binary (boxconf.FlagResetPids), started from a thread of this
// process moved into it, with the host's mounts and the runner's
// capabilities. It must run only while nothing of a call is in the box.
func resetPids(pidfd int, bin string) error {
	if err := inNamespace(pidfd, unix.CLONE_NEWPID, "/proc/thread-self/ns/pid", func() error { return resetIn(bin) }); err != nil {
		return errs.Wrap(errs.Unavailable, err, "run: reset the warm box's process ids")
	}
	return nil
}

// resetIn runs the init binary's FlagResetPids and waits for it.
func resetIn(bin string) error {
	var diag bytes.Buffer
	cmd := exec.Command(bin, sandbox.InitArg, boxconf.FlagResetPids)
	cmd.Stderr = &limitedBuffer{b: &diag, n: 4 << 10}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	t := time.AfterFunc(resetPidsTimeout, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	t.Stop()
	if err != nil {
		return fmt.Errorf("%v: %s", err, oneLine(diag.String()))
	}
	return nil
}

// readlinkAt reads the link name at dir.
func readlinkAt(dir int, name string) (string, error) {
	buf := make([]byte, 256)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
