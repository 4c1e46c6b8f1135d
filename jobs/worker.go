package jobs

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"errors"

	"github.com/airlock-run/airlock/errs"
	"go.temporal.io/api/serviceerror"
)

// NodeConfig is a node's place in the fleet.
type NodeConfig struct {
	// HostPort and Namespace are the Temporal frontend's; TLS is the
	// node's mutual TLS to it (see Dial).
	HostPort, Namespace string
	TLS                 *tls.Config
	ID, Pool            string
	// Tier is the sandbox tier the node runs jobs at; only a node at tier
	// 1 or more polls the pool's floor queue.
	Tier int
	// Runner runs what the node claimed.
	Runner Runner
	// Concurrency bounds the jobs (boxes) the node runs at once; 0 is 4.
	// A node at its bound declines claims, so a job over it waits in its
	// queue for a node with room instead of failing on this one.
	Concurrency int
	// Waiters are the node's calls waiting for a person's answer, which
	// the job's workflow delivers on the node's own queue.
	Waiters *Waiters
	Log     *slog.Logger
}

// Node is a running node worker.
type Node struct {
	client   client.Client
	cfg      NodeConfig
	workers  []worker.Worker
	stopping atomic.Bool
	// optedOut says an admin's sandbox opt-out holds for the node.
	optedOut atomic.Bool
	// floor is the floor queue's worker of a node below tier 1 while an
	// opt-out or the server's --dev lets it take floor work.
	mu    sync.Mutex
	floor worker.Worker
	slots *slots
}

// slots counts a node's boxes against its bound: runs in progress, and
// claims answered whose run has not arrived yet (held for as long as the
// workflow waits for the run to start, then given up).
type slots struct {
	mu       sync.Mutex
	max      int
	running  int
	reserved map[string]reservation
	now      func() time.Time
	// seq numbers reservations, so a claim gives back only its own.
	seq uint64
	// freed is closed (and replaced) when a box ends, to wake the claims
	// waiting for room (nil until one waits).
	freed chan struct{}
}

// reservation is one job's slot held for its run: when it was last
// answered, and by which claim (a job's claim put again, its first attempt
// timed out, refreshes the one slot, and the answer of the stale attempt,
// refused, must not give back what the new one holds).
type reservation struct {
	at  time.Time
	seq uint64
}

// claimWait is how long a claim waits on a full node for a box to end
// before it declines: well within claimStartToClose, so a claim answered
// late is never taken for one a stale poll holds. A short job's box frees
// up in far less; the claim then takes it at once instead of going back
// to the queue for a second's pause and a round trip through Temporal,
// and while Concurrency claims of one queue wait, the node's worker of
// that queue polls no more, so the queue's other jobs go to nodes with
// room.
const claimWait = claimStartToClose / 2

// reserveWithin is reserve, waiting up to d (or until ctx ends) for room.
func (s *slots) reserveWithin(ctx context.Context, job string, d time.Duration) (uint64, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		s.mu.Lock()
		if s.freed == nil {
			s.freed = make(chan struct{})
		}
		freed := s.freed
		s.mu.Unlock()
		if seq, ok := s.reserve(job); ok {
			return seq, true
		}
		select {
		case <-freed:
		case <-t.C:
			// A reservation whose run never came may have lapsed.
			return s.reserve(job)
		case <-ctx.Done():
			return 0, false
		}
	}
}

// reserveFor is how long an answered claim holds a slot for its run.
const reserveFor = nodeStartTimeout + claimStartToClose

// reserve holds a slot for job, or reports the node full; the number
// names this claim's hold, for unreserve.
func (s *slots) reserve(job string) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for j, r := range s.reserved {
		if now.Sub(r.at) > reserveFor {
			delete(s.reserved, j)
		}
	}
	if _, ok := s.reserved[job]; !ok && s.running+len(s.reserved) >= s.max {
		return 0, false
	}
	s.seq++
	s.reserved[job] = reservation{at: now, seq: s.seq}
	return s.seq, true
}

// unreserve gives back job's reservation, of a claim the node declined
// or whose answer was refused, and wakes the claims waiting for room. It
// gives back only the hold seq names: a later claim of the same job that
// took the slot over keeps it.
func (s *slots) unreserve(job string, seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.reserved[job]; !ok || r.seq != seq {
		return
	}
	delete(s.reserved, job)
	if s.freed != nil {
		close(s.freed)
		s.freed = nil
	}
}

// start turns job's reservation into a running box; release ends it. A
// job that holds none (its reservation lapsed, or a task no claim of this
// node answered) starts only while the node runs fewer boxes than its
// bound counting the others' reservations: whatever reaches the node's
// queue, it never runs more.
func (s *slots) start(job string) (release func(), err error) {
	s.mu.Lock()
	if _, ok := s.reserved[job]; !ok && s.running+len(s.reserved) >= s.max {
		s.mu.Unlock()
		return nil, errs.Unavailablef("node: job %s holds no box here and the node runs its most (%d): claim it again", job, s.max)
	}
	delete(s.reserved, job)
	s.running++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.running--
		if s.freed != nil {
			close(s.freed)
			s.freed = nil
		}
		s.mu.Unlock()
	}, nil
}

// Queues is every task queue a node of cfg polls.
func (cfg NodeConfig) Queues() []string {
	q := []string{PoolQueue(cfg.Pool), NodeQueue(cfg.ID)}
	if cfg.Tier >= 1 {
		q = append(q, FloorQueue(cfg.Pool))
	}
	return q
}

// StartNode connects a node to Temporal and polls its queues: the pool's
// and, at tier 1 or more, the pool's floor queue for claims; its own queue
// for the runs it claimed.
func StartNode(cfg NodeConfig) (*Node, error) {
	if err := CheckName("node id", cfg.ID); err != nil {
		return nil, err
	}
	if err := CheckName("pool", cfg.Pool); err != nil {
		return nil, err
	}
	if cfg.Runner == nil {
		return nil, errs.Invalidf("node %s: no runner", cfg.ID)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	c, err := Dial(cfg.HostPort, cfg.Namespace, cfg.TLS, cfg.Log)
	if err != nil {
		return nil, err
	}
	if cfg.Waiters == nil {
		cfg.Waiters = &Waiters{}
	}
	n := &Node{client: c.c, cfg: cfg, slots: &slots{max: cfg.Concurrency, reserved: map[string]reservation{}, now: time.Now}}
	for _, q := range cfg.Queues() {
		w := n.newWorker(q)
		if err := w.Start(); err != nil {
			n.Stop()
			return nil, errs.Wrap(errs.Unavailable, err, "node %s: poll %s", cfg.ID, q)
		}
		n.workers = append(n.workers, w)
	}
	return n, nil
}

// newWorker is the worker of one of the node's queues: runs and answers
// on its own queue, claims on the others.
func (n *Node) newWorker(q string) worker.Worker {
	cfg := n.cfg
	size := cfg.Concurrency
	if q == NodeQueue(cfg.ID) {
		// Each job running here holds its lease's activity while its call
		// runs in another, and answers arrive in a third: the claims bound
		// the boxes, so the node's own queue must never be what a call
		// waits for.
		size = 2*cfg.Concurrency + 4
	}
	w := worker.New(n.client, q, worker.Options{
		MaxConcurrentActivityExecutionSize: size,
		DisableWorkflowWorker:              true,
	})
	if q == NodeQueue(cfg.ID) {
		run := func(ctx context.Context, req RunRequest) (Result, error) {
			release, err := n.slots.start(req.Job.ID)
			if err != nil {
				return Result{}, temporal.NewNonRetryableApplicationError(errs.AgentMessage(err), errs.ClassOf(err).String(), nil)
			}
			defer release()
			return runWithHeartbeat(ctx, n.client, cfg, req)
		}
		w.RegisterActivityWithOptions(run, activity.RegisterOptions{Name: RunActivity})
		cr, ok := cfg.Runner.(CallRunner)
		if !ok {
			cr = commandCalls{cfg.Runner}
		}
		n.registerCalls(w, cr)
		w.RegisterActivityWithOptions(deliverActivity(cfg.Waiters), activity.RegisterOptions{Name: AnswerActivity})
	} else {
		claim := func(ctx context.Context, req ClaimRequest) (Claim, error) { return n.answerClaim(ctx, cfg, req) }
		w.RegisterActivityWithOptions(claim, activity.RegisterOptions{Name: ClaimActivity})
	}
	return w
}

// SetFloor is what the server said of the node on its last heartbeat:
// whether an admin's sandbox opt-out holds for it, and whether it may
// take floor work below tier 1 (an opt-out, or the server's --dev). A
// node below tier 1 polls the floor queue only while it may.
func (n *Node) SetFloor(optedOut, floor bool) error {
	n.optedOut.Store(optedOut)
	if n.cfg.Tier >= 1 {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case floor && n.floor == nil && !n.stopping.Load():
		w := n.newWorker(FloorQueue(n.cfg.Pool))
		if err := w.Start(); err != nil {
			return errs.Wrap(errs.Unavailable, err, "node %s: poll %s", n.cfg.ID, FloorQueue(n.cfg.Pool))
		}
		n.floor = w
	case !floor && n.floor != nil:
		n.floor.Stop()
		n.floor = nil
	}
	return nil
}

// claim answers a claim with the node's id and tier, or declines it when
// the node is stopping, below the job's floor (unless an opt-out or the
// server's --dev lets it), or opted out and the job tainted. The number is
// the claim's hold on its slot (slots.reserve), 0 when it declined.
func (n *Node) claim(ctx context.Context, cfg NodeConfig, req ClaimRequest) (Claim, uint64, error) {
	if n.stopping.Load() {
		return Claim{}, 0, temporal.NewApplicationError("node "+cfg.ID+" is stopping", "Declined")
	}
	optedOut := n.optedOut.Load()
	if optedOut && req.Tainted {
		return Claim{}, 0, temporal.NewApplicationError(
			fmt.Sprintf("node %s is opted out of the sandbox: it takes no tainted work (job %s)", cfg.ID, req.Job), "Declined")
	}
	if cfg.Tier < req.Floor && !optedOut && !req.Dev {
		return Claim{}, 0, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("node %s runs at sandbox tier %d, below job %s's floor %d", cfg.ID, cfg.Tier, req.Job, req.Floor), ErrBelowFloor, nil)
	}
	// Checked before any box starts: a full node waits a moment for a
	// box to end, then declines, and the job is claimed again (by this
	// node once it has room, or another).
	seq, ok := n.slots.reserveWithin(ctx, req.Job, claimWait)
	if !ok {
		return Claim{}, 0, temporal.NewApplicationError(fmt.Sprintf("node %s runs its %d boxes at once (--max-boxes)", cfg.ID, cfg.Concurrency), "Declined")
	}
	if n.stopping.Load() || n.optedOut.Load() != optedOut {
		// Stopped, or its opt-out changed, while the claim waited: the
		// checks above read what no longer holds, so it declines, and
		// gives its slot back now (held for reserveFor, it would keep
		// the node full for a job it said no to).
		n.slots.unreserve(req.Job, seq)
		return Claim{}, 0, temporal.NewApplicationError("node "+cfg.ID+" is stopping or its opt-out changed", "Declined")
	}
	return Claim{Node: cfg.ID, Tier: cfg.Tier, OptedOut: optedOut}, seq, nil
}

// claimAnswerTimeout bounds the node's own answer to a claim (answerClaim).
const claimAnswerTimeout = claimStartToClose

// answerClaim is the claim activity: claim, then the node answers the
// claim itself rather than leaving the answer to the SDK, which only logs
// an answer the server refused. A claim may end unanswered however its
// activity ends: the job killed while the claim waited for room, the
// claim timed out (its poll's worker gone, or the node slow to answer),
// the server no longer knowing the task. Its answer is then refused, and
// the reservation it took is given back at once: held for reserveFor, it
// would keep the node full (turning other jobs away) for a run that never
// comes. An answer whose fate is unknown (the server unreachable) keeps
// the reservation, which lapses after reserveFor.
func (n *Node) answerClaim(ctx context.Context, cfg NodeConfig, req ClaimRequest) (Claim, error) {
	c, seq, err := n.claim(ctx, cfg, req)
	if err != nil {
		return c, err
	}
	if ctx.Err() != nil {
		// The activity's time ran out while the claim waited: no answer
		// can be taken now.
		n.slots.unreserve(req.Job, seq)
		return Claim{}, temporal.NewApplicationError("node "+cfg.ID+": the claim of job "+req.Job+" ended before it was answered", "Declined")
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimAnswerTimeout)
	defer cancel()
	err = n.client.CompleteActivity(actx, activity.GetInfo(ctx).TaskToken, c, nil)
	switch {
	case err == nil:
	case answerUnknown(err):
		if cfg.Log != nil {
			cfg.Log.Warn("answer of a claim not known to have reached the server; its box stays reserved for a while", "job", req.Job, "err", err)
		}
	default:
		n.slots.unreserve(req.Job, seq)
		if cfg.Log != nil {
			cfg.Log.Info("claim ended before its answer (the job killed, or the claim timed out); its box reservation given back", "job", req.Job, "err", err)
		}
	}
	return Claim{}, activity.ErrResultPending // answered above, one way or the other
}

// answerUnknown reports whether a refused answer may still have been
// recorded: the server unreachable or the call out of time, rather than
// the server saying no.
func answerUnknown(err error) bool {
	var un *serviceerror.Unavailable
	var de *serviceerror.DeadlineExceeded
	return errors.As(err, &un) || errors.As(err, &de) || errors.Is(err, context.DeadlineExceeded)
}

// runWithHeartbeat runs the job and heartbeats while it runs, so a lost
// node fails the job within HeartbeatTimeout and a kill reaches the run
// within HeartbeatEvery (the heartbeat's answer says a kill was asked; the
// runner then kills the box's whole tree and its cgroup).
//
// The heartbeats are the node's own, not the SDK's: the SDK cancels an
// activity whose heartbeat failed to reach the server at all, so a server
// restart would kill every running job. Here only a kill, or the server
// saying the run no longer exists (it timed out, the job was ended),
// cancels the run; a server away for a while is waited for, and a result
// reached meanwhile is reported once it is back.
func runWithHeartbeat(ctx context.Context, c client.Client, cfg NodeConfig, req RunRequest) (Result, error) {
	r, err := heartbeating(ctx, c, cfg, req.Node, func(ctx context.Context) (Result, error) { return cfg.Runner.Run(ctx, req) })
	// The tier is what the run reported (the runner's evidence), not the
	// node's: a policy may have taken the run out of the box.
	if err == nil {
		r.Node = cfg.ID
	}
	return r, err
}

// heartbeating runs fn for the activity of ctx under the node's own
// heartbeats (see runWithHeartbeat): fn's context ends on a kill or when
// the server no longer knows the activity.
func heartbeating[T any](ctx context.Context, c client.Client, cfg NodeConfig, node string, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if node != cfg.ID {
		return zero, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("node %s was handed a run for node %s", cfg.ID, node), "WrongNode", nil)
	}
	runCtx, cancelRun := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelRun(nil)
	done := make(chan struct{})
	defer close(done)
	go heartbeat(ctx, c, activity.GetInfo(ctx).TaskToken, cancelRun, done, cfg.Log)
	r, err := fn(runCtx)
	if runCtx.Err() != nil {
		return r, temporal.NewCanceledError("killed") // reported as cancelled, not failed
	}
	if err != nil {
		// Only the message crosses: the cause may name the node's paths.
		return r, temporal.NewNonRetryableApplicationError(errs.AgentMessage(err), errs.ClassOf(err).String(), nil)
	}
	return r, nil
}

// registerCalls registers the activities of a job's lease on the node's
// own queue: open builds the job's kernel, the lease holds it (under
// heartbeats, with a box slot) until the workflow lets go or the job is
// killed, each call runs through it, close tears it down. Whatever ends
// the lease (a kill, the node stopping) closes the kernel too.
func (n *Node) registerCalls(w worker.Worker, cr CallRunner) {
	cfg := n.cfg
	wrong := func(node string) error {
		if node == cfg.ID {
			return nil
		}
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %s was handed a lease of node %s", cfg.ID, node), "WrongNode", nil)
	}
	open := func(ctx context.Context, req LeaseRequest) (Lease, error) {
		if err := wrong(req.Node); err != nil {
			return Lease{}, err
		}
		l, err := cr.Open(ctx, req)
		if err != nil {
			return Lease{}, temporal.NewNonRetryableApplicationError(errs.AgentMessage(err), errs.ClassOf(err).String(), nil)
		}
		return Lease{Job: req.Job.ID, Node: cfg.ID, Tier: l.Tier}, nil
	}
	ends := &leaseEnds{m: map[string]chan struct{}{}}
	hold := func(ctx context.Context, req LeaseRequest) error {
		release, err := n.slots.start(req.Job.ID)
		if err != nil {
			return temporal.NewNonRetryableApplicationError(errs.AgentMessage(err), errs.ClassOf(err).String(), nil)
		}
		defer release()
		end := ends.of(req.Job.ID)
		defer ends.drop(req.Job.ID)
		_, err = heartbeating(ctx, n.client, cfg, req.Node, func(ctx context.Context) (struct{}, error) {
			// The workflow's close ends the lease at once; a kill or the
			// node stopping ends it through ctx.
			select {
			case <-ctx.Done():
			case <-end:
			}
			return struct{}{}, nil
		})
		if cerr := cr.Close(context.Background(), req.Job.ID); cerr != nil && cfg.Log != nil {
			cfg.Log.Warn("close of a job's kernel at the end of its lease", "job", req.Job.ID, "err", cerr)
		}
		return err
	}
	call := func(ctx context.Context, req CallRequest) (CallResult, error) {
		r, err := heartbeating(ctx, n.client, cfg, req.Node, func(ctx context.Context) (CallResult, error) { return cr.Call(ctx, req) })
		if err == nil {
			r.Node, r.Call = cfg.ID, req.Call.ID
		}
		return r, err
	}
	closeKernel := func(ctx context.Context, req LeaseRequest) error {
		if err := wrong(req.Node); err != nil {
			return err
		}
		if err := cr.Close(ctx, req.Job.ID); err != nil {
			return temporal.NewNonRetryableApplicationError(errs.AgentMessage(err), errs.ClassOf(err).String(), nil)
		}
		// The kernel is closed: the lease holding it has nothing left to
		// hold, so it ends now rather than at the workflow's cancellation,
		// which reaches it only with the next heartbeat's answer.
		ends.end(req.Job.ID)
		return nil
	}
	// leaseCall is a closed job of one call's whole lease: open, the
	// call, close, under one activity's heartbeats (a kill or the server
	// forgetting the activity cancels the call, whose box is torn down,
	// and the kernel is closed before the answer), so the job pays one
	// round trip through Temporal for what open, lease, call and close
	// pay four.
	leaseCall := func(ctx context.Context, req CallRequest) (CallResult, error) {
		if err := wrong(req.Node); err != nil {
			return CallResult{}, err
		}
		release, err := n.slots.start(req.Job.ID)
		if err != nil {
			return CallResult{}, temporal.NewNonRetryableApplicationError(errs.AgentMessage(err), errs.ClassOf(err).String(), nil)
		}
		defer release()
		r, err := heartbeating(ctx, n.client, cfg, req.Node, func(ctx context.Context) (CallResult, error) {
			if _, err := cr.Open(ctx, LeaseRequest{Job: req.Job, Node: req.Node}); err != nil {
				return CallResult{}, err
			}
			defer func() {
				if cerr := cr.Close(context.WithoutCancel(ctx), req.Job.ID); cerr != nil && cfg.Log != nil {
					cfg.Log.Warn("close of a job's kernel at the end of its lease", "job", req.Job.ID, "err", cerr)
				}
			}()
			return cr.Call(ctx, req)
		})
		if err == nil {
			r.Node, r.Call = cfg.ID, req.Call.ID
		}
		return r, err
	}
	w.RegisterActivityWithOptions(open, activity.RegisterOptions{Name: OpenActivity})
	w.RegisterActivityWithOptions(leaseCall, activity.RegisterOptions{Name: LeaseCallActivity})
	w.RegisterActivityWithOptions(hold, activity.RegisterOptions{Name: LeaseActivity})
	w.RegisterActivityWithOptions(call, activity.RegisterOptions{Name: CallActivity})
	w.RegisterActivityWithOptions(closeKernel, activity.RegisterOptions{Name: CloseActivity})
}

// leaseEnds are the channels that end a job's lease on this node when the
// workflow closed its kernel: by job id, closed once.
type leaseEnds struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// of is job's channel, made on first use (by the lease, or by a close that
// came first, which leaves it closed).
func (e *leaseEnds) of(job string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch, ok := e.m[job]
	if !ok {
		ch = make(chan struct{})
		e.m[job] = ch
	}
	return ch
}

// end closes job's channel (once).
func (e *leaseEnds) end(job string) {
	ch := e.of(job)
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// drop forgets job's channel, when its lease ended.
func (e *leaseEnds) drop(job string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, job)
}

// heartbeat records the run's heartbeat every HeartbeatEvery until done,
// and cancels the run when the server answers that it was killed or no
// longer exists, or the SDK ended the activity for a reason of its own (the
// worker stopping).
func heartbeat(ctx context.Context, c client.Client, token []byte, cancelRun context.CancelCauseFunc, done <-chan struct{}, log *slog.Logger) {
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	sdkDone := ctx.Done()
	for {
		select {
		case <-done:
			return
		case <-sdkDone:
			sdkDone = nil // once: a done context stays done
			cancelRun(context.Cause(ctx))
			return
		case <-t.C:
			hctx, cancel := context.WithTimeout(context.Background(), HeartbeatEvery*3)
			err := c.RecordActivityHeartbeat(hctx, token)
			cancel()
			if endsRun(err) {
				cancelRun(err)
				return
			}
			if err != nil && log != nil {
				log.Warn("heartbeat did not reach the server; the run goes on", "err", err)
			}
		}
	}
}

// endsRun reports whether a heartbeat's error ends the run: a kill, or
// the server no longer knowing the run. Anything else (the server away,
// a timeout) is waited out: the heartbeat timeout decides.
func endsRun(err error) bool {
	var canceled *temporal.CanceledError
	var nf *serviceerror.NotFound
	var nsnf *serviceerror.NamespaceNotFound
	return errors.As(err, &canceled) || errors.As(err, &nf) || errors.As(err, &nsnf)
}

// Stop declines new claims and stops polling; runs in progress end first.
func (n *Node) Stop() {
	n.stopping.Store(true)
	for _, w := range n.workers {
		w.Stop()
	}
	n.mu.Lock()
	if n.floor != nil {
		n.floor.Stop()
		n.floor = nil
	}
	n.mu.Unlock()
	n.client.Close()
}

// slogAdapter hands the SDK's log lines to a slog logger.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Debug(msg string, kv ...any) { a.l.Debug(msg, kv...) }
func (a slogAdapter) Info(msg string, kv ...any)  { a.l.Debug(msg, kv...) }
func (a slogAdapter) Warn(msg string, kv ...any)  { a.l.Warn(msg, kv...) }
func (a slogAdapter) Error(msg string, kv ...any) { a.l.Error(msg, kv...) }

var _ sdklog.Logger = slogAdapter{}

// commandCalls runs the calls of a lease through a Runner that runs one
// command a job (and keeps nothing between them): each exec or shell call
// is a run of its own; a call of another kind is refused.
type commandCalls struct{ Runner }

func (c commandCalls) Open(ctx context.Context, req LeaseRequest) (Lease, error) {
	return Lease{Job: req.Job.ID, Node: req.Node}, nil
}

func (c commandCalls) Call(ctx context.Context, req CallRequest) (CallResult, error) {
	if req.Call.Kind != CallExec && req.Call.Kind != CallShell {
		return CallResult{}, errs.Invalidf("call %s: this node runs commands only, not %s", req.Call.ID, req.Call.Kind)
	}
	r, err := c.Run(ctx, RunRequest{Job: asCommand(req.Job, req.Call), Node: req.Node})
	return asCall(r), err
}

func (c commandCalls) Close(ctx context.Context, job string) error { return nil }

// asCommand is j with call c as its one command.
func asCommand(j Job, c Call) Job {
	j.Argv, j.Command, j.Input, j.Calls, j.Open = c.Argv, c.Command, c.Stdin, nil, false
	return j
}

// asCall is a run's result as a call's.
func asCall(r Result) CallResult {
	return CallResult{Node: r.Node, Tier: r.Tier, ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr, Truncated: r.Truncated,
		Refused: r.Refused, Verdict: r.Verdict, Decider: r.Decider, Reason: r.Reason, OptedOut: r.OptedOut}
}
