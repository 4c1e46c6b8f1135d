//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/internal/testsupport"
)

// The end-to-end test's own addresses: 10.231.K.1 is the server's end of
// node K's link, 10.231.K.2 the node's. The server listens on 10.231.1.1;
// the other nodes route to it through their link.
const (
	e2eServerIP = "10.231.1.1"
	e2eAPIPort  = "8420"
)

// serverBin is the airlock-server binary: $AIRLOCK_SERVER_BIN, else one
// built from this checkout into the test's directory.
func serverBin(t testing.TB) string {
	if b := os.Getenv("AIRLOCK_SERVER_BIN"); b != "" {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("AIRLOCK_SERVER_BIN=%s: %v", b, err)
		}
		return b
	}
	bin := filepath.Join(t.TempDir(), "airlock-server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/airlock-server: %v\n%s", err, out)
	}
	return bin
}

// proc is a fleet process run from a built binary in its namespace.
type proc struct {
	name    string
	cmd     *exec.Cmd
	out     *syncBuffer
	done    chan struct{}
	started time.Time
}

func (p *proc) signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

// wait waits for the process to end, at most d.
func (p *proc) wait(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("%s did not end within %s: %s", p.name, d, p.out.String())
	}
}

// netFleet is the server in one network namespace and each node in its
// own, all run from the built binaries.
type netFleet struct {
	t       testing.TB
	bin     string
	nodeBin string // airlock-node: $AIRLOCK_NODE_BIN, else beside bin
	srvBin  string
	dir     string
	tokenF  string
	url     string
	srvNS   *testsupport.Namespace
	nodeNS  map[string]*testsupport.Namespace
	server  *proc
	nodes   map[string]*proc
	http    *http.Client
	hooks   string
	mu      sync.Mutex
	running []*proc
}

func newNetFleet(t *testing.T, nodes ...string) *netFleet {
	testsupport.Require(t, testsupport.NetNS, testsupport.Root)
	requireTier1(t)
	f := &netFleet{t: t, bin: testsupport.AirlockBin(t), nodeBin: testsupport.NodeBin(t), srvBin: serverBin(t), dir: t.TempDir(),
		nodeNS: map[string]*testsupport.Namespace{}, nodes: map[string]*proc{}}
	f.tokenF = filepath.Join(f.dir, "server", "token")
	f.url = "http://" + e2eServerIP + ":" + e2eAPIPort
	f.srvNS = testsupport.NewNetNS(t, "srv")
	for i, id := range nodes {
		ns := testsupport.NewNetNS(t, id)
		k := i + 1
		testsupport.Link(t, f.srvNS, fmt.Sprintf("10.231.%d.1", k), ns, fmt.Sprintf("10.231.%d.2", k), 24)
		if k != 1 {
			ns.IP(t, "route", "add", e2eServerIP+"/32", "via", fmt.Sprintf("10.231.%d.1", k))
		}
		f.nodeNS[id] = ns
	}
	// Processes end before their namespaces go (cleanups run last first).
	t.Cleanup(f.stopAll)
	f.http = &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DialContext: f.srvNS.Dial}}
	f.hooks = filepath.Join(f.dir, "hooks.json")
	if err := os.WriteFile(f.hooks, []byte(`{"echo-in": {"pool": "ci", "argv": ["cat"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// spawn starts a binary in ns and notes it for the test's end.
func (f *netFleet) spawn(name string, ns *testsupport.Namespace, bin string, args ...string) *proc {
	f.t.Helper()
	p := &proc{name: name, out: &syncBuffer{}, done: make(chan struct{}), started: time.Now()}
	p.cmd = ns.Command(context.Background(), bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.Env = []string{"HOME=" + f.dir, "PATH=/usr/bin:/bin", "NODE_SECRET=s3cret-of-the-node"}
	p.cmd.Dir = f.dir
	if err := p.cmd.Start(); err != nil {
		f.t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	f.mu.Lock()
	f.running = append(f.running, p)
	f.mu.Unlock()
	return p
}

// stopAll ends every process the test started: SIGTERM, then SIGKILL.
func (f *netFleet) stopAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.running {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range f.running {
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			p.signal(syscall.SIGKILL)
			<-p.done
		}
	}
}

// startServer starts airlock-server on the namespace's address and waits
// until its API answers.
func (f *netFleet) startServer(claimTimeout time.Duration) {
	f.t.Helper()
	f.server = f.spawn("server", f.srvNS, f.srvBin, "--listen", e2eServerIP+":"+e2eAPIPort, "--insecure-listen",
		"--state", filepath.Join(f.dir, "server"), "--claim-timeout", claimTimeout.String(), "--hooks", f.hooks)
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(f.server.out.String(), "listening on "+f.url) {
		select {
		case <-f.server.done:
			f.t.Fatalf("the server exited: %s", f.server.out.String())
		default:
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the server did not come up: %s", f.server.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startNode starts node id in its namespace and waits until it is live.
func (f *netFleet) startNode(id, sandboxFlag string) {
	f.t.Helper()
	f.nodes[id] = f.spawn("node "+id, f.nodeNS[id], f.nodeBin, "node", "--server", f.url,
		"--pool", "ci", "--id", id, "--sandbox", sandboxFlag, "--state", f.nodeDir(id),
		"--enroll-token-file", filepath.Join(f.dir, "server", "enroll-token"))
	deadline := time.Now().Add(60 * time.Second)
	for {
		var nodes []api.NodeEntry
		f.call(http.MethodGet, "/v1/nodes", "", &nodes)
		for _, n := range nodes {
			if n.ID == id && n.Live && n.LastSeen.After(f.nodes[id].started) {
				time.Sleep(300 * time.Millisecond) // registered before polling
				return
			}
		}
		select {
		case <-f.nodes[id].done:
			f.t.Fatalf("node %s exited: %s", id, f.nodes[id].out.String())
		default:
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("node %s did not register: %s", id, f.nodes[id].out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (f *netFleet) nodeDir(id string) string { return filepath.Join(f.dir, "nodes", id) }

// call sends body to the API from inside the server's namespace and
// decodes the answer into out; it returns the status.
func (f *netFleet) call(method, path, body string, out any) int {
	f.t.Helper()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	} else {
		rd = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, f.url+path, rd)
	tok, err := os.ReadFile(f.tokenF)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := f.http.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// cli runs `airlock args...` in the server's namespace against its API
// (args[0] a command, or "job" and its subcommand).
func (f *netFleet) cli(args ...string) (int, string) {
	f.t.Helper()
	n := 1
	if args[0] == "job" {
		n = 2
	}
	full := append(append(append([]string{}, args[:n]...), "--server", f.url, "--token-file", f.tokenF), args[n:]...)
	cmd := f.srvNS.Command(context.Background(), f.bin, full...)
	cmd.Env = []string{"HOME=" + f.dir, "PATH=/usr/bin:/bin"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatalf("airlock %v: %v", full, err)
	}
	return code, out.String()
}

// start starts a job and returns its id.
func (f *netFleet) start(req api.StartRequest) string {
	f.t.Helper()
	req.Pool = "ci"
	b, _ := json.Marshal(req)
	var st api.Started
	if code := f.call(http.MethodPost, "/v1/jobs", string(b), &st); code != http.StatusCreated {
		f.t.Fatalf("POST /v1/jobs %s: %d", b, code)
	}
	return st.ID
}

// wait waits for job id to end.
func (f *netFleet) wait(id string) api.JobView {
	f.t.Helper()
	var v api.JobView
	if code := f.call(http.MethodGet, "/v1/jobs/"+id+"?wait=1", "", &v); code != http.StatusOK {
		f.t.Fatalf("GET /v1/jobs/%s: %d", id, code)
	}
	return v
}

// runsOn is the node whose state holds job id's directory ("" while no
// node has started it).
func (f *netFleet) runsOn(id string) string {
	for n := range f.nodes {
		if _, err := os.Stat(filepath.Join(f.nodeDir(n), "jobs", id)); err == nil {
			return n
		}
	}
	return ""
}

// route is one row of the routing table the test prints.
type route struct{ work, nodes, optout, ranOn string }

// TestFleetNetNS is the fleet end to end across network namespaces, from
// the built binaries: the server in one namespace, a tier-0 node and two
// tier-1 nodes in their own.
func TestFleetNetNS(t *testing.T) {
	f := newNetFleet(t, "t0", "t1a", "t1b")
	// Each run's sleeps have lengths of their own, so what a process
	// table shows is this run's.
	base := 1_000_000 + os.Getpid()%100_000*10
	sleepT0, sleepLost, sleepKill, sleepOther, sleepRetry := fmt.Sprint(base+1), fmt.Sprint(base+2), fmt.Sprint(base+3), fmt.Sprint(base+4), fmt.Sprint(base+5)
	f.startServer(time.Minute)
	var table []route
	defer func() {
		var b strings.Builder
		fmt.Fprintf(&b, "routing table (kind of work × node tiers up × opt-out → where it ran):\n")
		fmt.Fprintf(&b, "| work | nodes up (tier) | opt-out | ran on |\n|---|---|---|---|\n")
		for _, r := range table {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.work, r.nodes, r.optout, r.ranOn)
		}
		t.Log(b.String())
	}()
	ranOn := func(v api.JobView) string {
		if v.Result == nil {
			return v.State + ": " + v.Error
		}
		return fmt.Sprintf("%s (tier %d)", v.Result.Node, v.Result.Tier)
	}

	f.startNode("t0", "off")
	t.Run("a tier-0 node's leftovers after SIGKILL", func(t *testing.T) {
		// A tier-0 job whose shell stays the parent of its sleep: the
		// shell dies with the node (the runner's parent-death signal),
		// its child does not unless the node reaps it.
		id := f.start(api.StartRequest{Command: "sleep " + sleepT0 + "; true", Tier0: true})
		waitFor(t, "the tier-0 job's sleep to run", func() bool { return sleeping(sleepT0) })
		f.nodes["t0"].signal(syscall.SIGKILL)
		f.nodes["t0"].wait(t, 10*time.Second)
		time.Sleep(time.Second)
		t.Logf("after SIGKILL of node t0, before its restart: sleep %s still running: %v", sleepT0, sleeping(sleepT0))
		f.startNode("t0", "off")
		if sleeping(sleepT0) {
			t.Errorf("node t0 restarted and the lost job's sleep %s still runs", sleepT0)
			debugSleep(t, sleepT0)
			t.Logf("node t0: %s", f.nodes["t0"].out.String())
		}
		v := f.wait(id)
		want := "node t0 was lost while running job " + id + " (not retried: the job is not marked idempotent)"
		if v.State != "failed" || v.Error != want {
			t.Errorf("job: %s %q, want failed with %q", v.State, v.Error, want)
		}
		table = append(table, route{"tier-0-consented job, its node SIGKILLed", "t0(0)", "none", ranOn(v)})
	})

	t.Run("floor work fails with only a tier-0 node", func(t *testing.T) {
		id := f.start(api.StartRequest{Argv: []string{"echo", "floor"}, ClaimTimeout: "3s"})
		v := f.wait(id)
		want := "no node with sandbox tier 1 took job " + id + " from queue floor.ci within 3s"
		if v.State != "failed" || !strings.Contains(v.Error, want) || f.runsOn(id) != "" {
			t.Errorf("got %s %q (ran on %q), want failed with %q", v.State, v.Error, f.runsOn(id), want)
		}
		table = append(table, route{"floor job (command, from inside)", "t0(0)", "none", ranOn(v)})
	})

	f.startNode("t1a", "1")
	t.Run("floor work lands only on the tier-1 node", func(t *testing.T) {
		for i := range 3 {
			v := f.wait(f.start(api.StartRequest{Command: fmt.Sprintf("echo floor-%d", i)}))
			if v.Result == nil || v.Result.Node != "t1a" || v.Result.Tier != 1 || v.Result.Stdout != fmt.Sprintf("floor-%d\n", i) {
				t.Errorf("floor job %d: %+v %+v, want it on t1a at tier 1", i, v, v.Result)
			}
			table = append(table, route{"floor job (command, from inside)", "t0(0) t1a(1)", "none", ranOn(v)})
		}
		for i := range 3 {
			v := f.wait(f.start(api.StartRequest{Argv: []string{"echo", "tier0"}, Tier0: true}))
			if v.Result == nil || v.Result.Stdout != "tier0\n" {
				t.Errorf("tier-0 job %d: %+v", i, v)
			}
			table = append(table, route{"tier-0-consented job", "t0(0) t1a(1)", "none", ranOn(v)})
		}
		for i := range 2 {
			var st api.Started
			f.call(http.MethodPost, "/v1/hooks/echo-in", fmt.Sprintf("event %d", i), &st)
			v := f.wait(st.ID)
			if v.Result == nil || v.Result.Node != "t1a" || !v.Tainted || v.Result.Stdout != fmt.Sprintf("event %d", i) {
				t.Errorf("outside event %d: %+v %+v, want it on t1a, tainted", i, v, v.Result)
			}
			table = append(table, route{"outside-event job (hook)", "t0(0) t1a(1)", "none", ranOn(v)})
		}
	})

	t.Run("the kill switch stops a running job of an agent", func(t *testing.T) {
		id := f.start(api.StartRequest{Argv: []string{"sleep", sleepKill}, Agent: "bot-7"})
		other := f.start(api.StartRequest{Argv: []string{"sleep", sleepOther}, Agent: "bot-8"})
		waitFor(t, "the job's sleep to run", func() bool { return sleeping(sleepKill) && sleeping(sleepOther) })
		start := time.Now()
		code, out := f.cli("kill", "--agent", "bot-7")
		if code != 0 || !strings.Contains(out, "agent bot-7: 1 running job(s) killed") || !strings.Contains(out, id) || strings.Contains(out, other) {
			t.Fatalf("airlock kill --agent bot-7: exit %d, %q", code, out)
		}
		waitFor(t, "the box to be torn down", func() bool { return !sleeping(sleepKill) })
		t.Logf("kill --agent → the box's last process gone: %s", time.Since(start))
		if v := f.wait(id); v.State != "canceled" || v.Agent != "bot-7" {
			t.Errorf("killed job: %s (agent %q), want canceled", v.State, v.Agent)
		}
		if !sleeping(sleepOther) {
			t.Errorf("another agent's job was killed too")
		}
		if code, out := f.cli("job", "kill", other); code != 0 {
			t.Fatalf("airlock job kill: exit %d, %s", code, out)
		}
		waitFor(t, "the other box to be torn down", func() bool { return !sleeping(sleepOther) })
		table = append(table, route{"floor job, killed (airlock kill --agent)", "t0(0) t1a(1)", "none", "t1a: canceled"})
	})

	t.Run("stopping the only tier-1 node makes floor work fail", func(t *testing.T) {
		f.nodes["t1a"].signal(syscall.SIGTERM)
		f.nodes["t1a"].wait(t, 30*time.Second)
		start := time.Now()
		id := f.start(api.StartRequest{Argv: []string{"echo", "floor"}, ClaimTimeout: "3s"})
		v := f.wait(id)
		want := "no node with sandbox tier 1 took job " + id + " from queue floor.ci within 3s: start a node with sandbox tier 1 in pool ci"
		if v.State != "failed" || !strings.Contains(v.Error, want) || f.runsOn(id) != "" {
			t.Errorf("got %s %q (ran on %q), want failed with %q", v.State, v.Error, f.runsOn(id), want)
		}
		t.Logf("floor work with the tier-1 node stopped failed after %s", time.Since(start))
		table = append(table, route{"floor job (command, from inside)", "t0(0), t1a stopped", "none", ranOn(v)})
	})

	f.startNode("t1a", "1")
	f.startNode("t1b", "1")
	t.Run("SIGKILL of a tier-1 node mid-job", func(t *testing.T) {
		id := f.start(api.StartRequest{Argv: []string{"sleep", sleepLost}})
		waitFor(t, "the job's sleep to run", func() bool { return sleeping(sleepLost) && f.runsOn(id) != "" })
		n := f.runsOn(id)
		f.nodes[n].signal(syscall.SIGKILL)
		f.nodes[n].wait(t, 10*time.Second)
		time.Sleep(time.Second)
		t.Logf("after SIGKILL of node %s, before its restart: sleep %s still running: %v", n, sleepLost, sleeping(sleepLost))
		f.startNode(n, "1")
		if sleeping(sleepLost) {
			t.Errorf("node %s restarted and the lost job's sleep %s still runs", n, sleepLost)
		}
		v := f.wait(id)
		want := "node " + n + " was lost while running job " + id + " (not retried: the job is not marked idempotent)"
		if v.State != "failed" || v.Error != want {
			t.Errorf("job: %s %q, want failed with %q", v.State, v.Error, want)
		}
		table = append(table, route{"floor job, its node SIGKILLed", "t0(0) t1a(1) t1b(1)", "none", n + ": " + v.Error})
	})

	t.Run("an idempotent job is retried on another node", func(t *testing.T) {
		id := f.start(api.StartRequest{Argv: []string{"sleep", sleepRetry}, Idempotent: true, Retries: 1})
		waitFor(t, "the job's sleep to run", func() bool { return sleeping(sleepRetry) && f.runsOn(id) != "" })
		first := f.runsOn(id)
		f.nodes[first].signal(syscall.SIGKILL)
		f.nodes[first].wait(t, 10*time.Second)
		// The retry lands on the other tier-1 node (the first is down);
		// kill it once it runs there.
		var second string
		waitLong(t, "the retry to start on another node", func() bool {
			for n := range f.nodes {
				if n != first {
					if _, err := os.Stat(filepath.Join(f.nodeDir(n), "jobs", id)); err == nil {
						second = n
						return true
					}
				}
			}
			return false
		})
		waitFor(t, "the retry's sleep", func() bool { return sleeping(sleepRetry) })
		f.cli("job", "kill", id)
		v := f.wait(id)
		if second == first || second == "t0" || v.State != "canceled" {
			t.Errorf("first run on %s, retry on %s, state %s; want the retry on the other tier-1 node", first, second, v.State)
		}
		f.startNode(first, "1")
		table = append(table, route{"idempotent floor job (--retry 1), its node SIGKILLed", "t0(0) t1a(1) t1b(1)", "none", first + ", lost → retried on " + second})
	})

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run("a server restart mid-job ("+sig.String()+")", func(t *testing.T) {
			id := f.start(api.StartRequest{Command: "sleep 3; echo done"})
			waitFor(t, "the job to start on a node", func() bool { return f.runsOn(id) != "" })
			t0 := time.Now()
			f.server.signal(sig)
			f.server.wait(t, 30*time.Second)
			stopped := time.Now()
			f.startServer(time.Minute)
			up := time.Now()
			v := f.wait(id)
			t.Logf("server stopped in %s, up again in %s, the job ended %s later", stopped.Sub(t0), up.Sub(stopped), time.Since(up))
			if v.State != "completed" || v.Result == nil || v.Result.Stdout != "done\n" || v.Command != "sleep 3; echo done" {
				t.Fatalf("after the restart: %+v %+v, want completed with done", v, v.Result)
			}
			code, out := f.cli("job", "list")
			if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "completed") {
				t.Errorf("job list after the restart: exit %d, %q", code, out)
			}
			table = append(table, route{"floor job, server restarted (" + sig.String() + ")", "t0(0) t1a(1) t1b(1)", "none", ranOn(v)})
		})
	}
}

// waitLong is waitFor with room for a lost node's heartbeat timeout and a
// claim after it.
func waitLong(t testing.TB, what string, ok func() bool) {
	t.Helper()
	waitUntil(t, what, 2*time.Minute, ok)
}

func debugSleep(t testing.TB, arg string) {
	want := "sleep\x00" + arg + "\x00"
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		if b, err := os.ReadFile(d); err == nil && string(b) == want {
			p := filepath.Dir(d)
			cg, _ := os.ReadFile(p + "/cgroup")
			cwd, _ := os.Readlink(p + "/cwd")
			t.Logf("%s: cwd %s cgroup %s", p, cwd, cg)
		}
	}
}
