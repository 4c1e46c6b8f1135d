package server

import (
	"context"
	"crypto/tls"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// registry is the test's node registry: the nodes whose attested tier
// lets them poll the floor queue.
type registry struct {
	mu    sync.Mutex
	floor map[string]bool
}

func (r *registry) eligible(node, queue string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.HasPrefix(queue, "floor.") && r.floor[node]
}

// authFleet is an embedded server with mutual TLS and the authorizer, and
// the fleet CA that issued its certificates.
type authFleet struct {
	dev    jobs.DevServer
	ca     *pki.CA
	reg    *registry
	server *jobs.Client
}

// TestWithoutBindingANodeAnswersAnotherNodesClaim is the shape without the
// token binding: Temporal's task tokens are not signed, so n0 (tier 0)
// answers a claim n1 took with n1's token, in n1's place, as a tier-1
// node. TestAuth shows the binding refuse it.
func TestWithoutBindingANodeAnswersAnotherNodesClaim(t *testing.T) {
	unboundAnswers = true
	f := startAuth(t)
	unboundAnswers = false
	f.reg.floor["n1"] = true
	ctx := context.Background()
	n0, err := sdkClient(t, f.dev.HostPort(), f.clientTLS(t, nodeCert(t, f.ca, "n0")))
	if err != nil {
		t.Fatal(err)
	}
	n1, err := sdkClient(t, f.dev.HostPort(), f.clientTLS(t, nodeCert(t, f.ca, "n1")))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.server.Start(ctx, jobs.Job{ID: "j-steal", Pool: "ci", Argv: []string{"true"}, ClaimTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	task, err := poll(ctx, n1, jobs.FloorQueue("ci"))
	if err != nil || len(task.GetTaskToken()) == 0 {
		t.Fatalf("n1 polls floor.ci: %v, %v", task, err)
	}
	p, _ := converter.GetDefaultDataConverter().ToPayloads(jobs.Claim{Node: "n0", Tier: 1})
	if _, err := n0.WorkflowService().RespondActivityTaskCompleted(ctx, &workflowservice.RespondActivityTaskCompletedRequest{
		Namespace: jobs.DefaultNamespace, TaskToken: task.GetTaskToken(), Result: p}); err != nil {
		t.Fatalf("n0 answers n1's claim: %v; the unbound shape should take it", err)
	}
	// The job now waits for a run on node.n0: the tier-0 node got floor work.
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	run, err := n0.WorkflowService().PollActivityTaskQueue(rctx, &workflowservice.PollActivityTaskQueueRequest{
		Namespace: jobs.DefaultNamespace, TaskQueue: &taskqueuepb.TaskQueue{Name: jobs.NodeQueue("n0")}})
	if err != nil || run.GetActivityType().GetName() != jobs.LeaseCallActivity {
		t.Fatalf("poll node.n0: %v, %v; want the floor job's lease opened", run, err)
	}
	f.server.Kill(ctx, "j-steal")
}

func startAuth(t *testing.T) *authFleet { return startAuthOn(t, "") }

// startAuthOn starts the fleet's server with its frontend on ip ("" is
// loopback's default).
func startAuthOn(t *testing.T, ip string) *authFleet {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	services, _ := ca.IssueTemporal([]string{"127.0.0.1", ip})
	client, _ := ca.IssueServerClient()
	reg := &registry{floor: map[string]bool{}}
	dev, err := Start(context.Background(), jobs.DevConfig{Dir: filepath.Join(dir, "temporal"), FrontendIP: ip,
		Auth: &jobs.DevAuth{CA: ca.PEM, Services: services, Client: client, Eligible: reg.eligible}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Stop() })
	f := &authFleet{dev: dev, ca: ca, reg: reg}
	f.server, err = jobs.Dial(dev.HostPort(), dev.Namespace(), f.clientTLS(t, client), nil)
	if err != nil {
		t.Fatalf("the server's own client: %v", err)
	}
	t.Cleanup(f.server.Close)
	stop, err := f.server.Orchestrate()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return f
}

func (f *authFleet) clientTLS(t *testing.T, cert tls.Certificate) *tls.Config {
	c, err := pki.ClientTLS(f.ca.PEM, func() (*tls.Certificate, error) { return &cert, nil })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// nodeCert enrols node of pool ci with ca, as the API would.
func nodeCert(t *testing.T, ca *pki.CA, node string) tls.Certificate {
	t.Helper()
	key, _ := pki.NewKey()
	csr, _ := pki.CSR(key, node)
	p, err := ca.IssueNode(csr, node, "ci", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := pki.ParseCert(p)
	return tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}
}

// sdkClient dials the frontend as a plain SDK client.
func sdkClient(t *testing.T, hostPort string, tc *tls.Config) (client.Client, error) {
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: jobs.DefaultNamespace,
		ConnectionOptions: client.ConnectionOptions{TLS: tc}})
	if err == nil {
		t.Cleanup(c.Close)
	}
	return c, err
}

// rogue is a plain SDK worker on queue that answers every claim as a
// tier-1 node and notes each claim it took.
func rogue(t *testing.T, c client.Client, queue string) chan string {
	took := make(chan string, 8)
	w := worker.New(c, queue, worker.Options{DisableWorkflowWorker: true})
	w.RegisterActivityWithOptions(func(ctx context.Context, req jobs.ClaimRequest) (jobs.Claim, error) {
		took <- req.Job
		return jobs.Claim{Node: "rogue", Tier: 1}, nil
	}, activity.RegisterOptions{Name: jobs.ClaimActivity})
	if err := w.Start(); err != nil {
		t.Fatalf("rogue worker: %v", err)
	}
	t.Cleanup(w.Stop)
	return took
}

func floorJob(id string) jobs.Job {
	return jobs.Job{ID: id, Pool: "ci", Argv: []string{"true"}, ClaimTimeout: 3 * time.Second}
}

// TestWithoutAuthAnyLocalProcessTakesFloorWork is the old shape: a
// frontend with no authentication lets any local process with the SDK
// poll floor.<pool> and take a floor job's claim at tier 0.
func TestWithoutAuthAnyLocalProcessTakesFloorWork(t *testing.T) {
	dev, srv := startPlain(t, nil)
	c, err := sdkClient(t, dev.HostPort(), nil)
	if err != nil {
		t.Fatal(err)
	}
	took := rogue(t, c, jobs.FloorQueue("ci"))
	if err := srv.Start(context.Background(), floorJob("j-old")); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-took:
		if id != "j-old" {
			t.Fatalf("took %s", id)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the rogue worker took no claim: the old shape is not what this test shows")
	}
}

func isDenied(err error) bool {
	var pd *serviceerror.PermissionDenied
	return errors.As(err, &pd)
}

// deniedFor is the authorizer's reason of a PermissionDenied.
func deniedFor(err error) string {
	var pd *serviceerror.PermissionDenied
	if errors.As(err, &pd) {
		return pd.Reason
	}
	return ""
}

func poll(ctx context.Context, c client.Client, queue string) (*workflowservice.PollActivityTaskQueueResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.WorkflowService().PollActivityTaskQueue(ctx, &workflowservice.PollActivityTaskQueueRequest{
		Namespace: jobs.DefaultNamespace, TaskQueue: &taskqueuepb.TaskQueue{Name: queue}, Identity: "test"})
}

func TestAuth(t *testing.T) {
	f := startAuth(t)
	hp := f.dev.HostPort()
	ctx := context.Background()

	t.Run("no certificate is refused at connect", func(t *testing.T) {
		if _, err := sdkClient(t, hp, nil); err == nil {
			t.Errorf("a plaintext client connected")
		}
		noCert, _ := pki.ClientTLS(f.ca.PEM, func() (*tls.Certificate, error) { return &tls.Certificate{}, nil })
		if _, err := sdkClient(t, hp, noCert); err == nil {
			t.Errorf("a TLS client without a certificate connected")
		}
	})
	t.Run("a certificate of another CA is refused at connect", func(t *testing.T) {
		other, err := pki.LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sdkClient(t, hp, f.clientTLS(t, nodeCert(t, other, "n1"))); err == nil {
			t.Errorf("a node certificate of another CA connected")
		}
		sc, _ := other.IssueServerClient()
		if _, err := sdkClient(t, hp, f.clientTLS(t, sc)); err == nil {
			t.Errorf("a server certificate of another CA connected")
		}
	})

	n0, err := sdkClient(t, hp, f.clientTLS(t, nodeCert(t, f.ca, "n0")))
	if err != nil {
		t.Fatalf("a tier-0 node's certificate: connect: %v", err)
	}
	t.Run("a tier-0 node may not poll the floor queue and takes no floor job", func(t *testing.T) {
		if _, err := poll(ctx, n0, jobs.FloorQueue("ci")); !strings.Contains(deniedFor(err), "attested sandbox tier is below 1") {
			t.Fatalf("poll floor.ci: got %v, want PermissionDenied naming the attested tier", err)
		}
		took := rogue(t, n0, jobs.FloorQueue("ci"))
		if err := f.server.Start(ctx, floorJob("j-floor0")); err != nil {
			t.Fatal(err)
		}
		st, err := f.server.Wait(ctx, "j-floor0")
		if err != nil || st.State != "failed" || !strings.Contains(st.Error, "no node with sandbox tier 1 took job j-floor0") {
			t.Errorf("got %+v, %v; want the job failed with no node taking it", st, err)
		}
		select {
		case id := <-took:
			t.Errorf("the tier-0 node took %s", id)
		default:
		}
	})
	t.Run("a node may poll its pool's queue and its own", func(t *testing.T) {
		for _, q := range []string{"ci", "node.n0"} {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := n0.WorkflowService().PollActivityTaskQueue(pctx, &workflowservice.PollActivityTaskQueueRequest{
				Namespace: jobs.DefaultNamespace, TaskQueue: &taskqueuepb.TaskQueue{Name: q}})
			cancel()
			if isDenied(err) {
				t.Errorf("poll %s: %v", q, err)
			}
		}
	})
	t.Run("a node may not poll another node's, pool's or partition's queue", func(t *testing.T) {
		for _, q := range []string{"node.n1", "other", "floor.other", "airlock.workflows", "/_sys/floor.ci/1", "/_sys/ci/1"} {
			if _, err := poll(ctx, n0, q); !isDenied(err) {
				t.Errorf("poll %s: got %v, want PermissionDenied", q, err)
			}
		}
	})
	t.Run("a node may not start, signal or read workflows, nor poll workflow tasks", func(t *testing.T) {
		_, err := n0.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "j-evil", TaskQueue: jobs.WorkflowQueue}, jobs.WorkflowName, floorJob("j-evil"))
		if !isDenied(err) {
			t.Errorf("start a workflow: got %v, want PermissionDenied", err)
		}
		if err := n0.SignalWorkflow(ctx, "j-floor0", "", "x", nil); !isDenied(err) {
			t.Errorf("signal: got %v", err)
		}
		if err := n0.TerminateWorkflow(ctx, "j-floor0", "", "x"); !isDenied(err) {
			t.Errorf("terminate: got %v", err)
		}
		if _, err := n0.DescribeWorkflowExecution(ctx, "j-floor0", ""); !isDenied(err) {
			t.Errorf("describe: got %v", err)
		}
		_, err = n0.WorkflowService().PollWorkflowTaskQueue(ctx, &workflowservice.PollWorkflowTaskQueueRequest{
			Namespace: jobs.DefaultNamespace, TaskQueue: &taskqueuepb.TaskQueue{Name: jobs.WorkflowQueue}})
		if !isDenied(err) {
			t.Errorf("poll workflow tasks: got %v", err)
		}
		_, err = n0.WorkflowService().PollActivityTaskQueue(ctx, &workflowservice.PollActivityTaskQueueRequest{
			Namespace: "temporal-system", TaskQueue: &taskqueuepb.TaskQueue{Name: "ci"}})
		if !isDenied(err) {
			t.Errorf("poll in another namespace: got %v", err)
		}
		_, err = n0.WorkflowService().RespondActivityTaskCompletedById(ctx, &workflowservice.RespondActivityTaskCompletedByIdRequest{
			Namespace: jobs.DefaultNamespace, WorkflowId: "j-floor0", ActivityId: "1"})
		if !isDenied(err) {
			t.Errorf("complete by id: got %v", err)
		}
	})

	// n1's attestation proved tier 1.
	f.reg.mu.Lock()
	f.reg.floor["n1"] = true
	f.reg.mu.Unlock()
	n1Cert := nodeCert(t, f.ca, "n1")
	n1, err := sdkClient(t, hp, f.clientTLS(t, n1Cert))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a node may answer only a task its own poll took, in its own name", func(t *testing.T) {
		if err := f.server.Start(ctx, jobs.Job{ID: "j-steal", Pool: "ci", Argv: []string{"true"}, ClaimTimeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		task, err := poll(ctx, n1, jobs.FloorQueue("ci"))
		if err != nil || len(task.GetTaskToken()) == 0 {
			t.Fatalf("n1 polls floor.ci: %v, %v", task, err)
		}
		answer := func(c client.Client, claim jobs.Claim) error {
			p, _ := converter.GetDefaultDataConverter().ToPayloads(claim)
			_, err := c.WorkflowService().RespondActivityTaskCompleted(ctx, &workflowservice.RespondActivityTaskCompletedRequest{
				Namespace: jobs.DefaultNamespace, TaskToken: task.GetTaskToken(), Result: p})
			return err
		}
		if err := answer(n0, jobs.Claim{Node: "n0", Tier: 1}); !isDenied(err) {
			t.Errorf("n0 answers n1's claim with its token: got %v, want PermissionDenied", err)
		}
		if err := answer(n1, jobs.Claim{Node: "n2", Tier: 1}); !isDenied(err) {
			t.Errorf("n1 claims in n2's name: got %v, want PermissionDenied", err)
		}
		if err := answer(n1, jobs.Claim{Node: "n1", Tier: 2}); !isDenied(err) {
			t.Errorf("n1 claims tier 2: got %v, want PermissionDenied", err)
		}
		if err := answer(n1, jobs.Claim{Node: "n1", Tier: 1}); err != nil {
			t.Errorf("n1 answers its own claim: %v", err)
		}
		f.server.Kill(ctx, "j-steal")
	})
	t.Run("an attested tier-1 node runs a floor job end to end", func(t *testing.T) {
		n, err := jobs.StartNode(jobs.NodeConfig{HostPort: hp, Namespace: jobs.DefaultNamespace, TLS: f.clientTLS(t, n1Cert),
			ID: "n1", Pool: "ci", Tier: 1, Runner: echoRunner{tier: 1}})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Stop()
		j := floorJob("j-ok")
		j.ClaimTimeout = 20 * time.Second
		if err := f.server.Start(ctx, j); err != nil {
			t.Fatal(err)
		}
		st, err := f.server.Wait(ctx, "j-ok")
		if err != nil || st.State != "completed" || st.Result == nil || st.Result.Node != "n1" || st.Result.Tier != 1 {
			t.Fatalf("got %+v %+v, %v; want completed on n1 at tier 1", st, st.Result, err)
		}
	})
}

// echoRunner is a node's runner that runs nothing and reports tier.
type echoRunner struct{ tier int }

func (r echoRunner) Run(ctx context.Context, req jobs.RunRequest) (jobs.Result, error) {
	return jobs.Result{Tier: r.tier, Stdout: "ran " + req.Job.ID}, nil
}

// TestFrontendOnAnotherAddress: the frontend may listen where nodes of
// other machines reach it (here 127.0.0.2, the services behind it staying
// on 127.0.0.1), with mutual TLS; without it, only on loopback.
func TestFrontendOnAnotherAddress(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  jobs.DevConfig
		want string
	}{
		{"not an IP", jobs.DevConfig{FrontendIP: "example.com"}, "want an IP address"},
		{"off loopback without TLS", jobs.DevConfig{FrontendIP: "192.0.2.1"}, "only with mutual TLS"},
		{"every address", jobs.DevConfig{FrontendIP: "0.0.0.0", Auth: &jobs.DevAuth{}}, "not every one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := frontendIP(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	f := startAuthOn(t, "127.0.0.2")
	if !strings.HasPrefix(f.dev.HostPort(), "127.0.0.2:") {
		t.Fatalf("frontend at %s", f.dev.HostPort())
	}
	n, err := jobs.StartNode(jobs.NodeConfig{HostPort: f.dev.HostPort(), Namespace: jobs.DefaultNamespace,
		TLS: f.clientTLS(t, nodeCert(t, f.ca, "n0")), ID: "n0", Pool: "ci", Runner: echoRunner{tier: 0}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	j := floorJob("j-remote")
	j.Tier0, j.ClaimTimeout = true, 20*time.Second
	if err := f.server.Start(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	st, err := f.server.Wait(context.Background(), "j-remote")
	if err != nil || st.State != "completed" || st.Result == nil || st.Result.Node != "n0" {
		t.Fatalf("got %+v, %v; want completed on n0", st, err)
	}
}
