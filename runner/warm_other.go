//go:build !linux

package runner

import (
	"context"
	"time"

	"github.com/airlock-run/airlock/sandbox"
)

// DefaultIdle is how long a warm box waits for its next call.
const DefaultIdle = 5 * time.Minute

// Pool is the warm boxes of one session; off Linux every call runs as Run
// runs it.
type Pool struct{ exe string }

// NewPool returns a pool that runs every call cold.
func NewPool(exe string, _ time.Duration) *Pool { return &Pool{exe: exe} }

// Warm reports false: there are no warm boxes off Linux.
func Warm(Request) bool { return false }

// Run runs req as Run does.
func (p *Pool) Run(ctx context.Context, req Request) (Result, error) {
	if req.Tier == sandbox.TierAuto {
		return Result{}, sandbox.ErrAuto("runner")
	}
	return Run(ctx, p.exe, req)
}

// Close does nothing: the pool holds no box.
func (p *Pool) Close() {}

// Boxes is 0: the pool holds no box.
func (p *Pool) Boxes() int { return 0 }
