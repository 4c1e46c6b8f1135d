package runner

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox"
)

// tierRunner is how the runner starts a command at one tier and reads how
// it ended. The rest of a run (limits, the cleanup guard, the output cap,
// the wall clock, the teardown) is the same at every tier and lives in
// run_linux.go; sandbox.Plan has already made the box.
//
// A run calls describe once, then command, then (when cmd started)
// started and configure, then exit after cmd ended.
type tierRunner interface {
	// describe adds to the evidence what running at this tier means.
	describe(d *Description)
	// command makes cmd start the command: program, arguments,
	// environment, directory, descriptors, and stderr, which is where the
	// command's own stderr must go. What it opens goes on r.closers.
	command(r *run, cmd *exec.Cmd, stderr io.Writer) error
	// started runs once cmd has started and returns the pid whose end is
	// the end of every process of the run, for the guard.
	started(r *run, cmd *exec.Cmd) int
	// configure hands the box what it needs to start the command; an
	// error means the command never started.
	configure(r *run) error
	// exit reads how the command ended into res (ExitCode, Signal), given
	// cmd's wait error; res.WallTimeout is already set. An error means the
	// box failed, not the command.
	exit(r *run, cmd *exec.Cmd, waitErr error, res *Result) error
}

// tierRunners are the tiers the runner can start, one entry each, keyed
// by the tier of the planned box (tier 2, gVisor, in gvisor_linux.go); a
// tier without one is refused before anything starts.
var tierRunners = map[sandbox.Tier]func(*sandbox.Box) tierRunner{
	sandbox.Tier0: func(*sandbox.Box) tierRunner { return unconfined{} },
	// bubblewrap starts the command itself, or airlock's init as the box's
	// PID 1 (a bubblewrap without --ro-bind-fd, or a box with network on a
	// kernel without Landlock): the box's shape, which its plan decided.
	sandbox.Tier1: func(b *sandbox.Box) tierRunner {
		if b.Direct() {
			return &bwrapDirect{}
		}
		return &bwrapInit{}
	},
	sandbox.Tier2: func(*sandbox.Box) tierRunner { return &gvisorRun{} },
}

var (
	_ tierRunner = unconfined{}
	_ tierRunner = (*bwrapDirect)(nil)
	_ tierRunner = (*bwrapInit)(nil)
)

// runnerFor is the tierRunner of box.
func runnerFor(box *sandbox.Box) (tierRunner, error) {
	mk, ok := tierRunners[box.Tier]
	if !ok {
		return nil, errs.Unavailablef("run: this build of airlock cannot start a tier-%s box", box.Tier)
	}
	return mk(box), nil
}

// unconfined is tier 0: the command itself, with the caller's rights, in
// its working directory with the Spec's environment and nothing else.
type unconfined struct{}

func (unconfined) describe(d *Description) {
	d.Network = "host"
	d.Notes = append(d.Notes, "tier 0: the command has the caller's files, network and rights")
}

func (unconfined) command(r *run, cmd *exec.Cmd, stderr io.Writer) error {
	req := r.req
	path, err := sandbox.LookPath(req.Argv[0], sandbox.EnvValue(req.Spec.Env, "PATH"), req.Spec.Workdir)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	cmd.Path, cmd.Args = path, req.Argv
	cmd.Env = append([]string{}, req.Spec.Env...)
	if sandbox.EnvValue(cmd.Env, "PWD") == "" {
		// As in a box: PWD names the working directory.
		cmd.Env = append(cmd.Env, "PWD="+req.Spec.Workdir)
	}
	cmd.Dir = req.Spec.Workdir
	cmd.Stderr = stderr
	return nil
}

// started: the process group cmd leads is the run (see killAll).
func (unconfined) started(_ *run, cmd *exec.Cmd) int { return cmd.Process.Pid }

func (unconfined) configure(*run) error { return nil }

func (unconfined) exit(_ *run, cmd *exec.Cmd, waitErr error, res *Result) error {
	res.ExitCode, res.Signal = exitOf(cmd, waitErr)
	return nil
}

// bwrapStarted is what every bubblewrap box does once bubblewrap runs:
// close the descriptors only bubblewrap needed, and hold the box's PID 1,
// whose end is the end of its namespace (awaitNamespace).
func bwrapStarted(r *run, cmd *exec.Cmd) int {
	r.box.Started()
	pid := cmd.Process.Pid
	if p, err := r.box.ChildPid(); err == nil {
		pid = p
		if fd, err := unix.PidfdOpen(p, 0); err == nil {
			r.nsInit = fd
			r.closers = append(r.closers, func() { unix.Close(fd) })
		}
	}
	return pid
}

// bwrapDirect is a tier-1 box whose command bubblewrap starts itself under
// airlock's filter: no init inside, so bubblewrap's status is the
// command's.
type bwrapDirect struct {
	// diag is the start of the shared stderr, to tell bubblewrap's own
	// failure apart.
	diag bytes.Buffer
}

func (*bwrapDirect) describe(*Description) {}

func (t *bwrapDirect) command(r *run, cmd *exec.Cmd, stderr io.Writer) error {
	// bubblewrap runs the command itself: they share stderr, and the
	// start of it is kept to tell bubblewrap's own failure apart.
	if err := r.box.CheckCommand(r.req.Argv[0]); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	cmd.Path, cmd.Args = r.box.Path, r.box.CommandLine(r.req.Argv)
	cmd.Stderr = io.MultiWriter(&limitedBuffer{b: &t.diag, n: 4 << 10}, stderr)
	cmd.ExtraFiles = r.box.ExtraFiles
	return r.serveNet() // a box with network: its listeners (net_linux.go)
}

func (*bwrapDirect) started(r *run, cmd *exec.Cmd) int { return bwrapStarted(r, cmd) }

func (*bwrapDirect) configure(*run) error { return nil }

func (t *bwrapDirect) exit(r *run, cmd *exec.Cmd, waitErr error, res *Result) error {
	code, _ := exitOf(cmd, waitErr)
	if d := t.diag.String(); code == 1 && strings.HasPrefix(d, "bwrap: ") && !res.WallTimeout {
		return errs.Unavailablef("run: the box could not be built: %s", firstLine(d))
	}
	// bubblewrap reports a command ended by signal N as 128+N.
	res.ExitCode = code
	if code > 128 && code < 128+65 {
		res.Signal = code - 128
	}
	return nil
}

// bwrapInit is a tier-1 box whose PID 1 is airlock's init: it gets its
// configuration through a pipe, starts the command and reports how it
// ended through another.
type bwrapInit struct {
	// diag is bubblewrap's own stderr; the command's is a descriptor
	// handed to the init.
	diag bytes.Buffer
}

func (*bwrapInit) describe(*Description) {}

func (t *bwrapInit) command(r *run, cmd *exec.Cmd, stderr io.Writer) error {
	// bubblewrap's own complaints go to a buffer; the command's stderr is
	// a descriptor handed to the init.
	cmd.Path, cmd.Args = r.box.Path, r.box.CommandLine(r.req.Argv)
	cmd.Stderr = &limitedBuffer{b: &t.diag, n: 64 << 10}
	errR, errW, err := os.Pipe()
	if err != nil {
		return err
	}
	r.closers = append(r.closers, func() { errR.Close() })
	n := r.box.AddFile(errW)
	r.box.SetStderr(n)
	copied := make(chan struct{})
	go func() { io.Copy(stderr, errR); close(copied) }()
	r.stderrDone = copied
	cmd.ExtraFiles = r.box.ExtraFiles
	return nil
}

func (*bwrapInit) started(r *run, cmd *exec.Cmd) int { return bwrapStarted(r, cmd) }

func (*bwrapInit) configure(r *run) error { return r.box.SendConfig(r.req.Argv) }

func (t *bwrapInit) exit(r *run, cmd *exec.Cmd, waitErr error, res *Result) error {
	st, serr := r.box.ReadStatus()
	switch {
	case res.WallTimeout:
	case serr != nil:
		code, _ := exitOf(cmd, waitErr)
		msg := strings.TrimSpace(t.diag.String())
		if msg == "" {
			msg = fmt.Sprintf("bubblewrap exited with status %d and the box reported nothing", code)
		}
		return errs.Unavailablef("run: the box could not be built: %s", oneLine(msg))
	case st.Started && !st.Done:
		// The init died after starting the command: the whole box went
		// with it.
		code, sig := exitOf(cmd, waitErr)
		if r.cg != nil && r.cg.oom() {
			r.desc.Limits.OOM = true
			res.ExitCode, res.Signal = 128+9, 9
			r.desc.Notes = append(r.desc.Notes, "the memory limit's OOM killer ended the box's init, and the box with it")
			break
		}
		return errs.Unavailablef("run: the box's init died while the command ran (bubblewrap status %d, signal %d)", code, sig)
	default:
		if err := initReported(st, res); err != nil { // gvisor_linux.go
			return err
		}
		r.desc.Seccomp = st.Seccomp
	}
	return nil
}
