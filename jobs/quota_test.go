package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

func newQuotas(t *testing.T, cfg QuotaConfig) *Quotas {
	t.Helper()
	q, err := NewQuotas(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func ask(t *testing.T, q *Quotas, job, pool, tenant string) SlotGrant {
	t.Helper()
	g, err := q.Acquire(context.Background(), SlotRequest{Job: job, Pool: pool, Tenant: tenant})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func heldJobs(q *Quotas) string {
	var out []string
	for _, s := range q.Usage().Held {
		out = append(out, s.Job)
	}
	return strings.Join(out, " ")
}

// TestQuotasCount: a pool's quota bounds its jobs whatever their tenant, a
// tenant's bounds its jobs across pools, and neither holds the others.
func TestQuotasCount(t *testing.T) {
	tests := []struct {
		name      string
		cfg       QuotaConfig
		held      [][3]string // job, pool, tenant granted first
		job       [3]string
		wantFull  string // "" is granted
		wantHeldN int
	}{
		{name: "a pool at its quota holds every tenant's job",
			cfg:  QuotaConfig{Pools: map[string]int{"ci": 1}},
			held: [][3]string{{"j-1", "ci", "acme"}}, job: [3]string{"j-2", "ci", "beta"},
			wantFull: "pool ci holds its quota of 1 at once (--pool-quota ci=1)", wantHeldN: 1},
		{name: "another pool is not held by it",
			cfg:  QuotaConfig{Pools: map[string]int{"ci": 1}},
			held: [][3]string{{"j-1", "ci", "acme"}}, job: [3]string{"j-2", "gpu", "acme"}, wantHeldN: 2},
		{name: "a tenant at its quota is held across pools",
			cfg:  QuotaConfig{Tenants: map[string]int{"acme": 1}},
			held: [][3]string{{"j-1", "ci", "acme"}}, job: [3]string{"j-2", "gpu", "acme"},
			wantFull: "tenant acme holds its quota of 1 at once (--tenant-quota acme=1)", wantHeldN: 1},
		{name: "another tenant's jobs do not count against it",
			cfg:  QuotaConfig{Tenants: map[string]int{"acme": 1}},
			held: [][3]string{{"j-1", "ci", "acme"}}, job: [3]string{"j-2", "ci", "beta"}, wantHeldN: 2},
		{name: "the * quota holds every tenant not named",
			cfg:  QuotaConfig{Tenants: map[string]int{"*": 1, "acme": 2}},
			held: [][3]string{{"j-1", "ci", "beta"}, {"j-2", "ci", "acme"}}, job: [3]string{"j-3", "ci", "beta"},
			wantFull: "tenant beta holds its quota of 1 at once (--tenant-quota *=1)", wantHeldN: 2},
		{name: "a job asking again keeps its one slot",
			cfg:  QuotaConfig{Pools: map[string]int{"ci": 1}},
			held: [][3]string{{"j-1", "ci", "acme"}}, job: [3]string{"j-1", "ci", "acme"}, wantHeldN: 1},
		{name: "no quota, no bound",
			held: [][3]string{{"j-1", "ci", "acme"}, {"j-2", "ci", "acme"}}, job: [3]string{"j-3", "ci", "acme"}, wantHeldN: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newQuotas(t, tt.cfg)
			for _, h := range tt.held {
				if g := ask(t, q, h[0], h[1], h[2]); !g.Granted {
					t.Fatalf("%v: refused (%s) with room", h, g.Full)
				}
			}
			g := ask(t, q, tt.job[0], tt.job[1], tt.job[2])
			if g.Granted != (tt.wantFull == "") || g.Full != tt.wantFull {
				t.Errorf("got %+v, want full %q", g, tt.wantFull)
			}
			if n := len(q.Usage().Held); n != tt.wantHeldN {
				t.Errorf("held %d (%s), want %d", n, heldJobs(q), tt.wantHeldN)
			}
		})
	}
}

func TestQuotasRefuseBadConfig(t *testing.T) {
	for _, cfg := range []QuotaConfig{
		{Pools: map[string]int{"ci": 0}},
		{Tenants: map[string]int{"acme": -1}},
		{Pools: map[string]int{"floor.ci": 1}},
		{Tenants: map[string]int{"Acme/x": 1}},
	} {
		if _, err := NewQuotas(cfg); err == nil {
			t.Errorf("%+v: accepted", cfg)
		}
	}
}

// TestQuotasWaitAndRelease: an ask over the quota waits on the server and
// is granted as soon as a slot is given back; the released job's own late
// ask (it was killed while its ask was on its way) is refused.
func TestQuotasWaitAndRelease(t *testing.T) {
	q := newQuotas(t, QuotaConfig{Pools: map[string]int{"ci": 1}})
	ask(t, q, "j-1", "ci", "acme")
	got := make(chan SlotGrant, 1)
	start := time.Now()
	go func() {
		g, _ := q.Acquire(context.Background(), SlotRequest{Job: "j-2", Pool: "ci", Tenant: "acme", Wait: 20 * time.Second})
		got <- g
	}()
	time.Sleep(100 * time.Millisecond)
	if err := q.Release("j-1"); err != nil {
		t.Fatal(err)
	}
	if g := <-got; !g.Granted || time.Since(start) > 5*time.Second {
		t.Fatalf("after the release: %+v after %s, want granted at once", g, time.Since(start))
	}
	if g := ask(t, q, "j-1", "ci", "acme"); g.Granted || heldJobs(q) != "j-2" {
		t.Errorf("a released job asked again: %+v, held %q; want refused, only j-2 held", g, heldJobs(q))
	}
	if err := q.Release("j-9"); err != nil {
		t.Errorf("releasing a job that holds nothing: %v", err)
	}
}

// TestQuotasSurviveRestart: a slot is granted only once it was saved, and
// the saved slots are held by the next server, so a restart neither
// forgets them (over-granting) nor keeps those of jobs that ended
// meanwhile (a leak): the sweep frees those.
func TestQuotasSurviveRestart(t *testing.T) {
	var saved []Slot
	fail := false
	cfg := QuotaConfig{Pools: map[string]int{"ci": 2}, Save: func(s []Slot) error {
		if fail {
			return errors.New("disk full")
		}
		saved = s
		return nil
	}}
	q := newQuotas(t, cfg)
	ask(t, q, "j-1", "ci", "acme")
	ask(t, q, "j-2", "ci", "beta")
	if len(saved) != 2 {
		t.Fatalf("saved %v, want both slots", saved)
	}
	fail = true
	if _, err := q.Acquire(context.Background(), SlotRequest{Job: "j-x", Pool: "gpu", Tenant: "acme"}); err == nil || heldJobs(q) != "j-1 j-2" {
		t.Fatalf("a slot that could not be saved: %v, held %q; want refused", err, heldJobs(q))
	}
	fail = false

	cfg.Held = saved
	q2 := newQuotas(t, cfg)
	if g := ask(t, q2, "j-3", "ci", "acme"); g.Granted {
		t.Fatalf("after a restart the saved slots were forgotten: j-3 granted beside %s", heldJobs(q2))
	}
	q2.running = func(_ context.Context, job string) (bool, error) {
		switch job {
		case "j-1":
			return false, nil // ended while the server was away
		case "j-2":
			return false, errors.New("temporal away") // unknown: kept
		}
		return true, nil
	}
	if n := q2.Sweep(context.Background()); n != 1 || heldJobs(q2) != "j-2" {
		t.Fatalf("sweep freed %d, held %q; want j-1 freed, j-2 kept", n, heldJobs(q2))
	}
	if g := ask(t, q2, "j-3", "ci", "acme"); !g.Granted {
		t.Fatalf("the freed slot was not granted: %+v", g)
	}
	cfg.Held = saved
	if q3 := newQuotas(t, cfg); heldJobs(q3) != "j-2 j-3" {
		t.Errorf("the sweep's result was not saved: held %q", heldJobs(q3))
	}
}

// quotaFleet is a made-up fleet whose quota activities are a real Quotas
// (asks never wait on it: the workflow's own timer paces them), and whose
// run checks the job holds its slot while it runs.
type quotaFleet struct {
	*fleet
	q        *Quotas
	mu       sync.Mutex
	asks     int
	releases int
	heldRun  bool
}

func (f *quotaFleet) acquire(ctx context.Context, req SlotRequest) (SlotGrant, error) {
	f.mu.Lock()
	f.asks++
	f.mu.Unlock()
	req.Wait = 0
	return f.q.Acquire(ctx, req)
}

func (f *quotaFleet) release(ctx context.Context, req SlotRequest) error {
	f.mu.Lock()
	f.releases++
	f.mu.Unlock()
	return f.q.Release(req.Job)
}

func (f *quotaFleet) run(ctx context.Context, req RunRequest) (Result, error) {
	f.mu.Lock()
	f.heldRun = strings.Contains(" "+heldJobs(f.q)+" ", " "+req.Job.ID+" ")
	f.mu.Unlock()
	return f.fleet.run(ctx, req)
}

func quotaEnv(f *quotaFleet) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions(f.claim, activity.RegisterOptions{Name: ClaimActivity})
	registerRun(env, f.run)
	env.RegisterActivityWithOptions(f.acquire, activity.RegisterOptions{Name: AcquireActivity})
	env.RegisterActivityWithOptions(f.release, activity.RegisterOptions{Name: ReleaseActivity})
	return env
}

func tenantJob(mod func(*Job)) Job {
	return job(func(j *Job) {
		j.Tenant = "acme"
		if mod != nil {
			mod(j)
		}
	})
}

// TestWorkflowHoldsSlot: a job takes its slot before its claim, holds it
// while it runs, and gives it back however it ends: done, failed, killed,
// its node lost.
func TestWorkflowHoldsSlot(t *testing.T) {
	tests := []struct {
		name    string
		job     Job
		runTier int
		block   bool
		lost    int
		kill    bool
		wantErr func(error) bool
	}{
		{name: "done", job: tenantJob(nil), runTier: 1,
			wantErr: func(err error) bool { return err == nil }},
		{name: "failed (ran below its floor)", job: tenantJob(nil), runTier: 0,
			wantErr: func(err error) bool { return appType(err) == ErrBelowFloor }},
		{name: "killed", job: tenantJob(nil), runTier: 1, block: true, kill: true,
			wantErr: temporal.IsCanceledError},
		{name: "node lost", job: tenantJob(nil), runTier: 1, lost: 1,
			wantErr: func(err error) bool { return appType(err) == ErrNodeLost }},
		{name: "node lost, retried on another node", job: tenantJob(func(j *Job) { j.Idempotent, j.Retries = true, 1 }),
			runTier: 1, lost: 1, wantErr: func(err error) bool { return err == nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl := &fleet{claims: []func() (Claim, error){node("n1", 1), node("n2", 1)}, runTier: tt.runTier, block: tt.block, lost: tt.lost}
			f := &quotaFleet{fleet: fl, q: newQuotas(t, QuotaConfig{Pools: map[string]int{"build": 1}})}
			env := quotaEnv(f)
			if tt.kill {
				env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
			}
			env.ExecuteWorkflow(Workflow, tt.job)
			if err := env.GetWorkflowError(); !tt.wantErr(err) {
				t.Fatalf("the job ended with %v", err)
			}
			if f.asks != 1 || !f.heldRun {
				t.Errorf("asks %d, slot held while it ran %v; want one ask and the slot held", f.asks, f.heldRun)
			}
			if f.releases != 1 || heldJobs(f.q) != "" {
				t.Errorf("releases %d, still held %q; want the slot given back once", f.releases, heldJobs(f.q))
			}
		})
	}
}

func appType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	return ""
}

// TestWorkflowWaitsForSlot: a job over its quota waits (claiming nothing)
// until a slot frees up, then runs; one whose wait outlasts its claim
// timeout fails naming the quota and the fix; one killed while it waits
// takes no slot later.
func TestWorkflowWaitsForSlot(t *testing.T) {
	tests := []struct {
		name      string
		cfg       QuotaConfig
		other     [3]string // a slot held by another job
		job       Job
		freeAfter time.Duration // 0: never
		kill      bool
		wantErr   string
		wantRun   bool
	}{
		{name: "the pool's quota full: the job waits, then runs once the slot is given back",
			cfg: QuotaConfig{Pools: map[string]int{"build": 1}}, other: [3]string{"j-0", "build", "beta"},
			job: tenantJob(nil), freeAfter: 20 * time.Second, wantRun: true},
		{name: "the pool's quota full past the claim timeout: the job fails naming it",
			cfg: QuotaConfig{Pools: map[string]int{"build": 1}}, other: [3]string{"j-0", "build", "beta"},
			job: tenantJob(nil),
			wantErr: "job j-1 got no quota slot within 1m0s: pool build holds its quota of 1 at once (--pool-quota build=1): " +
				"raise the quota on the server, or end one of the jobs that hold it"},
		{name: "the tenant's quota is held by its job in another pool",
			cfg: QuotaConfig{Tenants: map[string]int{"acme": 1}}, other: [3]string{"j-0", "gpu", "acme"},
			job:     tenantJob(nil),
			wantErr: "tenant acme holds its quota of 1 at once (--tenant-quota acme=1)"},
		{name: "another tenant's job at its quota does not hold this one",
			cfg: QuotaConfig{Tenants: map[string]int{"acme": 1, "beta": 1}}, other: [3]string{"j-0", "build", "beta"},
			job: tenantJob(nil), wantRun: true},
		{name: "killed while it waits: no slot taken, none taken later",
			cfg: QuotaConfig{Pools: map[string]int{"build": 1}}, other: [3]string{"j-0", "build", "beta"},
			job: tenantJob(nil), kill: true},
		{name: "a job started around the API (no tenant) takes no slot",
			cfg: QuotaConfig{Pools: map[string]int{"build": 1}}, other: [3]string{"j-0", "build", "beta"},
			job: job(nil), wantRun: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &quotaFleet{fleet: &fleet{claims: []func() (Claim, error){node("n1", 1)}, runTier: 1}, q: newQuotas(t, tt.cfg)}
			ask(t, f.q, tt.other[0], tt.other[1], tt.other[2])
			env := quotaEnv(f)
			if tt.freeAfter > 0 {
				env.RegisterDelayedCallback(func() { f.q.Release("j-0") }, tt.freeAfter)
			}
			if tt.kill {
				env.RegisterDelayedCallback(env.CancelWorkflow, 5*time.Second)
			}
			start := env.Now()
			env.ExecuteWorkflow(Workflow, tt.job)
			err := env.GetWorkflowError()
			switch {
			case tt.wantErr != "":
				if appType(err) != ErrOverQuota || !strings.Contains(failureMessage(err), tt.wantErr) {
					t.Fatalf("got %v, want a %s failure containing %q", err, ErrOverQuota, tt.wantErr)
				}
			case tt.kill:
				if !temporal.IsCanceledError(err) {
					t.Fatalf("got %v, want the job cancelled", err)
				}
			case err != nil:
				t.Fatalf("error: %v", err)
			}
			if ran := len(f.runs) == 1; ran != tt.wantRun {
				t.Fatalf("ran %v (queues %q), want %v", ran, strings.Join(f.queues, " "), tt.wantRun)
			}
			if !tt.wantRun && len(f.queues) != 0 {
				t.Errorf("claimed while over its quota: %q", strings.Join(f.queues, " "))
			}
			if tt.freeAfter > 0 && env.Now().Sub(start) < tt.freeAfter {
				t.Errorf("ran after %s, before the slot was given back at %s", env.Now().Sub(start), tt.freeAfter)
			}
			if tt.job.Tenant == "" && (f.asks != 0 || f.releases != 0) {
				t.Errorf("a job without a tenant asked %d, released %d", f.asks, f.releases)
			}
			if strings.Contains(" "+heldJobs(f.q)+" ", " j-1 ") {
				t.Errorf("the job's slot is still held after it ended: %q", heldJobs(f.q))
			}
			if g := ask(t, f.q, "j-1", "build", "acme"); tt.job.Tenant != "" && g.Granted {
				t.Errorf("the ended job's late ask was granted")
			}
		})
	}
}

// TestQuotasApply: a quota applies to a job when it names the job's pool
// or tenant, or a * quota holds either; with none the job takes no slot.
func TestQuotasApply(t *testing.T) {
	tests := []struct {
		name         string
		cfg          QuotaConfig
		pool, tenant string
		want         bool
	}{
		{"no quota", QuotaConfig{}, "build", "acme", false},
		{"the pool's", QuotaConfig{Pools: map[string]int{"build": 1}}, "build", "acme", true},
		{"another pool's", QuotaConfig{Pools: map[string]int{"ci": 1}}, "build", "acme", false},
		{"the tenant's", QuotaConfig{Tenants: map[string]int{"acme": 2}}, "build", "acme", true},
		{"another tenant's", QuotaConfig{Tenants: map[string]int{"beta": 2}}, "build", "acme", false},
		{"every pool's", QuotaConfig{Pools: map[string]int{AnyName: 3}}, "build", "acme", true},
		{"every tenant's", QuotaConfig{Tenants: map[string]int{AnyName: 3}}, "build", "acme", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := newQuotas(t, tt.cfg).Applies(tt.pool, tt.tenant); got != tt.want {
				t.Fatalf("Applies(%s, %s) = %v, want %v", tt.pool, tt.tenant, got, tt.want)
			}
		})
	}
}

// TestQuotaFreeJobTakesNoSlot: a job the server started QuotaFree asks no
// slot and releases none, its run the same; one without the mark asks.
func TestQuotaFreeJobTakesNoSlot(t *testing.T) {
	for _, free := range []bool{true, false} {
		t.Run(fmt.Sprintf("quota free %v", free), func(t *testing.T) {
			fl := &fleet{claims: []func() (Claim, error){node("n1", 1)}, runTier: 1}
			f := &quotaFleet{fleet: fl, q: newQuotas(t, QuotaConfig{Pools: map[string]int{"build": 1}})}
			env := quotaEnv(f)
			env.ExecuteWorkflow(Workflow, tenantJob(func(j *Job) { j.QuotaFree = free }))
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			want := 1
			if free {
				want = 0
			}
			if f.asks != want || f.releases != want {
				t.Fatalf("asks %d, releases %d; want %d each", f.asks, f.releases, want)
			}
		})
	}
}
