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
	// lost is how many runs (the first ones) end as a node that went
	// silent: a heartbeat timeout.
	lost  int
	block bool
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
			registerRun(env, f.run)
			env.ExecuteWorkflow(Workflow, tt.job)
			if !env.IsWorkflowCompleted() {
				t.Fatal("the workflow did not complete")
			}
			if got := strings.Join(f.queues, " "); got != strings.Join(tt.wantQ, " ") {
				t.Errorf("queues: got %q, want %q", got, strings.Join(tt.wantQ, " "))
			}
			r, ran := outcome(t, env, f, tt.wantErr)
			if !ran {
				return
			}
			if r.Node != tt.wantRunOn || len(f.runs) != 1 || f.runs[0].Node != tt.wantRunOn {
				t.Errorf("ran on %q (%d runs), want %q", r.Node, len(f.runs), tt.wantRunOn)
			}
		})
	}
}

// outcome reads how a routed job ended: with wantErr, a failure holding
// it and nothing run (ran false); else a success and its result.
func outcome(t *testing.T, env *testsuite.TestWorkflowEnvironment, f *fleet, wantErr string) (r Result, ran bool) {
	t.Helper()
	err := env.GetWorkflowError()
	if wantErr != "" {
		if err == nil || !strings.Contains(failureMessage(err), wantErr) {
			t.Fatalf("error: got %v, want one containing %q", err, wantErr)
		}
		if len(f.runs) != 0 {
			t.Errorf("runs: got %d, want none", len(f.runs))
		}
		return r, false
	}
	if err != nil {
		t.Fatalf("error: %v", err)
	}
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	return r, true
}

// TestClaimTimeoutIsTheWholeWait: retried claims share one deadline, so a
// queue that only ever yields stale claims still fails at the timeout.
func TestClaimTimeoutIsTheWholeWait(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := &fleet{claims: []func() (Claim, error){timeout(enumspb.TIMEOUT_TYPE_START_TO_CLOSE)}}
	env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
	registerRun(env, f.run)
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
	registerRun(env, f.run)
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
	registerRun(env, f.run)
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

func optedOut(id string, tier int) func() (Claim, error) {
	return func() (Claim, error) { return Claim{Node: id, Tier: tier, OptedOut: true}, nil }
}

// TestWorkflowRoutesOptOutAndDev: the rules of an admin's opt-out and the
// server's --dev, as the workflow enforces them on a claim.
func TestWorkflowRoutesOptOutAndDev(t *testing.T) {
	tests := []struct {
		name       string
		job        Job
		claims     []func() (Claim, error)
		runTier    int
		wantErr    string
		wantTier   int
		wantOptOut bool
	}{
		{name: "an opted-out tier-0 node takes floor work started from inside, marked tier 0",
			job: job(nil), claims: []func() (Claim, error){optedOut("n0", 0)}, runTier: 0, wantTier: 0, wantOptOut: true},
		{name: "an opted-out tier-1 node's run is marked tier 0 too",
			job: job(nil), claims: []func() (Claim, error){optedOut("n1", 1)}, runTier: 1, wantTier: 0, wantOptOut: true},
		{name: "an opted-out node is refused tainted work, nothing runs",
			job:     job(func(j *Job) { j.Tainted, j.Taint, j.Source = true, "an outside event (hook:deploy)", "hook:deploy" }),
			claims:  []func() (Claim, error){optedOut("n1", 1)},
			wantErr: "node n1 is opted out of the sandbox and job j-1 is tainted"},
		{name: "an opted-out node is refused a job whose model is not vetted",
			job:     job(func(j *Job) { j.Tainted, j.Taint, j.Model = true, "model m is not vetted", "m" }),
			claims:  []func() (Claim, error){optedOut("n0", 0)},
			wantErr: "is tainted (model m is not vetted)"},
		{name: "on --dev a tier-0 node takes floor work",
			job: job(func(j *Job) { j.Dev = true }), claims: []func() (Claim, error){node("n0", 0)}, runTier: 0, wantTier: 0},
		{name: "without --dev or an opt-out a tier-0 node is refused",
			job: job(nil), claims: []func() (Claim, error){node("n0", 0)}, wantErr: "never runs below its floor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			f := &fleet{claims: tt.claims, runTier: tt.runTier}
			env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
			registerRun(env, f.run)
			env.ExecuteWorkflow(Workflow, tt.job)
			r, ran := outcome(t, env, f, tt.wantErr)
			if !ran {
				return
			}
			if r.Tier != tt.wantTier || r.OptedOut != tt.wantOptOut {
				t.Errorf("result: tier %d opted out %v, want tier %d opted out %v", r.Tier, r.OptedOut, tt.wantTier, tt.wantOptOut)
			}
		})
	}
}

// TestNodeClaimRules: the node's own side of the claim refuses what the
// workflow refuses, so a refused claim goes back to the queue for another.
func TestNodeClaimRules(t *testing.T) {
	tests := []struct {
		name     string
		tier     int
		optedOut bool
		req      ClaimRequest
		wantErr  string
	}{
		{"a tier-1 node takes a tainted job", 1, false, ClaimRequest{Job: "j", Floor: 1, Tainted: true}, ""},
		{"an opted-out node declines a tainted job", 1, true, ClaimRequest{Job: "j", Floor: 1, Tainted: true}, "takes no tainted work"},
		{"an opted-out tier-0 node takes floor work from inside", 0, true, ClaimRequest{Job: "j", Floor: 1}, ""},
		{"a tier-0 node declines floor work", 0, false, ClaimRequest{Job: "j", Floor: 1}, "below job j's floor"},
		{"a tier-0 node takes floor work on --dev", 0, false, ClaimRequest{Job: "j", Floor: 1, Dev: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &Node{cfg: NodeConfig{ID: "n", Pool: "p", Tier: tt.tier, Concurrency: 1}, slots: &slots{max: 1, reserved: map[string]reservation{}, now: time.Now}}
			n.optedOut.Store(tt.optedOut)
			c, _, err := n.claim(context.Background(), n.cfg, tt.req)
			if tt.wantErr == "" {
				if err != nil || c.Node != "n" || c.OptedOut != tt.optedOut {
					t.Fatalf("got %+v, %v; want a claim by n (opted out %v)", c, err, tt.optedOut)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// approvalFleet runs a job whose run raises a question through the
// workflow and waits for the answer on the node's own queue, as a node's
// kernel does.
type approvalFleet struct {
	fleet
	waiters   Waiters
	question  Question
	raise     func(Question)
	delivered []Answer
	reply     chan Answer
}

func (f *approvalFleet) run(ctx context.Context, req RunRequest) (Result, error) {
	ch, done := f.waiters.Expect(f.question.ID, f.question.Digest)
	defer done()
	f.raise(f.question)
	select {
	case a := <-ch:
		return Result{Node: req.Node, Tier: 1, Stdout: a.Answer + " by " + a.By}, nil
	case <-time.After(2 * time.Second): // the kernel's timeout, in real time
		return Result{Node: req.Node, Tier: 1, Refused: true, Reason: "no approval came"}, nil
	}
}

func (f *approvalFleet) deliver(ctx context.Context, a Answer) error {
	f.mu.Lock()
	f.delivered = append(f.delivered, a)
	f.mu.Unlock()
	return f.waiters.Deliver(a)
}

// TestApprovalSignals: a question the node raises is answered by a signal
// and reaches the waiting call; an answer with another digest, or to
// another question, never does; with nobody answering the call is denied
// at the timeout.
func TestApprovalSignals(t *testing.T) {
	q := Question{ID: "q-1", Job: "j-1", Node: "n1", Digest: "sha256:aa", Call: "curl x", Kind: "net", Verdict: "escalate", Timeout: 30 * time.Second}
	tests := []struct {
		name    string
		answers []Answer
		want    string // the run's stdout; "" is refused at the timeout
	}{
		{name: "an answer reaches the waiting call",
			answers: []Answer{{Question: "q-1", Digest: "sha256:aa", Answer: AnswerAllowOnce, By: "person:ann"}},
			want:    "allow-once by person:ann"},
		{name: "an answer bound to another digest is dropped, the next one holds",
			answers: []Answer{{Question: "q-1", Digest: "sha256:bb", Answer: AnswerAllowOnce, By: "person:eve"}, {Question: "q-1", Digest: "sha256:aa", Answer: AnswerDeny, By: "person:ann"}},
			want:    "deny by person:ann"},
		{name: "an answer to another question is dropped and the call times out",
			answers: []Answer{{Question: "q-2", Digest: "sha256:aa", Answer: AnswerAllowOnce}}},
		{name: "an unknown answer is dropped and the call times out",
			answers: []Answer{{Question: "q-1", Digest: "sha256:aa", Answer: "yes"}}},
		{name: "headless, the call is denied at the timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.SetTestTimeout(10 * time.Second)
			f := &approvalFleet{question: q}
			f.claims = []func() (Claim, error){node("n1", 1)}
			f.raise = func(x Question) {
				env.SignalWorkflow(SignalAsk, x)
				for i, a := range tt.answers {
					env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalAnswer, a) }, time.Duration(i+1)*100*time.Millisecond)
				}
			}
			env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
			registerRun(env, f.run)
			env.RegisterActivityWithOptions(f.deliver, activity.RegisterOptions{Name: AnswerActivity})
			env.ExecuteWorkflow(Workflow, job(nil))
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			var r Result
			if err := env.GetWorkflowResult(&r); err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if !r.Refused || len(f.delivered) != 0 {
					t.Fatalf("got %+v with %d answers delivered, want the call refused at the timeout and none delivered", r, len(f.delivered))
				}
				return
			}
			if r.Stdout != tt.want || len(f.delivered) != 1 {
				t.Fatalf("got %q with %d answers delivered, want %q and one", r.Stdout, len(f.delivered), tt.want)
			}
		})
	}
}

// TestQuestionsListed: a question from the node running the job is listed
// until answered; one from another node is dropped (nobody else can have a
// person approve a call the job never made), and an answer to it never
// reaches a call.
func TestQuestionsListed(t *testing.T) {
	tests := []struct {
		name       string
		from       string
		wantListed int
	}{
		{"from the node running the job", "n1", 1},
		{"from another node", "n9", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			f := &approvalFleet{question: Question{ID: "q-1", Job: "j-1", Node: tt.from, Digest: "sha256:aa", Timeout: 10 * time.Second}}
			f.claims = []func() (Claim, error){node("n1", 1)}
			var listed []Question
			f.raise = func(x Question) {
				env.SignalWorkflow(SignalAsk, x)
				env.RegisterDelayedCallback(func() {
					v, err := env.QueryWorkflow(QueryQuestions)
					if err == nil {
						err = v.Get(&listed)
					}
					if err != nil {
						t.Error(err)
					}
					if tt.wantListed == 0 {
						env.SignalWorkflow(SignalAnswer, Answer{Question: "q-1", Digest: "sha256:aa", Answer: AnswerAllowOnce})
					}
				}, time.Second)
			}
			env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
			registerRun(env, f.run)
			env.RegisterActivityWithOptions(f.deliver, activity.RegisterOptions{Name: AnswerActivity})
			env.ExecuteWorkflow(Workflow, job(nil))
			if len(listed) != tt.wantListed || (tt.wantListed == 1 && (listed[0].ID != "q-1" || listed[0].Deadline.IsZero())) {
				t.Fatalf("listed %+v, want %d (with its deadline)", listed, tt.wantListed)
			}
			var r Result
			if err := env.GetWorkflowResult(&r); err != nil {
				t.Fatal(err)
			}
			if !r.Refused || len(f.delivered) != 0 {
				t.Fatalf("got %+v with %d delivered, want the unanswered call refused at its timeout", r, len(f.delivered))
			}
		})
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
			registerRun(env, f.run)
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
			checkErr(t, job(tt.mod).Validate(), tt.wantErr)
		})
	}
}
