package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/jobs"
)

// holdRunner is a node's runner that holds the job named hold until
// release is closed (or its context ends), telling started when it runs,
// and runs every other job at once.
type holdRunner struct {
	hold    string
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (r *holdRunner) Run(ctx context.Context, req jobs.RunRequest) (jobs.Result, error) {
	if req.Job.ID == r.hold {
		r.once.Do(func() { close(r.started) })
		select {
		case <-r.release:
		case <-ctx.Done():
		}
	}
	return jobs.Result{Tier: 1, Stdout: "ran " + req.Job.ID}, nil
}

// TestKilledClaimKeepsNoReservation: a job killed while its claim waits
// on a full node (one box, busy) leaves no reservation behind. The claim
// still takes the slot the busy box frees, but its answer reaches a job
// that has ended and is refused; the node gives the slot back then, so
// the next job runs there at once rather than after the reservation's
// 70 s, its claim timeout (15 s) shorter than that.
func TestKilledClaimKeepsNoReservation(t *testing.T) {
	f := startAuth(t)
	f.reg.floor["n1"] = true
	ctx := context.Background()
	r := &holdRunner{hold: "j-busy", started: make(chan struct{}), release: make(chan struct{})}
	n, err := jobs.StartNode(jobs.NodeConfig{HostPort: f.dev.HostPort(), Namespace: jobs.DefaultNamespace,
		TLS: f.clientTLS(t, nodeCert(t, f.ca, "n1")), ID: "n1", Pool: "ci", Tier: 1, Concurrency: 1, Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	start := func(id string) {
		t.Helper()
		j := floorJob(id)
		j.ClaimTimeout = 15 * time.Second
		if err := f.server.Start(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	start("j-busy")
	select {
	case <-r.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the busy job never started")
	}
	// j-killed's claim waits on the full node for its one box to end.
	start("j-killed")
	time.Sleep(1500 * time.Millisecond)
	if err := f.server.Kill(ctx, "j-killed"); err != nil {
		t.Fatal(err)
	}
	if st, err := f.server.Wait(ctx, "j-killed"); err != nil || st.State == "completed" {
		t.Fatalf("the killed job: %+v, %v; want it ended unrun", st, err)
	}
	close(r.release) // the box ends: the waiting claim takes its slot
	if st, err := f.server.Wait(ctx, "j-busy"); err != nil || st.State != "completed" {
		t.Fatalf("the busy job: %+v, %v; want it completed", st, err)
	}
	start("j-next")
	st, err := f.server.Wait(ctx, "j-next")
	if err != nil || st.State != "completed" || st.Result == nil || st.Result.Node != "n1" {
		t.Fatalf("the next job: %+v, %v; want it completed on n1 (the killed job's claim still holds the node's one slot)", st, err)
	}
}
