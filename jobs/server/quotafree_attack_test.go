package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/jobs"
)

// TestAttackJobMarksItselfQuotaFree: QuotaFree is the starting client's
// word from the quotas its orchestration holds, never the job's. A job
// that says it is quota free in a pool a quota bounds still takes its
// slot before its claim; a job no quota bounds takes none, and its
// history goes from its start straight to its claim.
func TestAttackJobMarksItselfQuotaFree(t *testing.T) {
	q, err := jobs.NewQuotas(jobs.QuotaConfig{Pools: map[string]int{"ci": 1}})
	if err != nil {
		t.Fatal(err)
	}
	_, srv := startPlain(t, q)
	ctx := context.Background()
	start := func(id, pool string) {
		j := jobs.Job{ID: id, Pool: pool, Tenant: "acme", Argv: []string{"true"}, ClaimTimeout: time.Minute, QuotaFree: true}
		if err := srv.Start(ctx, j); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Kill(ctx, id) })
	}
	history := func(id string) string {
		deadline := time.Now().Add(20 * time.Second)
		for {
			b, err := srv.History(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if h := string(b); strings.Contains(h, jobs.ClaimActivity) || time.Now().After(deadline) {
				return h
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	start("j-bounded", "ci")
	h := history("j-bounded")
	if !strings.Contains(h, jobs.AcquireActivity) || !strings.Contains(h, jobs.ClaimActivity) {
		t.Fatalf("a job of pool ci saying it is quota free: its history asks no slot before its claim:\n%s", h)
	}
	if held := q.Usage().Held; len(held) != 1 || held[0].Job != "j-bounded" {
		t.Fatalf("slots held: %+v, want j-bounded's", held)
	}

	start("j-free", "other")
	h = history("j-free")
	if strings.Contains(h, jobs.AcquireActivity) || !strings.Contains(h, jobs.ClaimActivity) {
		t.Fatalf("a job no quota bounds: want its claim without a slot's ask:\n%s", h)
	}
}

// startPlain starts an embedded server without authentication (any local
// process may poll any queue: the old shape, or a test's own) and the
// server's client orchestrating its jobs under q (nil: no quota).
func startPlain(t *testing.T, q *jobs.Quotas) (jobs.DevServer, *jobs.Client) {
	t.Helper()
	dev, err := Start(context.Background(), jobs.DevConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Stop() })
	srv, err := jobs.Dial(dev.HostPort(), dev.Namespace(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	stop, err := srv.OrchestrateWith(q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return dev, srv
}

// TestAttackQuotaAddedAfterAJobStartedFree: a tenant's job started while
// no quota bounded it takes no slot; the server restarts with a quota of 1
// for the tenant. The job still runs, so it counts against that quota: a
// second job of the tenant waits for its slot instead of being granted
// one beside it.
func TestAttackQuotaAddedAfterAJobStartedFree(t *testing.T) {
	dev, err := Start(context.Background(), jobs.DevConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Stop() })
	ctx := context.Background()
	orchestrate := func(q *jobs.Quotas) (*jobs.Client, func()) {
		c, err := jobs.Dial(dev.HostPort(), dev.Namespace(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		stop, err := c.OrchestrateWith(q)
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		return c, func() { stop(); c.Close() }
	}
	waitFor := func(c *jobs.Client, id, activity string) {
		deadline := time.Now().Add(20 * time.Second)
		for {
			b, err := c.History(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), activity) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s: no %s in its history:\n%s", id, activity, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	job := func(id string) jobs.Job {
		return jobs.Job{ID: id, Pool: "ci", Tenant: "acme", Argv: []string{"true"}, ClaimTimeout: time.Minute}
	}

	// No quota: the job is started quota free and waits for a node.
	before, stopBefore := orchestrate(nil)
	if err := before.Start(ctx, job("j-free")); err != nil {
		t.Fatal(err)
	}
	waitFor(before, "j-free", jobs.ClaimActivity)
	stopBefore()

	// The server again, now with a quota of one job for acme.
	q, err := jobs.NewQuotas(jobs.QuotaConfig{Tenants: map[string]int{"acme": 1}})
	if err != nil {
		t.Fatal(err)
	}
	after, stopAfter := orchestrate(q)
	t.Cleanup(stopAfter)
	t.Cleanup(func() { after.Kill(ctx, "j-free"); after.Kill(ctx, "j-next") })
	if err := after.Start(ctx, job("j-next")); err != nil {
		t.Fatal(err)
	}
	waitFor(after, "j-next", jobs.AcquireActivity)
	time.Sleep(time.Second) // an ask granted at once is recorded by now
	held := q.Usage().Held
	for _, s := range held {
		if s.Job == "j-next" {
			t.Fatalf("tenant acme's quota of 1 granted j-next a slot while j-free still runs: slots %+v", held)
		}
	}
	if len(held) != 1 || held[0].Job != "j-free" {
		t.Fatalf("slots held: %+v, want the running j-free's", held)
	}
}
