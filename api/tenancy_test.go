package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/jobs"
)

// raw sends body to path with token and returns the status and the body
// as it came.
func rawTenant(t *testing.T, s *httptest.Server, method, path, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// tenantsFleet is a server with tenants acme and beta, each with a job of
// agent "bot" (beta's with a question waiting), and an audit log.
type tenantsFleet struct {
	s          *httptest.Server
	f          *fakeJobs
	acme, beta string
	question   string
}

func startTenants(t *testing.T) tenantsFleet {
	t.Helper()
	s, f, _, _ := serveAudited(t, Config{Tenants: twoTenants, Hooks: map[string]Hook{"deploy": {Pool: "ci", Argv: []string{"cat"}}}})
	f.ended = &jobs.Status{State: "completed"} // a wait answers at once
	tf := tenantsFleet{s: s, f: f, question: "q-beta"}
	for _, who := range []struct {
		token string
		id    *string
	}{{acmeToken, &tf.acme}, {betaToken, &tf.beta}} {
		code, out := do(t, s, http.MethodPost, "/v1/jobs", "Bearer "+who.token, `{"argv":["true"],"agent":"bot"}`)
		if code != http.StatusCreated {
			t.Fatalf("start: %d %v", code, out)
		}
		*who.id = fmt.Sprint(out["id"])
	}
	q := fmt.Sprintf(`{"id":%q,"job":%q,"node":"n1","digest":"sha256:%s","call":"rm -rf /srv","kind":"exec","verdict":"escalate","timeout":30000000000}`,
		tf.question, tf.beta, strings.Repeat("d", 64))
	if code, out := rawTenant(t, s, http.MethodPost, "/v1/jobs/"+tf.beta+"/questions", betaToken, q); code != http.StatusAccepted {
		t.Fatalf("raise: %d %s", code, out)
	}
	return tf
}

// answerBody answers the fleet's question with its digest, naming job.
func answerBody(job string) string {
	return fmt.Sprintf(`{"answer":"allow-once","digest":"sha256:%s","job":%q}`, strings.Repeat("d", 64), job)
}

// TestTenantCannotReachAnothersJob: tenant acme's token cannot get, wait
// on, kill, raise or answer questions of, list, or read the audit of
// tenant beta's job; each answer is the one an id no job has gets, so
// beta's ids are not confirmed. Beta reaches its own.
func TestTenantCannotReachAnothersJob(t *testing.T) {
	tf := startTenants(t)
	const unknown = "j-00000000000000ff"
	for _, tt := range []struct {
		name, method, path, body string
		// unknownPath is the same request of an unknown question ("":
		// path with the unknown job's id).
		unknownPath string
		// want is the status both get: a job's audit of no record reads
		// as an empty list.
		want int
	}{
		{"get", "GET", "/v1/jobs/%s", "", "", 404},
		{"wait", "GET", "/v1/jobs/%s?wait=1", "", "", 404},
		{"kill", "POST", "/v1/jobs/%s/kill", "", "", 404},
		{"its questions", "GET", "/v1/approvals?job=%s", "", "", 404},
		{"raise a question of it", "POST", "/v1/jobs/%s/questions",
			`{"id":"q-acme","job":"%s","node":"n1","digest":"sha256:` + strings.Repeat("e", 64) + `","call":"x","kind":"exec","verdict":"escalate","timeout":30000000000}`, "", 404},
		{"answer its question", "POST", "/v1/approvals/q-beta", answerBody("%s"), "", 404},
		{"answer its question without naming the job", "POST", "/v1/approvals/q-beta", `{"answer":"allow-once","digest":"sha256:` + strings.Repeat("d", 64) + `"}`,
			"/v1/approvals/q-none", 404},
		{"its audit", "GET", "/v1/audit?job=%s", "", "", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fill := func(s, id string) string { return strings.ReplaceAll(s, "%s", id) }
			upath := fill(tt.path, unknown)
			if tt.unknownPath != "" {
				upath = tt.unknownPath
			}
			code, got := rawTenant(t, tf.s, tt.method, fill(tt.path, tf.beta), acmeToken, fill(tt.body, tf.beta))
			ucode, want := rawTenant(t, tf.s, tt.method, upath, acmeToken, fill(tt.body, unknown))
			got = strings.ReplaceAll(strings.ReplaceAll(got, tf.beta, "ID"), "q-beta", "Q")
			want = strings.ReplaceAll(strings.ReplaceAll(want, unknown, "ID"), "q-none", "Q")
			if code != tt.want || ucode != tt.want || got != want {
				t.Errorf("acme's request of beta's job: %d %s; an unknown id's: %d %s; want both %d, the same", code, got, ucode, want, tt.want)
			}
		})
	}
	tf.f.mu.Lock()
	killed, answers := slices.Clone(tf.f.killed), len(tf.f.answers)
	tf.f.mu.Unlock()
	if slices.Contains(killed, tf.beta) || answers != 0 {
		t.Errorf("acme's requests reached beta's job: killed %v, %d answers signalled", killed, answers)
	}

	t.Run("lists: jobs, approvals, audit", func(t *testing.T) {
		for _, tt := range []struct {
			token     string
			see, hide string
		}{{acmeToken, tf.acme, tf.beta}, {betaToken, tf.beta, tf.acme}} {
			if ids := listedJobs(t, tf.s, tt.token); !slices.Contains(ids, tt.see) || slices.Contains(ids, tt.hide) {
				t.Errorf("GET /v1/jobs: %v, want %s and not %s", ids, tt.see, tt.hide)
			}
			if jobs := auditJobs(t, tf.s, tt.token); !jobs[tt.see] || jobs[tt.hide] {
				t.Errorf("GET /v1/audit: records of %v, want %s's and not %s's", jobs, tt.see, tt.hide)
			}
		}
		if qs := listedQuestions(t, tf.s, acmeToken); len(qs) != 0 {
			t.Errorf("acme lists beta's questions: %v", qs)
		}
		if qs := listedQuestions(t, tf.s, betaToken); !slices.Equal(qs, []string{tf.question}) {
			t.Errorf("beta lists %v, want its own question", qs)
		}
	})

	t.Run("the agent's kill switch is the tenant's", func(t *testing.T) {
		code, out := do(t, tf.s, http.MethodPost, "/v1/agents/bot/kill", "Bearer "+acmeToken, "")
		if got := fmt.Sprint(out["jobs"]); code != http.StatusAccepted || got != "["+tf.acme+"]" {
			t.Errorf("acme kills agent bot: %d %v, want acme's job %s only", code, out, tf.acme)
		}
	})

	t.Run("beta reaches its own", func(t *testing.T) {
		if code, out := rawTenant(t, tf.s, "GET", "/v1/jobs/"+tf.beta, betaToken, ""); code != http.StatusOK || !strings.Contains(out, `"tenant":"beta"`) {
			t.Errorf("beta gets its job: %d %s", code, out)
		}
		if code, out := rawTenant(t, tf.s, "POST", "/v1/approvals/"+tf.question, betaToken, answerBody(tf.beta)); code != http.StatusAccepted {
			t.Errorf("beta answers its question: %d %s", code, out)
		}
		if code, out := rawTenant(t, tf.s, "POST", "/v1/jobs/"+tf.beta+"/kill", betaToken, ""); code != http.StatusAccepted {
			t.Errorf("beta kills its job: %d %s", code, out)
		}
	})
}

// TestAdminSeesEveryTenant: an admin reads, lists and kills every
// tenant's jobs, and reads every tenant's records and questions.
func TestAdminSeesEveryTenant(t *testing.T) {
	tf := startTenants(t)
	for _, id := range []string{tf.acme, tf.beta} {
		if code, out := rawTenant(t, tf.s, "GET", "/v1/jobs/"+id, adminA, ""); code != http.StatusOK {
			t.Errorf("admin gets %s: %d %s", id, code, out)
		}
	}
	if ids := listedJobs(t, tf.s, adminA); !slices.Contains(ids, tf.acme) || !slices.Contains(ids, tf.beta) {
		t.Errorf("admin lists %v, want both tenants' jobs", ids)
	}
	if jobs := auditJobs(t, tf.s, adminA); !jobs[tf.acme] || !jobs[tf.beta] {
		t.Errorf("admin reads the records of %v, want both tenants' jobs", jobs)
	}
	if qs := listedQuestions(t, tf.s, adminA); !slices.Equal(qs, []string{tf.question}) {
		t.Errorf("admin lists %v, want beta's question", qs)
	}
	code, out := do(t, tf.s, http.MethodPost, "/v1/agents/bot/kill", "Bearer "+adminA, "")
	if got, _ := out["jobs"].([]any); code != http.StatusAccepted || len(got) != 2 {
		t.Errorf("admin kills agent bot: %d %v, want both tenants' jobs", code, out)
	}
	if code, out := rawTenant(t, tf.s, "POST", "/v1/approvals/"+tf.question, adminA, answerBody(tf.beta)); code != http.StatusAccepted {
		t.Errorf("admin answers beta's question: %d %s", code, out)
	}
}

// TestHookJobIsThePostersTenants: a hook's job is the tenant's whose token
// posted the event, and only that tenant reaches it.
func TestHookJobIsThePostersTenants(t *testing.T) {
	tf := startTenants(t)
	registerNode(t, tf.s, "n1", "ci", 1)
	code, out := do(t, tf.s, http.MethodPost, "/v1/hooks/deploy", "Bearer "+acmeToken, "event")
	if code != http.StatusCreated {
		t.Fatalf("hook: %d %v", code, out)
	}
	id := fmt.Sprint(out["id"])
	tf.f.mu.Lock()
	j := tf.f.started[len(tf.f.started)-1]
	tf.f.mu.Unlock()
	if j.ID != id || j.Tenant != "acme" {
		t.Fatalf("the hook's job %s is tenant %q's, want acme's", j.ID, j.Tenant)
	}
	if code, _ := rawTenant(t, tf.s, "GET", "/v1/jobs/"+id, betaToken, ""); code != http.StatusNotFound {
		t.Errorf("beta gets acme's hook job: %d, want 404", code)
	}
	if code, _ := rawTenant(t, tf.s, "GET", "/v1/jobs/"+id, acmeToken, ""); code != http.StatusOK {
		t.Errorf("acme gets its hook job: %d, want 200", code)
	}
}

// TestAuditTenants: whose each record is — its own tenant field, else its
// job's start's, else none (admins only, but for the fleet's kinds).
func TestAuditTenants(t *testing.T) {
	recs := []audit.Record{
		{Kind: AuditJobStart, Fields: map[string]any{"job": "j-a", "tenant": "acme"}},
		{Kind: AuditJobStart, Fields: map[string]any{"job": "j-old"}},
		{Kind: "call.run", Fields: map[string]any{"job": "j-a"}},
		{Kind: "call.run", Fields: map[string]any{"job": "j-old"}},
		{Kind: AuditJobEnd, Fields: map[string]any{"job": "j-a", "tenant": "acme"}},
		{Kind: AuditJobStart, Fields: map[string]any{"job": "j-a", "tenant": "beta"}},
		{Kind: "call.run", Fields: map[string]any{"job": "j-a"}},
		{Kind: "call.run", Fields: map[string]any{"job": "j-gone"}},
		{Kind: AuditOptOut, Fields: map[string]any{"node": "n1"}},
		{Kind: "node.event", Fields: map[string]any{"node": "n1"}},
	}
	want := []string{"acme", "default", "acme", "default", "acme", "beta", "acme", "", "", ""}
	tenants := auditTenants{}
	for i, rec := range recs {
		if got := tenants.of(rec); got != want[i] {
			t.Errorf("record %d (%s %v): tenant %q, want %q", i, rec.Kind, rec.Fields, got, want[i])
		}
	}
	as := func(p Principal) context.Context { return context.WithValue(t.Context(), principalKey{}, p) }
	acme, admin := as(Principal{Role: RoleOperator, Name: "acme", Tenant: "acme"}), as(Principal{Role: RoleAdmin, Name: "ann", Tenant: jobs.DefaultTenant})
	node, none := as(Principal{Role: RoleNode, Name: "n1"}), t.Context()
	for _, tt := range []struct {
		name   string
		ctx    context.Context
		rec    int
		tenant string
		want   bool
	}{
		{"an operator, its tenant's", acme, 0, "acme", true},
		{"an operator, another tenant's", acme, 5, "beta", false},
		{"an operator, no tenant's", acme, 7, "", false},
		{"an operator, a fleet-wide record", acme, 8, "", true},
		{"an operator, a node's record of no fleet-wide kind", acme, 9, "", false},
		{"an admin, another tenant's", admin, 5, "beta", true},
		{"an admin, no tenant's", admin, 7, "", true},
		{"a node, a fleet-wide record", node, 8, "", false},
		{"no principal", none, 0, "acme", false},
	} {
		if got := seesRecord(tt.ctx, recs[tt.rec], tt.tenant); got != tt.want {
			t.Errorf("%s: reads %v, want %v", tt.name, got, tt.want)
		}
	}
}

func listedJobs(t *testing.T, s *httptest.Server, token string) []string {
	t.Helper()
	var views []JobView
	getAs(t, s, token, "/v1/jobs", &views)
	var ids []string
	for _, v := range views {
		ids = append(ids, v.Status.ID)
	}
	return ids
}

func listedQuestions(t *testing.T, s *httptest.Server, token string) []string {
	t.Helper()
	var qs []jobs.Question
	getAs(t, s, token, "/v1/approvals", &qs)
	var ids []string
	for _, q := range qs {
		ids = append(ids, q.ID)
	}
	return ids
}

// auditJobs are the jobs named by the records token reads unfiltered.
func auditJobs(t *testing.T, s *httptest.Server, token string) map[string]bool {
	t.Helper()
	var recs []audit.Record
	getAs(t, s, token, "/v1/audit", &recs)
	out := map[string]bool{}
	for _, r := range recs {
		if id, ok := r.Fields["job"].(string); ok {
			out[id] = true
		}
	}
	return out
}

func getAs(t *testing.T, s *httptest.Server, token, path string, v any) {
	t.Helper()
	code, body := rawTenant(t, s, http.MethodGet, path, token, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}
