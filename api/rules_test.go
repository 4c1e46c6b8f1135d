package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/jobs"
)

const (
	adminA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	adminB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var twoAdmins = []Admin{{Name: "ann", Token: adminA}, {Name: "bob", Token: adminB}}

func registerNode(t *testing.T, s *httptest.Server, id, pool string, tier int) map[string]any {
	t.Helper()
	code, out := do(t, s, http.MethodPost, "/v1/nodes", "Bearer "+token,
		fmt.Sprintf(`{"id":%q,"pool":%q,"tier":%d,"queues":[]}`, id, pool, tier))
	if code != 200 {
		t.Fatalf("register %s: %d %v", id, code, out)
	}
	return out
}

// serveAudited is serve with two admins and an audit log.
func serveAudited(t *testing.T, cfg Config) (*httptest.Server, *fakeJobs, *Server, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f := &fakeJobs{known: []jobs.Job{jobOne}}
	cfg.Jobs, cfg.Token, cfg.Admins, cfg.Audit = f, token, twoAdmins, l
	a := New(cfg)
	s := httptest.NewServer(a.Handler())
	t.Cleanup(s.Close)
	t.Cleanup(a.Close)
	return s, f, a, path
}

// auditOf is job's records as an admin reads them (every tenant's).
func auditOf(t *testing.T, s *httptest.Server, job string) []audit.Record {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/audit?job="+job, nil)
	req.Header.Set("Authorization", "Bearer "+adminA)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var recs []audit.Record
	if err := json.NewDecoder(resp.Body).Decode(&recs); err != nil {
		t.Fatal(err)
	}
	return recs
}

func kinds(recs []audit.Record) string {
	var k []string
	for _, r := range recs {
		k = append(k, r.Kind)
	}
	return strings.Join(k, " ")
}

// TestRoles: an operator runs jobs and answers approvals but cannot opt a
// node out; an admin may do both; each refusal names the role needed.
func TestRoles(t *testing.T) {
	s, _, _, _ := serveAudited(t, Config{})
	registerNode(t, s, "n1", "ci", 0)
	tests := []struct {
		name, method, path, auth, body string
		want                           int
		wantIn                         string
	}{
		{"an operator cannot opt a node out", "POST", "/v1/nodes/n1/sandbox-optout", token, `{"reason":"no bwrap here"}`, 403, "needs the admin role"},
		{"an admin can", "POST", "/v1/nodes/n1/sandbox-optout", adminA, `{"reason":"no bwrap here"}`, 201, ""},
		{"an admin may do what an operator may", "POST", "/v1/jobs", adminB, `{"argv":["make"]}`, 201, ""},
		{"an operator starts jobs", "POST", "/v1/jobs", token, `{"argv":["make"]}`, 201, ""},
		{"an operator reads the audit", "GET", "/v1/audit", token, ``, 200, ""},
		{"an operator ends no opt-out", "POST", "/v1/nodes/n1/sandbox-optout", token, `{"end":true}`, 403, "admin-token"},
		{"an unknown token is no one", "POST", "/v1/jobs", strings.Repeat("c", 32), `{"argv":["make"]}`, 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := do(t, s, tt.method, tt.path, "Bearer "+tt.auth, tt.body)
			if code != tt.want {
				t.Fatalf("got %d %v, want %d", code, out, tt.want)
			}
			if tt.wantIn != "" && !strings.Contains(fmt.Sprint(out["error"]), tt.wantIn) {
				t.Errorf("error %v, want it to say %q", out["error"], tt.wantIn)
			}
		})
	}
}

// TestOptOutFourEyes: with four eyes, an opt-out holds only once a second,
// different admin approves; ending acts at once; each step is audited;
// while it holds the node is a health finding and may take floor work.
func TestOptOutFourEyes(t *testing.T) {
	s, _, a, _ := serveAudited(t, Config{FourEyes: true})
	registerNode(t, s, "n0", "ci", 0)
	post := func(auth, body string) (int, map[string]any) {
		return do(t, s, "POST", "/v1/nodes/n0/sandbox-optout", "Bearer "+auth, body)
	}
	if code, out := post(adminA, `{"reason":"build host without bubblewrap"}`); code != 201 || out["pending"] != true {
		t.Fatalf("request: %d %v, want 201 pending", code, out)
	}
	if a.Eligible("n0", "floor.ci") {
		t.Fatal("a pending opt-out let the node poll the floor queue")
	}
	if code, out := post(adminA, `{"approve":true}`); code != 403 || !strings.Contains(fmt.Sprint(out["error"]), "second, different admin") {
		t.Fatalf("self-approval: %d %v, want 403", code, out)
	}
	if code, out := post(adminB, `{"approve":true}`); code != 200 || out["pending"] == true {
		t.Fatalf("approval: %d %v", code, out)
	}
	if !a.Eligible("n0", "floor.ci") || a.Eligible("n0", "floor.other") || a.Eligible("n9", "ci") {
		t.Fatal("Eligible: want the held opt-out to open floor.ci for n0 only")
	}
	if reg := registerNode(t, s, "n0", "ci", 0); reg["opted_out"] != true || reg["floor"] != true {
		t.Fatalf("the node's heartbeat answer %v, want opted_out and floor", reg)
	}
	var nodes []NodeEntry
	getJSON(t, s, "/v1/nodes", &nodes)
	if len(nodes) != 1 || nodes[0].OptOut == nil || !strings.Contains(strings.Join(nodes[0].Health, "\n"), "sandbox opt-out held") {
		t.Fatalf("nodes %+v, want the opt-out as a health finding", nodes)
	}
	if code, _ := post(adminA, `{"end":true}`); code != 200 {
		t.Fatalf("end: %d", code)
	}
	if a.Eligible("n0", "floor.ci") {
		t.Fatal("an ended opt-out still opens the floor queue")
	}
	var recs []audit.Record
	getJSON(t, s, "/v1/audit", &recs)
	var actions []string
	for _, r := range recs {
		if r.Kind == AuditOptOut {
			actions = append(actions, fmt.Sprint(r.Fields["action"]))
		}
	}
	if got := strings.Join(actions, " "); got != "request start end" {
		t.Errorf("audited actions %q, want request start end", got)
	}
}

func getJSON(t *testing.T, s *httptest.Server, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestMalformed: a malformed request gets a 4xx naming the field.
func TestMalformed(t *testing.T) {
	s, _, _, _ := serveAudited(t, Config{})
	registerNode(t, s, "n1", "ci", 1)
	q := `{"id":"q-1","job":"j-1","node":"n1","digest":"sha256:` + strings.Repeat("a", 64) + `","timeout":1000000000}`
	tests := []struct {
		name, auth, path, body string
		want                   int
		field                  string
	}{
		{"an opt-out without a reason", adminA, "/v1/nodes/n1/sandbox-optout", `{}`, 400, "reason"},
		{"an opt-out with a control character", adminA, "/v1/nodes/n1/sandbox-optout", `{"reason":"a\u001b[2Jb"}`, 400, "reason"},
		{"an opt-out of a node not registered", adminA, "/v1/nodes/n7/sandbox-optout", `{"reason":"x"}`, 404, "n7"},
		{"an opt-out of a bad node name", adminA, "/v1/nodes/N.1/sandbox-optout", `{"reason":"x"}`, 400, "node"},
		{"an answer without a digest", token, "/v1/approvals/q-1", `{"answer":"allow-once"}`, 400, "digest"},
		{"an answer that is neither", token, "/v1/approvals/q-1", `{"answer":"yes","digest":"sha256:aa"}`, 400, "answer"},
		{"an answer to no question", token, "/v1/approvals/q-9", `{"answer":"deny","digest":"sha256:aa"}`, 404, "q-9"},
		{"a question for another job than the path's", token, "/v1/jobs/j-2/questions", q, 400, "job"},
		{"a question without a timeout", token, "/v1/jobs/j-1/questions", strings.Replace(q, `"timeout":1000000000`, `"timeout":0`, 1), 400, "timeout"},
		{"a question with a short digest", token, "/v1/jobs/j-1/questions", strings.Replace(q, strings.Repeat("a", 64), "aa", 1), 400, "digest"},
		{"a job with an unknown field", token, "/v1/jobs", `{"argv":["x"],"modle":"m"}`, 400, "modle"},
		{"a job with an unknown parent", token, "/v1/jobs", `{"argv":["x"],"parent":"j-nope"}`, 404, "parent"},
		{"an audit read of a bad job id", token, "/v1/audit?job=a/b", ``, 400, "job"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := "POST"
			if strings.HasPrefix(tt.path, "/v1/audit") {
				method = "GET"
			}
			code, out := do(t, s, method, tt.path, "Bearer "+tt.auth, tt.body)
			if code != tt.want || !strings.Contains(fmt.Sprint(out["error"]), tt.field) {
				t.Fatalf("got %d %v, want %d naming %q", code, out, tt.want, tt.field)
			}
		})
	}
}

// TestTaintAndModels: a model outside the vetted list makes the job tier
// 1 only and tainted, and so is every job it starts; a vetted model does
// not; the server's records say so and hold no secret.
func TestTaintAndModels(t *testing.T) {
	s, f, _, _ := serveAudited(t, Config{VettedModels: []string{"good-model"}})
	start := func(body string) map[string]any {
		code, out := do(t, s, "POST", "/v1/jobs", "Bearer "+token, body)
		if code != 201 {
			t.Fatalf("start %s: %d %v", body, code, out)
		}
		return out
	}
	tests := []struct {
		name        string
		body        func() string
		wantTainted bool
		wantFloor   float64
		wantTaint   string
	}{
		{"a vetted model", func() string { return `{"argv":["make"],"model":"good-model","tier0":true}` }, false, 0, ""},
		{"a model not vetted, tier-0 consent ignored", func() string { return `{"argv":["make"],"model":"other","tier0":true}` }, true, 1, "model other is not vetted"},
		{"a child of a tainted job", func() string {
			p := start(`{"argv":["make"],"model":"other"}`)
			return fmt.Sprintf(`{"argv":["make"],"tier0":true,"parent":%q}`, p["id"])
		}, true, 1, "started by tainted job"},
		{"a child of an untainted floor job keeps the floor", func() string {
			p := start(`{"argv":["make"]}`)
			return fmt.Sprintf(`{"argv":["make"],"tier0":true,"parent":%q}`, p["id"])
		}, false, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := start(tt.body())
			if out["tainted"] != tt.wantTainted || out["floor"] != tt.wantFloor || !strings.Contains(fmt.Sprint(out["taint"]), tt.wantTaint) {
				t.Fatalf("got %v, want tainted %v floor %v taint %q", out, tt.wantTainted, tt.wantFloor, tt.wantTaint)
			}
			recs := auditOf(t, s, fmt.Sprint(out["id"]))
			want := "job.start"
			if tt.wantTainted {
				want += " job.taint"
			}
			if kinds(recs) != want {
				t.Errorf("records %q, want %q", kinds(recs), want)
			}
		})
	}
	_ = f
}

// TestHookRefusedAtOnce: an outside event's start to a pool with no live
// tier-1 node (or only an opted-out one) is refused at once with the
// reason and the fixes; with one it starts.
func TestHookRefusedAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, s *httptest.Server)
		dev   bool
		want  int
	}{
		{"no node at all", func(*testing.T, *httptest.Server) {}, false, 409},
		{"a tier-0 node only", func(t *testing.T, s *httptest.Server) { registerNode(t, s, "n0", "ci", 0) }, false, 409},
		{"a tier-1 node of another pool", func(t *testing.T, s *httptest.Server) { registerNode(t, s, "n1", "web", 1) }, false, 409},
		{"an opted-out tier-1 node", func(t *testing.T, s *httptest.Server) {
			registerNode(t, s, "n1", "ci", 1)
			if code, out := do(t, s, "POST", "/v1/nodes/n1/sandbox-optout", "Bearer "+adminA, `{"reason":"maintenance"}`); code != 201 {
				t.Fatalf("opt-out: %d %v", code, out)
			}
		}, false, 409},
		{"a live tier-1 node", func(t *testing.T, s *httptest.Server) { registerNode(t, s, "n1", "ci", 1) }, false, 201},
		{"a tier-0 node on --dev", func(t *testing.T, s *httptest.Server) { registerNode(t, s, "n0", "ci", 0) }, true, 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, f, _, _ := serveAudited(t, Config{Dev: tt.dev, Hooks: map[string]Hook{"deploy": {Pool: "ci", Argv: []string{"cat"}}}})
			tt.setup(t, s)
			code, out := do(t, s, "POST", "/v1/hooks/deploy", "Bearer "+token, "body")
			if code != tt.want {
				t.Fatalf("got %d %v, want %d", code, out, tt.want)
			}
			if code == 409 {
				msg := fmt.Sprint(out["error"])
				if !strings.Contains(msg, "no live node with sandbox tier 1") || !strings.Contains(msg, "airlock node --server") || len(f.started) != 0 {
					t.Errorf("refusal %q (%d started), want the reason and the fixes, nothing started", msg, len(f.started))
				}
				return
			}
			if out["tainted"] != true || (out["dev"] == true) != tt.dev {
				t.Errorf("started %v", out)
			}
		})
	}
}

// TestApprovalRoundTrip: a node's question is recorded, listed and
// signalled; an answer is bound to its digest and signalled with who gave
// it; a second answer finds nothing; all of it is audited.
func TestApprovalRoundTrip(t *testing.T) {
	s, f, _, _ := serveAudited(t, Config{})
	digest := "sha256:" + strings.Repeat("d", 64)
	q := fmt.Sprintf(`{"id":"q-1","job":"j-1","node":"n1","digest":%q,"call":"connect api.example.com:443","kind":"net","verdict":"escalate","rule":"taint","timeout":30000000000}`, digest)
	if code, out := do(t, s, "POST", "/v1/jobs/j-1/questions", "Bearer "+token, q); code != 202 {
		t.Fatalf("raise: %d %v", code, out)
	}
	var listed []jobs.Question
	getJSON(t, s, "/v1/approvals", &listed)
	if len(listed) != 1 || listed[0].Digest != digest || listed[0].Deadline.IsZero() {
		t.Fatalf("listed %+v", listed)
	}
	if code, out := do(t, s, "POST", "/v1/approvals/q-1", "Bearer "+token, `{"answer":"allow-once","digest":"sha256:`+strings.Repeat("e", 64)+`"}`); code != 409 {
		t.Fatalf("an answer for another digest: %d %v, want 409", code, out)
	}
	if code, out := do(t, s, "POST", "/v1/approvals/q-1", "Bearer "+token, `{"answer":"allow-once","digest":"`+digest+`"}`); code != 202 {
		t.Fatalf("answer: %d %v", code, out)
	}
	if len(f.answers) != 1 || f.answers[0].Digest != digest || f.answers[0].By != "person:operator" {
		t.Fatalf("signalled %+v", f.answers)
	}
	if code, _ := do(t, s, "POST", "/v1/approvals/q-1", "Bearer "+token, `{"answer":"deny","digest":"`+digest+`"}`); code != 404 {
		t.Errorf("a second answer: %d, want 404", code)
	}
	if got := kinds(auditOf(t, s, "j-1")); got != "approval.asked approval.refused approval.answered" {
		t.Errorf("records %q", got)
	}
}

// TestJobEndAudited: a job's end is recorded, and a run under a node's
// opt-out is recorded as tier 0 and shown in the job.
func TestJobEndAudited(t *testing.T) {
	s, f, _, path := serveAudited(t, Config{})
	f.ended = &jobs.Status{State: "completed", Result: &jobs.Result{Node: "n0", Tier: 0, OptedOut: true}}
	code, out := do(t, s, "POST", "/v1/jobs", "Bearer "+token, `{"argv":["echo","the-secret-arg"]}`)
	if code != 201 {
		t.Fatal(code, out)
	}
	id := fmt.Sprint(out["id"])
	deadline := time.Now().Add(5 * time.Second)
	for kinds(auditOf(t, s, id)) != "job.start run.sandbox.tier0 job.end" {
		if time.Now().After(deadline) {
			t.Fatalf("records %q", kinds(auditOf(t, s, id)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := readFile(path)
	if strings.Contains(b, "the-secret-arg") || strings.Contains(b, token) {
		t.Error("the server's audit log holds a command's text or a token")
	}
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// TestApprovalAfterRestart: a question the workflow holds is listed and
// answered through a server that did not see it raised (it restarted),
// still bound to its digest.
func TestApprovalAfterRestart(t *testing.T) {
	digest := "sha256:" + strings.Repeat("d", 64)
	f := &fakeJobs{known: []jobs.Job{jobOne}, asked: []jobs.Question{{ID: "q-1", Job: "j-1", Node: "n1", Digest: digest, Timeout: 30 * time.Second}}}
	a := New(Config{Jobs: f, Token: token})
	s := httptest.NewServer(a.Handler())
	defer s.Close()
	defer a.Close()
	var qs []jobs.Question
	getJSON(t, s, "/v1/approvals?job=j-1", &qs)
	if len(qs) != 1 || qs[0].ID != "q-1" {
		t.Fatalf("listed %+v", qs)
	}
	if code, _ := do(t, s, "POST", "/v1/approvals/q-1", "Bearer "+token, `{"answer":"deny","digest":"`+digest+`"}`); code != 404 {
		t.Errorf("without the job: %d, want 404 (this server never saw it)", code)
	}
	if code, _ := do(t, s, "POST", "/v1/approvals/q-1", "Bearer "+token, `{"answer":"deny","digest":"sha256:`+strings.Repeat("e", 64)+`","job":"j-1"}`); code != 409 {
		t.Errorf("another digest: %d, want 409", code)
	}
	if code, out := do(t, s, "POST", "/v1/approvals/q-1", "Bearer "+token, `{"answer":"deny","digest":"`+digest+`","job":"j-1"}`); code != 202 || len(f.answers) != 1 {
		t.Fatalf("answer: %d %v (%d signalled)", code, out, len(f.answers))
	}
}

// TestOptOutSurvivesRestart: every change is saved, and a server started
// from what was saved holds the same opt-out; ending one is saved too.
func TestOptOutSurvivesRestart(t *testing.T) {
	var saved []OptOut
	save := func(all []OptOut) error { saved = all; return nil }
	s, _, _, _ := serveAudited(t, Config{SaveOptOuts: save})
	registerNode(t, s, "n0", "ci", 0)
	if code, out := do(t, s, "POST", "/v1/nodes/n0/sandbox-optout", "Bearer "+adminA, `{"reason":"no bwrap"}`); code != 201 {
		t.Fatalf("%d %v", code, out)
	}
	if len(saved) != 1 || saved[0].Node != "n0" || saved[0].By != "ann" {
		t.Fatalf("saved %+v", saved)
	}
	again := New(Config{Jobs: &fakeJobs{}, Token: token, OptOuts: saved, SaveOptOuts: save})
	defer again.Close()
	again.nodes["n0"] = NodeEntry{ID: "n0", Pool: "ci"}
	if !again.Eligible("n0", "floor.ci") {
		t.Fatal("a restarted server lost the opt-out")
	}
	if code, _ := do(t, s, "POST", "/v1/nodes/n0/sandbox-optout", "Bearer "+adminB, `{"end":true}`); code != 200 || len(saved) != 0 {
		t.Fatalf("end: %d, saved %+v", code, saved)
	}
}
