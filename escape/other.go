//go:build !linux

package escape

import (
	"context"
	"fmt"
	"runtime"

	"github.com/airlock-run/airlock/errs"
)

// Options configure a run of the matrix.
type Options struct {
	Exe      string
	Cases    *Cases
	Only     []string
	TempDir  string
	Progress func(attempt string)
}

// AttackMain reports that the attacks exist only on Linux.
func AttackMain(args []string) int {
	fmt.Println("the escape matrix's attacks run only on Linux")
	return 2
}

// AttemptIDs is empty: no attempt runs on this platform yet.
func AttemptIDs() map[string]string { return map[string]string{} }

// Run reports every mechanism as the case file marks this platform, and
// every attempt untested: the attacks exist only on Linux so far.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Cases == nil {
		return nil, errs.Invalidf("escape: Run needs the case file")
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	rep := &Report{Platform: platform}
	for _, m := range Mechanisms {
		row, ok := o.Cases.Row(m.Name, platform)
		if !ok {
			return nil, errs.Invalidf("escape cases: no row for mechanism %q on %s", m.Name, platform)
		}
		rep.Mechanisms = append(rep.Mechanisms, MechanismStatus{Mechanism: m, Status: row.Status, Reason: row.Reason})
	}
	for _, c := range o.Cases.Attempts {
		for _, m := range rep.Mechanisms {
			out := Untested
			if m.Status == StatusUnsupported {
				out = Unsupported
			}
			rep.Results = append(rep.Results, Result{Attempt: c.ID, Class: c.Class, Mechanism: m.Name, Outcome: out, Detail: "the attacks run only on Linux so far"})
		}
	}
	rep.count()
	return rep, nil
}
