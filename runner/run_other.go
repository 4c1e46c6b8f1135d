//go:build !linux

package runner

import (
	"context"

	"github.com/airlock-run/airlock/errs"
)

// Run needs Linux in this build.
func Run(ctx context.Context, exe string, req Request) (Result, error) {
	return Result{}, errs.Unavailablef("run: this build of airlock runs commands on Linux only")
}
