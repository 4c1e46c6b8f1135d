package jobs

import (
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplay holds the workflow to histories recorded from real runs
// through the embedded server (cmd/airlock-server's TestFleet -update
// rewrites them): a change to the workflow that would break a job running
// across an upgrade fails here.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.history.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recorded history in testdata (run go test ./cmd/airlock-server -run TestFleet -update)")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}

// TestReplayCatchesAChangedWorkflow: the replay is not vacuous, a workflow
// that schedules something else first is refused against the recording.
func TestReplayCatchesAChangedWorkflow(t *testing.T) {
	f := filepath.Join("testdata", "floor-job.history.json")
	if _, err := os.Stat(f); err != nil {
		t.Fatal(err)
	}
	changed := func(ctx workflow.Context, j Job) (Result, error) {
		if err := workflow.Sleep(ctx, 1); err != nil { // a timer the recording never had
			return Result{}, err
		}
		return Workflow(ctx, j)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(changed, workflow.RegisterOptions{Name: WorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err == nil {
		t.Fatal("a changed workflow replayed against the recording without an error")
	}
}
