package node

import (
	"context"
	"testing"

	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
)

// policyKernel builds each job's kernel as a node does, from the policy
// src, in the job's directory (its working directory work/, its home the
// directory), with o; the last one built is left in *last when last is
// not nil.
func policyKernel(src string, o mediator.Options, last **mediator.Kernel) KernelFunc {
	return func(_ context.Context, _ jobs.Job, dir string) (Kernel, error) {
		p, err := policy.Parse("job.yaml", []byte(src))
		if err != nil {
			return Kernel{}, err
		}
		k, err := mediator.New(p, policy.World{Workdir: dir + "/work", Home: dir, PATH: []string{"/usr/bin", "/bin"}}, o)
		if err != nil {
			return Kernel{}, err
		}
		if last != nil {
			*last = k
		}
		return Kernel{Kernel: k, Close: func() error { return nil }}, nil
	}
}

// openLease opens job j's lease on r, closed when the test ends.
func openLease(t *testing.T, r *runner, j jobs.Job) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.Open(ctx, jobs.LeaseRequest{Job: j, Node: r.cfg.ID}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(ctx, j.ID) })
}
