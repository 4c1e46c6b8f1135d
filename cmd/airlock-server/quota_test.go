package main

import (
	"encoding/json"
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

// TestCeilings: the server's --max-wall and --max-memory hold every job,
// whatever its own policy says. The same jobs under the same policy run to
// the end on a server without them.
func TestCeilings(t *testing.T) {
	requireTier1(t)
	pol, _ := json.Marshal("limits:\n  wall: 1h\n  memory: 2G\n")
	// A sleep past the wall ceiling, and a pipe whose tail holds 300 MB
	// (no newline ends its one line) past the memory ceiling.
	sleep := `{"pool":"ci","argv":["sleep","4"],"policy":` + string(pol) + `}`
	grow := `{"pool":"ci","command":"head -c 300000000 /dev/zero | tail -n 1 | wc -c","policy":` + string(pol) + `}`
	for _, tt := range []struct {
		name       string
		args       []string
		wantCapped bool
	}{
		{"without ceilings the policy's limits hold", nil, false},
		{"the server's ceilings hold whatever the policy says", []string{"--max-wall", "2s", "--max-memory", "64M"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := startFleet(t, time.Minute, tt.args...)
			f.node("c1", "1")
			start := time.Now()
			v := f.waitAPI(f.startAPI(t, sleep))
			took := time.Since(start)
			if v.Result == nil {
				t.Fatalf("sleep job: %+v", v)
			}
			if tt.wantCapped && (v.Result.ExitCode != 124 || took > 20*time.Second) {
				t.Errorf("sleep 4 under a 2s ceiling: exit %d after %s, want 124 (the wall clock) after about 2s", v.Result.ExitCode, took)
			}
			if !tt.wantCapped && v.Result.ExitCode != 0 {
				t.Errorf("sleep 4 without a ceiling: exit %d, want 0", v.Result.ExitCode)
			}
			v = f.waitAPI(f.startAPI(t, grow))
			if v.Result == nil {
				t.Fatalf("memory job: %+v", v)
			}
			t.Logf("a 300 MB line: exit %d, stdout %q, stderr %q", v.Result.ExitCode, v.Result.Stdout, v.Result.Stderr)
			if ok := v.Result.ExitCode == 0 && v.Result.Stdout == "300000000\n"; ok == tt.wantCapped {
				t.Errorf("a 300 MB line (ceiling %v): exit %d, stdout %q, stderr %q", tt.wantCapped, v.Result.ExitCode, v.Result.Stdout, v.Result.Stderr)
			}
		})
	}
}
