package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

const (
	acmeToken  = "acme-token-0123456789abcdef0123456789"
	betaToken  = "beta-token-0123456789abcdef0123456789"
	adminToken = "root-token-0123456789abcdef0123456789"
)

// quotaFleet is the server as its built binary, on a loopback port kept
// across its restarts (so its nodes find it again), with two tenants
// beside the default one; its nodes run in this process.
type quotaFleet struct {
	*fleet
	srvBin string
	addr   string
	args   []string
	server *proc
}

func startQuotaFleet(t *testing.T, srvBin string, args ...string) *quotaFleet {
	requireTier1(t)
	ctx, cancel := context.WithCancel(context.Background())
	f := &fleet{t: t, ctx: ctx, bin: testsupport.AirlockBin(t), dir: t.TempDir()}
	q := &quotaFleet{fleet: f, srvBin: srvBin, addr: freeLoopbackPort(t), args: args}
	// The nodes (this process) end first, then the server.
	t.Cleanup(q.stopServer)
	t.Cleanup(func() { cancel(); f.wg.Wait() })
	state := filepath.Join(f.dir, "server")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "tenants"), []byte("acme "+acmeToken+"\nbeta "+betaToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "admin-token"), []byte("root "+adminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.tokenF = filepath.Join(state, "token")
	f.url = "http://" + q.addr
	q.startServer()
	b, err := os.ReadFile(f.tokenF)
	if err != nil {
		t.Fatal(err)
	}
	f.token = strings.TrimSpace(string(b))
	return q
}

// freeLoopbackPort is a loopback address no one listens on now.
func freeLoopbackPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (q *quotaFleet) startServer() {
	q.t.Helper()
	p := &proc{name: "server", out: &syncBuffer{}, done: make(chan struct{}), started: time.Now()}
	p.cmd = exec.Command(q.srvBin, append([]string{"--listen", q.addr, "--state", filepath.Join(q.dir, "server"),
		"--claim-timeout", "2m"}, q.args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.Env = []string{"HOME=" + q.dir, "PATH=/usr/bin:/bin"}
	p.cmd.Dir = q.dir
	if err := p.cmd.Start(); err != nil {
		q.t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	q.server, q.stderr = p, p.out
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(p.out.String(), "listening on "+q.url) {
		select {
		case <-p.done:
			q.t.Fatalf("the server exited: %s", p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			q.t.Fatalf("the server did not come up: %s", p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (q *quotaFleet) stopServer() {
	if q.server == nil {
		return
	}
	q.server.signal(syscall.SIGTERM)
	select {
	case <-q.server.done:
	case <-time.After(15 * time.Second):
		q.server.signal(syscall.SIGKILL)
		<-q.server.done
	}
}

// nodeIn starts a tier-1 node of pool and waits until it is live.
func (q *quotaFleet) nodeIn(id, pool string) {
	q.t.Helper()
	q.start("node "+id, "node", "--server", q.url, "--pool", pool, "--id", id,
		"--enroll-token-file", filepath.Join(q.dir, "server", "enroll-token"),
		"--sandbox", "1", "--state", filepath.Join(q.dir, "nodes", id))
	waitUntil(q.t, "node "+id+" to register", 30*time.Second, func() bool {
		var nodes []api.NodeEntry
		q.get("/v1/nodes", &nodes)
		return slices.ContainsFunc(nodes, func(n api.NodeEntry) bool { return n.ID == id && n.Live })
	})
	time.Sleep(200 * time.Millisecond) // registered before polling
}

// as sends body to path with token and decodes the answer into out.
func (q *quotaFleet) as(token, method, path, body string, out any) int {
	q.t.Helper()
	req, _ := http.NewRequestWithContext(q.ctx, method, q.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		q.t.Fatal(err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(out)
	return resp.StatusCode
}

// startAs starts a job with token and returns its id.
func (q *quotaFleet) startAs(token, body string) string {
	q.t.Helper()
	var st api.Started
	if code := q.as(token, http.MethodPost, "/v1/jobs", body, &st); code != http.StatusCreated {
		q.t.Fatalf("POST /v1/jobs %s: %d", body, code)
	}
	return st.ID
}

// view is job id as an admin sees it (every tenant's job).
func (q *quotaFleet) view(id string) api.JobView {
	q.t.Helper()
	var v api.JobView
	if code := q.as(adminToken, http.MethodGet, "/v1/jobs/"+id, "", &v); code != http.StatusOK {
		q.t.Fatalf("GET /v1/jobs/%s: %d", id, code)
	}
	return v
}

// held is the jobs holding a quota slot now, of every tenant (as an
// admin sees them).
func (q *quotaFleet) held() []string {
	q.t.Helper()
	var v api.QuotasView
	q.as(adminToken, http.MethodGet, "/v1/quotas", "", &v)
	var out []string
	for _, s := range v.Held {
		out = append(out, s.Job)
	}
	return out
}

// kill kills job id (an admin's kill, of any tenant's) and waits until
// it ended.
func (q *quotaFleet) kill(id string) {
	q.t.Helper()
	var out map[string]string
	if code := q.as(adminToken, http.MethodPost, "/v1/jobs/"+id+"/kill", "", &out); code != http.StatusAccepted {
		q.t.Fatalf("kill %s: %d %v", id, code, out)
	}
	waitFor(q.t, "job "+id+" to end", func() bool { return q.view(id).State != "running" })
}

// waiting checks job id waits for a slot: running, claimed by no node,
// its command not started, its slot not held.
func (q *quotaFleet) waiting(t *testing.T, id, sleepArg string) {
	t.Helper()
	v := q.view(id)
	if v.State != "running" || sleeping(sleepArg) || slices.Contains(q.held(), id) {
		t.Fatalf("job %s over its quota: state %s, running %v, holding a slot %v; want it waiting", id, v.State, sleeping(sleepArg), q.held())
	}
	for _, n := range []string{"p1", "t1"} {
		if _, err := os.Stat(filepath.Join(q.dir, "nodes", n, "jobs", id)); err == nil {
			t.Fatalf("job %s over its quota reached node %s", id, n)
		}
	}
}

// terminate ends job id around the API, as an operator's own Temporal
// tool could: the workflow runs no more code, so it never releases its
// slot.
func (q *quotaFleet) terminate(id string) {
	q.t.Helper()
	dir := filepath.Join(q.dir, "server", "pki")
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key"))
	if err != nil {
		q.t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		q.t.Fatal(err)
	}
	tc, err := pki.ClientTLS(ca, func() (*tls.Certificate, error) { return &cert, nil })
	if err != nil {
		q.t.Fatal(err)
	}
	m := regexp.MustCompile(`Temporal on (127\.0\.0\.1:\d+)`).FindStringSubmatch(q.stderr.String())
	if m == nil {
		q.t.Fatalf("the server did not say where Temporal is")
	}
	c, err := client.Dial(client.Options{HostPort: m[1], Namespace: jobs.DefaultNamespace, ConnectionOptions: client.ConnectionOptions{TLS: tc}})
	if err != nil {
		q.t.Fatal(err)
	}
	defer c.Close()
	if err := c.TerminateWorkflow(q.ctx, id, "", "ended around the API"); err != nil {
		q.t.Fatal(err)
	}
}

// carriesNoToken checks job id's workflow history (the job, its slot's
// asks, its claim and run: everything a node or the quota is handed) holds
// none of the API's tokens: the tenant travels as a name only. bounded
// says a quota applies to the job: its history asks for a slot exactly
// then.
func (q *quotaFleet) carriesNoToken(t *testing.T, id string, bounded bool) {
	t.Helper()
	c, err := jobsClient(q.fleet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h, err := c.History(q.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if asked := strings.Contains(string(h), "airlock.quota.acquire"); asked != bounded {
		t.Fatalf("job %s asked for a quota slot: %v, want %v (a quota applies: %v): %s", id, asked, bounded, bounded, h)
	}
	for _, tok := range []string{acmeToken, betaToken, q.token} {
		if strings.Contains(string(h), tok) {
			t.Errorf("job %s's history holds a token (%s…)", id, tok[:4])
		}
	}
}

// TestTenantsAndQuotas: the fleet's quotas hold before any box starts —
// a pool's quota makes its second job wait until the first ends, a
// tenant's quota holds that tenant's jobs only, a job waiting past its
// claim timeout fails naming the quota, the tenant is the token's, never
// the body's — and the slots survive a server restart without leaking.
func TestTenantsAndQuotas(t *testing.T) {
	q := startQuotaFleet(t, serverBin(t), "--pool-quota", "ci=1", "--tenant-quota", "acme=1")
	q.nodeIn("p1", "ci")
	q.nodeIn("t1", "team")

	t.Run("the tenant is the token's, never the body's", func(t *testing.T) {
		var e map[string]string
		code := q.as(acmeToken, http.MethodPost, "/v1/jobs", `{"pool":"team","argv":["true"],"tenant":"beta"}`, &e)
		if code != http.StatusBadRequest || !strings.Contains(e["error"], "a job's tenant is the token's that starts it") {
			t.Fatalf("a body naming its tenant: %d %v, want 400", code, e)
		}
		for token, want := range map[string]string{acmeToken: "acme", betaToken: "beta", q.token: jobs.DefaultTenant} {
			id := q.startAs(token, `{"pool":"team","argv":["true"]}`)
			var v api.JobView
			q.as(token, http.MethodGet, "/v1/jobs/"+id+"?wait=1", "", &v)
			if v.State != "completed" || v.Tenant != want {
				t.Errorf("job %s: %s, tenant %q; want completed, tenant %q", id, v.State, v.Tenant, want)
			}
			var recs []audit.Record
			if q.as(token, http.MethodGet, "/v1/audit?job="+id, "", &recs); len(recs) == 0 || recs[0].Kind != api.AuditJobStart || recs[0].Fields["tenant"] != want {
				t.Errorf("job %s: job.start %+v, want tenant %q", id, recs, want)
			}
			// Pool team has no quota: only acme's tenant quota bounds.
			q.carriesNoToken(t, id, want == "acme")
			if *update && want == "acme" {
				recordHistory(t, q.fleet, id, "tenant-job.history.json")
			}
		}
	})

	t.Run("a tenant reaches its own jobs only, an admin every tenant's", q.tenantsApart)

	t.Run("a pool quota of 1: the second job waits until the first ends", func(t *testing.T) {
		first := q.startAs(q.token, `{"pool":"ci","argv":["sleep","5151"]}`)
		waitFor(t, "the first job's box", func() bool { return sleeping("5151") })
		// Another tenant's: the pool's quota holds every tenant.
		second := q.startAs(betaToken, `{"pool":"ci","argv":["sleep","5152"]}`)
		time.Sleep(3 * time.Second)
		q.waiting(t, second, "5152")
		if got := q.held(); !slices.Equal(got, []string{first}) {
			t.Errorf("slots held %v, want the first job's only", got)
		}
		q.kill(first)
		waitFor(t, "the second job's box once the first ended", func() bool { return sleeping("5152") })
		q.kill(second)
		if got := q.held(); len(got) != 0 {
			t.Errorf("slots held after both ended: %v", got)
		}
		if *update {
			recordHistory(t, q.fleet, second, "quota-wait.history.json")
		}
	})

	t.Run("a job over its quota past its claim timeout fails naming the quota", func(t *testing.T) {
		first := q.startAs(q.token, `{"pool":"ci","argv":["sleep","5153"]}`)
		waitFor(t, "the first job's box", func() bool { return sleeping("5153") })
		start := time.Now()
		late := q.startAs(q.token, `{"pool":"ci","argv":["true"],"claim_timeout":"3s"}`)
		var v api.JobView
		q.get("/v1/jobs/"+late+"?wait=1", &v)
		want := "job " + late + " got no quota slot within 3s: pool ci holds its quota of 1 at once (--pool-quota ci=1): raise the quota"
		if v.State != "failed" || !strings.Contains(v.Error, want) || time.Since(start) > 30*time.Second {
			t.Errorf("got %s %q after %s, want failed with %q", v.State, v.Error, time.Since(start), want)
		}
		q.kill(first)
	})

	t.Run("a tenant's quota holds its own jobs, never another tenant's", func(t *testing.T) {
		a1 := q.startAs(acmeToken, `{"pool":"team","argv":["sleep","5161"]}`)
		waitFor(t, "acme's first box", func() bool { return sleeping("5161") })
		a2 := q.startAs(acmeToken, `{"pool":"team","argv":["sleep","5162"]}`)
		b1 := q.startAs(betaToken, `{"pool":"team","argv":["sleep","5163"]}`)
		b2 := q.startAs(betaToken, `{"pool":"team","argv":["sleep","5164"]}`)
		waitFor(t, "beta's boxes beside acme's", func() bool { return sleeping("5163") && sleeping("5164") })
		q.waiting(t, a2, "5162")
		q.kill(a1)
		waitFor(t, "acme's second box once its first ended", func() bool { return sleeping("5162") })
		for _, id := range []string{a2, b1, b2} {
			q.kill(id)
		}
	})

	t.Run("the slots survive a server restart, and none leaks", func(t *testing.T) {
		x := q.startAs(q.token, `{"pool":"ci","argv":["sleep","5171"]}`)
		waitFor(t, "the job's box", func() bool { return sleeping("5171") })
		q.server.signal(syscall.SIGKILL)
		q.server.wait(t, 30*time.Second)
		q.startServer()
		if got := q.held(); !slices.Equal(got, []string{x}) {
			t.Fatalf("after the restart the slots held are %v, want the running job's %s", got, x)
		}
		y := q.startAs(q.token, `{"pool":"ci","argv":["sleep","5172"]}`)
		time.Sleep(3 * time.Second)
		q.waiting(t, y, "5172") // no slot granted twice after the restart
		q.kill(x)
		waitFor(t, "the waiting job's box once the first ended after the restart", func() bool { return sleeping("5172") })
		// Ended around the API, y never gives its slot back: the server
		// finds it no longer runs and frees it.
		q.terminate(y)
		z := q.startAs(q.token, `{"pool":"ci","argv":["sleep","5173"]}`)
		waitUntil(t, "a job to get the slot of one terminated around the API", 40*time.Second, func() bool { return sleeping("5173") })
		if got := q.held(); !slices.Equal(got, []string{z}) {
			t.Errorf("slots held %v, want only %s", got, z)
		}
		q.kill(z)
		waitFor(t, "the terminated job's box to go", func() bool { return !sleeping("5172") })
		if got := q.held(); len(got) != 0 {
			t.Errorf("slots held once every job ended: %v", got)
		}
	})
}

// unknownJob is an id no job has.
const unknownJob = "j-00000000000000ff"

// sameAsUnknown sends method path body with acme's token twice: JOB and Q
// are first beta's job and question, then an unknown job and question;
// both answers must be want and the same, so acme learns nothing of
// beta's ids.
func (q *quotaFleet) sameAsUnknown(t *testing.T, method, path, body, job, question string, want int) {
	t.Helper()
	send := func(job, question string) (int, string) {
		fill := strings.NewReplacer("JOB", job, "Q", question)
		var out json.RawMessage
		code := q.as(acmeToken, method, fill.Replace(path), fill.Replace(body), &out)
		return code, strings.NewReplacer(job, "JOB", question, "Q").Replace(string(out))
	}
	code, got := send(job, question)
	ucode, ref := send(unknownJob, "q-unknown")
	if code != want || ucode != want || got != ref {
		t.Errorf("%s %s: acme of beta's: %d %s; of an unknown id: %d %s; want both %d, the same", method, path, code, got, ucode, ref, want)
	}
}

// listed is the ids GET path lists for token (jobs or questions).
func (q *quotaFleet) listed(token, path string) []string {
	q.t.Helper()
	var items []struct {
		ID  string `json:"id"`
		Job string `json:"job"`
	}
	if code := q.as(token, http.MethodGet, path, "", &items); code != http.StatusOK {
		q.t.Fatalf("GET %s: %d", path, code)
	}
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}

// auditJobs are the jobs named in the records token reads of the whole
// audit log.
func (q *quotaFleet) auditJobs(token string) []string {
	q.t.Helper()
	var recs []audit.Record
	if code := q.as(token, http.MethodGet, "/v1/audit", "", &recs); code != http.StatusOK {
		q.t.Fatalf("GET /v1/audit: %d", code)
	}
	var ids []string
	for _, r := range recs {
		if id, ok := r.Fields["job"].(string); ok && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// killAgent runs `airlock kill --agent NAME --json` with token and names
// the jobs it killed.
func (q *quotaFleet) killAgent(t *testing.T, token, name string) []string {
	t.Helper()
	file := filepath.Join(q.dir, "kill-"+token[:4]+".token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := q.cli(file, "kill", "--agent", name, "--json")
	var k api.Killed
	if code != 0 || json.Unmarshal([]byte(out), &k) != nil {
		t.Fatalf("airlock kill --agent %s: exit %d, %q %q", name, code, out, stderr)
	}
	return k.Jobs
}

// tenantsApart: tenant acme's token cannot get, kill, list, read the
// audit of, or see and answer the questions of tenant beta's jobs, and
// each refusal is the answer an unknown id gets; acme's kill switch for
// agent bot stops acme's bot only; beta's node still raises its job's
// questions; an admin reaches both tenants' jobs.
func (q *quotaFleet) tenantsApart(t *testing.T) {
	policy := "shell:\n  allow: [echo]\n  args:\n    echo:\n      escalate: [\"ask*\"]\nescalation:\n  timeout: 120s\n"
	body, _ := json.Marshal(api.StartRequest{Pool: "team", Argv: []string{"echo", "ask-beta"}, Policy: policy})
	asking := q.startAs(betaToken, string(body))
	var question jobs.Question
	waitFor(t, "beta's job's question, raised by its node", func() bool {
		var qs []jobs.Question
		q.as(betaToken, http.MethodGet, "/v1/approvals", "", &qs)
		for _, x := range qs {
			if x.Job == asking {
				question = x
			}
		}
		return question.ID != ""
	})
	bsleep := q.startAs(betaToken, `{"pool":"team","argv":["sleep","5181"],"agent":"bot"}`)
	asleep := q.startAs(acmeToken, `{"pool":"team","argv":["sleep","5182"],"agent":"bot"}`)
	waitFor(t, "both tenants' boxes", func() bool { return sleeping("5181") && sleeping("5182") })

	answer := `{"answer":"allow-once","digest":"` + question.Digest + `","job":"JOB"}`
	q.sameAsUnknown(t, http.MethodGet, "/v1/jobs/JOB", "", bsleep, question.ID, http.StatusNotFound)
	q.sameAsUnknown(t, http.MethodPost, "/v1/jobs/JOB/kill", "", bsleep, question.ID, http.StatusNotFound)
	q.sameAsUnknown(t, http.MethodGet, "/v1/approvals?job=JOB", "", asking, question.ID, http.StatusNotFound)
	q.sameAsUnknown(t, http.MethodPost, "/v1/approvals/Q", answer, asking, question.ID, http.StatusNotFound)
	q.sameAsUnknown(t, http.MethodPost, "/v1/approvals/Q", `{"answer":"allow-once","digest":"`+question.Digest+`"}`, asking, question.ID, http.StatusNotFound)
	q.sameAsUnknown(t, http.MethodGet, "/v1/audit?job=JOB", "", bsleep, question.ID, http.StatusOK)
	for _, tt := range []struct {
		what string
		got  []string
	}{
		{"GET /v1/jobs", q.listed(acmeToken, "/v1/jobs")},
		{"GET /v1/approvals", q.listed(acmeToken, "/v1/approvals")},
		{"GET /v1/audit", q.auditJobs(acmeToken)},
	} {
		if slices.Contains(tt.got, bsleep) || slices.Contains(tt.got, asking) || slices.Contains(tt.got, question.ID) {
			t.Errorf("%s for acme lists beta's: %v", tt.what, tt.got)
		}
	}
	if got := q.listed(acmeToken, "/v1/jobs"); !slices.Contains(got, asleep) {
		t.Errorf("GET /v1/jobs for acme: %v, want its own %s", got, asleep)
	}

	if killed := q.killAgent(t, acmeToken, "bot"); !slices.Equal(killed, []string{asleep}) {
		t.Errorf("acme's airlock kill --agent bot killed %v, want its own %s only", killed, asleep)
	}
	waitFor(t, "acme's bot to stop", func() bool { return !sleeping("5182") })
	if v := q.view(bsleep); v.State != "running" || !sleeping("5181") {
		t.Errorf("beta's bot after acme's requests: %s, sleeping %v; want it running", v.State, sleeping("5181"))
	}

	// An admin reaches every tenant's.
	for _, id := range []string{asleep, bsleep, asking} {
		if got := q.listed(adminToken, "/v1/jobs"); !slices.Contains(got, id) {
			t.Errorf("an admin's GET /v1/jobs: %v, want %s", got, id)
		}
		if got := q.auditJobs(adminToken); !slices.Contains(got, id) {
			t.Errorf("an admin's GET /v1/audit names %v, want %s", got, id)
		}
	}
	if got := q.listed(adminToken, "/v1/approvals"); !slices.Contains(got, question.ID) {
		t.Errorf("an admin's GET /v1/approvals: %v, want beta's %s", got, question.ID)
	}
	if killed := q.killAgent(t, adminToken, "bot"); !slices.Contains(killed, bsleep) {
		t.Errorf("an admin's airlock kill --agent bot killed %v, want beta's %s too", killed, bsleep)
	}
	waitFor(t, "beta's bot to stop", func() bool { return !sleeping("5181") })
	// Beta answers its own question, and its job goes on.
	var out map[string]string
	if code := q.as(betaToken, http.MethodPost, "/v1/approvals/"+question.ID, `{"answer":"allow-once","digest":"`+question.Digest+`"}`, &out); code != http.StatusAccepted {
		t.Fatalf("beta answers its question: %d %v", code, out)
	}
	var v api.JobView
	q.as(betaToken, http.MethodGet, "/v1/jobs/"+asking+"?wait=1", "", &v)
	if v.Result == nil || v.Result.Stdout != "ask-beta\n" || v.Result.Decider != "person:beta" {
		t.Errorf("beta's job after its answer: %+v %+v, want echo run on beta's answer", v, v.Result)
	}
}
