package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
)

// What the node says of a job's call (a refusal's reason, a failed file
// call's message, an error) names the job's paths as the job knows them
// ("." its working directory, "~" its job directory), never the node's
// state directory on the host.
func TestAttackHostPathInResults(t *testing.T) {
	state := t.TempDir()
	var dir string
	r := &runner{cfg: Config{ID: "n1", Tier: 1, StateDir: state,
		Kernel: func(_ context.Context, j jobs.Job, d string) (Kernel, error) {
			dir = d
			if j.ID == "j-bad" {
				return Kernel{}, errs.Invalidf("policy %s/policy.yaml asks for less confinement (it lies in %s)", d, d)
			}
			p, err := policy.Parse("job.yaml", []byte("fs:\n  read: [\".\"]\n"))
			if err != nil {
				return Kernel{}, err
			}
			k, err := mediator.New(p, policy.World{Workdir: d + "/work", Home: d, PATH: []string{"/usr/bin", "/bin"}}, mediator.Options{})
			return Kernel{Kernel: k, Close: func() error { return nil }}, err
		}}}
	ctx := context.Background()
	j := jobs.Job{ID: "j-1", Pool: "default", Open: true}
	if _, err := r.Open(ctx, jobs.LeaseRequest{Job: j, Node: "n1"}); err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx, j.ID)
	for _, c := range []jobs.Call{
		{ID: "c-1", Kind: jobs.CallWriteFile, Path: "../x", Content: "a"},
		{ID: "c-2", Kind: jobs.CallReadFile, Path: "../../../pki/node.token"},
	} {
		res, err := r.Call(ctx, jobs.CallRequest{Job: j, Node: "n1", Call: c})
		b, _ := json.Marshal(res)
		if err != nil {
			b = append(b, err.Error()...)
		}
		if strings.Contains(string(b), state) {
			t.Errorf("call %s: %s names the node's state directory %s", c.ID, b, state)
		}
		if !res.Refused {
			t.Errorf("call %s: %s, want refused", c.ID, b)
		}
	}
	_, err := r.Open(ctx, jobs.LeaseRequest{Job: jobs.Job{ID: "j-bad", Pool: "default", Open: true}, Node: "n1"})
	if err == nil || strings.Contains(err.Error(), state) || !strings.Contains(err.Error(), "~/policy.yaml") {
		t.Errorf("open: %v, want an error naming ~/policy.yaml, not %s", err, dir)
	}
}
