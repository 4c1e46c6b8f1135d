package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// storeFiles is a files.Store as the API's Files, for these tests (the
// server's own adapter lives in internal/cli, which imports this package).
type storeFiles struct{ st *files.Store }

func (f storeFiles) StartJob(ctx context.Context, tenant, id, parent string) (string, error) {
	return f.st.StartJob(ctx, tenant, id, parent)
}
func (f storeFiles) TreeOf(ctx context.Context, tenant, id string) (string, error) {
	return f.st.TreeOf(ctx, tenant, id)
}
func (f storeFiles) CheckRef(ref string) error { _, err := files.ParseRef(ref); return err }
func (f storeFiles) RefOf(data []byte) string  { return files.RefOf(data).String() }
func (f storeFiles) Put(ctx context.Context, tenant, tree, job string, data []byte) (string, error) {
	r, err := f.st.Put(ctx, files.Scope{Tenant: tenant, Tree: tree, Job: job}, data)
	return r.String(), err
}
func (f storeFiles) Get(ctx context.Context, tenant, tree, ref string) ([]byte, error) {
	r, err := files.ParseRef(ref)
	if err != nil {
		return nil, err
	}
	return f.st.Get(ctx, files.Scope{Tenant: tenant, Tree: tree}, r)
}
func (f storeFiles) List(ctx context.Context, tenant, tree string) ([]FileInfo, error) {
	list, err := f.st.List(ctx, files.Scope{Tenant: tenant, Tree: tree})
	var out []FileInfo
	for _, in := range list {
		out = append(out, FileInfo{Ref: in.Ref.String(), Size: in.Size, Via: in.Via, Stored: in.Stored})
	}
	return out, err
}

// placedJobs is fakeJobs that also remembers what it started across a
// server restart (as Temporal does) and answers where each job runs.
type placedJobs struct {
	*fakeJobs
	mu     sync.Mutex
	placed map[string]jobs.Placement
	// believeNode answers every job as running on whichever node asks:
	// the node's own word taken for it, the shape this API must not have.
	believeNode bool
	// calls are the calls signalled to its open jobs, results the jobs'
	// results by id (taint_attack_test.go).
	calls   []jobs.Call
	results map[string]*jobs.Result
}

func (p *placedJobs) Get(_ context.Context, id string) (jobs.Status, error) {
	p.mu.Lock()
	res := p.results[id]
	p.mu.Unlock()
	p.fakeJobs.mu.Lock()
	defer p.fakeJobs.mu.Unlock()
	for _, j := range p.started {
		if j.ID == id {
			return jobs.Status{ID: id, State: "running", Summary: j.Summary(), Result: res}, nil
		}
	}
	return jobs.Status{}, errs.NotFoundf("job %s: not found", id)
}

func (p *placedJobs) Placement(ctx context.Context, id string) (jobs.Placement, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.believeNode {
		return jobs.Placement{Node: PrincipalOf(ctx).Name, Running: true}, nil
	}
	return p.placed[id], nil
}

func (p *placedJobs) believe(b bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.believeNode = b
}

func (p *placedJobs) place(id, node string, running bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.placed[id] = jobs.Placement{Node: node, Running: running}
}

// fileFleet is an API with a real file store, a provenance file and an
// audit log, all under dir, so a second fileFleet on the same dir is the
// server after a restart.
type fileFleet struct {
	srv   *httptest.Server
	a     *Server
	jobs  *placedJobs
	store *files.Store
	dir   string
}

func newFileFleet(t *testing.T, dir string, pj *placedJobs) *fileFleet {
	t.Helper()
	st, err := files.Open(filepath.Join(dir, "files"), files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prov, err := OpenProvenance(filepath.Join(dir, "files-provenance.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	if pj == nil {
		pj = &placedJobs{fakeJobs: &fakeJobs{}, placed: map[string]jobs.Placement{}}
	}
	a := New(Config{Token: token, Jobs: pj, Files: storeFiles{st}, Provenance: prov, Audit: log,
		CA: ca, EnrollToken: enrollToken, Temporal: "127.0.0.1:7233", Namespace: "airlock"})
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() { srv.Close(); a.Close(); st.Close(); prov.Close(); log.Close() })
	return &fileFleet{srv: srv, a: a, jobs: pj, store: st, dir: dir}
}

// start starts a job from body as the operator and returns its answer.
func (f *fileFleet) start(t *testing.T, body string) Started {
	t.Helper()
	code, out := do(t, f.srv, "POST", "/v1/jobs", "Bearer "+token, body)
	if code != http.StatusCreated {
		t.Fatalf("start %s: %d %v", body, code, out)
	}
	b, _ := json.Marshal(out)
	var s Started
	json.Unmarshal(b, &s)
	return s
}

// raw sends a request and returns the status, body and headers.
func raw(t *testing.T, srv *httptest.Server, method, path, bearer string, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// keep keeps data for job as bearer and returns the ref.
func (f *fileFleet) keep(t *testing.T, bearer, job, data string) string {
	t.Helper()
	code, body, _ := raw(t, f.srv, "POST", "/v1/files?job="+job, bearer, data)
	if code != http.StatusCreated {
		t.Fatalf("keep for %s: %d %s", job, code, body)
	}
	var k Kept
	if err := json.Unmarshal([]byte(body), &k); err != nil || k.Ref != files.RefOf([]byte(data)).String() {
		t.Fatalf("keep for %s: %s (%v), want the content's ref", job, body, err)
	}
	return k.Ref
}

// nodeToken enrols node id and returns its own API token.
func (f *fileFleet) nodeToken(t *testing.T, id string) string {
	t.Helper()
	key, _ := pki.NewKey()
	csr, _ := pki.CSR(key, id)
	body, _ := json.Marshal(EnrollRequest{ID: id, Pool: "ci", CSR: string(csr)})
	code, out := do(t, f.srv, "POST", "/v1/nodes/enroll", "Bearer "+enrollToken, string(body))
	if code != http.StatusOK {
		t.Fatalf("enrol %s: %d %v", id, code, out)
	}
	return out["token"].(string)
}

// TestFilesTreeScope: a job reads the files of its own tree (its parent's
// and its children's) and nothing else; a file of another tree, and a
// guessed reference, get the very answer a reference never stored gets.
func TestFilesTreeScope(t *testing.T) {
	f := newFileFleet(t, t.TempDir(), nil)
	a := f.start(t, `{"argv":["make"]}`)
	b := f.start(t, `{"argv":["make"],"parent":"`+a.ID+`"}`)
	c := f.start(t, `{"argv":["make"]}`)
	secret := "the build log of job A"
	ref := f.keep(t, token, a.ID, secret)

	// The naive shape: the store looked up by the tree the caller names
	// (or by digest alone) gives A's file to anyone naming A's tree.
	if got, err := f.store.Get(context.Background(), files.Scope{Tenant: jobs.DefaultTenant, Tree: a.ID}, files.RefOf([]byte(secret))); err != nil || string(got) != secret {
		t.Fatalf("the naive shape: the store by A's tree: %q %v", got, err)
	}

	code, body, _ := raw(t, f.srv, "GET", "/v1/files/"+ref+"?job="+b.ID, token, "")
	if code != http.StatusOK || body != secret {
		t.Fatalf("child B reads its parent's file: %d %q", code, body)
	}
	ccode, cbody, _ := raw(t, f.srv, "GET", "/v1/files/"+ref+"?job="+c.ID, token, "")
	never := files.RefOf([]byte("never kept")).String()
	ncode, nbody, _ := raw(t, f.srv, "GET", "/v1/files/"+never+"?job="+c.ID, token, "")
	if ccode != http.StatusNotFound || ncode != http.StatusNotFound {
		t.Fatalf("unrelated job C: %d %s; a ref never kept: %d %s; want 404 both", ccode, cbody, ncode, nbody)
	}
	if strings.ReplaceAll(cbody, ref, "REF") != strings.ReplaceAll(nbody, never, "REF") {
		t.Errorf("C's answer for A's file %q differs from a ref never kept %q: it tells the file exists", cbody, nbody)
	}

	// A child's file is its parent's too: the tree is one.
	bref := f.keep(t, token, b.ID, "B's result")
	if code, body, _ := raw(t, f.srv, "GET", "/v1/files/"+bref+"?job="+a.ID, token, ""); code != http.StatusOK || body != "B's result" {
		t.Errorf("parent A reads child B's file: %d %q", code, body)
	}

	code, body, _ = raw(t, f.srv, "GET", "/v1/files?job="+a.ID, token, "")
	var list []FileInfo
	if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil || len(list) != 2 {
		t.Fatalf("list A's tree: %d %s", code, body)
	}
	for _, in := range list {
		want := map[string]string{ref: a.ID, bref: b.ID}[in.Ref]
		if len(in.Jobs) != 1 || in.Jobs[0] != want || in.Tainted || in.Size == 0 {
			t.Errorf("listed %+v: want kept by %s, untainted", in, want)
		}
	}
	if code, body, _ := raw(t, f.srv, "GET", "/v1/files?job="+c.ID, token, ""); code != http.StatusOK || body != "[]\n" {
		t.Errorf("list C's tree: %d %s, want none", code, body)
	}
}

// TestFilesNodeRunsTheJob: a node reads and keeps the files of a job only
// while the job's workflow says that node runs it. Taking the node's word
// for it lets any enrolled node read any job's files: shown first.
func TestFilesNodeRunsTheJob(t *testing.T) {
	f := newFileFleet(t, t.TempDir(), nil)
	a := f.start(t, `{"argv":["make"]}`)
	ref := f.keep(t, token, a.ID, "A's secret output")
	n1, n2 := f.nodeToken(t, "n1"), f.nodeToken(t, "n2")
	get := func(bearer string) (int, string) {
		code, body, _ := raw(t, f.srv, "GET", "/v1/files/"+ref+"?job="+a.ID, bearer, "")
		return code, body
	}

	f.jobs.believe(true)
	if code, body := get(n2); code != http.StatusOK {
		t.Fatalf("the naive shape: n2 reads job A's file on its own word: %d %s", code, body)
	}
	f.jobs.believe(false)

	f.jobs.place(a.ID, "n1", true)
	if code, body := get(n1); code != http.StatusOK || body != "A's secret output" {
		t.Fatalf("n1, which runs A: %d %s", code, body)
	}
	if code, _, _ := raw(t, f.srv, "POST", "/v1/files?job="+a.ID, n1, "n1's result for A"); code != http.StatusCreated {
		t.Fatalf("n1 keeps A's result: %d", code)
	}
	other := f.start(t, `{"argv":["make"]}`)
	for _, tc := range []struct{ name, bearer, path string }{
		{"another node", n2, "/v1/files/" + ref + "?job=" + a.ID},
		{"another node keeps", n2, "/v1/files?job=" + a.ID},
		{"a job the node does not run", n1, "/v1/files/" + ref + "?job=" + other.ID},
		{"a job that does not exist", n1, "/v1/files/" + ref + "?job=j-nope"},
		{"the node lists", n1, "/v1/files?job=" + a.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := "GET"
			if tc.name == "another node keeps" {
				method = "POST"
			}
			if code, body, _ := raw(t, f.srv, method, tc.path, tc.bearer, "x"); code != http.StatusForbidden {
				t.Errorf("%s %s: %d %s, want 403", method, tc.path, code, body)
			}
		})
	}
	f.jobs.place(a.ID, "n1", false)
	if code, body := get(n1); code != http.StatusForbidden || !strings.Contains(body, "does not run job") {
		t.Errorf("n1 once A's run ended: %d %s, want 403", code, body)
	}
}

// TestFilesBadInput: every malformed request is a 4xx naming what is
// wrong, and keeps nothing.
func TestFilesBadInput(t *testing.T) {
	f := newFileFleet(t, t.TempDir(), nil)
	a := f.start(t, `{"argv":["make"]}`)
	c := f.start(t, `{"argv":["make"]}`)
	ref := f.keep(t, token, a.ID, "A's file")
	hex := strings.TrimPrefix(ref, files.RefPrefix)

	// The naive shape of a path-like ref: a reference joined into a path
	// under the store names the store's own database.
	if b, err := os.ReadFile(filepath.Join(f.store.Dir(), "blobs", "../meta.db")); err != nil || len(b) == 0 {
		t.Fatalf("the naive shape: a ref joined as a path reads the store's database: %v", err)
	}
	// And of a job given twice: one reader takes the first, another the last.
	q, _ := url.ParseQuery("job=" + c.ID + "&job=" + a.ID)
	if q.Get("job") != c.ID || q["job"][1] != a.ID {
		t.Fatalf("the naive shape: %v", q)
	}

	big := strings.Repeat("x", MaxFile+1)
	for _, tc := range []struct {
		name, method, path, body string
		want                     int
		mention                  string
	}{
		{"no job", "GET", "/v1/files/" + ref, "", 400, `"job"`},
		{"a job given twice", "GET", "/v1/files/" + ref + "?job=" + c.ID + "&job=" + a.ID, "", 400, "given 2 times"},
		{"an unknown parameter", "GET", "/v1/files/" + ref + "?job=" + a.ID + "&tree=" + a.ID, "", 400, `"tree"`},
		{"a job that spells a path", "GET", "/v1/files/" + ref + "?job=..%2F" + a.ID, "", 400, `"job"`},
		{"a job never started", "GET", "/v1/files/" + ref + "?job=j-nope", "", 404, `"job"`},
		{"a ref that climbs", "GET", "/v1/files/..%2Fmeta.db?job=" + a.ID, "", 400, "ref"},
		{"a ref that climbs after the scheme", "GET", "/v1/files/" + files.RefPrefix + "..%2F..%2Fmeta.db?job=" + a.ID, "", 400, "ref"},
		{"a bare digest", "GET", "/v1/files/" + hex + "?job=" + a.ID, "", 400, "ref"},
		{"an upper-case digest", "GET", "/v1/files/" + files.RefPrefix + strings.ToUpper(hex) + "?job=" + a.ID, "", 400, "ref"},
		{"a digest with a path after it", "GET", "/v1/files/" + ref + "%2Fx?job=" + a.ID, "", 400, "ref"},
		{"a body over the bound", "POST", "/v1/files?job=" + a.ID, big, 413, "the body"},
		{"a body that is not its ref", "POST", "/v1/files?job=" + a.ID + "&ref=" + ref, "other bytes", 400, `"ref"`},
		{"a ref to keep that is not one", "POST", "/v1/files?job=" + a.ID + "&ref=../x", "x", 400, `"ref"`},
		{"keep with no job", "POST", "/v1/files", "x", 400, `"job"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := raw(t, f.srv, tc.method, tc.path, token, tc.body)
			var e struct{ Error string }
			json.Unmarshal([]byte(body), &e)
			if code != tc.want || !strings.Contains(e.Error, tc.mention) {
				t.Errorf("%s %s: %d %s, want %d naming %s", tc.method, tc.path, code, body, tc.want, tc.mention)
			}
		})
	}
	list, _ := f.store.List(context.Background(), files.Scope{Tenant: jobs.DefaultTenant, Tree: a.ID})
	if len(list) != 1 {
		t.Errorf("A's tree holds %d files after the refused requests, want its one", len(list))
	}
	if code, body, _ := raw(t, f.srv, "POST", "/v1/files?job="+a.ID+"&ref="+files.RefOf([]byte("exact")).String(), token, "exact"); code != 201 {
		t.Errorf("a body that is its ref: %d %s", code, body)
	}
}

// TestFilesTaintChain: a tainted job's result taints the job that reads
// it, persisted, so that job's later children are tainted and tier 1
// only, after a server restart too; what the reader keeps later is
// tainted as well.
func TestFilesTaintChain(t *testing.T) {
	dir := t.TempDir()
	f := newFileFleet(t, dir, nil)
	// A clean root A and its child T, tainted by a model nobody vetted.
	a := f.start(t, `{"argv":["make"],"tier0":true}`)
	tj := f.start(t, `{"argv":["summarise"],"parent":"`+a.ID+`","model":"unvetted-model"}`)
	if !tj.Tainted || a.Tainted {
		t.Fatalf("A %+v, T %+v: want T tainted only", a, tj)
	}
	ref := f.keep(t, token, tj.ID, "T's summary of an outside page")

	// Before the read, A's child is clean and may run at tier 0.
	if before := f.start(t, `{"argv":["make"],"tier0":true,"parent":"`+a.ID+`"}`); before.Tainted || before.Floor != 0 {
		t.Fatalf("A's child before the read: %+v, want clean, tier 0", before)
	}

	n1 := f.nodeToken(t, "n1")
	f.jobs.place(a.ID, "n1", true)
	code, body, hdr := raw(t, f.srv, "GET", "/v1/files/"+ref+"?job="+a.ID, n1, "")
	want := "read the result of tainted job " + tj.ID
	if code != http.StatusOK || body != "T's summary of an outside page" || hdr.Get(TaintHeader) != want {
		t.Fatalf("A reads T's result: %d %q taint %q, want the bytes and taint %q", code, body, hdr.Get(TaintHeader), want)
	}

	child := f.start(t, `{"argv":["make"],"tier0":true,"parent":"`+a.ID+`"}`)
	if !child.Tainted || child.Floor != 1 || child.Queue != "floor.default" || !strings.Contains(child.Taint, want) {
		t.Errorf("A's child after the read: %+v, want tainted, floor 1 on floor.default, saying %q", child, want)
	}
	// What A keeps from now on is tainted, and taints a clean reader.
	later := f.keep(t, n1, a.ID, "A's report")
	sib := f.start(t, `{"argv":["make"],"tier0":true,"parent":"`+a.ID+`"}`)
	if sib.Tainted != true {
		t.Fatalf("sibling %+v", sib)
	}
	if _, _, hdr := raw(t, f.srv, "GET", "/v1/files/"+later+"?job="+child.ID, token, ""); !strings.Contains(hdr.Get(TaintHeader), "tainted job "+a.ID) {
		t.Errorf("a read of A's later file: taint %q, want it names A", hdr.Get(TaintHeader))
	}

	// Audited once, with the reason.
	code, out := doList(t, f.srv, "/v1/audit?job="+a.ID)
	if n := countKind(out, AuditJobTaint); code != 200 || n != 1 {
		t.Errorf("A's job.taint records: %d (status %d), want 1: %v", n, code, out)
	}
	for _, rec := range out {
		if fields, _ := rec["fields"].(map[string]any); rec["kind"] == AuditJobTaint && fields["taint"] != want {
			t.Errorf("job.taint record %v, want taint %q", rec, want)
		}
	}
	raw(t, f.srv, "GET", "/v1/files/"+ref+"?job="+a.ID, n1, "")
	if _, out := doList(t, f.srv, "/v1/audit?job="+a.ID); countKind(out, AuditJobTaint) != 1 {
		t.Errorf("a second read recorded the taint again")
	}

	// After a restart on the same state: the taint holds.
	f.srv.Close()
	f.a.Close()
	g := newFileFleet(t, dir, f.jobs)
	after := g.start(t, `{"argv":["make"],"tier0":true,"parent":"`+a.ID+`"}`)
	if !after.Tainted || after.Floor != 1 || !strings.Contains(after.Taint, want) {
		t.Errorf("A's child after a restart: %+v, want tainted, floor 1", after)
	}
	if code, body, hdr := raw(t, g.srv, "GET", "/v1/files/"+ref+"?job="+after.ID, token, ""); code != http.StatusOK || body != "T's summary of an outside page" || hdr.Get(TaintHeader) == "" {
		t.Errorf("the new child reads T's result after the restart: %d %q taint %q", code, body, hdr.Get(TaintHeader))
	}
}

// TestFilesHookResult: an outside event's job is tainted; its result is
// its tree's only, and taints a job of that tree that reads it.
func TestFilesHookResult(t *testing.T) {
	dir := t.TempDir()
	f := newFileFleet(t, dir, nil)
	f.a.cfg.Hooks = map[string]Hook{"deploy": {Argv: []string{"./deploy.sh"}}}
	f.a.cfg.CA = nil // nodes register on their word here: the hook needs a live tier-1 node
	if code, out := do(t, f.srv, "POST", "/v1/nodes", "Bearer "+token, `{"id":"n1","pool":"default","tier":1,"queues":["floor.default"]}`); code != 200 {
		t.Fatalf("register: %d %v", code, out)
	}
	code, out := do(t, f.srv, "POST", "/v1/hooks/deploy", "Bearer "+token, "an outside body")
	if code != http.StatusCreated {
		t.Fatalf("hook: %d %v", code, out)
	}
	h := out["id"].(string)
	ref := f.keep(t, token, h, "the hook job's result")
	var kept Kept
	_, body, _ := raw(t, f.srv, "POST", "/v1/files?job="+h, token, "the hook job's result")
	json.Unmarshal([]byte(body), &kept)
	if !kept.Tainted || !strings.Contains(kept.Taint, "outside event") {
		t.Errorf("kept by the hook's job: %+v, want tainted by the outside event", kept)
	}
	other := f.start(t, `{"argv":["make"]}`)
	if code, _, _ := raw(t, f.srv, "GET", "/v1/files/"+ref+"?job="+other.ID, token, ""); code != http.StatusNotFound {
		t.Errorf("an unrelated job reads the hook's result: %d, want 404", code)
	}
	child := f.start(t, `{"argv":["make"],"parent":"`+h+`"}`)
	if _, _, hdr := raw(t, f.srv, "GET", "/v1/files/"+ref+"?job="+child.ID, token, ""); !strings.Contains(hdr.Get(TaintHeader), "tainted job "+h) {
		t.Errorf("the hook's child reads its result: taint %q", hdr.Get(TaintHeader))
	}
}

// TestFilesDuplicateKey: a start body that names its parent twice is
// refused, not read as its last spelling (which would put a child in one
// tree while another reader took its taint from the other).
func TestFilesDuplicateKey(t *testing.T) {
	f := newFileFleet(t, t.TempDir(), nil)
	a := f.start(t, `{"argv":["make"]}`)
	tainted := f.start(t, `{"argv":["make"],"model":"unvetted"}`)
	body := `{"argv":["make"],"parent":"` + tainted.ID + `","parent":"` + a.ID + `"}`
	var naive StartRequest
	if err := json.Unmarshal([]byte(body), &naive); err != nil || naive.Parent != a.ID {
		t.Fatalf("the naive shape: encoding/json takes the last parent: %+v %v", naive, err)
	}
	code, out := do(t, f.srv, "POST", "/v1/jobs", "Bearer "+token, body)
	if code != http.StatusBadRequest || !strings.Contains(out["error"].(string), "parent") {
		t.Errorf("a parent given twice: %d %v, want 400 naming it", code, out)
	}
}

// TestProvenanceFile: a line cut short at the end is dropped (its act never
// happened), other damage refuses to start, and records survive a reopen.
func TestProvenanceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.jsonl")
	p, err := OpenProvenance(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.read("j-a", "read the result of tainted job j-t"); err != nil {
		t.Fatal(err)
	}
	p.Close()
	fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`{"kind":"read","job":"j-b","tai`)
	fh.Close()
	p, err = OpenProvenance(path)
	if err != nil {
		t.Fatalf("a torn last line: %v", err)
	}
	if p.readTaint("j-a") == "" || p.readTaint("j-b") != "" {
		t.Errorf("after reopening: a %q, b %q", p.readTaint("j-a"), p.readTaint("j-b"))
	}
	p.read("j-c", "why")
	p.Close()
	if p, err = OpenProvenance(path); err != nil || p.readTaint("j-c") != "why" {
		t.Fatalf("the record after the torn line: %v", err)
	}
	p.Close()
	for _, bad := range []string{`{"kind":"read","job":"j-d","job":"j-e","taint":"x"}`, `{"kind":"forget","job":"j-a"}`, `not json`} {
		os.WriteFile(path, []byte(bad+"\n"), 0o600)
		if _, err := OpenProvenance(path); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: %v, want refused naming the line", bad, err)
		}
	}
}

func doList(t *testing.T, s *httptest.Server, path string) (int, []map[string]any) {
	t.Helper()
	code, body, _ := raw(t, s, "GET", path, token, "")
	var out []map[string]any
	json.Unmarshal([]byte(body), &out)
	return code, out
}

func countKind(recs []map[string]any, kind string) int {
	n := 0
	for _, r := range recs {
		if r["kind"] == kind {
			n++
		}
	}
	return n
}

// TestFilesWithoutStore: a server with no file store says so, for every
// files route.
func TestFilesWithoutStore(t *testing.T) {
	s, _ := serve(t, Config{})
	ref := files.RefOf([]byte("x")).String()
	for _, r := range []struct{ method, path string }{{"GET", "/v1/files/" + ref + "?job=j-1"}, {"POST", "/v1/files?job=j-1"}, {"GET", "/v1/files?job=j-1"}} {
		if code, body, _ := raw(t, s, r.method, r.path, token, "x"); code != http.StatusNotFound || !strings.Contains(body, "keeps no files") {
			t.Errorf("%s %s: %d %s, want 404 saying so", r.method, r.path, code, body)
		}
	}
}
