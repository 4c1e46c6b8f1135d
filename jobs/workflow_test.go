package jobs

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// fleet is a made-up fleet for the workflow: claim answers come from
// claims in turn (the last repeats), and every queue a task was taken
// from is noted.
type fleet struct {
	mu     sync.Mutex
	claims []func() (Claim, error)
	queues []string
	runs   []RunRequest
	// runTier is the tier the run reports; block makes it wait for a kill.
	runTier int
	block   bool
	// lost is how many runs (the first ones) end as a node that went
	// silent: a heartbeat timeout.
	lost int
}

func (f *fleet) claim(ctx context.Context, req ClaimRequest) (Claim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queues = append(f.queues, "claim@"+activity.GetInfo(ctx).TaskQueue)
	next := f.claims[0]
	if len(f.claims) > 1 {
		f.claims = f.claims[1:]
	}
	return next()
}

func (f *fleet) run(ctx context.Context, req RunRequest) (Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queues = append(f.queues, "run@"+activity.GetInfo(ctx).TaskQueue)
	f.runs = append(f.runs, req)
	if len(f.runs) <= f.lost {
		return Result{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
	}
	if f.block {
		f.mu.Unlock()
		<-ctx.Done()
		f.mu.Lock()
		return Result{}, ctx.Err()
	}
	return Result{Node: req.Node, Tier: f.runTier, Stdout: "ran " + req.Job.Describe()}, nil
}

func node(id string, tier int) func() (Claim, error) {
	return func() (Claim, error) { return Claim{Node: id, Tier: tier}, nil }
}

func timeout(t enumspb.TimeoutType) func() (Claim, error) {
	return func() (Claim, error) { return Claim{}, temporal.NewTimeoutError(t, nil) }
}

func job(mod func(*Job)) Job {
	j := Job{ID: "j-1", Pool: "build", Argv: []string{"make", "test"}, ClaimTimeout: time.Minute}
	if mod != nil {
		mod(&j)
	}
	return j
}

func TestWorkflowRoutes(t *testing.T) {
	tests := []struct {
		name      string
		job       Job
		claims    []func() (Claim, error)
		wantQ     []string
		wantErr   string // a substring of the failure; "" is success
		wantRunOn string
	}{
		{name: "a command job waits on the floor queue and runs on the claiming node",
			job: job(nil), claims: []func() (Claim, error){node("n1", 1)},
			wantQ: []string{"claim@floor.build", "run@node.n1"}, wantRunOn: "n1"},
		{name: "a shell job is floor work too",
			job: job(func(j *Job) { j.Argv, j.Command = nil, "make test | tee log" }), claims: []func() (Claim, error){node("n1", 1)},
			wantQ: []string{"claim@floor.build", "run@node.n1"}, wantRunOn: "n1"},
		{name: "a job with tier-0 consent waits on the pool queue",
			job: job(func(j *Job) { j.Tier0 = true }), claims: []func() (Claim, error){node("n0", 0)},
			wantQ: []string{"claim@build", "run@node.n0"}, wantRunOn: "n0"},
		{name: "a tainted job ignores tier-0 consent",
			job: job(func(j *Job) { j.Tier0, j.Tainted = true, true }), claims: []func() (Claim, error){node("n1", 1)},
			wantQ: []string{"claim@floor.build", "run@node.n1"}, wantRunOn: "n1"},
		{name: "a claim a stale poll took is put to the queue again",
			job: job(nil), claims: []func() (Claim, error){timeout(enumspb.TIMEOUT_TYPE_START_TO_CLOSE), node("n2", 1)},
			wantQ: []string{"claim@floor.build", "claim@floor.build", "run@node.n2"}, wantRunOn: "n2"},
		{name: "a tier-0 node answering a floor claim is refused, nothing runs",
			job: job(nil), claims: []func() (Claim, error){node("n0", 0)},
			wantQ: []string{"claim@floor.build"}, wantErr: "node n0 at sandbox tier 0 claimed job j-1, whose floor is tier 1"},
		{name: "no tier-1 node within the timeout fails naming the fix",
			job: job(nil), claims: []func() (Claim, error){timeout(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START)},
			wantQ: []string{"claim@floor.build"}, wantErr: "no node with sandbox tier 1 took job j-1 from queue floor.build within 1m0s: start a node with sandbox tier 1 in pool build"},
		{name: "no node for tier-0 work fails naming the fix",
			job: job(func(j *Job) { j.Tier0 = true }), claims: []func() (Claim, error){timeout(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START)},
			wantQ: []string{"claim@build"}, wantErr: "no node took job j-1 from queue build within 1m0s: start a node in pool build"},
		{name: "a job that cannot be routed never claims",
			job: job(func(j *Job) { j.Pool = "floor.build" }), claims: []func() (Claim, error){node("n1", 1)},
			wantErr: `pool "floor.build"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			f := &fleet{claims: tt.claims, runTier: 1}
			env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
			env.RegisterActivityWithOptions(f.run, activity.RegisterOptions{Name: RunActivity})
			env.ExecuteWorkflow(Workflow, tt.job)
			if !env.IsWorkflowCompleted() {
				t.Fatal("the workflow did not complete")
			}
			err := env.GetWorkflowError()
			if got := strings.Join(f.queues, " "); got != strings.Join(tt.wantQ, " ") {
				t.Errorf("queues: got %q, want %q", got, strings.Join(tt.wantQ, " "))
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(failureMessage(err), tt.wantErr) {
					t.Fatalf("error: got %v, want one containing %q", err, tt.wantErr)
				}
				if len(f.runs) != 0 {
					t.Errorf("runs: got %d, want none", len(f.runs))
				}
				return
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			var r Result
			if err := env.GetWorkflowResult(&r); err != nil {
				t.Fatal(err)
			}
			if r.Node != tt.wantRunOn || len(f.runs) != 1 || f.runs[0].Node != tt.wantRunOn {
				t.Errorf("ran on %q (%d runs), want %q", r.Node, len(f.runs), tt.wantRunOn)
			}
		})
	}
}

// TestClaimTimeoutIsTheWholeWait: retried claims share one deadline, so a
// queue that only ever yields stale claims still fails at the timeout.
func TestClaimTimeoutIsTheWholeWait(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := &fleet{claims: []func() (Claim, error){timeout(enumspb.TIMEOUT_TYPE_START_TO_CLOSE)}}
	env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
	env.RegisterActivityWithOptions(f.run, activity.RegisterOptions{Name: RunActivity})
	env.ExecuteWorkflow(Workflow, job(func(j *Job) { j.ClaimTimeout = 5 * time.Second }))
	err := env.GetWorkflowError()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrNoNode {
		t.Fatalf("got %v, want a %s failure", err, ErrNoNode)
	}
	if n := len(f.queues); n < 2 || n > 6 {
		t.Errorf("claims: got %d, want a few (one a second) before the 5 s timeout", n)
	}
}

// TestRunBelowFloorFails: a run that reports a tier below the job's floor
// (the node's own check failed) is never passed off as done.
func TestRunBelowFloorFails(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := &fleet{claims: []func() (Claim, error){node("n1", 1)}, runTier: 0}
	env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
	env.RegisterActivityWithOptions(f.run, activity.RegisterOptions{Name: RunActivity})
	env.ExecuteWorkflow(Workflow, job(nil))
	var app *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != ErrBelowFloor {
		t.Fatalf("got %v, want a %s failure", err, ErrBelowFloor)
	}
}

// TestKill: cancelling the workflow reaches the running activity, and the
// job ends cancelled.
func TestKill(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := &fleet{claims: []func() (Claim, error){node("n1", 1)}, block: true}
	env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
	env.RegisterActivityWithOptions(f.run, activity.RegisterOptions{Name: RunActivity})
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
	env.ExecuteWorkflow(Workflow, job(nil))
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("got %v, want the job cancelled", err)
	}
	if len(f.runs) != 1 {
		t.Errorf("runs: got %d, want the one that was killed", len(f.runs))
	}
}

func TestFloor(t *testing.T) {
	tests := []struct {
		name           string
		tier0, tainted bool
		want           int
		wantQueue      string
	}{
		{"a command", false, false, 1, "floor.p"},
		{"consented to tier 0", true, false, 0, "p"},
		{"tainted", false, true, 1, "floor.p"},
		{"tainted, consent ignored", true, true, 1, "floor.p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := Job{Pool: "p", Tier0: tt.tier0, Tainted: tt.tainted}
			if got := j.Floor(); got != tt.want {
				t.Errorf("Floor: got %d, want %d", got, tt.want)
			}
			if got := j.Queue(); got != tt.wantQueue {
				t.Errorf("Queue: got %q, want %q", got, tt.wantQueue)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	for _, bad := range []string{"", "floor.x", "a/b", "..", "A", "-x", strings.Repeat("a", 64), "a b", "node\x00"} {
		if CheckName("pool", bad) == nil {
			t.Errorf("CheckName(%q): got nil, want a refusal", bad)
		}
	}
	for _, good := range []string{"default", "ci-linux", "n_1", "j-0123abcd"} {
		if err := CheckName("pool", good); err != nil {
			t.Errorf("CheckName(%q): %v", good, err)
		}
	}
}

// TestLostNode: a run whose node went silent is run again only for a job
// marked idempotent, and only as often as it allows; any other job fails
// naming the node and why it was not retried.
func TestLostNode(t *testing.T) {
	tests := []struct {
		name    string
		job     Job
		lost    int
		wantQ   string
		wantErr string
	}{
		{name: "a job not marked idempotent runs once and fails", job: job(nil), lost: 1,
			wantQ:   "claim@floor.build run@node.n1",
			wantErr: "node n1 was lost while running job j-1 (not retried: the job is not marked idempotent)"},
		{name: "an idempotent job without retries fails", job: job(func(j *Job) { j.Idempotent = true }), lost: 1,
			wantQ:   "claim@floor.build run@node.n1",
			wantErr: "node n1 was lost while running job j-1 (not retried: the job allows no retry)"},
		{name: "an idempotent job with a retry runs again on the next claiming node",
			job: job(func(j *Job) { j.Idempotent, j.Retries = true, 1 }), lost: 1,
			wantQ: "claim@floor.build run@node.n1 claim@floor.build run@node.n2"},
		{name: "its retries used up, an idempotent job fails",
			job: job(func(j *Job) { j.Idempotent, j.Retries = true, 1 }), lost: 2,
			wantQ:   "claim@floor.build run@node.n1 claim@floor.build run@node.n2",
			wantErr: "node n2 was lost while running job j-1 (not retried: its 1 retries are used up)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			f := &fleet{claims: []func() (Claim, error){node("n1", 1), node("n2", 1)}, runTier: 1, lost: tt.lost}
			env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
			env.RegisterActivityWithOptions(f.run, activity.RegisterOptions{Name: RunActivity})
			env.ExecuteWorkflow(Workflow, tt.job)
			if got := strings.Join(f.queues, " "); got != tt.wantQ {
				t.Errorf("queues: got %q, want %q", got, tt.wantQ)
			}
			err := env.GetWorkflowError()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				return
			}
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Type() != ErrNodeLost || app.Message() != tt.wantErr {
				t.Fatalf("error: got %v, want %s %q", err, ErrNodeLost, tt.wantErr)
			}
		})
	}
}

func TestValidateRetries(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Job)
		wantErr string
	}{
		{"retries need an idempotent job", func(j *Job) { j.Retries = 2 }, "not marked idempotent"},
		{"too many retries", func(j *Job) { j.Idempotent, j.Retries = true, MaxRetries+1 }, "want 0 to 10"},
		{"negative retries", func(j *Job) { j.Idempotent, j.Retries = true, -1 }, "want 0 to 10"},
		{"an agent that is not a name", func(j *Job) { j.Agent = "a.b" }, `agent "a.b"`},
		{"an idempotent job with retries", func(j *Job) { j.Idempotent, j.Retries, j.Agent = true, 3, "bot-1" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := job(tt.mod).Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}
