package runner

import (
	"fmt"
	"io"
	"os/exec"

	"github.com/airlock-run/airlock/sandbox"
)

// serveGVisor starts a tier-2 warm box: runsc runs the bundle with
// airlock's init as its first process, serving calls over the control
// socket passed in with --pass-fd. What differs from tier 1 is only how
// the box starts; calls go over the socket in the same way (warmBox.call).
// A Sentry that dies ends runsc, and so the box: the call it ran fails as
// unavailable (exit 125) and the pool forgets the box.
type serveGVisor struct {
	serveInit
	cold gvisorRun
}

var _ tierRunner = (*serveGVisor)(nil)

func (t *serveGVisor) describe(d *Description) { t.cold.describe(d) }

func (t *serveGVisor) command(r *run, cmd *exec.Cmd, _ io.Writer) error {
	cmd.Stderr = &limitedBuffer{b: &t.diag, n: 64 << 10}
	return runscCommand(r, cmd, nil)
}

// started closes the descriptors only runsc needed (the init's ends).
func (*serveGVisor) started(r *run, cmd *exec.Cmd) int {
	r.box.Started()
	return cmd.Process.Pid
}

// configure is tier 1's, with runsc's own log as the reason when the box
// did not come up.
func (t *serveGVisor) configure(r *run) error {
	err := t.serveInit.configure(r)
	if err != nil {
		if w := r.box.GVisorFailure(); w != "" {
			return fmt.Errorf("the gVisor warm box could not be built: %s", oneLine(w))
		}
	}
	return err
}

// warmRunner is what starts a warm box of plan's tier.
func warmRunner(plan *sandbox.Box) interface {
	tierRunner
	readyReport() bool
} {
	if plan.Tier == sandbox.Tier2 {
		return &serveGVisor{}
	}
	return &serveInit{}
}

func (t *serveInit) readyReport() bool { return t.ready.Seccomp }
