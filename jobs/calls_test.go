package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// registerRun registers run as the node's side of both workflow shapes: the
// one run activity of jobs recorded before calls, and each call of a
// lease (a call of a command job is handed to run as the job's command).
func registerRun(env *testsuite.TestWorkflowEnvironment, run func(context.Context, RunRequest) (Result, error)) *leaseLog {
	env.RegisterActivityWithOptions(run, activity.RegisterOptions{Name: RunActivity})
	return registerLease(env, func(ctx context.Context, req CallRequest) (CallResult, error) {
		r, err := run(ctx, RunRequest{Job: asCommand(req.Job, req.Call), Node: req.Node})
		return asCall(r), err
	})
}

// leaseLog notes the lease activities the workflow scheduled.
type leaseLog struct {
	mu     sync.Mutex
	events []string
	// holdErr, when set, ends the lease's with it (a node gone
	// silent) after holdFor.
	holdErr error
	holdFor time.Duration
}

func (l *leaseLog) note(s string) {
	l.mu.Lock()
	l.events = append(l.events, s)
	l.mu.Unlock()
}

func (l *leaseLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.events, " ")
}

// registerLease registers open, (heartbeating until cancelled), call
// and close activities, as a node does.
func registerLease(env *testsuite.TestWorkflowEnvironment, call func(context.Context, CallRequest) (CallResult, error)) *leaseLog {
	l := &leaseLog{}
	env.RegisterActivityWithOptions(func(ctx context.Context, req LeaseRequest) (Lease, error) {
		l.note("open@" + activity.GetInfo(ctx).TaskQueue)
		return Lease{Job: req.Job.ID, Node: req.Node}, nil
	}, activity.RegisterOptions{Name: OpenActivity})
	env.RegisterActivityWithOptions(func(ctx context.Context, req LeaseRequest) error {
		// In parallel with the calls: not in the ordered log.
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		var lost <-chan time.Time
		if l.holdErr != nil {
			lost = time.After(l.holdFor)
		}
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-lost:
				return l.holdErr
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}, activity.RegisterOptions{Name: LeaseActivity})
	env.RegisterActivityWithOptions(func(ctx context.Context, req CallRequest) (CallResult, error) {
		l.note("call:" + req.Call.ID)
		return call(ctx, req)
	}, activity.RegisterOptions{Name: CallActivity})
	env.RegisterActivityWithOptions(func(ctx context.Context, req LeaseRequest) error {
		l.note("close")
		return nil
	}, activity.RegisterOptions{Name: CloseActivity})
	// A closed job of one call: its open, call and close in one activity,
	// noted as one ("lease-call"), which a silent node fails as the lease
	// above does.
	env.RegisterActivityWithOptions(func(ctx context.Context, req CallRequest) (CallResult, error) {
		l.note("lease-call@" + activity.GetInfo(ctx).TaskQueue + ":" + req.Call.ID)
		if l.holdErr != nil {
			select {
			case <-ctx.Done():
				return CallResult{}, ctx.Err()
			case <-time.After(l.holdFor):
				return CallResult{}, l.holdErr
			}
		}
		return call(ctx, req)
	}, activity.RegisterOptions{Name: LeaseCallActivity})
	return l
}

func claimBy(env *testsuite.TestWorkflowEnvironment, c ...Claim) {
	i := 0
	var mu sync.Mutex
	env.RegisterActivityWithOptions(func(ctx context.Context, req ClaimRequest) (Claim, error) {
		mu.Lock()
		defer mu.Unlock()
		next := c[min(i, len(c)-1)]
		i++
		return next, nil
	}, activity.RegisterOptions{Name: ClaimActivity})
}

func callsJob(mod func(*Job)) Job {
	j := Job{ID: "j-1", Pool: "build", ClaimTimeout: time.Minute, Calls: []Call{
		{Kind: CallExec, Argv: []string{"make"}},
		{Kind: CallWriteFile, Path: "out.txt", Content: "hello"},
		{Kind: CallReadFile, Path: "out.txt"},
	}}
	if mod != nil {
		mod(&j)
	}
	return j
}

// tiered answers each call at the tier its id names in tiers (1 if none),
// echoing what the call was.
func tiered(tiers map[string]int) func(context.Context, CallRequest) (CallResult, error) {
	return func(ctx context.Context, req CallRequest) (CallResult, error) {
		tier, ok := tiers[req.Call.ID]
		if !ok {
			tier = 1
		}
		r := CallResult{Tier: tier, Verdict: "allow", Decider: "policy"}
		switch req.Call.Kind {
		case CallReadFile:
			r.Text = "hello"
		case CallWriteFile:
			r.Text = "wrote 5 bytes to out.txt\n"
		default:
			r.Stdout = "ran " + req.Call.Describe()
		}
		return r, nil
	}
}

func traceOf(t *testing.T, env *testsuite.TestWorkflowEnvironment) Trace {
	t.Helper()
	v, err := env.QueryWorkflow(QueryTrace)
	if err != nil {
		t.Fatal(err)
	}
	var tr Trace
	if err := v.Get(&tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestCallsRunInOrderThroughOneLease: a job's calls run one activity each
// on the claiming node's queue, between the open and the close of its
// kernel, and its trace and result show every call, its node and tier.
func TestCallsRunInOrderThroughOneLease(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	claimBy(env, Claim{Node: "n1", Tier: 1})
	var queues []string
	var mu sync.Mutex
	log := registerLease(env, func(ctx context.Context, req CallRequest) (CallResult, error) {
		mu.Lock()
		queues = append(queues, activity.GetInfo(ctx).TaskQueue)
		mu.Unlock()
		return tiered(nil)(ctx, req)
	})
	letGo := 0
	env.SetOnActivityCanceledListener(func(info *activity.Info) {
		if info.ActivityType.Name == LeaseActivity {
			letGo++
		}
	})
	env.ExecuteWorkflow(Workflow, callsJob(nil))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	if got, want := log.String(), "open@node.n1 call:c1 call:c2 call:c3 close"; got != want {
		t.Errorf("lease: got %q, want %q", got, want)
	}
	if letGo != 1 {
		t.Errorf("leases let go: got %d, want the one lease held while the calls ran, let go at the end", letGo)
	}
	if got := strings.Join(queues, " "); got != "node.n1 node.n1 node.n1" {
		t.Errorf("call queues: got %q", got)
	}
	if len(r.Calls) != 3 || r.Calls[2].Text != "hello" || r.Calls[0].Call != "c1" || r.Node != "n1" || r.Tier != 1 {
		t.Fatalf("result: got %+v", r)
	}
	tr := traceOf(t, env)
	if len(tr.Calls) != 3 || tr.LowestTier != 1 || strings.Join(tr.Nodes, ",") != "n1" {
		t.Fatalf("trace: got %+v", tr)
	}
	for i, want := range []string{"exec make", "write_file out.txt (5 bytes)", "read_file out.txt"} {
		c := tr.Calls[i]
		if got := c.Kind + " " + c.Call; got != want || c.Node != "n1" || c.Tier != 1 || c.Verdict != "allow" || c.Started.IsZero() || c.Ended.IsZero() {
			t.Errorf("trace call %d: got %+v, want %q on n1 at tier 1, started and ended", i, c, want)
		}
		if strings.Contains(c.Call, "hello") {
			t.Errorf("trace call %d shows the write's content: %q", i, c.Call)
		}
	}
}

// TestLowestTier: the job shows the lowest tier any call ran at; a call
// under an opt-out counts as tier 0.
func TestLowestTier(t *testing.T) {
	tests := []struct {
		name  string
		job   Job
		claim Claim
		tiers map[string]int
		want  int
	}{
		{"every call at tier 1", callsJob(nil), Claim{Node: "n1", Tier: 1}, nil, 1},
		{"a tier-0 job whose second call left the box", callsJob(func(j *Job) { j.Tier0 = true }), Claim{Node: "n1", Tier: 1}, map[string]int{"c2": 0}, 0},
		{"an opted-out node", callsJob(nil), Claim{Node: "n1", Tier: 1, OptedOut: true}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			claimBy(env, tt.claim)
			registerLease(env, tiered(tt.tiers))
			env.ExecuteWorkflow(Workflow, tt.job)
			var r Result
			if err := env.GetWorkflowResult(&r); err != nil {
				t.Fatal(err)
			}
			if tr := traceOf(t, env); tr.LowestTier != tt.want || r.Tier != tt.want {
				t.Fatalf("lowest tier: trace %d, result %d, want %d", tr.LowestTier, r.Tier, tt.want)
			}
		})
	}
}

// TestCallBelowFloorFailsTheJob: a call that reports a tier below the
// floor fails the job, and no later call runs.
func TestCallBelowFloorFailsTheJob(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	claimBy(env, Claim{Node: "n1", Tier: 1})
	log := registerLease(env, tiered(map[string]int{"c2": 0}))
	env.ExecuteWorkflow(Workflow, callsJob(nil))
	var app *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != ErrBelowFloor || !strings.Contains(app.Message(), "call c2") {
		t.Fatalf("got %v, want a %s failure naming call c2", err, ErrBelowFloor)
	}
	if got := log.String(); strings.Contains(got, "call:c3") || !strings.Contains(got, "close") {
		t.Errorf("lease: got %q, want no c3 and the kernel closed", got)
	}
}

// TestFailedCallStopsAClosedJob: after a refused call, a closed job's
// later calls do not run; the job's result is the refused call's.
func TestFailedCallStopsAClosedJob(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	claimBy(env, Claim{Node: "n1", Tier: 1})
	log := registerLease(env, func(ctx context.Context, req CallRequest) (CallResult, error) {
		if req.Call.ID == "c2" {
			return CallResult{Tier: 1, Refused: true, ExitCode: 77, Verdict: "deny", Decider: "policy", Rule: "fs.write", Reason: "write to out.txt is not allowed"}, nil
		}
		return tiered(nil)(ctx, req)
	})
	env.ExecuteWorkflow(Workflow, callsJob(nil))
	var r Result
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	if !r.Refused || r.ExitCode != 77 || len(r.Calls) != 2 || strings.Contains(log.String(), "call:c3") {
		t.Fatalf("got %+v after %q, want the refusal of c2 and no c3", r, log)
	}
	if tr := traceOf(t, env); len(tr.Calls) != 2 || tr.Calls[1].Rule != "fs.write" || !tr.Calls[1].Refused {
		t.Fatalf("trace: got %+v", tr.Calls)
	}
}

// TestOpenJob: an open job runs its first calls, then the calls signalled
// to it, refuses a malformed one into the trace, and ends when released.
func TestOpenJob(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(20 * time.Second)
	claimBy(env, Claim{Node: "n1", Tier: 1})
	log := registerLease(env, tiered(nil))
	var mid Trace
	var got CallResult
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalCall, Call{ID: "x1", Kind: CallShell, Command: "ls"}) }, 500*time.Millisecond)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalCall, Call{ID: "x2", Kind: CallExec}) }, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalCall, Call{Kind: CallReadFile, Path: "out.txt"}) }, 1500*time.Millisecond)
	env.RegisterDelayedCallback(func() {
		mid = traceOf(t, env)
		v, err := env.QueryWorkflow(QueryCallResult, "x1")
		if err == nil {
			err = v.Get(&got)
		}
		if err != nil {
			t.Error(err)
		}
		env.SignalWorkflow(SignalRelease, nil)
	}, 2500*time.Millisecond)
	env.ExecuteWorkflow(Workflow, callsJob(func(j *Job) { j.Open, j.Calls = true, j.Calls[:1] }))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if want := "open@node.n1 call:c1 call:x1 call:c4 close"; log.String() != want {
		t.Errorf("lease: got %q, want %q", log, want)
	}
	if len(mid.Calls) != 4 || !mid.Open || mid.Released {
		t.Fatalf("trace before the release: got %+v", mid)
	}
	if bad := mid.Calls[2]; bad.ID != "x2" || !bad.Refused || bad.Decider != "workflow" || !strings.Contains(bad.Reason, "argv: empty") {
		t.Errorf("the malformed call: got %+v, want refused by the workflow naming argv", bad)
	}
	if got.Call != "x1" || got.Stdout != "ran ls" || got.Node != "n1" {
		t.Errorf("call result x1: got %+v", got)
	}
	if tr := traceOf(t, env); !tr.Released {
		t.Errorf("trace after the release: got %+v, want released", tr)
	}
	var r Result
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	if len(r.Calls) != 3 {
		t.Errorf("result: got %d calls, want the 3 that ran", len(r.Calls))
	}
}

// TestOpenJobIdles: an open job nobody calls ends at its idle timeout.
func TestOpenJobIdles(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(10 * time.Second)
	claimBy(env, Claim{Node: "n1", Tier: 1})
	log := registerLease(env, tiered(nil))
	env.ExecuteWorkflow(Workflow, Job{ID: "j-1", Pool: "build", Open: true, IdleTimeout: time.Second})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got := log.String(); got != "open@node.n1 close" {
		t.Errorf("lease: got %q", got)
	}
	if tr := traceOf(t, env); !tr.Released || len(tr.Calls) != 0 || tr.LowestTier != -1 {
		t.Errorf("trace: got %+v", tr)
	}
}

// TestApprovalOnSecondCall: a question the second call raises is kept
// from the node running the job, its answer is delivered to that call,
// and the job goes on.
func TestApprovalOnSecondCall(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(20 * time.Second)
	claimBy(env, Claim{Node: "n1", Tier: 1})
	var waiters Waiters
	var delivered []Answer
	var mu sync.Mutex
	env.RegisterActivityWithOptions(func(ctx context.Context, a Answer) error {
		mu.Lock()
		delivered = append(delivered, a)
		mu.Unlock()
		return waiters.Deliver(a)
	}, activity.RegisterOptions{Name: AnswerActivity})
	q := Question{ID: "q-2", Job: "j-1", Node: "n1", Digest: "sha256:cc", Call: "write out.txt", Kind: "fs.write", Verdict: "escalate", Timeout: 30 * time.Second}
	registerLease(env, func(ctx context.Context, req CallRequest) (CallResult, error) {
		if req.Call.ID != "c2" {
			return tiered(nil)(ctx, req)
		}
		ch, done := waiters.Expect(q.ID, q.Digest)
		defer done()
		env.SignalWorkflow(SignalAsk, q)
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(SignalAnswer, Answer{Question: "q-2", Digest: "sha256:cc", Answer: AnswerAllowOnce, By: "person:ann"})
		}, 100*time.Millisecond)
		select {
		case a := <-ch:
			return CallResult{Tier: 1, Verdict: "escalate", Decider: a.By, Text: "wrote 5 bytes"}, nil
		case <-time.After(5 * time.Second):
			return CallResult{Tier: 1, Refused: true, Reason: "no approval came"}, nil
		}
	})
	env.ExecuteWorkflow(Workflow, callsJob(nil))
	var r Result
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	if len(delivered) != 1 || len(r.Calls) != 3 || r.Calls[1].Decider != "person:ann" || r.Calls[2].Text != "hello" {
		t.Fatalf("got %+v with %d answers delivered, want c2 approved by ann and c3 run", r.Calls, len(delivered))
	}
}

// TestKillMidCall: a kill reaches the running call (its activity is
// cancelled and waited for), the kernel is closed, no later call runs,
// and the job ends cancelled.
func TestKillMidCall(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	claimBy(env, Claim{Node: "n1", Tier: 1})
	killed := make(chan struct{}, 1)
	log := registerLease(env, func(ctx context.Context, req CallRequest) (CallResult, error) {
		if req.Call.ID != "c2" {
			return tiered(nil)(ctx, req)
		}
		<-ctx.Done() // the test environment cancels it only at its end
		return CallResult{}, ctx.Err()
	})
	// The kill reaches the node as the cancellation of the running call's
	// activity (the node's heartbeat hears of it and kills the box).
	env.SetOnActivityCanceledListener(func(info *activity.Info) {
		if info.ActivityType.Name == CallActivity {
			killed <- struct{}{}
		}
	})
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
	env.ExecuteWorkflow(Workflow, callsJob(nil))
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("got %v, want the job cancelled", err)
	}
	select {
	case <-killed:
	case <-time.After(5 * time.Second):
		t.Fatalf("the running call never saw the kill (%s)", log)
	}
	if got := log.String(); strings.Contains(got, "call:c3") || !strings.Contains(got, "close") {
		t.Errorf("lease: got %q, want no c3 and the kernel closed", got)
	}
}

// TestLostNodeMidCall: a call whose node went silent fails the job naming
// the node, without closing (nothing is there to close); an idempotent job
// with a retry runs its calls again on the next node.
func TestLostNodeMidCall(t *testing.T) {
	tests := []struct {
		name     string
		job      Job
		wantErr  string
		wantLog  string
		lostHold bool
	}{
		{name: "a call's heartbeat times out", job: callsJob(nil),
			wantErr: "node n1 was lost while running job j-1 (not retried: the job is not marked idempotent)",
			wantLog: "open@node.n1 call:c1 call:c2 let-go"},
		{name: "an open job's lease times out while it idles", job: Job{ID: "j-1", Pool: "build", Open: true}, lostHold: true,
			wantErr: "node n1 was lost while running job j-1 (not retried: an open job's calls came one by one",
			wantLog: "open@node.n1"},
		{name: "an idempotent job runs its calls again elsewhere", job: callsJob(func(j *Job) { j.Idempotent, j.Retries = true, 1 }),
			wantLog: "open@node.n1 call:c1 call:c2 let-go open@node.n2 call:c1 call:c2 call:c3 close"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.SetTestTimeout(10 * time.Second)
			claimBy(env, Claim{Node: "n1", Tier: 1}, Claim{Node: "n2", Tier: 1})
			var mu sync.Mutex
			lost := 0
			log := registerLease(env, func(ctx context.Context, req CallRequest) (CallResult, error) {
				mu.Lock()
				defer mu.Unlock()
				if req.Call.ID == "c2" && req.Node == "n1" && !tt.lostHold {
					lost++
					return CallResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
				}
				return tiered(nil)(ctx, req)
			})
			if tt.lostHold {
				log.holdErr, log.holdFor = temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil), 500*time.Millisecond
			}
			env.ExecuteWorkflow(Workflow, tt.job)
			err := env.GetWorkflowError()
			if tt.wantErr != "" {
				var app *temporal.ApplicationError
				if !errors.As(err, &app) || app.Type() != ErrNodeLost || !strings.HasPrefix(app.Message(), tt.wantErr) {
					t.Fatalf("error: got %v, want %s %q", err, ErrNodeLost, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got, want := log.String(), strings.ReplaceAll(tt.wantLog, " let-go", ""); got != want {
				t.Errorf("lease: got %q, want %q", log, tt.wantLog)
			}
			if tr := traceOf(t, env); tt.lostHold == false && !strings.Contains(fmt.Sprint(tr.Calls), "node n1 was lost while running this call") {
				t.Errorf("trace: got %+v, want the lost call's reason", tr.Calls)
			}
		})
	}
}

func TestCallValidate(t *testing.T) {
	tests := []struct {
		name    string
		call    Call
		wantErr string
	}{
		{"an exec call", Call{Kind: CallExec, Argv: []string{"ls"}}, ""},
		{"a write of an empty file", Call{Kind: CallWriteFile, Path: "a"}, ""},
		{"a list of the working directory", Call{Kind: CallList}, ""},
		{"a read_result", Call{Kind: CallReadResult, Ref: "airlock-file:sha256:" + strings.Repeat("0a", 32), Budget: 100}, ""},
		{"a read_result of a ref in another spelling", Call{Kind: CallReadResult, Ref: "airlock-file:sha256:" + strings.Repeat("0A", 32)}, "one written form"},
		{"a read_result of a bare digest", Call{Kind: CallReadResult, Ref: strings.Repeat("0a", 32)}, "one written form"},
		{"a read_result of a path", Call{Kind: CallReadResult, Ref: "airlock-file:sha256:../../pki/node.token"}, "one written form"},
		{"an unknown kind", Call{Kind: "fetch"}, `kind "fetch"`},
		{"an exec without argv", Call{Kind: CallExec}, "argv: empty"},
		{"a shell without a command", Call{Kind: CallShell}, "command: empty"},
		{"a read without a path", Call{Kind: CallReadFile}, "path: empty"},
		{"a read carrying content", Call{Kind: CallReadFile, Path: "a", Content: "x"}, "content: not a field of a read_file call"},
		{"an exec carrying a path", Call{Kind: CallExec, Argv: []string{"ls"}, Path: "/etc"}, "path: not a field"},
		{"a read_result without a ref", Call{Kind: CallReadResult}, "ref: empty"},
		{"an id that is not a name", Call{ID: "a/b", Kind: CallList}, `call id "a/b"`},
		{"a tool call", Call{Kind: CallTool, Server: "fs", Tool: "read_file", Args: json.RawMessage(`{"path":"a"}`)}, ""},
		{"a tool call without args", Call{Kind: CallTool, Server: "fs", Tool: "list"}, ""},
		{"a tool call without a server", Call{Kind: CallTool, Tool: "list"}, "server: empty"},
		{"a tool call to a server that is not a name", Call{Kind: CallTool, Server: "Fs/x", Tool: "list"}, `server "Fs/x"`},
		{"a tool call without a tool", Call{Kind: CallTool, Server: "fs"}, "tool: empty"},
		{"a tool with a space", Call{Kind: CallTool, Server: "fs", Tool: "a b"}, "tool: want printable ASCII"},
		{"args that are an array", Call{Kind: CallTool, Server: "fs", Tool: "t", Args: json.RawMessage(`[1]`)}, "args: not a JSON object"},
		{"args that are null", Call{Kind: CallTool, Server: "fs", Tool: "t", Args: json.RawMessage(`null`)}, "args: not a JSON object"},
		{"args with trailing data", Call{Kind: CallTool, Server: "fs", Tool: "t", Args: json.RawMessage(`{} {}`)}, "args: not a JSON object"},
		{"a tool call carrying a path", Call{Kind: CallTool, Server: "fs", Tool: "t", Path: "a"}, "path: not a field of a tool call"},
		{"an exec carrying a tool", Call{Kind: CallExec, Argv: []string{"ls"}, Tool: "t"}, "tool: not a field of a exec call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, tt.call.Validate(), tt.wantErr)
		})
	}
}

func TestJobCallsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Job)
		wantErr string
	}{
		{"calls", nil, ""},
		{"an open job with no call", func(j *Job) { j.Calls, j.Open = nil, true }, ""},
		{"a closed job with no call", func(j *Job) { j.Calls = nil }, "no command"},
		{"calls and a command", func(j *Job) { j.Argv = []string{"ls"} }, "given with a command"},
		{"a malformed call names its place", func(j *Job) { j.Calls[1].Path = "" }, "calls[1]: call : path: empty"},
		{"an id given twice", func(j *Job) { j.Calls[0].ID, j.Calls[1].ID = "a", "a" }, `calls[1]: id "a": given twice`},
		{"an id that takes another's place", func(j *Job) { j.Calls[0].ID = "c2" }, `calls[1]: id "c2": given twice`},
		{"an open job with retries", func(j *Job) { j.Open, j.Idempotent, j.Retries = true, true, 1 }, "retries on an open job"},
		{"a tool call to a server the job names", func(j *Job) {
			j.MCP = map[string][]string{"fs": {"mcp-fs"}}
			j.Calls[1] = Call{Kind: CallTool, Server: "fs", Tool: "t"}
		}, ""},
		{"a tool call to a server the job does not name", func(j *Job) { j.Calls[1] = Call{Kind: CallTool, Server: "fs", Tool: "t"} }, `calls[1]: server "fs": not one of the job's MCP servers`},
		{"a server without a command", func(j *Job) { j.MCP = map[string][]string{"fs": {}} }, "mcp: server fs: empty command"},
		{"a server that is not a name", func(j *Job) { j.MCP = map[string][]string{"F S": {"x"}} }, `mcp: mcp server "F S"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, callsJob(tt.mod).Validate(), tt.wantErr)
		})
	}
}

// TestOldJobIsOneCall: a job of the old shape is one call, with its input
// as the call's standard input.
func TestOldJobIsOneCall(t *testing.T) {
	j := Job{ID: "j", Pool: "p", Command: "make | tee log", Input: "body"}
	cs := j.JobCalls()
	if len(cs) != 1 || cs[0].Kind != CallShell || cs[0].Command != j.Command || cs[0].Stdin != "body" {
		t.Fatalf("got %+v", cs)
	}
	if d := cs[0].Describe(); strings.Contains(d, "body") {
		t.Errorf("the description shows the input: %q", d)
	}
}

// checkErr fails unless err is nil (want "") or holds want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatal(err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("got %v, want %q", err, want)
	}
}

// TestOneCallJobIsOneLease: a closed job of one call (the command of the
// old shape, or one call of Calls) runs as one activity on the claiming
// node's queue, its lease and its call at once; a job of more calls, and
// an open job, still open a lease, run each call and close it. Every one
// shows its calls in its trace and result.
func TestOneCallJobIsOneLease(t *testing.T) {
	tests := []struct {
		name  string
		job   Job
		want  string
		calls int
	}{
		{"a command", job(nil), "lease-call@node.n1:c1", 1},
		{"one call", callsJob(func(j *Job) { j.Calls = j.Calls[:1] }), "lease-call@node.n1:c1", 1},
		{"three calls", callsJob(nil), "open@node.n1 call:c1 call:c2 call:c3 close", 3},
		{"an open job of one call", callsJob(func(j *Job) { j.Calls, j.Open, j.IdleTimeout = j.Calls[:1], true, time.Second }),
			"open@node.n1 call:c1 close", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			claimBy(env, Claim{Node: "n1", Tier: 1})
			log := registerLease(env, tiered(nil))
			env.ExecuteWorkflow(Workflow, tt.job)
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			var r Result
			if err := env.GetWorkflowResult(&r); err != nil {
				t.Fatal(err)
			}
			if got := log.String(); got != tt.want {
				t.Errorf("activities on the node: got %q, want %q", got, tt.want)
			}
			if r.Node != "n1" || r.Tier != 1 || (len(tt.job.Calls) == 0 && r.Stdout != "ran make test") {
				t.Errorf("result: got %+v", r)
			}
			tr := traceOf(t, env)
			if len(tr.Calls) != tt.calls || tr.LowestTier != 1 {
				t.Fatalf("trace: got %+v, want %d calls at tier 1", tr, tt.calls)
			}
			for i, c := range tr.Calls {
				if c.Node != "n1" || c.Tier != 1 || c.Verdict != "allow" || c.Started.IsZero() || c.Ended.IsZero() {
					t.Errorf("trace call %d: got %+v, want it on n1 at tier 1, allowed, started and ended", i, c)
				}
			}
		})
	}
}

// TestOneCallLeaseHoldsTheGuarantees: the one activity of a one-call job
// keeps what the lease and its call kept apart: a tier below the floor
// fails the job, a silent node fails it as lost (and its trace says so),
// a kill cancels the activity and waits for the node's answer.
func TestOneCallLeaseHoldsTheGuarantees(t *testing.T) {
	t.Run("below its floor", func(t *testing.T) {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		claimBy(env, Claim{Node: "n1", Tier: 1})
		registerLease(env, tiered(map[string]int{"c1": 0}))
		env.ExecuteWorkflow(Workflow, job(nil))
		if err := env.GetWorkflowError(); appType(err) != ErrBelowFloor {
			t.Fatalf("got %v, want %s", err, ErrBelowFloor)
		}
	})
	t.Run("its node lost", func(t *testing.T) {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		claimBy(env, Claim{Node: "n1", Tier: 1})
		log := registerLease(env, tiered(nil))
		log.holdErr = temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
		log.holdFor = time.Second
		env.ExecuteWorkflow(Workflow, job(nil))
		if err := env.GetWorkflowError(); appType(err) != ErrNodeLost {
			t.Fatalf("got %v, want %s", err, ErrNodeLost)
		}
		tr := traceOf(t, env)
		if len(tr.Calls) != 1 || !strings.Contains(tr.Calls[0].Reason, "node n1 was lost") {
			t.Fatalf("trace: got %+v, want the call lost with its node", tr)
		}
	})
	t.Run("killed", func(t *testing.T) {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		claimBy(env, Claim{Node: "n1", Tier: 1})
		var canceled []string
		env.SetOnActivityCanceledListener(func(info *activity.Info) { canceled = append(canceled, info.ActivityType.Name) })
		registerLease(env, func(ctx context.Context, req CallRequest) (CallResult, error) {
			<-ctx.Done()
			return CallResult{}, ctx.Err()
		})
		env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
		env.ExecuteWorkflow(Workflow, job(nil))
		if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
			t.Fatalf("got %v, want the job killed", err)
		}
		if strings.Join(canceled, " ") != LeaseCallActivity {
			t.Fatalf("cancelled: got %q, want the one lease-call", canceled)
		}
	})
}
