package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMaxBoxes: a node at its --max-boxes declines further claims before
// any box starts, so a job over the bound waits in its queue (running, on
// no node) instead of failing, and goes to a node with room.
func TestMaxBoxes(t *testing.T) {
	requireTier1(t)
	f := startFleet(t, time.Minute)
	f.node("q1", "1", "--max-boxes", "1")
	started := func(id string) bool {
		_, err := os.Stat(filepath.Join(f.dir, "nodes", "q1", "jobs", id))
		return err == nil
	}
	first := f.startAPI(t, `{"pool":"ci","argv":["sleep","4141"]}`)
	waitFor(t, "the first job's sleep", func() bool { return sleeping("4141") })
	second := f.startAPI(t, `{"pool":"ci","argv":["sleep","4142"]}`)
	time.Sleep(4 * time.Second) // several claim rounds
	var v struct{ State string }
	f.get("/v1/jobs/"+second, &v)
	if started(second) || sleeping("4142") || v.State != "running" {
		t.Fatalf("the job over the bound: state %s, started on the node %v; want it waiting in its queue", v.State, started(second))
	}
	// Declined, not held: a node with room that joins now takes it at
	// once, while the first box still runs (a claim answered by the full
	// node would hold the job there until the first box ended).
	f.node("q2", "1", "--max-boxes", "1")
	waitFor(t, "the job over the bound to start on the node with room", func() bool { return sleeping("4142") })
	if _, err := os.Stat(filepath.Join(f.dir, "nodes", "q2", "jobs", second)); err != nil || !sleeping("4141") {
		t.Errorf("the second job did not start on q2 beside the first (%v, first running %v)", err, sleeping("4141"))
	}
	var out map[string]string
	for _, id := range []string{first, second} {
		f.post("/v1/jobs/"+id+"/kill", "", &out)
	}
	waitFor(t, "the boxes to end", func() bool { return !sleeping("4141") && !sleeping("4142") })
}
