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
