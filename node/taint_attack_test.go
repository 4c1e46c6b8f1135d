package node

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/mediator"
)

// nobody answers every escalation with a refusal, counting them.
type nobody struct{ asked atomic.Int32 }

func (n *nobody) Ask(context.Context, mediator.Escalation) mediator.Reply {
	n.asked.Add(1)
	return mediator.Reply{Answer: mediator.AnswerDeny, Decider: "person:nobody"}
}

// A job's kernel is built with its start's taint; a call that carries
// the taint the server recorded since (the job read a tainted job's
// result) taints the kernel before it runs, so the job's later
// connections wait for a person although its policy allows them.
func TestAttackCallCarriesTheServersTaint(t *testing.T) {
	person := &nobody{}
	var k *mediator.Kernel
	r := &runner{cfg: Config{ID: "n1", Tier: 1, StateDir: t.TempDir(),
		Kernel: policyKernel("net:\n  allow: [\"api.example.com:443\"]\nescalation:\n  timeout: 200ms\n",
			mediator.Options{Approver: person, Taint: func() string { return "" }}, &k)}}
	j := jobs.Job{ID: "j-1", Pool: "default", Open: true}
	ctx := context.Background()
	openLease(t, r, j)
	connect := mediator.Call{Kind: mediator.KindNet, Host: "api.example.com", Port: 443}
	if _, err := k.Decide(ctx, connect); err != nil || person.asked.Load() != 0 {
		t.Fatalf("before: %v, asked %d; want the connection allowed unasked", err, person.asked.Load())
	}
	why := "read the result of tainted job j-t"
	// A refused call still brings the taint: the mark comes first.
	res, err := r.Call(ctx, jobs.CallRequest{Job: j, Node: "n1", Call: jobs.Call{ID: "c-1", Kind: jobs.CallReadFile, Path: "/nonexistent/x", Taint: why}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Taint != why {
		t.Errorf("the call's result: taint %q, want %q (the trace shows it)", res.Taint, why)
	}
	if _, err := k.Decide(ctx, connect); err == nil || person.asked.Load() != 1 {
		t.Fatalf("after: %v, asked %d; want the connection to wait for a person, and be refused", err, person.asked.Load())
	}
}
