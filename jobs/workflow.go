package jobs

import (
	"errors"
	"fmt"
	"sort"
	"strings"
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
	tr := newJobTrace(j)
	if err := tr.handleQueries(ctx); err != nil {
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
		// Jobs recorded before calls ran as one run activity; every new
		// one is a lease on the claiming node and its calls through it.
		// While either goes on, the node runs the job (QueryPlacement).
		r, err := placed(ctx, c.Node, func() (Result, error) {
			switch workflow.GetVersion(ctx, versionCalls, workflow.DefaultVersion, versionLeaseCall) {
			case workflow.DefaultVersion:
				return runOn(ctx, j, c, q, version)
			case versionLeaseCall:
				if oneCall(j) {
					return runLeaseCall(ctx, j, c, q, tr)
				}
			}
			return runCalls(ctx, j, c, q, tr)
		})
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
	actx := workflow.WithActivityOptions(ctx, runOptions(j, c))
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

// runOptions are the options of a job's run on the node that claimed it
// (the one run activity, or the one-call lease): held to the job's run
// timeout, heartbeating, never retried, and waited for when cancelled, so
// a kill ends once the node tore the box down.
func runOptions(j Job, c Claim) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:              NodeQueue(c.Node),
		ScheduleToStartTimeout: nodeStartTimeout,
		StartToCloseTimeout:    runTimeout(j) + time.Minute,
		HeartbeatTimeout:       HeartbeatTimeout,
		WaitForCancellation:    true,
		RetryPolicy:            once,
	}
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
	switch {
	case j.Open:
		why = "an open job's calls came one by one from a caller who read their results; it is never run again"
	case j.Idempotent:
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
	deadline := workflow.Now(ctx).Add(claimTimeout(j))
	for {
		left := deadline.Sub(workflow.Now(ctx))
		if left <= 0 {
			return Claim{}, temporal.NewNonRetryableApplicationError(noNodeMessage(j, claimTimeout(j)), ErrNoNode, nil)
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
			return Claim{}, temporal.NewNonRetryableApplicationError(noNodeMessage(j, claimTimeout(j)), ErrNoNode, nil)
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
	q.listen(ctx, j, node, sel)
	for !done {
		sel.Select(ctx)
	}
	return err
}

// listen takes the job's questions from node and the answers to them on
// sel (see await).
func (q *questions) listen(ctx workflow.Context, j Job, node string, sel workflow.Selector) {
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
}

// versionCalls marks the workflow shape that runs a job as a lease on the
// claiming node and its calls through it, one activity each (version 1),
// and, from versionLeaseCall on, a closed job of one call as one
// activity that is its lease and its call at once.
const versionCalls = "calls"

// versionLeaseCall is versionCalls' version whose closed jobs of one call
// run as LeaseCallActivity: open, the call and close on the node in one
// round trip instead of four. Every other job runs as in version 1.
const versionLeaseCall workflow.Version = 2

// oneCall says whether j runs as one LeaseCallActivity: a closed job
// (nothing signals it calls later) of exactly one call. It reads only
// the workflow's input, so a replay takes the branch the run took.
func oneCall(j Job) bool { return !j.Open && len(j.JobCalls()) == 1 }

// openTimeout bounds building a job's kernel and directory on its node.
const openTimeout = 2 * time.Minute

// closeTimeout bounds tearing a job's kernel down.
const closeTimeout = time.Minute

// jobTrace is the workflow's record of a job's calls, which the trace and
// call-result queries read.
type jobTrace struct {
	t       Trace
	results map[string]CallResult
	// taken counts the calls the job took, for the ids of calls given
	// none.
	taken int
	// ids are the ids of every call the job took to run (its first ones,
	// and each signalled one accepted): waiting, running or ended, an id
	// names one call, so a second call under it is refused, never run.
	ids map[string]bool
}

func newJobTrace(j Job) *jobTrace {
	return &jobTrace{t: NewTrace(j), results: map[string]CallResult{}, ids: map[string]bool{}}
}

// handleQueries answers QueryTrace and QueryCallResult (a call's result
// once it ended; a result with no Call while it runs).
func (tr *jobTrace) handleQueries(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryTrace, func() (Trace, error) { return tr.t, nil }); err != nil {
		return err
	}
	return workflow.SetQueryHandler(ctx, QueryCallResult, func(id string) (CallResult, error) { return tr.results[id], nil })
}

// first is the job's calls as it was started, each with its id: its own,
// or "c<n>" by its place. An attempt after a lost node runs the same
// calls under the same ids.
func (tr *jobTrace) first(j Job) []Call {
	calls := append([]Call(nil), j.JobCalls()...)
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("c%d", i+1)
		}
		tr.ids[calls[i].ID] = true
	}
	tr.taken = max(tr.taken, len(calls))
	return calls
}

// errCallTwice is the refusal of a call under an id the job took already.
var errCallTwice = errors.New("id: given twice")

// take gives a signalled call c an id when it has none and refuses one
// any call of the job took already, whether that call waits, runs or
// ended (errCallTwice); the id is taken once the call is accepted (see
// accept).
func (tr *jobTrace) take(c Call) (Call, error) {
	tr.taken++
	if c.ID == "" {
		c.ID = fmt.Sprintf("c%d", tr.taken)
	}
	if _, ok := tr.results[c.ID]; ok || tr.ids[c.ID] {
		return c, fmt.Errorf("call %s: %w", c.ID, errCallTwice)
	}
	return c, nil
}

// accept takes c's id for c: no later call runs under it.
func (tr *jobTrace) accept(c Call) { tr.ids[c.ID] = true }

// started and ended record a call's run in the trace.
func (tr *jobTrace) started(ctx workflow.Context, c Call, node string) {
	tr.t.Add(CallRecord{ID: c.ID, Kind: c.Kind, Call: c.Describe(), Node: node, Started: workflow.Now(ctx)})
}

func (tr *jobTrace) ended(ctx workflow.Context, c Call, r CallResult) {
	r.Call, r.Kind = c.ID, c.Kind
	rec := Record(c, r)
	rec.Ended = workflow.Now(ctx)
	tr.t.Add(rec)
	tr.results[c.ID] = r
	if r.Taint != "" {
		tr.t.Tainted = true
		tr.t.Taint = joinTaint(tr.t.Taint, r.Taint)
	}
}

// refuse records a call the workflow refused before it reached a node. A
// call refused for an id another call took shows in the trace only: the
// result under that id stays the other call's, which its caller reads.
func (tr *jobTrace) refuse(ctx workflow.Context, c Call, why string, twice bool) {
	r := CallResult{Refused: true, ExitCode: refusedExit, Verdict: "deny", Decider: "workflow", Reason: why}
	if twice {
		// A record of its own: Add would take the other call's open
		// record for this one's.
		rec := Record(c, r)
		rec.Started, rec.Ended = workflow.Now(ctx), workflow.Now(ctx)
		tr.t.Calls = append(tr.t.Calls, rec)
		return
	}
	tr.started(ctx, c, "")
	tr.ended(ctx, c, r)
}

// refusedExit is the exit code of a refused call (errs.ExitRefused; the
// workflow does not import errs' exit codes to keep its replay stable).
const refusedExit = 77

func joinTaint(a, b string) string {
	switch {
	case a == "" || a == b:
		return b
	case b == "" || strings.Contains(a, b):
		return a
	}
	return a + "; " + b
}

// lease is one attempt of a job on the node that claimed it: the kernel
// held there (the lease activity) and the calls run through it.
type lease struct {
	ctx  workflow.Context
	j    Job
	c    Claim
	q    *questions
	tr   *jobTrace
	sel  workflow.Selector
	opts workflow.ActivityOptions

	holdDone bool
	holdErr  error
	// pending are calls taken and not yet started; cur is the call
	// running (nil between calls).
	pending []Call
	cur     *Call
	curErr  error
	// stop says no further call runs: one failed in a closed job, or the
	// job ran below its floor (fail).
	stop     bool
	fail     error
	released bool
	idled    bool
	idleGen  int
	idleOn   bool
	idleStop workflow.CancelFunc
	results  []CallResult
}

// runCalls opens the job's kernel on the claiming node, holds it with a
// heartbeating lease activity while the job's calls run through it one
// activity each (and, for an open job, the calls signalled later), and
// closes it. Each call runs once: a call's activity is never retried, and
// a node that goes silent (the lease's or a call's heartbeat times out)
// fails the attempt as lost, which Workflow runs again elsewhere only for
// an idempotent job.
func runCalls(ctx workflow.Context, j Job, c Claim, q *questions, tr *jobTrace) (Result, error) {
	opts := workflow.ActivityOptions{
		TaskQueue:              NodeQueue(c.Node),
		ScheduleToStartTimeout: nodeStartTimeout,
		StartToCloseTimeout:    openTimeout,
		RetryPolicy:            once,
	}
	req := LeaseRequest{Job: j, Node: c.Node}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), OpenActivity, req).Get(ctx, nil)
	if err != nil {
		return Result{}, nodeError(ctx, j, c, err)
	}
	// From here the kernel is open on the node: it is closed whatever
	// happens, but for a node that is gone.
	hctx, cancelHold := workflow.WithCancel(ctx)
	hold := opts
	hold.StartToCloseTimeout = runTimeout(j) + time.Minute
	hold.HeartbeatTimeout = HeartbeatTimeout
	hold.WaitForCancellation = true
	l := &lease{ctx: ctx, j: j, c: c, q: q, tr: tr, sel: workflow.NewSelector(ctx), opts: opts}
	l.sel.AddFuture(workflow.ExecuteActivity(workflow.WithActivityOptions(hctx, hold), LeaseActivity, req), func(f workflow.Future) {
		l.holdErr, l.holdDone = f.Get(ctx, nil), true
	})
	r, err := l.run()
	if !nodeLost(err) {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		copts := opts
		copts.StartToCloseTimeout = closeTimeout
		if cerr := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, copts), CloseActivity, req).Get(dctx, nil); cerr != nil {
			workflow.GetLogger(ctx).Warn("close of the job's kernel failed", "job", j.ID, "node", c.Node, "err", cerr)
		}
		cancelHold()
		for !l.holdDone {
			l.sel.Select(dctx)
		}
	} else {
		cancelHold()
	}
	return r, err
}

// runLeaseCall runs a closed job of one call as one activity on the
// claiming node (LeaseCallActivity): the node opens the job's kernel, runs
// the call through it and closes it, heartbeating all the while. Each
// guarantee of runCalls holds: the call runs once (never retried), the
// activity's heartbeat silence is the node lost (Workflow claims an
// idempotent job again), a kill cancels it and the node tears the box and
// the kernel down before it answers, the job's questions and answers are
// taken from the claiming node while it runs, and the trace shows the call
// running from the moment it was handed to the node, then its result.
func runLeaseCall(ctx workflow.Context, j Job, c Claim, q *questions, tr *jobTrace) (Result, error) {
	opts := runOptions(j, c)
	l := &lease{ctx: ctx, j: j, c: c, q: q, tr: tr, sel: workflow.NewSelector(ctx), opts: opts}
	call := tr.first(j)[0]
	l.cur = &call
	tr.started(ctx, call, c.Node)
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), LeaseCallActivity, CallRequest{Job: j, Node: c.Node, Call: call})
	l.sel.AddFuture(f, func(f workflow.Future) {
		var r CallResult
		err := f.Get(ctx, &r)
		l.cur = nil
		l.ended(call, r, err)
	})
	q.listen(ctx, j, c.Node, l.sel)
	// A kill does not end the wait: the activity's cancellation reaches
	// the node, which answers once the box and the kernel are gone.
	for l.cur != nil {
		l.sel.Select(ctx)
	}
	switch {
	case ctx.Err() != nil:
		return l.result(), temporal.NewCanceledError("job " + j.ID + " was killed")
	case l.curErr != nil:
		return l.result(), l.curErr
	}
	return l.result(), l.fail
}

// nodeError is the job's failure for an activity on the claiming node that
// failed: the node never started it, it was killed, or it failed.
func nodeError(ctx workflow.Context, j Job, c Claim, err error) error {
	var te *temporal.TimeoutError
	switch {
	case errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START:
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("node %s claimed job %s and did not start it within %s (is it still running?)", c.Node, j.ID, nodeStartTimeout),
			ErrNodeStopped, nil)
	case ctx.Err() != nil:
		return temporal.NewCanceledError("job " + j.ID + " was killed")
	}
	return err
}

// run runs the job's calls and, for an open job, those signalled later,
// until the calls are done (a closed job), the job is released or idle
// (an open one), its node is lost, or it is killed.
func (l *lease) run() (Result, error) {
	l.pending = l.tr.first(l.j)
	l.q.listen(l.ctx, l.j, l.c.Node, l.sel)
	calls := workflow.GetSignalChannel(l.ctx, SignalCall)
	if l.j.Open {
		l.sel.AddReceive(calls, func(ch workflow.ReceiveChannel, _ bool) {
			var c Call
			ch.Receive(l.ctx, &c)
			l.signalled(c)
		})
		l.sel.AddReceive(workflow.GetSignalChannel(l.ctx, SignalRelease), func(ch workflow.ReceiveChannel, _ bool) {
			ch.Receive(l.ctx, nil)
			l.released = true
		})
	}
	for {
		switch {
		case l.ctx.Err() != nil:
			l.settle()
			return l.result(), temporal.NewCanceledError("job " + l.j.ID + " was killed")
		case l.curErr != nil:
			return l.result(), l.curErr
		case l.fail != nil:
			return l.result(), l.fail
		case l.holdDone:
			return l.result(), l.holdEnded()
		}
		if l.cur == nil {
			if len(l.pending) > 0 && !l.stop {
				l.start()
				continue
			}
			if !l.j.Open || l.released || l.idled || l.stop {
				break
			}
			l.armIdle()
		}
		l.sel.Select(l.ctx)
	}
	if l.j.Open {
		l.tr.t.Released = true
		// Calls signalled but not run get an answer, so no caller waits
		// for one that never comes.
		for {
			var c Call
			if !calls.ReceiveAsync(&c) {
				break
			}
			if c, err := l.tr.take(c); err == nil {
				l.tr.accept(c)
				l.tr.refuse(l.ctx, c, fmt.Sprintf("job %s was released (or idle for %s) before this call ran", l.j.ID, l.j.IdleFor()), false)
			}
		}
	}
	return l.result(), nil
}

// signalled takes a call an open job's caller sent: a malformed one is
// refused into the trace, so the caller waiting on it reads why.
func (l *lease) signalled(c Call) {
	c, err := l.tr.take(c)
	if err == nil {
		err = c.Validate()
	}
	if err == nil && len(l.tr.t.Calls) >= MaxCalls {
		err = fmt.Errorf("job %s: calls: at most %d", l.j.ID, MaxCalls)
	}
	if err == nil && (l.released || l.idled) {
		err = fmt.Errorf("job %s was released before this call came", l.j.ID)
	}
	if err != nil {
		l.tr.refuse(l.ctx, c, err.Error(), errors.Is(err, errCallTwice))
		return
	}
	l.tr.accept(c)
	if l.idleOn {
		l.idleOn = false
		l.idleGen++
		l.idleStop()
	}
	l.pending = append(l.pending, c)
}

// armIdle starts the wait of an open job with no call, once a wait.
func (l *lease) armIdle() {
	if l.idleOn {
		return
	}
	l.idleOn = true
	gen := l.idleGen
	tctx, cancel := workflow.WithCancel(l.ctx)
	l.idleStop = cancel
	l.sel.AddFuture(workflow.NewTimer(tctx, l.j.IdleFor()), func(f workflow.Future) {
		if f.Get(l.ctx, nil) == nil && gen == l.idleGen {
			l.idled = true
		}
	})
}

// start runs the first pending call on the node, under heartbeats.
func (l *lease) start() {
	c := l.pending[0]
	l.pending = l.pending[1:]
	l.cur = &c
	l.tr.started(l.ctx, c, l.c.Node)
	o := l.opts
	o.StartToCloseTimeout = runTimeout(l.j) + time.Minute
	o.HeartbeatTimeout = HeartbeatTimeout
	o.WaitForCancellation = true
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(l.ctx, o), CallActivity, CallRequest{Job: l.j, Node: l.c.Node, Call: c})
	l.sel.AddFuture(f, func(f workflow.Future) {
		var r CallResult
		err := f.Get(l.ctx, &r)
		l.cur = nil
		l.ended(c, r, err)
	})
}

// ended takes a call's result: its tier held to the job's floor, marked
// tier 0 under an opt-out, recorded in the trace.
func (l *lease) ended(c Call, r CallResult, err error) {
	if err != nil {
		r = CallResult{Node: l.c.Node, Tier: l.c.Tier, Error: errorMessage(err)}
		if nodeLost(err) {
			r.Error = fmt.Sprintf("node %s was lost while running this call", l.c.Node)
		}
		l.tr.ended(l.ctx, c, r)
		if l.ctx.Err() == nil && (!l.j.Open || nodeLost(err)) {
			l.curErr = nodeError(l.ctx, l.j, l.c, err)
		}
		return
	}
	r.Node = l.c.Node
	if l.c.OptedOut {
		// Whatever the node's tier, a call under an opt-out counts as
		// unconfined: the job shows it, the server audits it.
		r.Tier, r.OptedOut = 0, true
	}
	l.tr.ended(l.ctx, c, r)
	l.results = append(l.results, l.tr.results[c.ID])
	if r.Tier < l.j.Floor() && !r.Refused && !l.j.Dev && !l.c.OptedOut {
		// The node's own check refuses this before anything runs; a call
		// that still reports a lower tier is never passed off as done.
		l.fail = temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("job %s ran call %s on node %s at sandbox tier %d, below its floor %d", l.j.ID, c.ID, r.Node, r.Tier, l.j.Floor()),
			ErrBelowFloor, nil)
		return
	}
	if r.Failed() && !l.j.Open {
		l.stop = true
	}
}

// errorMessage is an activity failure's own message, without the SDK's
// wrapping.
func errorMessage(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Message()
	}
	return err.Error()
}

// settle waits for a killed job's running call to end on its node (the
// node tears its box down first).
func (l *lease) settle() {
	for l.cur != nil && !l.holdDone {
		l.sel.Select(l.ctx)
	}
}

// holdEnded is the failure of a lease that ended while the job went on:
// its node went silent (lost), or it ran past the job's run timeout.
func (l *lease) holdEnded() error {
	if nodeLost(l.holdErr) {
		return l.holdErr
	}
	if l.ctx.Err() != nil {
		return temporal.NewCanceledError("job " + l.j.ID + " was killed")
	}
	if l.holdErr == nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %s let job %s's lease go while the job went on", l.c.Node, l.j.ID), ErrNodeLost, nil)
	}
	return nodeError(l.ctx, l.j, l.c, l.holdErr)
}

// result is the job's result: its calls' results (their output held to
// ResultCap together), with the last one's fields on top and the lowest
// tier any call ran at.
func (l *lease) result() Result {
	r := Result{Node: l.c.Node, Tier: l.c.Tier, OptedOut: l.c.OptedOut}
	if l.c.OptedOut {
		r.Tier = 0
	}
	if n := len(l.results); n > 0 {
		last := l.results[n-1]
		r.ExitCode, r.Stdout, r.Stderr, r.Truncated = last.ExitCode, last.Stdout, last.Stderr, last.Truncated
		r.Refused, r.Verdict, r.Decider, r.Reason = last.Refused, last.Verdict, last.Decider, last.Reason
		if r.Stdout == "" && last.Text != "" {
			r.Stdout = last.Text
		}
	}
	if t := l.tr.t.LowestTier; t >= 0 {
		r.Tier = t
	}
	if len(l.j.Calls) > 0 || l.j.Open {
		r.Calls = capCalls(l.results)
	}
	return r
}

// capCalls holds the calls' output to ResultCap together: the first
// calls keep theirs, a later one over what is left loses it (Truncated).
func capCalls(rs []CallResult) []CallResult {
	out := make([]CallResult, len(rs))
	left := ResultCap
	for i, r := range rs {
		n := len(r.Stdout) + len(r.Stderr) + len(r.Text)
		if n > left {
			r.Stdout, r.Stderr, r.Text, r.Truncated = "", "", "", true
			n = 0
		}
		left -= n
		out[i] = r
	}
	return out
}
