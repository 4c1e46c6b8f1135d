package jobs

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/workflow"

	"github.com/airlock-run/airlock/errs"
)

// placed runs run, the job's run on node (whose claim the workflow
// accepted), with QueryPlacement answering that node, running, until run
// returns; from then on it answers the node, not running. A query handler
// adds nothing to the history, so replay is unchanged.
func placed(ctx workflow.Context, node string, run func() (Result, error)) (Result, error) {
	p := Placement{Node: node, Running: true}
	if err := workflow.SetQueryHandler(ctx, QueryPlacement, func() (Placement, error) { return p, nil }); err != nil {
		return Result{}, err
	}
	defer func() { p.Running = false }()
	return run()
}

// Placement asks job id's workflow where the job runs. A job no node has
// claimed yet has no answer of its own: it is the zero Placement.
func (c *Client) Placement(ctx context.Context, id string) (Placement, error) {
	v, err := c.c.QueryWorkflow(ctx, id, "", QueryPlacement)
	var qf *serviceerror.QueryFailed
	if errors.As(err, &qf) {
		// Not registered yet: the workflow has accepted no claim.
		return Placement{}, nil
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return Placement{}, errs.NotFoundf("job %s: not found", id)
	}
	if err != nil {
		return Placement{}, errs.Wrap(errs.Unavailable, err, "job %s: placement", id)
	}
	var p Placement
	if err := v.Get(&p); err != nil {
		return Placement{}, errs.Wrap(errs.Unavailable, err, "job %s: placement", id)
	}
	return p, nil
}
