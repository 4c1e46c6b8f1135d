//go:build !linux

package runner

import (
	"context"
	"io"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox"
)

// Run needs Linux in this build.
func Run(ctx context.Context, exe string, req Request) (Result, error) {
	if req.Tier == sandbox.TierAuto {
		return Result{}, sandbox.ErrAuto("runner")
	}
	return Result{}, errs.Unavailablef("run: this build of airlock runs commands on Linux only")
}

// Process is a command started by Start; off Linux there is none.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
}

// Start needs Linux in this build.
func Start(ctx context.Context, exe string, req Request) (*Process, error) {
	return nil, errs.Unavailablef("run: this build of airlock runs commands on Linux only")
}

// Wait reports that nothing ran.
func (p *Process) Wait() (Result, error) {
	return Result{}, errs.Unavailablef("run: not supported on this platform")
}

// Kill does nothing: nothing ran.
func (p *Process) Kill() error { return nil }

// Description is empty: nothing ran.
func (p *Process) Description() Description { return Description{} }
