package runner

import (
	"bytes"
	"io"
	"os/exec"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// gvisorRun is a tier-2 box: runsc runs the OCI bundle the plan wrote,
// with airlock's init as the container's first process; the init starts
// the command and reports how it ended through a pipe, so runsc's own
// failures (told by its log) and a Sentry that died are never taken for
// the command's status. runsc starts in
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
	cmd.Stderr = io.MultiWriter(&limitedBuffer{b: &t.diag, n: 4 << 10}, stderr)
	return runscCommand(r, cmd, r.req.Argv)
}

// runscCommand makes cmd runsc's launch of the box with argv (none for a
// warm box) and its descriptors.
func runscCommand(r *run, cmd *exec.Cmd, argv []string) error {
	argv, err := r.box.GVisorCommand(argv)
	if err != nil {
		return err
	}
	files, err := r.box.GVisorFiles()
	if err != nil {
		return err
	}
	cmd.Path, cmd.Args, cmd.ExtraFiles = argv[0], argv, files
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
	return t.initExit(r, code, sig, res)
}

// initExit reads how the command ended from the in-box init. An init that
// reported nothing, or stopped reporting while the command ran (its
// Sentry died: runsc then ends as a SIGKILLed command would), means the
// box failed: runsc's log says why.
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
	case st.Started && !st.Done && r.cg != nil && r.cg.oom():
		// The memory limit's OOM killer ended gVisor's kernel, and the
		// command with it: the limit held.
		r.desc.Limits.OOM = true
		res.ExitCode, res.Signal = 128+9, 9
		r.desc.Notes = append(r.desc.Notes, "the memory limit's OOM killer ended the gVisor box, and the command with it")
	case serr != nil:
		return why("could not be built")
	case st.Started && !st.Done:
		return why("died while the command ran")
	default:
		return initReported(st, res)
	}
	return nil
}

// initReported reads into res how the command ended as a box's init
// reported it at the end, or the init's own refusal (a missing command is
// not found; anything else, the box could not run it).
func initReported(st boxconf.Status, res *Result) error {
	if st.Error != "" {
		if st.NotFound {
			return errs.NotFoundf("run: %s", st.Error)
		}
		return errs.Unavailablef("run: box: %s", st.Error)
	}
	res.ExitCode, res.Signal = st.Exit, st.Signal
	if st.Signal != 0 {
		res.ExitCode = 128 + st.Signal
	}
	return nil
}
