package runner

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/airlock-run/airlock/sandbox"
)

// Check starts a real tier-1 box that runs `true`, so `airlock sandbox
// check` reports what happens rather than what the host's files suggest (a
// container's seccomp profile, for one, can forbid user namespaces that
// every sysctl allows). It returns the run's Description and how long the
// box took.
func Check(ctx context.Context, exe string) (Description, time.Duration, error) {
	dir, err := os.MkdirTemp("", "airlock-check-")
	if err != nil {
		return Description{}, 0, err
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	res, err := Run(ctx, exe, Request{
		Argv: []string{"true"},
		Tier: sandbox.Tier1,
		Spec: sandbox.Spec{Workdir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Limits: sandbox.Limits{Wall: 30 * time.Second}},
	})
	took := time.Since(start)
	if err == nil && res.ExitCode != 0 {
		err = &checkError{code: res.ExitCode}
	}
	return res.Description, took, err
}

type checkError struct{ code int }

func (e *checkError) Error() string {
	return fmt.Sprintf("the box ran `true` but it exited with status %d", e.code)
}
