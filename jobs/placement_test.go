package jobs

import (
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// TestPlacement: the workflow says which node runs the job while the run
// goes on (the claim it accepted, not a node's word), and that none does
// once it ended; before any claim the query has no answer.
func TestPlacement(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := &fleet{claims: []func() (Claim, error){node("n1", 1)}, block: true}
	env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
	registerRun(env, f.run)
	query := func() (Placement, error) {
		v, err := env.QueryWorkflow(QueryPlacement)
		if err != nil {
			return Placement{}, err
		}
		var p Placement
		return p, v.Get(&p)
	}
	var during Placement
	var duringErr error
	env.RegisterDelayedCallback(func() { during, duringErr = query() }, 500*time.Millisecond)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
	env.ExecuteWorkflow(Workflow, job(nil))
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("got %v, want the job killed", err)
	}
	if duringErr != nil || !during.RunsOn("n1") || during.RunsOn("n2") {
		t.Errorf("during the run: %+v %v, want n1 running", during, duringErr)
	}
	after, err := query()
	if err != nil || after.Node != "n1" || after.RunsOn("n1") {
		t.Errorf("after the run: %+v %v, want n1, not running", after, err)
	}
}

func TestPlacementRunsOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Placement
		node string
		want bool
	}{
		{"the node that runs it", Placement{Node: "n1", Running: true}, "n1", true},
		{"another node", Placement{Node: "n1", Running: true}, "n2", false},
		{"ended", Placement{Node: "n1"}, "n1", false},
		{"never claimed", Placement{}, "", false},
		{"an empty name never matches", Placement{Running: true}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.RunsOn(tc.node); got != tc.want {
				t.Errorf("%+v.RunsOn(%q) = %v, want %v", tc.p, tc.node, got, tc.want)
			}
		})
	}
}
