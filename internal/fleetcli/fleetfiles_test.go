package fleetcli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/node"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/sandbox"
)

// TestMaxFileIsMaxResult: the server keeps a file as big as a call's
// result may be, and no bigger.
func TestMaxFileIsMaxResult(t *testing.T) {
	if api.MaxFile != offload.MaxResult || jobs.MaxFile != offload.MaxResult {
		t.Errorf("api.MaxFile %d, jobs.MaxFile %d, want offload.MaxResult %d", api.MaxFile, jobs.MaxFile, offload.MaxResult)
	}
}

// placingJobs is the fleet as the API sees it, without Temporal: it keeps
// the jobs started, and says which node runs each (what the job's workflow
// answers to jobs.QueryPlacement).
type placingJobs struct {
	mu      sync.Mutex
	started map[string]jobs.Job
	on      map[string]string
}

func (p *placingJobs) Start(_ context.Context, j jobs.Job) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started[j.ID] = j
	return nil
}
func (p *placingJobs) Get(_ context.Context, id string) (jobs.Status, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, ok := p.started[id]
	if !ok {
		return jobs.Status{}, errs.NotFoundf("job %s: not found", id)
	}
	return jobs.Status{ID: id, State: "running", Summary: j.Summary()}, nil
}
func (p *placingJobs) Wait(ctx context.Context, id string) (jobs.Status, error) {
	<-ctx.Done()
	return jobs.Status{}, ctx.Err()
}
func (p *placingJobs) Kill(context.Context, string) error                { return nil }
func (p *placingJobs) Ask(context.Context, string, jobs.Question) error  { return nil }
func (p *placingJobs) Answer(context.Context, string, jobs.Answer) error { return nil }
func (p *placingJobs) List(context.Context, bool) ([]jobs.Status, error) { return nil, nil }
func (p *placingJobs) KillAgent(context.Context, string, func(jobs.Summary) bool) ([]string, error) {
	return nil, nil
}
func (p *placingJobs) Summary(ctx context.Context, id string) (jobs.Summary, error) {
	st, err := p.Get(ctx, id)
	return st.Summary, err
}
func (p *placingJobs) Questions(context.Context, string) ([]jobs.Question, error) {
	return nil, nil
}
func (p *placingJobs) place(id, node string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on[id] = node
}

func (p *placingJobs) Placement(_ context.Context, id string) (jobs.Placement, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return jobs.Placement{Node: p.on[id], Running: p.on[id] != ""}, nil
}

// TestNodeTreeReadResult: a job's offloaded result goes from its node's
// store to the server's; its child, on the same node, reads it with
// read_result only once the server handed it over (node.Tree), and a job
// of another tree never gets it. A fetch of a result a tainted job kept
// says so (the runner then marks the reader's kernel tainted).
func TestNodeTreeReadResult(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const operator = "0123456789abcdef0123456789abcdef"
	const enroll = "fedcba9876543210fedcba9876543210"
	serverStore, err := files.Open(filepath.Join(dir, "server", "files"), files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer serverStore.Close()
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "server", "pki"))
	if err != nil {
		t.Fatal(err)
	}
	fleet := &placingJobs{started: map[string]jobs.Job{}, on: map[string]string{}}
	a := api.New(api.Config{Token: operator, Jobs: fleet, Files: serverFiles{serverStore}, CA: ca, EnrollToken: enroll,
		Temporal: "127.0.0.1:7233", Namespace: "airlock"})
	defer a.Close()
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()

	post := func(path, bearer, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if json.Unmarshal(b, &out); resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %s %s", path, resp.Status, b)
		}
		return out
	}
	start := func(body string) jobs.Job {
		id := post("/v1/jobs", operator, body)["id"].(string)
		fleet.mu.Lock()
		defer fleet.mu.Unlock()
		return fleet.started[id]
	}
	// A node of its own state directory, enrolled: its token where
	// airlock node keeps it.
	newNode := func(id string) (*node.ServerTree, node.KernelFunc) {
		t.Helper()
		state := filepath.Join(dir, id)
		key, _ := pki.NewKey()
		csr, _ := pki.CSR(key, id)
		body, _ := json.Marshal(api.EnrollRequest{ID: id, Pool: "default", CSR: string(csr)})
		tok := post("/v1/nodes/enroll", enroll, string(body))["token"].(string)
		if err := pki.WriteToken(filepath.Join(state, "pki", "node.token"), tok); err != nil {
			t.Fatal(err)
		}
		st, err := files.Open(filepath.Join(state, "files"), files.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		env := &cli.Env{Log: slog.New(slog.DiscardHandler), Dir: dir}
		return node.NewServerTree(node.Config{Server: srv.URL, StateDir: state}, nodeFiles{st}), jobKernel(env, sandbox.Tier0, st)
	}
	tree, kernelFor := newNode("n1")
	kernel := func(j jobs.Job) *mediator.Kernel {
		t.Helper()
		jd := filepath.Join(dir, "n1", "jobs", j.ID)
		os.MkdirAll(filepath.Join(jd, "work"), 0o700)
		k, err := kernelFor(ctx, j, jd)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		return k.Kernel
	}
	readResult := func(k *mediator.Kernel, ref string) (string, error) {
		out, err := k.ReadResult(ctx, mediator.Call{Kind: mediator.KindReadResult, Args: map[string]any{"ref": ref, "range": "1-2"}})
		return out.Text, err
	}

	// Job A's big output is offloaded in its kernel and kept on the server.
	jobA := start(`{"argv":["make"],"tier0":true}`)
	fleet.place(jobA.ID, "n1")
	ka := kernel(jobA)
	var big strings.Builder
	for i := range 4000 {
		big.WriteString("line " + strings.Repeat("x", i%50) + " of the build log\n")
	}
	fit, err := ka.Fit(ctx, mediator.FitRequest{Tool: "job", Text: big.String()})
	if err != nil || fit.Offloaded == nil {
		t.Fatalf("A's output: %+v %v, want it offloaded", fit.Offloaded, err)
	}
	ref := fit.Offloaded.Ref
	if err := tree.Keep(ctx, jobA, []string{ref}); err != nil {
		t.Fatalf("keep A's result: %v", err)
	}

	// Its child B on the same node: its own kernel does not have it until
	// the server hands it over, then reads it.
	jobB := start(`{"argv":["make"],"tier0":true,"parent":"` + jobA.ID + `"}`)
	fleet.place(jobB.ID, "n1")
	kb := kernel(jobB)
	if _, err := readResult(kb, ref); errs.ClassOf(err) != errs.NotFound {
		t.Fatalf("B reads A's result before the fetch: %v, want not found (a job's local tree is its own)", err)
	}
	taint, err := tree.Fetch(ctx, jobB, ref)
	if err != nil || taint != "" {
		t.Fatalf("fetch for B: %q %v", taint, err)
	}
	if text, err := readResult(kb, ref); err != nil || !strings.Contains(text, "of the build log") {
		t.Fatalf("B's read_result: %q %v", text, err)
	}

	// An unrelated job C on the same node gets "not found", as for a ref
	// never kept; another node gets nothing for B.
	jobC := start(`{"argv":["make"],"tier0":true}`)
	fleet.place(jobC.ID, "n1")
	kc := kernel(jobC)
	if _, err := tree.Fetch(ctx, jobC, ref); errs.ClassOf(err) != errs.NotFound {
		t.Errorf("fetch for C: %v, want not found", err)
	}
	if _, err := readResult(kc, ref); errs.ClassOf(err) != errs.NotFound {
		t.Errorf("C's read_result: %v, want not found", err)
	}
	other, _ := newNode("n2")
	if _, err := other.Fetch(ctx, jobB, ref); errs.ClassOf(err) != errs.Denied {
		t.Errorf("n2 fetches for B, which n1 runs: %v, want refused", err)
	}

	// A tainted child T keeps a result: B's fetch of it says so.
	jobT := start(`{"argv":["fetch-page"],"parent":"` + jobA.ID + `","model":"unvetted"}`)
	fleet.place(jobT.ID, "n1")
	kt := kernel(jobT)
	tfit, err := kt.Fit(ctx, mediator.FitRequest{Tool: "job", Text: strings.Repeat("an outside page\n", 4000)})
	if err != nil || tfit.Offloaded == nil {
		t.Fatalf("T's output: %v", err)
	}
	if err := tree.Keep(ctx, jobT, []string{tfit.Offloaded.Ref}); err != nil {
		t.Fatal(err)
	}
	taint, err = tree.Fetch(ctx, jobB, tfit.Offloaded.Ref)
	if err != nil || !strings.Contains(taint, "tainted job "+jobT.ID) {
		t.Fatalf("fetch of T's result for B: %q %v, want the taint", taint, err)
	}

	// The operator's view: airlock job files.
	tokFile := filepath.Join(dir, "token")
	os.WriteFile(tokFile, []byte(operator+"\n"), 0o600)
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errb strings.Builder
		env := &cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Dir: dir, Log: slog.New(slog.DiscardHandler)}
		code := cli.Main(ctx, append([]string{"job", "files", "--server", srv.URL, "--token-file", tokFile}, args...), env)
		return code, out.String(), errb.String()
	}
	if code, out, errOut := run("", jobB.ID); code != 0 || !strings.Contains(out, ref) || !strings.Contains(out, jobA.ID) || !strings.Contains(out, "tainted job "+jobT.ID) {
		t.Errorf("job files B: %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := run("", "--get", ref, jobB.ID); code != 0 || out != big.String() {
		t.Errorf("job files --get for B: %d, %d bytes", code, len(out))
	}
	if code, _, errOut := run("", "--get", ref, jobC.ID); code == 0 || !strings.Contains(errOut, "not found") {
		t.Errorf("job files --get for C: %d %s, want not found", code, errOut)
	}
	if code, _, errOut := run("", "--get", tfit.Offloaded.Ref, jobA.ID); code != 0 || !strings.Contains(errOut, "tainted from now on") {
		t.Errorf("job files --get of T's result for A: %d %s, want the taint said", code, errOut)
	}
	if code, out, errOut := run("C's note", "--put", "-", jobC.ID); code != 0 || strings.TrimSpace(out) != files.RefOf([]byte("C's note")).String() {
		t.Errorf("job files --put for C: %d %q %s", code, out, errOut)
	}
}
