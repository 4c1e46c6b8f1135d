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
func hostLimits(tier sandbox.Tier, l sandbox.Limits) sandbox.Limits {
	if tier == sandbox.Tier2 {
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
func (*gvisorRun) started(_ *run, cmd *exec.Cmd) int { return cmd.Process.Pid }

func (*gvisorRun) configure(*run) error { return nil }

func (t *gvisorRun) exit(r *run, cmd *exec.Cmd, waitErr error, res *Result) error {
	code, sig := exitOf(cmd, waitErr)
	if d := t.diag.String(); !res.WallTimeout && code == 125 && strings.HasPrefix(d, "airlock: gvisor launch: ") {
		return errs.Unavailablef("run: the gVisor box could not be built: %s", strings.TrimPrefix(firstLine(d), "airlock: "))
	}
	if !res.WallTimeout && sig == 0 && code == 128 {
		// runsc's own fatal errors exit 128, with the reason in its log.
		if why := r.box.GVisorFailure(); why != "" {
			return errs.Unavailablef("run: the gVisor box could not be built: %s", oneLine(why))
		}
		if d := t.diag.String(); strings.Contains(d, "runsc") || strings.Contains(d, "container") {
			return errs.Unavailablef("run: the gVisor box could not be built: %s", firstLine(d))
		}
	}
	res.ExitCode, res.Signal = code, sig
	if sig == 0 && code > 128 && code < 128+65 {
		// runsc reports a command ended by signal N as 128+N.
		res.Signal = code - 128
	}
	return nil
}
