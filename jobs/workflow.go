package jobs

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Error types of the workflow's failures, so a client can tell them apart.
const (
	ErrNoNode      = "NoEligibleNode"
	ErrBelowFloor  = "BelowFloor"
	ErrInvalidJob  = "InvalidJob"
	ErrNodeStopped = "NodeDidNotStart"
	ErrNodeLost    = "NodeLost"
)

// once is the retry policy of everything the workflow schedules: a claim
// is put again by the workflow itself, and a command is never run twice.
var once = &temporal.RetryPolicy{MaximumAttempts: 1}

// Workflow routes a job by its floor and runs it on the node that claimed
// it. It is deterministic: replay tests hold it to recorded histories.
//
// A run whose node stops heartbeating (the node died mid-call) is never
// run again unless the job is marked idempotent: a command may have
// written files or sent data before the node died, and running it twice
// could do that twice. An idempotent job is claimed again, by any eligible
// node, at most Retries times.
func Workflow(ctx workflow.Context, j Job) (Result, error) {
	if err := j.Validate(); err != nil {
		return Result{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrInvalidJob, nil)
	}
	for attempt := 0; ; attempt++ {
		c, err := claim(ctx, j)
		if err != nil {
			return Result{}, err
		}
		r, err := runOn(ctx, j, c)
		if !nodeLost(err) || ctx.Err() != nil {
			return r, err
		}
		if !j.Idempotent || attempt >= j.Retries {
			return Result{}, temporal.NewNonRetryableApplicationError(lostMessage(j, c.Node, attempt), ErrNodeLost, nil)
		}
		workflow.GetLogger(ctx).Warn("node lost mid-run; the idempotent job is claimed again", "node", c.Node, "job", j.ID, "attempt", attempt+1)
	}
}

// runOn runs the job on the node that claimed it, under heartbeats.
func runOn(ctx workflow.Context, j Job, c Claim) (Result, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              NodeQueue(c.Node),
		ScheduleToStartTimeout: nodeStartTimeout,
		StartToCloseTimeout:    j.runTimeout() + time.Minute,
		HeartbeatTimeout:       HeartbeatTimeout,
		WaitForCancellation:    true,
		RetryPolicy:            once,
	})
	var r Result
	err := workflow.ExecuteActivity(actx, RunActivity, RunRequest{Job: j, Node: c.Node}).Get(actx, &r)
	var te *temporal.TimeoutError
	if errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
		return Result{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("node %s claimed job %s and did not start it within %s (is it still running?)", c.Node, j.ID, nodeStartTimeout),
			ErrNodeStopped, nil)
	}
	if ctx.Err() != nil {
		// Killed: the node saw the cancellation and tore the box down.
		return r, temporal.NewCanceledError("job " + j.ID + " was killed")
	}
	if err == nil && r.Tier < j.Floor() && !r.Refused {
		// The node's own check refuses this before anything runs; a run
		// that still reports a lower tier is never passed off as done.
		return r, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("job %s ran on node %s at sandbox tier %d, below its floor %d", j.ID, r.Node, r.Tier, j.Floor()),
			ErrBelowFloor, nil)
	}
	return r, err
}

// nodeLost reports whether a run failed because its node went silent.
func nodeLost(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT
}

// lostMessage is the failure of a job whose node was lost mid-run, naming
// why it was not run again.
func lostMessage(j Job, node string, attempt int) string {
	why := "the job is not marked idempotent"
	if j.Idempotent {
		why = fmt.Sprintf("its %d retries are used up", j.Retries)
		if attempt == 0 {
			why = "the job allows no retry"
		}
	}
	return fmt.Sprintf("node %s was lost while running job %s (not retried: %s)", node, j.ID, why)
}

// claim waits on the job's queue until a node eligible for its floor
// claims it, or the claim timeout ends. A claim taken by a poll whose
// worker is gone is never answered: it times out after claimStartToClose
// and is put to the queue again. A node below the floor that answers
// (it never polls the floor queue, so only a fault would let it) is
// refused, never used.
func claim(ctx workflow.Context, j Job) (Claim, error) {
	deadline := workflow.Now(ctx).Add(j.claimTimeout())
	for {
		left := deadline.Sub(workflow.Now(ctx))
		if left <= 0 {
			return Claim{}, temporal.NewNonRetryableApplicationError(noNodeMessage(j, j.claimTimeout()), ErrNoNode, nil)
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:              j.Queue(),
			ScheduleToStartTimeout: left,
			StartToCloseTimeout:    claimStartToClose,
			RetryPolicy:            once,
		})
		var c Claim
		err := workflow.ExecuteActivity(actx, ClaimActivity, ClaimRequest{Job: j.ID, Floor: j.Floor()}).Get(actx, &c)
		if err == nil {
			if c.Tier >= j.Floor() {
				return c, nil
			}
			return Claim{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("node %s at sandbox tier %d claimed job %s, whose floor is tier %d: refused, the job never runs below its floor", c.Node, c.Tier, j.ID, j.Floor()),
				ErrBelowFloor, nil)
		}
		var te *temporal.TimeoutError
		if errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
			return Claim{}, temporal.NewNonRetryableApplicationError(noNodeMessage(j, j.claimTimeout()), ErrNoNode, nil)
		}
		if temporal.IsCanceledError(err) || ctx.Err() != nil {
			return Claim{}, err
		}
		// A stale poll's claim, or a node that declined (draining): wait
		// a moment so a declining node is not asked in a tight loop.
		if err := workflow.Sleep(ctx, time.Second); err != nil {
			return Claim{}, err
		}
	}
}
