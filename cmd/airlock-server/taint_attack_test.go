package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/jobs"
)

// TestFleetTaintReachesOpenJob: an open job P, started clean, whose
// operator reads the output of P's tainted child T (its job's result, and
// a file T kept, read for P) is tainted on the server, and its next call
// through a real node carries that taint to P's kernel: the call's result
// and P's trace say so. Had P's kernel been left untainted, its later
// connections would go out without a person's word.
func TestFleetTaintReachesOpenJob(t *testing.T) {
	requireTier1(t)
	f := startFleet(t, 30*time.Second)
	f.node("n1", "1")

	var p api.Started
	if code := f.post("/v1/jobs", `{"pool":"ci","open":true}`, &p); code != http.StatusCreated || p.Tainted {
		t.Fatalf("start P: %d %+v", code, p)
	}
	var tj api.Started
	if code := f.post("/v1/jobs", `{"pool":"ci","parent":"`+p.ID+`","model":"unvetted-model","argv":["echo","text from outside"]}`, &tj); code != http.StatusCreated || !tj.Tainted {
		t.Fatalf("start T: %d %+v", code, tj)
	}
	var tv api.JobView
	f.get("/v1/jobs/"+tj.ID+"?wait=1", &tv)
	if tv.Result == nil || !strings.Contains(tv.Result.Stdout, "text from outside") {
		t.Fatalf("T: %+v", tv)
	}
	var pv api.JobView
	f.get("/v1/jobs/"+p.ID, &pv)
	if want := "read the output of tainted job " + tj.ID; !pv.Tainted || !strings.Contains(pv.Taint, want) {
		t.Fatalf("P after T's output was read: tainted %v %q, want %q", pv.Tainted, pv.Taint, want)
	}
	var res jobs.CallResult
	if code := f.post("/v1/jobs/"+p.ID+"/calls", `{"kind":"list","path":"."}`, &res); code != http.StatusOK {
		t.Fatalf("P's call: %d %+v", code, res)
	}
	if !strings.Contains(res.Taint, tj.ID) || res.Node != "n1" {
		t.Errorf("P's call on its node: %+v, want it to carry the taint naming %s", res, tj.ID)
	}
	tr := f.trace(p.ID)
	if !tr.Tainted || !strings.Contains(tr.Taint, tj.ID) {
		t.Errorf("P's trace: tainted %v %q, want the taint naming %s", tr.Tainted, tr.Taint, tj.ID)
	}
	var bad map[string]string
	if code := f.post("/v1/jobs/"+p.ID+"/calls", `{"kind":"list","taint":"none"}`, &bad); code != http.StatusBadRequest || !strings.Contains(bad["error"], `"taint"`) {
		t.Errorf("a call naming its own taint: %d %v, want 400 naming taint", code, bad)
	}
	if code := f.post("/v1/jobs/"+p.ID+"/release", `{}`, &bad); code != http.StatusAccepted {
		t.Errorf("release: %d %v", code, bad)
	}
}
