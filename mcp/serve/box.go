package serve

import (
	"bytes"
	"context"
	"io"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/fit"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/runner"
	"github.com/airlock-run/airlock/sandbox"
)

// boxResult is how a file tool's program ended.
type boxResult struct {
	code           int
	stdout, stderr string
}

// inBox runs a file tool's program, after its path was decided, in the box
// the policy describes for an exec call (same mounts, same mode, no
// network): the program sees only what the policy grants, so a link in the
// working directory that points anywhere else leads nowhere. The decision
// was the file tool's; the program is airlock's own choice, not the
// model's, so it is not decided again as a command.
func (s *Server) inBox(ctx context.Context, argv []string, stdin io.Reader) (boxResult, error) {
	p := s.o.Kernel.Policy()
	spec, err := mediator.SpecFor(p, s.o.World, nil)
	if err != nil {
		return boxResult{}, err
	}
	if spec.Exec != nil {
		// The box's exec wall names the file tools' own programs, not the
		// policy's: nothing else runs in this box.
		spec.Exec = &sandbox.ExecSpec{Programs: toolPrograms}
	}
	tier, err := s.tier(p.Isolation)
	if err != nil {
		return boxResult{}, err
	}
	var stdout, stderr bytes.Buffer
	r, err := runner.Run(ctx, s.o.Exe, runner.Request{Argv: argv, Spec: spec, Tier: tier, Stdin: stdin,
		Stdout: &stdout, Stderr: &stderr, OutputCap: s.o.OutputCap})
	if err != nil {
		return boxResult{}, err
	}
	return boxResult{code: r.ExitCode, stdout: stdout.String(), stderr: stderr.String()}, nil
}

// toolPrograms are the programs the file tools run (tools.go).
var toolPrograms = []string{"head", "find", "grep", "sh", "dirname", "mkdir", "cat"}

// tier is the tier a file tool's program runs at, chosen as an exec call's
// is: `isolation: none` is tier 0, auto is the best the host gives and
// never a silent tier 0.
func (s *Server) tier(isolation string) (sandbox.Tier, error) {
	t := s.o.Tier
	switch {
	case isolation == "none":
		t = sandbox.Tier0
	case t == sandbox.TierAuto:
		if t = s.probe(); t == sandbox.Tier0 {
			return t, errs.Unavailablef("sandbox: this host gives no confinement (run `airlock sandbox check` for the fix, or --sandbox off to run unconfined)")
		}
	}
	if t == sandbox.Tier0 && s.o.Warn != nil {
		s.o.Warn("WARNING: a file tool runs UNCONFINED (tier 0): it has your files and rights")
	}
	return t, nil
}

func fitView(v string) bool { return fit.View(v).Valid() }

func fitWanted(f fitArgs) bool { return fit.Wanted(fit.View(f.View), f.Budget, f.Query) }

func fitText(text string, f fitArgs, name string) fit.Result {
	return fit.Fit(text, fit.Request{View: fit.View(f.View), Budget: f.Budget, Query: f.Query, Name: name})
}
