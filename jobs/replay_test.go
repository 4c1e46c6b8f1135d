package jobs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
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

// TestReplayCoversEveryShape: the recordings hold every shape the
// workflow's version markers choose between, so each branch kept for the
// jobs of an older build is replayed, not only the newest: the one run
// activity, the lease with its calls, the one-call lease, and the quota's
// slot.
func TestReplayCoversEveryShape(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.history.json"))
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	for _, activity := range []string{RunActivity, OpenActivity, LeaseActivity, CallActivity, CloseActivity, LeaseCallActivity, AcquireActivity, ReleaseActivity, AnswerActivity} {
		if !regexp.MustCompile(`"name":\s*"` + regexp.QuoteMeta(activity) + `"`).MatchString(all.String()) {
			t.Errorf("no recorded history schedules %s (run go test ./cmd/airlock-server -run TestFleet -update)", activity)
		}
	}
}
