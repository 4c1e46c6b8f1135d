package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/jobs"
)

const (
	annToken = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
	bobToken = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"
)

// writeAdmins gives the server two admins, ann and bob, each with a token
// file of their own.
func writeAdmins(f *fleet) {
	os.MkdirAll(filepath.Join(f.dir, "server"), 0o700)
	os.WriteFile(filepath.Join(f.dir, "server", "admin-token"), []byte("ann "+annToken+"\nbob "+bobToken+"\n"), 0o600)
	os.WriteFile(filepath.Join(f.dir, "ann.token"), []byte("ann "+annToken+"\n"), 0o600)
	os.WriteFile(filepath.Join(f.dir, "bob.token"), []byte("bob "+bobToken+"\n"), 0o600)
}

// cli runs an airlock command against the fleet's server with the token
// file given.
func (f *fleet) cli(tokenFile string, args ...string) (int, string, string) {
	at := len(args)
	for i, a := range args {
		if a == "--" {
			at = i
			break
		}
	}
	full := append(append(append([]string{}, args[:at]...), "--server", f.url, "--token-file", tokenFile), args[at:]...)
	return f.run(full...)
}

func (f *fleet) auditOf(job string) []audit.Record {
	var recs []audit.Record
	f.get("/v1/audit?job="+job, &recs)
	return recs
}

func recordKinds(recs []audit.Record) string {
	var k []string
	for _, r := range recs {
		k = append(k, r.Kind)
	}
	return strings.Join(k, " ")
}

// waitQuestion waits until the server lists a question of job id.
func (f *fleet) waitQuestion(t *testing.T, id string) jobs.Question {
	t.Helper()
	var q jobs.Question
	waitFor(t, "job "+id+"'s question", func() bool {
		var qs []jobs.Question
		f.get("/v1/approvals", &qs)
		for _, x := range qs {
			if x.Job == id {
				q = x
				return true
			}
		}
		return false
	})
	return q
}

// TestFleetRules is the rules of who may run what, end to end through a
// real embedded Temporal server and nodes run through the CLI: roles and
// four eyes for a node's sandbox opt-out, an opted-out node taking floor
// work from inside (marked tier 0, audited) and never an outside event's,
// model vetting, and an escalation answered through the API reaching the
// node's waiting call (or denied headless at the policy's timeout).
func TestFleetRules(t *testing.T) {
	requireTier1(t)
	f := startFleetWith(t, 30*time.Second, writeAdmins, "--four-eyes", "--vetted-models", "good-model")
	ann, bob := filepath.Join(f.dir, "ann.token"), filepath.Join(f.dir, "bob.token")
	f.node("n0", "off")

	t.Run("an operator cannot opt a node out", func(t *testing.T) {
		code, _, stderr := f.cli(f.tokenF, "node", "sandbox-optout", "n0", "--reason", "no bubblewrap")
		if code == 0 || !strings.Contains(stderr, "needs the admin role") {
			t.Fatalf("exit %d, %q; want a refusal naming the admin role", code, stderr)
		}
	})
	t.Run("four eyes: the opt-out holds once a second admin approves", func(t *testing.T) {
		if code, out, stderr := f.cli(ann, "node", "sandbox-optout", "n0", "--reason", "build host without bubblewrap"); code != 0 || !strings.Contains(out, "--approve") {
			t.Fatalf("request: exit %d, %q %q", code, out, stderr)
		}
		if code, _, stderr := f.cli(ann, "node", "sandbox-optout", "n0", "--approve"); code == 0 || !strings.Contains(stderr, "second, different admin") {
			t.Fatalf("self-approval: exit %d, %q; want refused", code, stderr)
		}
		if code, out, stderr := f.cli(bob, "node", "sandbox-optout", "n0", "--approve"); code != 0 || !strings.Contains(out, "holds") {
			t.Fatalf("approval: exit %d, %q %q", code, out, stderr)
		}
		code, out, _ := f.cli(f.tokenF, "node", "list")
		if code != 0 || !strings.Contains(out, "health: sandbox opt-out held") {
			t.Errorf("node list: exit %d, %q; want the opt-out as a health finding", code, out)
		}
	})
	t.Run("an outside event is refused at once when only an opted-out node is live", func(t *testing.T) {
		var e map[string]string
		start := time.Now()
		if code := f.post("/v1/hooks/echo-in", "outside", &e); code != http.StatusConflict || !strings.Contains(e["error"], "not opted out") {
			t.Fatalf("got %d %v, want 409 with the reason", code, e)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("refused after %s, want at once", time.Since(start))
		}
	})
	t.Run("floor work from inside runs on the opted-out node, marked tier 0 and audited", func(t *testing.T) {
		code, v := f.startJob("--", "echo", "inside")
		if code != 0 || v.Result == nil || v.Result.Node != "n0" || v.Result.Tier != 0 || !v.Result.OptedOut || v.Result.Stdout != "inside\n" {
			t.Fatalf("got exit %d, %+v %+v", code, v, v.Result)
		}
		if !strings.Contains(strings.Join(v.Notes, " "), "sandbox opt-out") || v.OutsideEvent || v.Tainted {
			t.Errorf("view %+v: want the opt-out noted, no outside event, no taint", v)
		}
		waitFor(t, "the job's end in the server's audit", func() bool {
			return recordKinds(f.auditOf(v.ID)) == "job.start run.sandbox.tier0 job.end"
		})
	})

	f.node("n1", "1")
	t.Run("an opted-out node never receives an outside event's job", func(t *testing.T) {
		for i := range 4 {
			var st api.Started
			if code := f.post("/v1/hooks/echo-in", fmt.Sprintf("event %d", i), &st); code != http.StatusCreated {
				t.Fatalf("POST: %d", code)
			}
			var v api.JobView
			f.get("/v1/jobs/"+st.ID+"?wait=1", &v)
			if v.Result == nil || v.Result.Node != "n1" || v.Result.Tier != 1 || v.Result.OptedOut || !v.Tainted || !v.OutsideEvent {
				t.Fatalf("event %d: got %+v %+v, want it run on n1 at tier 1, tainted, from outside", i, v, v.Result)
			}
		}
	})
	t.Run("a job naming a model not vetted runs on tier 1 only, tainted", func(t *testing.T) {
		for i := range 3 {
			code, v := f.startJob("--model", "other-model", "--tier0", "--", "echo", "m")
			if code != 0 || v.Result == nil || v.Result.Node != "n1" || !v.Tainted || !strings.Contains(v.Taint, "model other-model is not vetted") {
				t.Fatalf("job %d: exit %d, %+v %+v", i, code, v, v.Result)
			}
		}
	})
	t.Run("ending the opt-out acts at once", func(t *testing.T) {
		if code, _, stderr := f.cli(ann, "node", "sandbox-optout", "n0", "--end"); code != 0 {
			t.Fatalf("end: exit %d, %s", code, stderr)
		}
		var nodes []api.NodeEntry
		f.get("/v1/nodes", &nodes)
		for _, n := range nodes {
			if n.ID == "n0" && n.OptOut != nil {
				t.Errorf("node n0 still shows an opt-out: %+v", n)
			}
		}
	})

	ask := filepath.Join(f.dir, "ask.yaml")
	os.WriteFile(ask, []byte("shell:\n  allow: [echo]\n  args:\n    echo:\n      escalate: [\"ask*\"]\nescalation:\n  timeout: 60s\n"), 0o600)
	t.Run("an approval answered through the API reaches the node's call", func(t *testing.T) {
		code, out, stderr := f.cli(f.tokenF, "job", "start", "--pool", "ci", "--policy", ask, "--", "echo", "ask-me")
		if code != 0 {
			t.Fatalf("job start: exit %d, %s", code, stderr)
		}
		id := strings.TrimSpace(out)
		q := f.waitQuestion(t, id)
		if q.Node != "n1" || q.Call != "echo ask-me" || q.Verdict != "escalate" || !strings.HasPrefix(q.Digest, "sha256:") {
			t.Fatalf("question %+v", q)
		}
		if code, out, _ := f.cli(f.tokenF, "approvals", "list"); code != 0 || !strings.Contains(out, q.ID) || !strings.Contains(out, "echo ask-me") {
			t.Errorf("approvals list --server: exit %d, %q", code, out)
		}
		if code, out, _ := f.cli(f.tokenF, "approvals", "list", "--job", id); code != 0 || !strings.Contains(out, q.ID) || !strings.Contains(out, q.Digest) {
			t.Errorf("approvals list --job (from the workflow): exit %d, %q", code, out)
		}
		// An answer bound to another digest never reaches the call.
		var e map[string]string
		bad := `{"answer":"allow-once","digest":"sha256:` + strings.Repeat("0", 64) + `"}`
		if code := f.post("/v1/approvals/"+q.ID, bad, &e); code != http.StatusConflict {
			t.Errorf("an answer for another digest: %d %v, want 409", code, e)
		}
		if code, out, stderr := f.cli(f.tokenF, "approvals", "decide", q.ID, "allow-once", "--digest", q.Digest); code != 0 || !strings.Contains(out, "allowed once") {
			t.Fatalf("approvals decide --server: exit %d, %q %q", code, out, stderr)
		}
		var v api.JobView
		f.get("/v1/jobs/"+id+"?wait=1", &v)
		if v.Result == nil || v.Result.Refused || v.Result.Stdout != "ask-me\n" || v.Result.Node != "n1" || v.Result.Decider != "person:operator" {
			t.Fatalf("got %+v %+v, want echo run on n1 after the operator's answer", v, v.Result)
		}
		waitFor(t, "the approval in the server's audit", func() bool {
			return recordKinds(f.auditOf(id)) == "job.start approval.asked approval.refused approval.answered job.end"
		})
		if *update {
			recordHistory(t, f, id, "approval-job.history.json")
			recordHistory(t, f, id, "approval-lease-call.history.json")
		}
	})
	short := filepath.Join(f.dir, "ask-short.yaml")
	os.WriteFile(short, []byte("shell:\n  allow: [echo]\n  args:\n    echo:\n      escalate: [\"ask*\"]\nescalation:\n  timeout: 2s\n"), 0o600)
	t.Run("headless, the call is denied at the policy's timeout", func(t *testing.T) {
		start := time.Now()
		code, v := f.startJob("--policy", short, "--", "echo", "ask-me")
		if code != 126 || v.Result == nil || !v.Result.Refused || v.Result.Decider != "timeout" || !strings.Contains(v.Result.Reason, "no approval came within 2s") {
			t.Fatalf("got exit %d, %+v %+v; want the call denied at the timeout", code, v, v.Result)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("denied after %s, want soon after the 2s timeout", d)
		}
	})
}

// TestFleetDev: with --dev every node takes floor work, and the server
// and every job say so.
func TestFleetDev(t *testing.T) {
	f := startFleetWith(t, 20*time.Second, nil, "--dev")
	if !strings.Contains(f.stderr.String(), "--dev: every node may take floor work") {
		t.Errorf("the server's start-up does not say it runs --dev: %q", f.stderr.String())
	}
	f.node("n0", "off")
	code, v := f.startJob("--", "echo", "dev")
	if code != 0 || v.Result == nil || v.Result.Node != "n0" || v.Result.Tier != 0 || v.Result.Stdout != "dev\n" {
		t.Fatalf("got exit %d, %+v %+v; want floor work run on the tier-0 node", code, v, v.Result)
	}
	if !strings.Contains(strings.Join(v.Notes, " "), "--dev") {
		t.Errorf("the job's view does not say the server runs --dev: %+v", v)
	}
}
