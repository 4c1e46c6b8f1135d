package jobs

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/airlock-run/airlock/errs"
)

// RunsOn reports whether job id is running with an activity started on
// node's own queue (node.<id>): the node runs it now. It reads Temporal's
// record of the workflow, never what a node says, so the API can refuse a
// node's question for a job another node runs.
func (c *Client) RunsOn(ctx context.Context, id, node string) (bool, error) {
	d, err := c.c.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	if err != nil {
		return false, errs.Wrap(errs.Unavailable, err, "job %s", id)
	}
	if d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return false, nil
	}
	for _, a := range d.GetPendingActivities() {
		switch a.GetState() {
		case enumspb.PENDING_ACTIVITY_STATE_STARTED, enumspb.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED:
			if a.GetActivityOptions().GetTaskQueue().GetName() == NodeQueue(node) {
				return true, nil
			}
		}
	}
	return false, nil
}
