package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/jobs"
)

// Placement is the test's Temporal: node n1 runs job j-1, and no node
// runs any other job.
func (f *fakeJobs) Placement(_ context.Context, id string) (jobs.Placement, error) {
	if id == "j-1" {
		return jobs.Placement{Node: "n1", Running: true}, nil
	}
	return jobs.Placement{}, nil
}

// A node raises questions in its own name, and only for a job it runs: a
// question n1 makes up for j-2, which runs elsewhere, is never shown to a
// person nor signalled to j-2's workflow. (The workflow keeps a question
// only from the node running the job; before, the server still listed
// and audited it, so a person could be asked to allow a call that no job
// made.)
func TestAttackQuestionForAJobTheNodeDoesNotRun(t *testing.T) {
	s, a, _ := serveEnrol(t)
	f := a.cfg.Jobs.(*fakeJobs)
	_, _, out := enrolWithToken(t, s, "n1")
	bearer := "Bearer " + out
	digest := "sha256:" + strings.Repeat("e", 64)
	question := func(id, job string) string {
		return `{"id":"` + id + `","job":"` + job + `","node":"n1","digest":"` + digest + `","call":"connect api.example.com:443","kind":"net","verdict":"escalate","timeout":30000000000}`
	}
	if code, out := do(t, s, "POST", "/v1/jobs/j-2/questions", bearer, question("q-other", "j-2")); code != http.StatusForbidden || !strings.Contains(out["error"].(string), "does not run job j-2") {
		t.Errorf("n1 raises a question for j-2: got %d %v, want 403 naming the job", code, out)
	}
	var listed []map[string]any
	getJSON(t, s, "/v1/approvals", &listed)
	if len(listed) != 0 || len(f.asked) != 0 {
		t.Fatalf("listed %v, signalled %v: want neither", listed, f.asked)
	}
	if code, out := do(t, s, "POST", "/v1/jobs/j-1/questions", bearer, question("q-own", "j-1")); code != http.StatusAccepted {
		t.Fatalf("n1 raises its own run's question: got %d %v", code, out)
	}
}
