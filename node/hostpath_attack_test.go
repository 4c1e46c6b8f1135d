package node

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/mediator"
)

// What the node says of a job's call (a refusal's reason, a failed file
// call's message, an error) names the job's paths as the job knows them
// ("." its working directory, "~" its job directory), never the node's
// state directory on the host.
func TestAttackHostPathInResults(t *testing.T) {
	state := t.TempDir()
	build := policyKernel("fs:\n  read: [\".\"]\n", mediator.Options{}, nil)
	r := &runner{cfg: Config{ID: "n1", Tier: 1, StateDir: state,
		Kernel: func(ctx context.Context, j jobs.Job, d string) (Kernel, error) {
			if j.ID == "j-bad" {
				return Kernel{}, errs.Invalidf("policy %s/policy.yaml asks for less confinement (it lies in %s)", d, d)
			}
			return build(ctx, j, d)
		}}}
	ctx := context.Background()
	j := jobs.Job{ID: "j-1", Pool: "default", Open: true}
	openLease(t, r, j)
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
		t.Errorf("open: %v, want an error naming ~/policy.yaml, not the node's state %s", err, state)
	}
}

// brokenTree fails every fetch as a local store does, its cause naming
// the store's file on the host.
type brokenTree struct{ state string }

func (b brokenTree) Fetch(_ context.Context, j jobs.Job, ref string) (string, error) {
	cause := &fs.PathError{Op: "open", Path: b.state + "/files/blobs/aa", Err: syscall.ENOENT}
	return "", errs.Wrap(errs.Unavailable, cause, "node: keep %s for job %s", ref, j.ID)
}

func (brokenTree) Keep(context.Context, jobs.Job, []string) error { return nil }

// A call's error goes to the job's workflow as its whole text (the SDK
// takes err.Error(), causes and all): the node hands on its message only,
// so no cause names a path of the node's.
func TestAttackHostPathInCallError(t *testing.T) {
	state := t.TempDir()
	r := &runner{cfg: Config{ID: "n1", Tier: 1, StateDir: state, Tree: brokenTree{state},
		Kernel: policyKernel("fs:\n  read: [\".\"]\n", mediator.Options{}, nil)}}
	ctx := context.Background()
	j := jobs.Job{ID: "j-1", Pool: "default", Open: true}
	openLease(t, r, j)
	ref := "airlock-file:sha256:" + strings.Repeat("a", 64)
	_, err := r.Call(ctx, jobs.CallRequest{Job: j, Node: "n1", Call: jobs.Call{ID: "c-1", Kind: jobs.CallReadResult, Ref: ref}})
	if err == nil || strings.Contains(err.Error(), state) || !strings.Contains(err.Error(), "node: keep "+ref) || errs.ClassOf(err) != errs.Unavailable {
		t.Fatalf("got %v, want the node's message in its class, without the cause's path", err)
	}
}
