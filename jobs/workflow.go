package jobs

import (
	"errors"
	"fmt"
	"sort"
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
	q := &questions{pending: map[string]Question{}, seen: map[string]bool{}}
	if err := workflow.SetQueryHandler(ctx, QueryQuestions, q.list(ctx)); err != nil {
		return Result{}, err
	}
	release, err := holdSlot(ctx, j) // the pool's and tenant's quotas, before any claim
	defer release()
	if err != nil {
		return Result{}, err
	}
	for attempt := 0; ; attempt++ {
		c, err := claim(ctx, j)
		if err != nil {
			return Result{}, err
		}
		// Jobs recorded before approvals ran through the workflow wait on
		// the run alone; every new one also takes questions and answers.
		// (The marker is recorded once, after the first claim; later
		// attempts read it back.)
		version := workflow.GetVersion(ctx, versionApprovals, workflow.DefaultVersion, 1)
		r, err := runOn(ctx, j, c, q, version)
		if !nodeLost(err) || ctx.Err() != nil {
			return r, err
		}
		if !j.Idempotent || attempt >= j.Retries {
			return Result{}, temporal.NewNonRetryableApplicationError(lostMessage(j, c.Node, attempt), ErrNodeLost, nil)
		}
		workflow.GetLogger(ctx).Warn("node lost mid-run; the idempotent job is claimed again", "node", c.Node, "job", j.ID, "attempt", attempt+1)
	}
}

// runOn runs the job on the node that claimed it, under heartbeats, taking
// the job's questions and answers while it runs (version 1 and later).
func runOn(ctx workflow.Context, j Job, c Claim, q *questions, version workflow.Version) (Result, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              NodeQueue(c.Node),
		ScheduleToStartTimeout: nodeStartTimeout,
		StartToCloseTimeout:    j.runTimeout() + time.Minute,
		HeartbeatTimeout:       HeartbeatTimeout,
		WaitForCancellation:    true,
		RetryPolicy:            once,
	})
	var r Result
	var err error
	run := workflow.ExecuteActivity(actx, RunActivity, RunRequest{Job: j, Node: c.Node})
	if version == workflow.DefaultVersion {
		err = run.Get(actx, &r)
	} else {
		err = q.await(ctx, j, c.Node, run, &r)
	}
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
	if err == nil && c.OptedOut {
		// Whatever the node's tier, a run under an opt-out counts as
		// unconfined: the job shows it, the server audits it.
		r.Tier, r.OptedOut = 0, true
	}
	if err == nil && r.Tier < j.Floor() && !r.Refused && !j.Dev && !c.OptedOut {
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
		err := workflow.ExecuteActivity(actx, ClaimActivity, ClaimRequest{Job: j.ID, Floor: j.Floor(), Tainted: j.Tainted, Dev: j.Dev}).Get(actx, &c)
		if err == nil {
			if aerr := j.Accepts(c); aerr != nil {
				return Claim{}, temporal.NewNonRetryableApplicationError(aerr.Error(), ErrBelowFloor, nil)
			}
			return c, nil
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

// versionApprovals marks the workflow shape that takes questions and
// answers while the run goes on.
const versionApprovals = "approvals"

// deliverTimeout bounds handing an answer to the node whose call waits.
const deliverTimeout = 10 * time.Second

// questions are the job's escalations waiting for a person.
type questions struct {
	pending map[string]Question
	// seen are the ids of every question raised, answered or not.
	seen map[string]bool
}

// list is the query handler: the questions whose deadline has not passed.
func (q *questions) list(ctx workflow.Context) func() ([]Question, error) {
	return func() ([]Question, error) {
		now := workflow.Now(ctx)
		out := []Question{}
		for _, x := range q.pending {
			if now.Before(x.Deadline) {
				out = append(out, x)
			}
		}
		sort.Slice(out, func(a, b int) bool { return out[a].Deadline.Before(out[b].Deadline) })
		return out, nil
	}
}

// await waits for the run while taking the node's questions and the
// answers to them. A question is kept only from the node running the job;
// an answer is handed to that node only when it names a question still
// waiting, before its deadline, with that question's digest: an answer
// can never reach another call, and a late one is dropped (the node has
// denied the call by then).
func (q *questions) await(ctx workflow.Context, j Job, node string, run workflow.Future, r *Result) error {
	var err error
	done := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(run, func(f workflow.Future) { err, done = f.Get(ctx, r), true })
	sel.AddReceive(workflow.GetSignalChannel(ctx, SignalAsk), func(ch workflow.ReceiveChannel, _ bool) {
		var x Question
		ch.Receive(ctx, &x)
		if x.Job != j.ID || x.Node != node || x.ID == "" || x.Digest == "" || x.Timeout <= 0 {
			workflow.GetLogger(ctx).Warn("question refused", "job", j.ID, "question", x.ID, "node", x.Node)
			return
		}
		if q.seen[x.ID] {
			// A question is the one first raised under its id: asking it
			// again (another call line, the same digest) would change
			// what a person approves, not the call that runs.
			workflow.GetLogger(ctx).Warn("question raised again, refused", "job", j.ID, "question", x.ID)
			return
		}
		q.seen[x.ID] = true
		x.Deadline = workflow.Now(ctx).Add(x.Timeout)
		q.pending[x.ID] = x
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, SignalAnswer), func(ch workflow.ReceiveChannel, _ bool) {
		var a Answer
		ch.Receive(ctx, &a)
		x, ok := q.pending[a.Question]
		if !ok || x.Digest != a.Digest || a.Validate() != nil || !workflow.Now(ctx).Before(x.Deadline) {
			workflow.GetLogger(ctx).Warn("answer refused", "job", j.ID, "question", a.Question)
			return
		}
		delete(q.pending, a.Question)
		dctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:              NodeQueue(node),
			ScheduleToCloseTimeout: min(x.Deadline.Sub(workflow.Now(ctx)), deliverTimeout) + time.Second,
			StartToCloseTimeout:    deliverTimeout,
			RetryPolicy:            once,
		})
		sel.AddFuture(workflow.ExecuteActivity(dctx, AnswerActivity, a), func(f workflow.Future) {
			if derr := f.Get(ctx, nil); derr != nil {
				workflow.GetLogger(ctx).Warn("answer not delivered", "job", j.ID, "question", a.Question, "err", derr)
			}
		})
	})
	for !done {
		sel.Select(ctx)
	}
	return err
}
