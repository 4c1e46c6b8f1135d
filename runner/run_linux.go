package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/starttrace"
	"github.com/airlock-run/airlock/sandbox"
)

// waitDelay bounds how long Wait keeps copying output after the command
// ended (a tier-0 grandchild that kept a pipe open, an input that never
// ends).
const waitDelay = 500 * time.Millisecond

// Run runs req and reports how it ended. exe is the airlock binary, re-executed
// inside the box as its init (a test binary that dispatches boxinit.Arg in
// TestMain works too).
//
// Run marks every descriptor of the calling process above the standard
// three close-on-exec before it starts anything, so nothing a careless
// caller left inheritable reaches a command at any tier.
//
// An error means airlock could not run the command (nothing ran, or the box
// broke); its class maps to exit 125 (errs.Unavailable, errs.Invalid,
// errs.NotFound). The command's own failure is a Result, not an error.
func Run(ctx context.Context, exe string, req Request) (Result, error) {
	r, err := prepare(exe, req)
	if err != nil {
		return Result{}, err
	}
	defer r.finish()
	cmd, err := r.launch()
	if err != nil {
		return Result{Description: r.desc}, err
	}
	res, err := r.wait(ctx, cmd)
	if req.Ended != nil {
		req.Ended(res, err) // before finish, deferred above
	}
	return res, err
}

// prepare checks req and plans its box.
func prepare(exe string, req Request) (*run, error) {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, errs.Invalidf("run: no command")
	}
	if req.Tier == sandbox.TierAuto {
		return nil, sandbox.ErrAuto("runner")
	}
	// The cgroup is made while the box is planned: neither needs the
	// other (Plan gives the tier asked for or fails), and on two cores
	// the half millisecond of directory writes runs beside the plan.
	cg := startGroup(req)
	ping := startPing(req) // net_linux.go
	go warmStart()
	box, err := sandbox.Plan(req.Spec, req.Tier, exe)
	if err != nil {
		cg.discard()
		return nil, err
	}
	tr, err := runnerFor(box)
	if err != nil {
		cg.discard()
		box.Close()
		return nil, err
	}
	r := newRun(exe, req, box, tr, cg)
	r.ping = ping
	return r, nil
}

// newRun is the run of req in the planned box, started by tr, with cg the
// cgroup being made for it (nil when it asks for no limit).
func newRun(exe string, req Request, box *sandbox.Box, tr tierRunner, cg pendingGroup) *run {
	r := &run{req: req, box: box, tr: tr, exe: exe, start: time.Now(), pendingCG: cg}
	r.desc = Description{
		Tier: int(box.Tier), Mechanism: box.Mechanism, Version: box.Version, Seccomp: box.Seccomp,
		Namespaces: box.Namespaces, Protected: box.Protected, Workdir: req.Spec.Workdir,
		Writable: req.Spec.Writable, Env: envNames(req.Spec.Env), Notes: append([]string(nil), box.Notes...),
		Limits:  Limits{Limits: req.Spec.Limits},
		Network: "none",
	}
	if req.Spec.Net != nil {
		r.desc.Network = "egress proxy"
	}
	tr.describe(&r.desc)
	return r
}

type run struct {
	req Request
	box *sandbox.Box
	// tr is what the box's tier does differently (tier_linux.go).
	tr    tierRunner
	exe   string
	start time.Time
	// execAt is when bubblewrap (or the command) was started.
	execAt time.Time
	desc   Description
	cg     *group
	guard  *guardProc
	// stderrDone closes when the command's stderr pipe is drained.
	stderrDone <-chan struct{}
	// stream, when set, is the command's stdin and stdout (Start).
	stream *streams
	// closers run in finish.
	closers   []func()
	truncated func() bool
	// killed is set when the caller ended the run (Process.Kill).
	killed atomic.Bool
	// nsInit, when set, is a pidfd of the box's PID 1: the run is not over
	// until it is gone, since its end is what empties the namespace.
	nsInit int
	// pendingCG is the cgroup being made beside the plan; launch takes it.
	pendingCG pendingGroup
	// ping is the egress proxy's answer, asked beside the plan, and net
	// what the start trace needs of the served network (net_linux.go).
	ping pendingPing
	net  netRun
}

// pendingGroup is a cgroup being made (startGroup); nil when the run asks
// for no limits.
type pendingGroup chan groupMade

type groupMade struct {
	g   *group
	err error
}

// startGroup starts making the cgroup of req's limits, when it has any.
func startGroup(req Request) pendingGroup {
	lim := req.Spec.Limits
	if lim.MemoryBytes <= 0 && lim.CPU <= 0 && lim.Pids <= 0 {
		return nil
	}
	ch := make(pendingGroup, 1)
	go func() {
		defer starttrace.Begin("cgroup")()
		g, err := newGroup(hostLimits(req.Tier, lim))
		if err == nil {
			// On v1 the thread bubblewrap forks from joins the group
			// here, beside the plan, not between the plan and the start.
			g.g.Place()
		}
		ch <- groupMade{g, err}
	}()
	return ch
}

// warmStart does beside the plan what the process's first start of a
// program would do on the path: the os package checks once whether pidfds
// work, forking and reaping a child of its own to see clone(CLONE_PIDFD)
// work. Done at bubblewrap's start, that fork would come between the plan
// and bubblewrap, from the thread placed in the box's cgroup.
func warmStart() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Release()
	}
}

// wait returns the group once made.
func (p pendingGroup) wait() (*group, error) {
	if p == nil {
		return nil, nil
	}
	m := <-p
	return m.g, m.err
}

// discard removes the group of a run that never launched.
func (p pendingGroup) discard() {
	if g, _ := p.wait(); g != nil {
		g.close()
	}
}

// streams are the command's ends of Start's pipes.
type streams struct{ stdin, stdout *os.File }

// finish releases the run in an order that never leaves a stub or a cgroup
// behind: processes first, then the box's descriptors and stubs, and only
// then the guard that would have done both had airlock died.
func (r *run) finish() {
	defer starttrace.Begin("finish")()
	if r.pendingCG != nil { // never launched: the group was not taken
		r.pendingCG.discard()
		r.pendingCG = nil
	}
	for _, c := range r.closers {
		c()
	}
	if r.cg != nil {
		r.cg.close()
	}
	r.box.Close()
	if r.guard != nil {
		r.guard.done()
	}
}

// launch starts the command: cgroup, guard, then what the box's tier
// starts (the command itself, or bubblewrap) and its configuration.
func (r *run) launch() (*exec.Cmd, error) {
	req := r.req
	pending := r.pendingCG
	r.pendingCG = nil
	if pending != nil {
		// A limit asked for and not enforceable is refused: the command
		// never runs without it.
		endCG := starttrace.Begin("cgroup-wait")
		cg, err := pending.wait()
		endCG()
		if err != nil {
			return nil, err
		}
		r.cg = cg
		if err := r.box.RecordCgroup(cg.paths()); err != nil { // tier 2: reaped by it after a crash
			return nil, err
		}
		r.desc.Limits.Cgroup = cg.version
		r.desc.Limits.Controllers = cg.controllers()
	}
	// The guard is needed only for placeholders: should airlock die, its
	// box dies with it (bubblewrap's --die-with-parent ends the PID
	// namespace), and a cgroup left empty is swept by the next run.
	if len(r.box.Stubs) > 0 {
		g, err := startGuard(r.exe, r.box.Stubs, r.cg)
		if err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "run: start the cleanup guard")
		}
		r.guard = g
	}

	stdout, stderr, truncated := outputs(req)
	r.truncated = truncated
	cmd := &exec.Cmd{
		Env:       []string{},
		Stdout:    stdout,
		WaitDelay: waitDelay,
		SysProcAttr: &syscall.SysProcAttr{
			// The box dies with airlock; the process group lets the wall
			// clock reach every process of a tier-0 run too.
			Pdeathsig: syscall.SIGKILL,
			Setpgid:   true,
		},
	}
	if r.stream != nil {
		cmd.Stdin, cmd.Stdout = r.stream.stdin, r.stream.stdout
	} else {
		closeStdin, err := stdinPipe(cmd, req.Stdin)
		if err != nil {
			return nil, err
		}
		r.closers = append(r.closers, closeStdin)
	}
	if err := r.tr.command(r, cmd, stderr); err != nil {
		return nil, err
	}
	asBoxUser(r, cmd)
	// Last, so that what it waits for ran beside all of the above.
	if err := req.beforeStart(); err != nil {
		return nil, err
	}
	// Nothing airlock's caller left open without close-on-exec may reach
	// the command: every descriptor above the standard three is marked, and
	// the ones meant for bubblewrap are placed by the start itself.
	unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	r.execAt = time.Now()
	err := r.startIn(cmd)
	starttrace.Since("bwrap-start", r.execAt)
	if err != nil {
		// The box's descriptors close with it in finish.
		return nil, errs.Wrap(errs.Unavailable, err, "run: start %s", filepath.Base(cmd.Path))
	}
	pid := r.tr.started(r, cmd)
	if r.guard != nil {
		r.guard.started(pid)
	}
	if err := r.tr.configure(r); err != nil {
		r.killAll(cmd)
		cmd.Wait()
		return nil, errs.Wrap(errs.Unavailable, err, "run")
	}
	return cmd, nil
}

// wait waits for the command under the wall-clock limit and ctx, ends
// whatever it left, and reads how it ended.
func (r *run) wait(ctx context.Context, cmd *exec.Cmd) (Result, error) {
	lim := r.req.Spec.Limits

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var wall <-chan time.Time
	if lim.Wall > 0 {
		t := time.NewTimer(lim.Wall)
		defer t.Stop()
		wall = t.C
	}
	var res Result
	var waitErr error
	select {
	case waitErr = <-done:
	case <-wall:
		res.WallTimeout = true
		r.killAll(cmd)
		waitErr = <-done
	case <-ctx.Done():
		r.killAll(cmd)
		<-done
		r.cleanup(cmd)
		return Result{}, errs.Wrap(errs.Unavailable, ctx.Err(), "run: cancelled")
	}
	starttrace.Since("box-run", r.execAt)
	r.traceNet()
	// Whatever the command left behind goes with it.
	endClean := starttrace.Begin("box-teardown")
	r.cleanup(cmd)
	endClean()
	if r.stderrDone != nil {
		select {
		case <-r.stderrDone:
		case <-time.After(waitDelay):
		}
	}
	if r.cg != nil {
		r.desc.Limits.OOM = r.cg.oom()
		if r.desc.Limits.OOM {
			r.desc.Notes = append(r.desc.Notes, "the memory limit was reached")
		}
	}
	res.Truncated = r.truncated()
	r.desc.DurationMS = since(r.start)

	if r.killed.Load() && !res.WallTimeout {
		res.ExitCode, res.Signal = 128+9, 9
		r.desc.Notes = append(r.desc.Notes, "ended by the caller (Kill)")
		res.Description = r.desc
		return res, nil
	}
	if err := r.tr.exit(r, cmd, waitErr, &res); err != nil {
		return Result{Description: r.desc}, err
	}
	if res.WallTimeout {
		res.ExitCode, res.Signal = errs.ExitWallClock, 0
		r.desc.Notes = append(r.desc.Notes, fmt.Sprintf("the wall-clock limit of %s ended the command", lim.Wall))
	}
	res.Description = r.desc
	return res, nil
}

// startIn starts cmd inside the run's cgroup, so the whole tree begins there.
func (r *run) startIn(cmd *exec.Cmd) error {
	if r.cg == nil {
		return cmd.Start()
	}
	return r.cg.start(cmd)
}

// killAll ends every process of the run.
func (r *run) killAll(cmd *exec.Cmd) {
	if r.cg != nil {
		r.cg.kill()
	}
	if cmd.Process != nil {
		// The process group reaches a tier-0 command's children; for tier 1
		// killing bubblewrap ends its PID namespace and everything in it.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Process.Kill()
	}
}

// cleanup runs after the command ended: nothing of the run survives it.
// A tier-1 box is already empty (its PID namespace ended with its init);
// the process group reaches what a tier-0 command left, and finish empties
// the cgroup before removing it.
func (r *run) cleanup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	r.awaitNamespace()
}

// nsTeardown bounds the wait for a box's PID 1 to finish ending its
// namespace; past it the init is killed outright.
const nsTeardown = 10 * time.Second

// awaitNamespace waits until the box's PID 1 has exited. bubblewrap reports
// the command's status and exits while its PID 1 may still be killing and
// reaping what the command left (a daemonised child); the kernel lets that
// PID 1 exit only once its namespace is empty, so its end is the box's end.
func (r *run) awaitNamespace() {
	if r.nsInit <= 0 {
		return
	}
	wait := func(d time.Duration) bool {
		fds := []unix.PollFd{{Fd: int32(r.nsInit), Events: unix.POLLIN}}
		deadline := time.Now().Add(d)
		for {
			left := time.Until(deadline)
			if left <= 0 {
				return false
			}
			n, err := unix.Poll(fds, int(left.Milliseconds())+1)
			if err == unix.EINTR {
				continue
			}
			return err != nil || n > 0
		}
	}
	if !wait(nsTeardown) {
		unix.PidfdSendSignal(r.nsInit, unix.SIGKILL, nil, 0)
		wait(nsTeardown)
	}
}

func exitOf(cmd *exec.Cmd, err error) (code, sig int) {
	if cmd.ProcessState == nil {
		return errs.ExitCannotRun, 0
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		return cmd.ProcessState.ExitCode(), 0
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal()), int(ws.Signal())
	}
	return ws.ExitStatus(), 0
}

// stdinPipe feeds in to the command through a pipe of airlock's own: the
// caller's descriptor (a terminal, perhaps) never reaches the command, and
// the end of the run does not wait for input that may never end (a
// terminal nobody types into). close ends the feeding.
func stdinPipe(cmd *exec.Cmd, in io.Reader) (close func(), err error) {
	if in == nil {
		return func() {}, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = pr
	go func() {
		io.Copy(pw, in)
		pw.Close()
	}()
	return func() { pr.Close(); pw.Close() }, nil
}

type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		if len(p) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		// bubblewrap's last line is the reason.
		s = s[i+1:]
	}
	return s
}
