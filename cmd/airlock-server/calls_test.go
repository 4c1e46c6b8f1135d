package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/jobs"
)

// TestFleetCalls runs jobs of several calls through a real embedded
// Temporal server and a tier-1 node: a job of three calls (exec,
// write_file, read_file) through one kernel, its trace through `airlock
// job trace`; an open job that takes calls one by one (the second waiting
// for a person's answer), then is released; and a kill of an open job that
// idles, whose node closes the kernel. No result or trace names a path of
// the node's.
func TestFleetCalls(t *testing.T) {
	requireTier1(t)
	f := startFleet(t, 30*time.Second)
	f.node("n1", "1")
	nodeDir := filepath.Join(f.dir, "nodes")

	t.Run("a job of three calls runs them through one kernel", func(t *testing.T) {
		calls := filepath.Join(f.dir, "calls.json")
		os.WriteFile(calls, []byte(`[{"kind":"exec","argv":["echo","first"]},
			{"kind":"write_file","path":"out.txt","content":"hello fleet\n"},
			{"kind":"read_file","path":"out.txt"}]`), 0o600)
		code, v := f.startJob("--mode", "fix", "--calls", calls)
		if code != 0 || v.State != "completed" || v.Result == nil {
			t.Fatalf("got exit %d, %+v", code, v)
		}
		r := v.Result
		if len(r.Calls) != 3 || r.Calls[0].Stdout != "first\n" || r.Calls[2].Text != "hello fleet\n" || r.Node != "n1" || r.Tier != 1 {
			t.Fatalf("result: %+v", r)
		}
		if v.LowestTier == nil || *v.LowestTier != 1 || v.Calls != 3 {
			t.Errorf("view: lowest tier %v, calls %d; want 1 and 3", v.LowestTier, v.Calls)
		}
		for _, c := range r.Calls {
			if c.Node != "n1" || c.Tier != 1 || c.Verdict != "allow" {
				t.Errorf("call %s ran on %s at tier %d (%s), want n1 at tier 1, allowed", c.Call, c.Node, c.Tier, c.Verdict)
			}
		}
		code, out, stderr := f.cli(f.tokenF, "job", "trace", "--", v.ID)
		if code != 0 {
			t.Fatalf("job trace: exit %d, %s", code, stderr)
		}
		t.Logf("airlock job trace %s:\n%s", v.ID, out)
		for _, want := range []string{"nodes n1, lowest tier 1, outside event false", "c1    exec", "echo first", "write_file", "out.txt (12 bytes)", "read_file"} {
			if !strings.Contains(out, want) {
				t.Errorf("job trace: %q does not show %q", out, want)
			}
		}
		if strings.Contains(out, "hello fleet") {
			t.Errorf("job trace shows the write's content:\n%s", out)
		}
		tr := f.trace(v.ID)
		if len(tr.Calls) != 3 || tr.LowestTier != 1 || strings.Join(tr.Nodes, ",") != "n1" || tr.Calls[1].Kind != jobs.CallWriteFile {
			t.Fatalf("trace: %+v", tr)
		}
		f.noHostPath(t, nodeDir, v, tr)
		if *update {
			recordHistory(t, f, v.ID, "calls-job.history.json")
		}
	})

	ask := filepath.Join(f.dir, "ask.yaml")
	os.WriteFile(ask, []byte("shell:\n  allow: [echo, cat]\n  args:\n    echo:\n      escalate: [\"ask*\"]\nescalation:\n  timeout: 60s\n"), 0o600)
	t.Run("an open job takes calls one by one, a person answers the second", func(t *testing.T) {
		code, out, stderr := f.cli(f.tokenF, "job", "start", "--pool", "ci", "--mode", "fix", "--open", "--policy", ask)
		if code != 0 {
			t.Fatalf("job start --open: exit %d, %s", code, stderr)
		}
		id := strings.TrimSpace(out)
		if code, out, stderr := f.cli(f.tokenF, "job", "call", id, "--shell", "--", "echo kept > note.txt; echo one"); code != 0 || out != "one\n" {
			t.Fatalf("first call: exit %d, %q %q", code, out, stderr)
		}
		type answer struct {
			code        int
			out, stderr string
		}
		second := make(chan answer, 1)
		go func() {
			code, out, stderr := f.cli(f.tokenF, "job", "call", id, "--", "echo", "ask-me")
			second <- answer{code, out, stderr}
		}()
		q := f.waitQuestion(t, id)
		if q.Node != "n1" || q.Call != "echo ask-me" {
			t.Fatalf("question %+v", q)
		}
		if code, out, stderr := f.cli(f.tokenF, "approvals", "decide", q.ID, "allow-once", "--digest", q.Digest); code != 0 {
			t.Fatalf("approvals decide: exit %d, %q %q", code, out, stderr)
		}
		if a := <-second; a.code != 0 || a.out != "ask-me\n" {
			t.Fatalf("second call: exit %d, %q %q", a.code, a.out, a.stderr)
		}
		// The kernel (and its working directory) held between calls.
		if code, out, stderr := f.cli(f.tokenF, "job", "call", id, "--read", "note.txt"); code != 0 || out != "kept\n" {
			t.Fatalf("third call: exit %d, %q %q", code, out, stderr)
		}
		var bad map[string]string
		if code := f.post("/v1/jobs/"+id+"/calls", `{"kind":"read_file"}`, &bad); code != 400 || !strings.Contains(bad["error"], "path: empty") {
			t.Errorf("a malformed call: %d %v, want 400 naming path", code, bad)
		}
		tr := f.trace(id)
		if !tr.Open || tr.Released || len(tr.Calls) != 3 || tr.Calls[1].Decider != "person:operator" || tr.LowestTier != 1 {
			t.Fatalf("trace while open: %+v", tr)
		}
		if code, _, stderr := f.cli(f.tokenF, "job", "release", "--", id); code != 0 {
			t.Fatalf("job release: exit %d, %s", code, stderr)
		}
		var v api.JobView
		f.get("/v1/jobs/"+id+"?wait=1", &v)
		if v.State != "completed" || v.Result == nil || len(v.Result.Calls) != 3 || v.LowestTier == nil || *v.LowestTier != 1 {
			t.Fatalf("released job: %+v %+v", v, v.Result)
		}
		tr = f.trace(id)
		if !tr.Released {
			t.Errorf("trace after the release: %+v", tr)
		}
		f.noHostPath(t, nodeDir, v, tr)
		if _, err := os.Stat(filepath.Join(nodeDir, "n1", "jobs", id, "running")); !os.IsNotExist(err) {
			t.Errorf("the job's running mark outlived its lease: %v", err)
		}
		var e map[string]string
		if code := f.post("/v1/jobs/"+id+"/calls", `{"kind":"list"}`, &e); code != 409 {
			t.Errorf("a call of a released job: %d %v, want 409", code, e)
		}
	})

	t.Run("a kill of an idle open job closes its kernel on the node", func(t *testing.T) {
		code, out, stderr := f.cli(f.tokenF, "job", "start", "--pool", "ci", "--open", "--", "echo", "up")
		if code != 0 {
			t.Fatalf("job start --open: exit %d, %s", code, stderr)
		}
		id := strings.TrimSpace(out)
		mark := filepath.Join(nodeDir, "n1", "jobs", id, "running")
		waitFor(t, "the first call to end", func() bool {
			tr := f.trace(id)
			return len(tr.Calls) == 1 && !tr.Calls[0].Ended.IsZero()
		})
		if _, err := os.Stat(mark); err != nil {
			t.Fatalf("the open job holds no kernel on its node: %v", err)
		}
		f.killClosing(t, id, mark)
	})
}

func (f *fleet) trace(id string) jobs.Trace {
	f.t.Helper()
	var tr jobs.Trace
	f.get("/v1/jobs/"+id+"/trace", &tr)
	return tr
}

// noHostPath fails when a job's view or trace names a path of the node's:
// a lease's handle is the job's id, never a process or a host path.
func (f *fleet) noHostPath(t *testing.T, nodeDir string, v api.JobView, tr jobs.Trace) {
	t.Helper()
	for name, x := range map[string]any{"view": v, "trace": tr} {
		b, _ := json.Marshal(x)
		if strings.Contains(string(b), nodeDir) || strings.Contains(string(b), f.dir) {
			t.Errorf("the job's %s names a host path: %s", name, b)
		}
	}
}
