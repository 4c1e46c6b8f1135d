package runner

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox"
)

// gvisorRun is a tier-2 box: runsc runs the OCI bundle the plan wrote,
// with the command as the container's process. runsc's status is the
// command's; its own failures are told apart by its log. runsc starts in
// the run's cgroup (when limits ask for one) and makes none itself, so the
// limits cover gVisor's kernel and gofer along with the command.
type gvisorRun struct {
	// diag is the start of the shared stderr, for runsc's own complaint.
	diag bytes.Buffer
}

var _ tierRunner = (*gvisorRun)(nil)

func (*gvisorRun) describe(d *Description) {
	if d.Limits.Pids > 0 {
		d.Notes = append(d.Notes, "tier 2: the process limit is enforced by gVisor's kernel (RLIMIT_NPROC of the box's user); the host cgroup holds memory and CPU")
	}
}

// hostLimits are the limits the run's host cgroup enforces. A tier-2
// box's process limit is enforced inside gVisor (the plan sets
// RLIMIT_NPROC): on the host, gVisor's own kernel and gofer threads would
// count against it, and a box of a few dozen processes would not start.
func hostLimits(box *sandbox.Box, l sandbox.Limits) sandbox.Limits {
	if box.Tier == sandbox.Tier2 {
		l.Pids = 0
	}
	return l
}

func (t *gvisorRun) command(r *run, cmd *exec.Cmd, stderr io.Writer) error {
	// A missing command is airlock's refusal (exit 125), told before runsc
	// starts, as at tier 1.
	if err := r.box.CheckCommand(r.req.Argv[0]); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	argv, err := r.box.GVisorCommand(r.req.Argv)
	if err != nil {
		return err
	}
	files, err := r.box.GVisorFiles()
	if err != nil {
		return err
	}
	cmd.Path, cmd.Args, cmd.ExtraFiles = argv[0], argv, files
	cmd.Stderr = io.MultiWriter(&limitedBuffer{b: &t.diag, n: 4 << 10}, stderr)
	return nil
}

// started: runsc leads the process group; its sandbox and gofer die with
// it (runsc sets their parent-death signal) and Box.Close reaps what is
// left by its state directory.
// started: runsc leads the process group; the descriptors only runsc
// needed (the init's ends of its pipes) are closed here, so the status
// pipe ends when the box does.
func (*gvisorRun) started(r *run, cmd *exec.Cmd) int {
	r.box.Started()
	return cmd.Process.Pid
}

// configure hands a box with network its init's configuration; a box
// without one runs the command itself.
func (*gvisorRun) configure(r *run) error { return r.box.SendConfig(r.req.Argv) }

func (t *gvisorRun) exit(r *run, cmd *exec.Cmd, waitErr error, res *Result) error {
	code, sig := exitOf(cmd, waitErr)
	if d := t.diag.String(); !res.WallTimeout && code == 125 && strings.HasPrefix(d, "airlock: gvisor launch: ") {
		return errs.Unavailablef("run: the gVisor box could not be built: %s", strings.TrimPrefix(firstLine(d), "airlock: "))
	}
	if r.box.Direct() {
		if err := t.failed(r, code, sig, res); err != nil {
			return err
		}
		res.ExitCode, res.Signal = code, sig
	} else if err := t.initExit(r, code, sig, res); err != nil {
		return err
	}
	if res.Signal == 0 && res.ExitCode > 128 && res.ExitCode < 128+65 {
		// runsc reports a command ended by signal N as 128+N.
		res.Signal = res.ExitCode - 128
	}
	return nil
}

// failed tells runsc's own failure (the box did not start, or its kernel
// died) from the command's status: runsc's fatal errors exit 128, with
// the reason in its log.
func (t *gvisorRun) failed(r *run, code, sig int, res *Result) error {
	if res.WallTimeout || sig != 0 || code != 128 {
		return nil
	}
	if why := r.box.GVisorFailure(); why != "" {
		return errs.Unavailablef("run: the gVisor box failed: %s", oneLine(why))
	}
	if d := t.diag.String(); strings.Contains(d, "runsc") || strings.Contains(d, "container") {
		return errs.Unavailablef("run: the gVisor box failed: %s", firstLine(d))
	}
	return nil
}

// initExit reads how the command ended from the in-box init of a box with
// network. An init that reported nothing, or stopped reporting while the
// command ran, means the box failed: runsc's log says why.
func (t *gvisorRun) initExit(r *run, code, sig int, res *Result) error {
	st, serr := r.box.ReadStatus()
	why := func(what string) error {
		if w := r.box.GVisorFailure(); w != "" {
			return errs.Unavailablef("run: the gVisor box %s: %s", what, oneLine(w))
		}
		if d := strings.TrimSpace(t.diag.String()); d != "" {
			return errs.Unavailablef("run: the gVisor box %s: %s", what, firstLine(d))
		}
		return errs.Unavailablef("run: the gVisor box %s (runsc status %d, signal %d)", what, code, sig)
	}
	switch {
	case res.WallTimeout:
	case serr != nil:
		return why("could not be built")
	case st.Started && !st.Done && r.cg != nil && r.cg.oom():
		// The memory limit's OOM killer ended gVisor's kernel, and the
		// command with it: the limit held.
		r.desc.Limits.OOM = true
		res.ExitCode, res.Signal = 128+9, 9
		r.desc.Notes = append(r.desc.Notes, "the memory limit's OOM killer ended the gVisor box, and the command with it")
	case st.Started && !st.Done:
		return why("died while the command ran")
	case st.Error != "":
		if st.NotFound {
			return errs.NotFoundf("run: %s", st.Error)
		}
		return errs.Unavailablef("run: box: %s", st.Error)
	default:
		res.ExitCode, res.Signal = st.Exit, st.Signal
		if st.Signal != 0 {
			res.ExitCode = 128 + st.Signal
		}
	}
	return nil
}
