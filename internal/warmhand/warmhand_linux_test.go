package warmhand

import (
	"testing"

	"github.com/airlock-run/airlock/errs"
)

// TestExitCannotRun: a lost run exits as cli's does.
func TestExitCannotRun(t *testing.T) {
	if exitCannotRun != errs.ExitCannotRun {
		t.Errorf("exitCannotRun is %d, errs.ExitCannotRun %d", exitCannotRun, errs.ExitCannotRun)
	}
}

// TestStartIgnoresOtherCommands: a process that is not `airlock run`
// tries nothing.
func TestStartIgnoresOtherCommands(t *testing.T) {
	if Start() {
		t.Error("a test binary's Start tried a hand-over")
	}
}
