package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/internal/fleetcli"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
	"github.com/airlock-run/airlock/jobs/server"
	"github.com/airlock-run/airlock/sandbox"
)

var update = flag.Bool("update", false, "rewrite jobs/testdata's recorded history from this run")

// syncBuffer is a buffer several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fleet is a server and its nodes, each running `airlock ...` in this
// process through the CLI, on loopback, with the commands the
// airlock-server and airlock-node binaries link (internal/fleetcli); the
// nodes' boxes run the airlock binary's init.
type fleet struct {
	t      testing.TB
	ctx    context.Context
	bin    string
	dir    string
	url    string
	token  string
	tokenF string
	stderr *syncBuffer // the server's
	wg     sync.WaitGroup
}

func (f *fleet) env(stderr *syncBuffer) *cli.Env {
	var out syncBuffer
	return &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: stderr, Dir: f.dir, Exe: f.bin,
		Environ: []string{"HOME=" + f.dir, "PATH=/usr/bin:/bin", "NODE_SECRET=s3cret-of-the-node"},
		Server:  fleetcli.Server(server.Start), Node: fleetcli.Node}
}

// start runs args in the background until the test ends.
func (f *fleet) start(name string, args ...string) *syncBuffer {
	stderr := &syncBuffer{}
	ctx, cancel := context.WithCancel(f.ctx)
	f.t.Cleanup(cancel)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		if code := cli.Main(ctx, args, f.env(stderr)); code != 0 && ctx.Err() == nil {
			f.t.Errorf("%s exited %d: %s", name, code, stderr.String())
		}
	}()
	return stderr
}

// run runs `airlock args...` and returns its exit code and output.
func (f *fleet) run(args ...string) (int, string, string) {
	var stdout, stderr syncBuffer
	env := f.env(&stderr)
	env.Stdout = &stdout
	code := cli.Main(f.ctx, args, env)
	return code, stdout.String(), stderr.String()
}

func startFleet(t testing.TB, claimTimeout time.Duration, serverArgs ...string) *fleet {
	return startFleetWith(t, claimTimeout, nil, serverArgs...)
}

// startFleetWith starts a server with extra flags; before runs first, on
// the fleet's directory (to write files the server reads).
func startFleetWith(t testing.TB, claimTimeout time.Duration, before func(f *fleet), extra ...string) *fleet {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fleet{t: t, ctx: ctx, bin: testsupport.AirlockBin(t), dir: t.TempDir()}
	t.Cleanup(func() { cancel(); f.wg.Wait() })
	f.tokenF = filepath.Join(f.dir, "server", "token")
	hooks := filepath.Join(f.dir, "hooks.json")
	if err := os.WriteFile(hooks, []byte(`{"echo-in": {"pool": "ci", "argv": ["cat"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(f)
	}
	stderr := f.start("server", append([]string{"server", "--listen", "127.0.0.1:0", "--state", filepath.Join(f.dir, "server"),
		"--claim-timeout", claimTimeout.String(), "--hooks", hooks}, extra...)...)
	f.stderr = stderr
	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(60 * time.Second)
	for f.url == "" {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			f.url = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not come up: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, err := os.ReadFile(f.tokenF)
	if err != nil {
		t.Fatal(err)
	}
	f.token = strings.TrimSpace(string(b))
	return f
}

func (f *fleet) node(id, sandboxFlag string, extra ...string) {
	f.start("node "+id, append([]string{"node", "--server", f.url, "--pool", "ci", "--id", id,
		"--enroll-token-file", filepath.Join(f.dir, "server", "enroll-token"),
		"--sandbox", sandboxFlag, "--state", filepath.Join(f.dir, "nodes", id)}, extra...)...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var nodes []api.NodeEntry
		f.get("/v1/nodes", &nodes)
		for _, n := range nodes {
			if n.ID == id && n.Live {
				// Registered before polling: give the pollers a moment.
				time.Sleep(200 * time.Millisecond)
				return
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("node %s did not register", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkNodeToken checks what node id holds: its state directory and the
// environment it was started with hold no operator's token, and its own
// token (pki/node.token) does nothing an operator does.
func (f *fleet) checkNodeToken(id string) {
	f.t.Helper()
	dir := filepath.Join(f.dir, "nodes", id)
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), f.token) {
				f.t.Errorf("node %s: %s holds the operator's token", id, p)
			}
		}
		return nil
	})
	for _, kv := range f.env(&syncBuffer{}).Environ {
		if strings.Contains(kv, f.token) || strings.Contains(kv, f.tokenF) {
			f.t.Errorf("node %s: its environment names the operator's token: %s", id, kv)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "pki", "node.token"))
	if err != nil {
		f.t.Fatalf("node %s: %v", id, err)
	}
	nodeToken := strings.TrimSpace(string(b))
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/approvals", ""},
		{"POST", "/v1/approvals/q-1", `{"answer":"allow-once","digest":"sha256:` + strings.Repeat("a", 64) + `"}`},
		{"POST", "/v1/jobs", `{"pool":"ci","argv":["true"],"tier0":true}`},
		{"POST", "/v1/agents/a1/kill", ""},
		{"GET", "/v1/audit?job=j-1", ""},
	} {
		req, _ := http.NewRequestWithContext(f.ctx, r.method, f.url+r.path, strings.NewReader(r.body))
		req.Header.Set("Authorization", "Bearer "+nodeToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			f.t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(msg), "this token is node's") {
			f.t.Errorf("node %s's token: %s %s: %s %s; want 403 naming the node role", id, r.method, r.path, resp.Status, msg)
		}
	}
}

// post sends body to path and decodes the answer into out.
func (f *fleet) post(path, body string, out any) int {
	f.t.Helper()
	req, _ := http.NewRequestWithContext(f.ctx, http.MethodPost, f.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(out)
	return resp.StatusCode
}

func (f *fleet) get(path string, out any) {
	f.t.Helper()
	req, _ := http.NewRequestWithContext(f.ctx, http.MethodGet, f.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		f.t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		f.t.Fatal(err)
	}
}

// startJob runs `airlock job start --wait --json` and decodes the view.
func (f *fleet) startJob(args ...string) (int, api.JobView) {
	f.t.Helper()
	full := append([]string{"job", "start", "--server", f.url, "--token-file", f.tokenF, "--pool", "ci", "--wait", "--json"}, args...)
	code, out, stderr := f.run(full...)
	var v api.JobView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		f.t.Fatalf("job start %v: exit %d, output %q, stderr %q", args, code, out, stderr)
	}
	return code, v
}

func requireTier1(t testing.TB) {
	if b := sandbox.ProbeHost().Best(); b < sandbox.Tier1 {
		testsupport.Missing(t, "a tier-1 sandbox (bubblewrap with user namespaces): %s", sandbox.ProbeHost().Report().Why)
	}
}

// TestFleet is the fleet end to end with a real embedded Temporal server,
// in one process: with only a tier-0 node, floor work fails after the
// (shortened) claim timeout naming the fix, and work started with --tier0
// runs there; once a tier-1 node joins, floor work lands on it and only
// on it.
func TestFleet(t *testing.T) {
	requireTier1(t)
	f := startFleet(t, 3*time.Second)
	f.node("n0", "off")

	// An outside event's job with no tier-1 node: refused at once.
	var refused map[string]string
	if code := f.post("/v1/hooks/echo-in", "outside text", &refused); code != http.StatusConflict ||
		!strings.Contains(refused["error"], "pool ci has no live node with sandbox tier 1") {
		t.Fatalf("POST /v1/hooks/echo-in: %d, %+v; want 409 with the reason", code, refused)
	}

	t.Run("floor work with only a tier-0 node fails naming the fix", func(t *testing.T) {
		start := time.Now()
		code, v := f.startJob("--", "echo", "hi")
		if code == 0 || v.State != "failed" || v.Result != nil {
			t.Fatalf("got exit %d, %+v; want a failed job with no result", code, v)
		}
		want := "no node with sandbox tier 1 took job " + v.ID + " from queue floor.ci within 3s: start a node with sandbox tier 1 in pool ci"
		if !strings.Contains(v.Error, want) {
			t.Errorf("error: got %q, want it to contain %q", v.Error, want)
		}
		if d := time.Since(start); d < 3*time.Second || d > 30*time.Second {
			t.Errorf("failed after %s, want just after the 3s claim timeout", d)
		}
		if *update {
			recordHistory(t, f, v.ID, "no-tier1-node.history.json")
		}
	})
	t.Run("work consented to tier 0 runs on the tier-0 node", func(t *testing.T) {
		code, v := f.startJob("--tier0", "--", "echo", "tier0")
		if code != 0 || v.Result == nil || v.Result.Node != "n0" || v.Result.Tier != 0 || v.Result.Stdout != "tier0\n" {
			t.Fatalf("got exit %d, %+v", code, v)
		}
	})

	f.node("n1", "1")
	t.Run("a node holds its own token, never the operator's", func(t *testing.T) {
		for _, id := range []string{"n0", "n1"} {
			f.checkNodeToken(id)
		}
	})
	t.Run("floor work lands only on the tier-1 node", func(t *testing.T) {
		var ids []string
		for i := range 4 {
			code, v := f.startJob("--shell", "--", fmt.Sprintf("echo floor-%d", i))
			if code != 0 || v.Result == nil {
				t.Fatalf("job %d: exit %d, %+v", i, code, v)
			}
			r := v.Result
			if r.Node != "n1" || r.Tier != 1 || v.Queue != "floor.ci" {
				t.Errorf("job %d ran on %s at tier %d from %s, want n1 at tier 1 from floor.ci", i, r.Node, r.Tier, v.Queue)
			}
			if want := fmt.Sprintf("floor-%d\n", i); r.Stdout != want {
				t.Errorf("job %d: stdout %q, want %q", i, r.Stdout, want)
			}
			ids = append(ids, v.ID)
		}
		if *update {
			recordHistory(t, f, ids[0], "floor-job.history.json")
			recordHistory(t, f, ids[1], "lease-call-job.history.json")
		}
	})
	t.Run("an outside event's job runs on the tier-1 node with the event as input", func(t *testing.T) {
		for i := range 3 {
			var st api.Started
			if code := f.post("/v1/hooks/echo-in", fmt.Sprintf("event %d", i), &st); code != http.StatusCreated {
				t.Fatalf("POST: %d", code)
			}
			var v api.JobView
			f.get("/v1/jobs/"+st.ID+"?wait=1", &v)
			if v.Result == nil || v.Result.Node != "n1" || v.Result.Tier != 1 || v.Result.Stdout != fmt.Sprintf("event %d", i) || !v.Tainted {
				t.Fatalf("got %+v %+v, want event %d echoed on n1 at tier 1, tainted", v, v.Result, i)
			}
		}
		var e map[string]string
		if code := f.post("/v1/hooks/nope", "x", &e); code != http.StatusNotFound {
			t.Errorf("an unknown hook: got %d, want 404", code)
		}
	})
	t.Run("a floor job whose policy asks for no isolation is refused on the tier-1 node", func(t *testing.T) {
		pol := filepath.Join(f.dir, "none.yaml")
		os.WriteFile(pol, []byte("isolation: none\n"), 0o600)
		// The attack's mechanics: the policy does take a job out of the
		// box, as a job consented to tier 0 shows.
		code, v := f.startJob("--tier0", "--policy", pol, "--", "echo", "unconfined")
		if code != 0 || v.Result == nil || v.Result.Tier != 0 || v.Result.Stdout != "unconfined\n" {
			t.Fatalf("tier-0 job with isolation: none: got exit %d, %+v %+v; want it run unconfined", code, v, v.Result)
		}
		code, v = f.startJob("--policy", pol, "--", "echo", "unconfined")
		if v.Result != nil {
			t.Logf("floor job with isolation: none: %+v", *v.Result)
		}
		if code != 126 || v.Result == nil || !v.Result.Refused || v.Result.Stdout != "" ||
			!strings.Contains(v.Result.Reason, "needs sandbox tier 1 and its policy says isolation: none") {
			t.Fatalf("got exit %d, %+v; want a refusal with nothing run", code, v)
		}
	})
	t.Run("the job's policy decides on the node", func(t *testing.T) {
		pol := filepath.Join(f.dir, "only-echo.yaml")
		os.WriteFile(pol, []byte("shell:\n  allow: [echo]\n"), 0o600)
		code, v := f.startJob("--policy", pol, "--", "cat", "/etc/hostname")
		if code != 126 || v.Result == nil || !v.Result.Refused || v.Result.Node != "n1" {
			t.Fatalf("got exit %d, %+v; want cat refused by the job's policy", code, v)
		}
	})
	t.Run("a job's policy cannot pass the node's environment into its box", func(t *testing.T) {
		pol := filepath.Join(f.dir, "all-env.yaml")
		os.WriteFile(pol, []byte("env:\n  allow: [\"*\"]\n"), 0o600)
		code, v := f.startJob("--policy", pol, "--", "env")
		if code != 0 || v.Result == nil || v.Result.Node != "n1" {
			t.Fatalf("got exit %d, %+v", code, v)
		}
		if strings.Contains(v.Result.Stdout, "s3cret-of-the-node") {
			t.Errorf("the box's environment holds the node's secret:\n%s", v.Result.Stdout)
		}
	})
	t.Run("job get and list", func(t *testing.T) {
		code, out, stderr := f.run("job", "list", "--server", f.url, "--token-file", f.tokenF)
		if code != 0 || strings.Count(out, "\n") < 11 || !strings.Contains(out, "floor.ci") {
			t.Fatalf("job list: exit %d, %q, %q", code, out, stderr)
		}
		id := strings.Fields(out)[0]
		code, out, _ = f.run("job", "get", "--server", f.url, "--token-file", f.tokenF, id)
		if !strings.Contains(out, "job "+id+": failed") || code != 1 {
			t.Errorf("job get %s: exit %d, %q", id, code, out)
		}
	})
	t.Run("job kill tears the box down", func(t *testing.T) {
		code, out, stderr := f.run("job", "start", "--server", f.url, "--token-file", f.tokenF, "--pool", "ci", "--", "sleep", "3737")
		if code != 0 {
			t.Fatalf("job start: exit %d, %s", code, stderr)
		}
		id := strings.TrimSpace(out)
		waitFor(t, "the job's sleep to run", func() bool { return sleeping("3737") })
		start := time.Now()
		if code, _, stderr := f.run("job", "kill", "--server", f.url, "--token-file", f.tokenF, id); code != 0 {
			t.Fatalf("job kill: exit %d, %s", code, stderr)
		}
		_, out, _ = f.run("job", "get", "--server", f.url, "--token-file", f.tokenF, "--wait", "--json", id)
		var v api.JobView
		json.Unmarshal([]byte(out), &v)
		if v.State != "canceled" {
			t.Errorf("state: got %q (%s), want canceled", v.State, out)
		}
		waitFor(t, "the box to be torn down", func() bool { return !sleeping("3737") })
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("the kill took %s, want it within a few heartbeats", d)
		}
	})
	t.Run("the API refuses a request without the token", func(t *testing.T) {
		resp, err := http.Get(f.url + "/v1/nodes")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("got %s, want 401", resp.Status)
		}
	})
}

// recordHistory writes the workflow history of job id to jobs/testdata,
// which the replay test holds the workflow to. A recording there is kept:
// each is the shape jobs of some build ran in, which the workflow's
// version markers must still replay, so -update adds the missing ones and
// never writes a newer shape over an older one (remove a file to record
// it again).
func recordHistory(t *testing.T, f *fleet, id, name string) {
	path := filepath.Join("..", "..", "jobs", "testdata", name)
	if _, err := os.Stat(path); err == nil {
		t.Logf("%s kept: a recorded shape is never written over", name)
		return
	}
	c, err := jobsClient(f)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := c.History(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// jobsClient dials the server's Temporal frontend as the server: with
// the client certificate it keeps in STATE/pki.
func jobsClient(f *fleet) (*jobs.Client, error) {
	dir := filepath.Join(f.dir, "server", "pki")
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, err
	}
	tc, err := pki.ClientTLS(ca, func() (*tls.Certificate, error) { return &cert, nil })
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`Temporal on (127\.0\.0\.1:\d+)`).FindStringSubmatch(f.stderr.String())
	if m == nil {
		return nil, fmt.Errorf("the server did not say where Temporal is: %s", f.stderr.String())
	}
	return jobs.Dial(m[1], jobs.DefaultNamespace, tc, nil)
}

// sleeping reports whether a process runs `sleep arg` on this host (a
// box's processes are visible from the host's process namespace).
func sleeping(arg string) bool {
	want := "sleep\x00" + arg + "\x00"
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		if b, err := os.ReadFile(d); err == nil && string(b) == want {
			return true
		}
	}
	return false
}

func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	waitUntil(t, what, 20*time.Second, ok)
}

// waitUntil waits at most d for ok.
func waitUntil(t testing.TB, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// BenchmarkJob is a job's round trip through the embedded server: start,
// claim, run on the node, result back (airlock job start --wait).
func BenchmarkJob(b *testing.B) {
	requireTier1(b)
	f := startFleet(b, time.Minute)
	f.node("b0", "off")
	f.node("b1", "1")
	for _, bb := range []struct {
		name string
		args []string
	}{
		{"floor-tier1", []string{"--", "true"}},
		{"tier0", []string{"--tier0", "--", "true"}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				if code, v := f.startJob(bb.args...); code != 0 || v.Result == nil {
					b.Fatalf("exit %d, %+v", code, v)
				}
			}
		})
	}
}
