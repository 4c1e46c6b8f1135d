package api

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-run/airlock/jobs"
)

// describes counts the summaries read from Temporal: each one is a round
// trip whose time a caller sees.
type describes struct {
	*fakeJobs
	n atomic.Int32
}

func (d *describes) Summary(ctx context.Context, id string) (jobs.Summary, error) {
	d.n.Add(1)
	return d.fakeJobs.Summary(ctx, id)
}

// A tenant naming another tenant's job as a parent must be refused in
// the very words and the same work (one describe) as an id no job has:
// a second describe for a job that exists is a timing oracle for ids.
func TestAttackParentTimingOracle(t *testing.T) {
	d := &describes{fakeJobs: &fakeJobs{known: []jobs.Job{jobOne}}}
	a := New(Config{Token: token, Jobs: d, Tenants: []Tenant{{Name: "beta", Token: betaToken}}})
	s := httptest.NewServer(a.Handler())
	t.Cleanup(s.Close)
	t.Cleanup(a.Close)
	start := func(parent string) (int, string, int32) {
		d.n.Store(0)
		code, body := rawTenant(t, s, "POST", "/v1/jobs", betaToken, `{"argv":["true"],"parent":"`+parent+`"}`)
		return code, strings.ReplaceAll(body, parent, "ID"), d.n.Load()
	}
	code, got, n := start(jobOne.ID)
	ucode, want, un := start("j-nosuch")
	if code != 404 || ucode != 404 || got != want {
		t.Fatalf("another tenant's parent: %d %s; an unknown one: %d %s; want the same 404", code, got, ucode, want)
	}
	if n != un {
		t.Errorf("another tenant's parent cost %d describes, an unknown one %d: the time tells them apart", n, un)
	}
	if len(d.started) != 0 {
		t.Errorf("started %v", d.started)
	}
}
