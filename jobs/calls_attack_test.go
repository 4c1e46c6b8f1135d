package jobs

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
)

// A call id names one call of its job, once: the same id signalled again
// while the first waits behind a running call (or runs, or ended) is
// refused, never run a second time, and its refusal does not replace the
// first call's result that its caller reads.
func TestAttackSameCallIDTwice(t *testing.T) {
	for _, tc := range []struct {
		name string
		// at are when the two calls of the one id are signalled; c1 runs
		// for the first 2 s.
		at [2]time.Duration
	}{
		{"both waiting behind a running call", [2]time.Duration{300 * time.Millisecond, 600 * time.Millisecond}},
		{"the second while the first runs", [2]time.Duration{300 * time.Millisecond, 2500 * time.Millisecond}},
		{"the second after the first ended", [2]time.Duration{300 * time.Millisecond, 5 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.SetTestTimeout(30 * time.Second)
			claimBy(env, Claim{Node: "n1", Tier: 1})
			answer := tiered(nil)
			log := registerLease(env, func(ctx context.Context, req CallRequest) (CallResult, error) {
				d := map[string]time.Duration{"c1": 2 * time.Second, "dup": 2 * time.Second}[req.Call.ID]
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
				return answer(ctx, req)
			})
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(SignalCall, Call{ID: "dup", Kind: CallExec, Argv: []string{"deploy"}})
			}, tc.at[0])
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(SignalCall, Call{ID: "dup", Kind: CallExec, Argv: []string{"rm", "-rf", "out"}})
			}, tc.at[1])
			var got CallResult
			env.RegisterDelayedCallback(func() {
				v, err := env.QueryWorkflow(QueryCallResult, "dup")
				if err == nil {
					err = v.Get(&got)
				}
				if err != nil {
					t.Error(err)
				}
				env.SignalWorkflow(SignalRelease, nil)
			}, 8*time.Second)
			env.ExecuteWorkflow(Workflow, Job{ID: "j-1", Pool: "build", ClaimTimeout: time.Minute, Open: true,
				Calls: []Call{{Kind: CallExec, Argv: []string{"make"}}}})
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if want := "open@node.n1 call:c1 call:dup close"; log.String() != want {
				t.Errorf("lease: got %q, want %q (the id's call once)", log, want)
			}
			if got.Stdout != "ran deploy" || got.Refused {
				t.Errorf("call result dup: got %+v, want the first call's (ran deploy)", got)
			}
			tr := traceOf(t, env)
			refused := 0
			for _, rec := range tr.Calls {
				if rec.ID == "dup" && rec.Refused && rec.Decider == "workflow" {
					refused++
				}
			}
			if refused != 1 {
				t.Errorf("trace: got %+v, want the second dup refused by the workflow", tr.Calls)
			}
		})
	}
}
