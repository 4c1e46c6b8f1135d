package jobs

import (
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
)

// A question's id, once the workflow holds it, keeps the question it was
// raised with: a second ask under the id (the same digest, another call
// line) is dropped, so the list a person answers from is the first.
func TestAttackReAskQuestion(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	first := Question{ID: "q-1", Job: "j-1", Node: "n1", Digest: "sha256:aa", Call: "rm -rf /srv/data", Timeout: 10 * time.Second}
	f := &approvalFleet{question: first}
	f.claims = []func() (Claim, error){node("n1", 1)}
	var listed []Question
	f.raise = func(x Question) {
		env.SignalWorkflow(SignalAsk, x)
		forged := x
		forged.Call = "ls"
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalAsk, forged) }, 100*time.Millisecond)
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(QueryQuestions)
			if err == nil {
				err = v.Get(&listed)
			}
			if err != nil {
				t.Error(err)
			}
		}, time.Second)
	}
	env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
	registerRun(env, f.run)
	env.RegisterActivityWithOptions(f.deliver, activity.RegisterOptions{Name: AnswerActivity})
	env.ExecuteWorkflow(Workflow, job(nil))
	if len(listed) != 1 || listed[0].Call != first.Call {
		t.Fatalf("listed %+v, want the first question's call %q", listed, first.Call)
	}
}
