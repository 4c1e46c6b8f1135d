package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/api"
)

// TestFleetFiles: job A's output, too big for a model, is offloaded on its
// node and kept in the server's store; its child B, a job of its own
// started later, reads parts of it with read_result; an unrelated job C,
// on the same node, cannot; the server lists it under A's tree. Then the
// taint chain: an open job P starts a child T tainted by an unvetted
// model; P reads T's offloaded result, which taints P (its call says so,
// the server audits it), and a child P starts later with --tier0 is
// tainted and runs on the tier-1 node only, never on the tier-0 one.
func TestFleetFiles(t *testing.T) {
	requireTier1(t)
	f := startFleet(t, 30*time.Second)
	f.node("n0", "off")
	f.node("n1", "1")

	run := func(body string) api.JobView {
		t.Helper()
		var st api.Started
		if code := f.post("/v1/jobs", body, &st); code != http.StatusCreated {
			t.Fatalf("POST /v1/jobs %s: %d %+v", body, code, st)
		}
		var v api.JobView
		f.get("/v1/jobs/"+st.ID+"?wait=1", &v)
		return v
	}
	a := run(`{"pool":"ci","calls":[{"kind":"shell","command":"seq 1 40000"}]}`)
	if a.Result == nil || len(a.Result.Calls) != 1 || len(a.Result.Calls[0].Refs) != 1 {
		t.Fatalf("job A: %s %s %+v, want one call with its output offloaded", a.State, a.Error, a.Result)
	}
	ref := a.Result.Calls[0].Refs[0]
	if out := a.Result.Calls[0].Stdout; strings.Contains(out, "\n39999\n") || !strings.Contains(out, ref) {
		t.Errorf("A's stdout is not the stub naming %s: %.300q", ref, out)
	}
	var list []api.FileInfo
	f.get("/v1/files?job="+a.ID, &list)
	if len(list) != 1 || list[0].Ref != ref || len(list[0].Jobs) != 1 || list[0].Jobs[0] != a.ID || list[0].Tainted {
		t.Fatalf("A's tree on the server: %+v, want %s kept by %s, untainted", list, ref, a.ID)
	}

	readIt := `"calls":[{"kind":"read_result","ref":"` + ref + `","range":"20000-20002"}]}`
	b := run(`{"pool":"ci","parent":"` + a.ID + `",` + readIt)
	if b.Result == nil || len(b.Result.Calls) != 1 || !strings.Contains(b.Result.Calls[0].Text, "20000\n20001\n20002") || b.Tainted {
		t.Fatalf("child B's read_result: %s %s %+v, want lines 20000-20002, untainted", b.State, b.Error, b.Result)
	}

	c := run(`{"pool":"ci",` + readIt)
	cj, _ := json.Marshal(c)
	if strings.Contains(string(cj), "20001") || !strings.Contains(string(cj), "not found") {
		t.Errorf("unrelated C's read_result: %s, want not found and none of A's lines", cj)
	}
	if c.Result != nil && len(c.Result.Calls) > 0 && c.Result.Calls[0].Node != "n1" {
		t.Errorf("C ran on %s, want the node that holds A's result locally (n1)", c.Result.Calls[0].Node)
	}

	// The taint chain, through an open job's calls.
	var p api.Started
	if code := f.post("/v1/jobs", `{"pool":"ci","open":true,"calls":[{"kind":"shell","command":"true"}]}`, &p); code != http.StatusCreated {
		t.Fatalf("start the open job: %d", code)
	}
	tj := run(`{"pool":"ci","parent":"` + p.ID + `","model":"unvetted-model","calls":[{"kind":"shell","command":"seq 1 40000"}]}`)
	if !tj.Tainted || tj.Result == nil || len(tj.Result.Calls) != 1 || len(tj.Result.Calls[0].Refs) != 1 {
		t.Fatalf("tainted child T: %s %s %+v", tj.State, tj.Error, tj.Result)
	}
	var read map[string]any
	code := f.post("/v1/jobs/"+p.ID+"/calls", `{"kind":"read_result","ref":"`+tj.Result.Calls[0].Refs[0]+`","range":"7-8"}`, &read)
	want := "read the result of tainted job " + tj.ID
	if code != http.StatusOK || !strings.Contains(read["text"].(string), "7\n8") || !strings.Contains(read["taint"].(string), want) {
		t.Fatalf("P reads T's result: %d %v, want lines 7-8 and the taint %q", code, read, want)
	}
	var recs []map[string]any
	f.get("/v1/audit?job="+p.ID, &recs)
	audited := false
	for _, r := range recs {
		if fields, _ := r["fields"].(map[string]any); r["kind"] == api.AuditJobTaint && fields["taint"] == want {
			audited = true
		}
	}
	if !audited {
		t.Errorf("P's audit records %v, want job.taint %q", recs, want)
	}
	d := run(`{"pool":"ci","parent":"` + p.ID + `","tier0":true,"calls":[{"kind":"shell","command":"echo d"}]}`)
	if !d.Tainted || !strings.Contains(d.Taint, want) || d.Queue != "floor.ci" || d.Result == nil || d.Result.Calls[0].Node != "n1" || d.Result.Calls[0].Tier != 1 {
		t.Errorf("P's later child D: tainted %v (%s) from %s, result %+v; want tainted, on n1 at tier 1 from floor.ci", d.Tainted, d.Taint, d.Queue, d.Result)
	}
	var pv api.JobView
	f.get("/v1/jobs/"+p.ID, &pv)
	if !pv.Tainted || !strings.Contains(pv.Taint, want) {
		t.Errorf("P's view: tainted %v %q", pv.Tainted, pv.Taint)
	}
	f.post("/v1/jobs/"+p.ID+"/release", "", &map[string]any{})
}
