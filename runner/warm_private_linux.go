package runner

import (
	"bufio"
	"errors"
	"fmt"
	"os"
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
//     (pidResetter), and each call is given the ids the first call was.
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

// resetPidsTimeout bounds the wait for the answer of a box's reset server.
const resetPidsTimeout = 5 * time.Second

// pidResetter is a warm box's reset server: the init binary's
// FlagResetPids, started once in the box's PID namespace, from a thread of
// this process moved into it, with the host's mounts. Only a process
// started in that namespace can set its last process id (ns_last_pid
// speaks for its writer's namespace); one started for each call cost
// milliseconds of CPU, a byte on a pipe costs microseconds. Its pipes end
// only in it and here (close-on-exec in this process), so no call talks to
// it; not dumpable and with a capability no call has, it is hidden from
// the box's /proc (hidepid) and cannot be traced; run as a user no process
// of a box is (boxinit: resetUID), it cannot be signalled, Landlock's
// signal scope or not (TestWarmPidResetterOutOfReach). It ends at EOF on
// its stdin (when this process ends too: the kernel closes its end), and
// with the box's PID namespace. Not by Pdeathsig: the runtime's check
// after setting it, that the parent is still the one that forked, sees
// parent 0 across PID namespaces and kills the child at once. Its own pid is
// taken for the box's life, so each call is still given the same ids.
type pidResetter struct {
	req    *os.File      // its stdin: a byte asks for a reset
	ans    *bufio.Reader // its stdout: "ok", or why not
	ansF   *os.File
	cmd    *exec.Cmd
	exited chan struct{} // closed once it has ended and is reaped
}

// startPidResetter starts the reset server of the box whose PID 1 the
// pidfd names and has it reset the box's process ids once.
func startPidResetter(pidfd int, bin string) (*pidResetter, error) {
	var pr *pidResetter
	err := inNamespace(pidfd, unix.CLONE_NEWPID, "/proc/thread-self/ns/pid", func() (err error) {
		pr, err = spawnPidResetter(bin)
		return err
	})
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "run: start the warm box's process id reset")
	}
	if err := pr.reset(); err != nil {
		pr.close()
		return nil, err
	}
	return pr, nil
}

// spawnPidResetter starts the reset server on the calling thread, and a
// goroutine that reaps it (the box's PID namespace is not gone, nor its
// init's end reported, until it is).
func spawnPidResetter(bin string) (*pidResetter, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ansR, ansW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	cmd := exec.Command(bin, sandbox.InitArg, boxconf.FlagResetPids)
	cmd.Stdin, cmd.Stdout = reqR, ansW
	// It lives as long as the box: nothing of this process's it needs not.
	cmd.Env, cmd.Dir = []string{}, "/"
	err = cmd.Start()
	reqR.Close()
	ansW.Close()
	if err != nil {
		reqW.Close()
		ansR.Close()
		return nil, err
	}
	pr := &pidResetter{req: reqW, ans: bufio.NewReaderSize(ansR, 512), ansF: ansR, cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(pr.exited) }()
	return pr, nil
}

// reset has the server set the box's last process id back to 1. It must
// run only while nothing of a call is in the box. Any failure leaves the
// server ended: the box, not reset, serves no further call.
func (pr *pidResetter) reset() error {
	err := pr.ask()
	if err != nil {
		pr.close()
		return errs.Wrap(errs.Unavailable, err, "run: reset the warm box's process ids")
	}
	return nil
}

func (pr *pidResetter) ask() error {
	if err := pr.ansF.SetReadDeadline(time.Now().Add(resetPidsTimeout)); err != nil {
		return err
	}
	if _, err := pr.req.Write([]byte{1}); err != nil {
		return err
	}
	line, err := pr.ans.ReadString('\n')
	if err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	if line != "ok\n" {
		return fmt.Errorf("%s", oneLine(line))
	}
	return nil
}

// close ends the server (EOF, then a kill if it does not end at once) and
// waits until it is reaped.
func (pr *pidResetter) close() {
	pr.req.Close()
	pr.ansF.Close()
	select {
	case <-pr.exited:
		return
	case <-time.After(time.Second):
	}
	pr.cmd.Process.Kill()
	<-pr.exited
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
