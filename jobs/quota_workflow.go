package jobs

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names on the wire of the quota's activities, which run on the server's
// own queue (WorkflowQueue): no node may poll it (the authorizer), so no
// node can grant itself a slot or hold one back.
const (
	AcquireActivity = "airlock.quota.acquire"
	ReleaseActivity = "airlock.quota.release"
)

// ErrOverQuota is the failure type of a job that got no quota slot within
// its claim timeout.
const ErrOverQuota = "OverQuota"

// versionQuota marks the workflow shape that takes a quota slot before
// its claim; jobs recorded before it replay without one.
const versionQuota = "quota"

// slotWait is how long one ask waits on the server for a slot to free up;
// the workflow asks again until its claim timeout ends.
const slotWait = 30 * time.Second

// holdSlot takes job j's slot of its pool's and tenant's quotas before
// anything is claimed, waiting for one (up to j's claim timeout) while the
// quotas are full. release gives the slot back; it is returned with every
// error too (an ask may have been granted as the job was killed), and is
// safe to call when nothing was taken. A job without a tenant was started
// around the API (by the server's own Temporal identity, the one that may
// start workflows) and takes none; nor does a job the server started
// QuotaFree (no quota named its pool or tenant), read from the workflow's
// input, so its replay takes the same branch.
func holdSlot(ctx workflow.Context, j Job) (release func(), err error) {
	if j.Tenant == "" || j.QuotaFree || workflow.GetVersion(ctx, versionQuota, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return func() {}, nil
	}
	req := SlotRequest{Job: j.ID, Pool: j.Pool, Tenant: j.Tenant}
	release = func() { releaseSlot(ctx, req) }
	deadline := workflow.Now(ctx).Add(claimTimeout(j))
	var full string
	for {
		left := deadline.Sub(workflow.Now(ctx))
		if left <= 0 {
			return release, temporal.NewNonRetryableApplicationError(overQuotaMessage(j, claimTimeout(j), full), ErrOverQuota, nil)
		}
		req.Wait = min(left, slotWait)
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:              WorkflowQueue,
			ScheduleToStartTimeout: left,
			StartToCloseTimeout:    req.Wait + claimStartToClose,
			RetryPolicy:            once,
		})
		var g SlotGrant
		err := workflow.ExecuteActivity(actx, AcquireActivity, req).Get(actx, &g)
		switch {
		case err == nil && g.Granted:
			return release, nil
		case err == nil:
			full = g.Full
		case temporal.IsCanceledError(err) || ctx.Err() != nil:
			return release, err
		default:
			var te *temporal.TimeoutError
			if errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
				continue // the deadline check above ends it
			}
			// The server could not answer (restarting, its slots file
			// not written): ask again in a moment.
			workflow.GetLogger(ctx).Warn("quota ask failed; asking again", "job", j.ID, "err", err)
		}
		// A moment between asks, so an answer that came back early never
		// makes a tight loop.
		if err := workflow.Sleep(ctx, time.Second); err != nil {
			return release, err
		}
	}
}

// releaseSlot gives req's slot back, on a context of its own so a killed
// job releases too, retrying while the server is away. A release that
// never arrives is freed by the server's sweep once the job has ended.
func releaseSlot(ctx workflow.Context, req SlotRequest) {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	dctx = workflow.WithActivityOptions(dctx, workflow.ActivityOptions{
		TaskQueue:              WorkflowQueue,
		ScheduleToCloseTimeout: releasedFor,
		StartToCloseTimeout:    claimStartToClose,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second},
	})
	req.Wait = 0
	if err := workflow.ExecuteActivity(dctx, ReleaseActivity, req).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("quota slot not released; the server's sweep frees it", "job", req.Job, "err", err)
	}
}

// activityRegistry is where activities are registered: the server's
// worker, or a workflow test's environment.
type activityRegistry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// registerQuotas registers the quota's activities on the server's worker.
func registerQuotas(w activityRegistry, q *Quotas) {
	w.RegisterActivityWithOptions(q.Acquire, activity.RegisterOptions{Name: AcquireActivity})
	w.RegisterActivityWithOptions(func(_ context.Context, req SlotRequest) error { return q.Release(req.Job) },
		activity.RegisterOptions{Name: ReleaseActivity})
}

// running says whether job id's workflow still runs; a job Temporal does
// not know is not running.
func (c *Client) running(ctx context.Context, id string) (bool, error) {
	d, err := c.c.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}
