package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// enrolAs enrols node id of pool ci through the server's API with token
// and returns the HTTP status, its key and certificate.
func (f *fleet) enrolAs(id, token string) (int, *ecdsa.PrivateKey, api.Enrolled) {
	f.t.Helper()
	key, _ := pki.NewKey()
	csr, _ := pki.CSR(key, id)
	body, _ := json.Marshal(api.EnrollRequest{ID: id, Pool: "ci", CSR: string(csr)})
	req, _ := http.NewRequestWithContext(f.ctx, http.MethodPost, f.url+"/v1/nodes/enroll", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var e api.Enrolled
	json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, key, e
}

// TestFleetAttestation: a node is recorded at the tier its signed selftest
// rows prove, and the frontend lets it poll the floor queue only then.
func TestFleetAttestation(t *testing.T) {
	f := startFleet(t, 3*time.Second)
	b, err := os.ReadFile(filepath.Join(f.dir, "server", "enroll-token"))
	if err != nil {
		t.Fatal(err)
	}
	// The file carries the token and the fleet CA's pin.
	enrollToken, pin, err := pki.ParseEnrollFile(b)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _, err := pki.ReadCert(filepath.Join(f.dir, "server", "pki", "ca.pem"))
	if err != nil || pin != pki.Fingerprint(caCert) {
		t.Fatalf("enroll-token pins %q, want the CA's (%v)", pin, err)
	}

	t.Run("a wrong enrolment token is a 401", func(t *testing.T) {
		for _, tok := range []string{"", f.token, strings.Repeat("0", 64)} {
			if code, _, _ := f.enrolAs("nx", tok); code != http.StatusUnauthorized {
				t.Errorf("token %q: got %d, want 401", tok, code)
			}
		}
	})
	code, key, e := f.enrolAs("nx", enrollToken)
	if code != http.StatusOK {
		t.Fatalf("enrol: %d", code)
	}
	cert, _ := pki.ParseCert([]byte(e.Cert))
	tc, err := pki.ClientTLS([]byte(e.CA), func() (*tls.Certificate, error) {
		return &tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	register := func(id string, signer *ecdsa.PrivateKey, rows []pki.Row) int {
		var ch api.Challenge
		if code := f.post("/v1/nodes/"+id+"/challenge", "{}", &ch); code != http.StatusOK {
			t.Fatalf("challenge for %s: %d", id, code)
		}
		a, _ := pki.Sign(signer, []byte(e.Cert), pki.Report{Node: id, Pool: "ci", Tier: 1, Rows: rows, Challenge: ch.Challenge}, time.Now())
		body, _ := json.Marshal(api.Registration{ID: id, Pool: "ci", Tier: 1, Queues: []string{"ci"}, Attestation: &a})
		var out map[string]any
		return f.post("/v1/nodes", string(body), &out)
	}
	var rows []pki.Row
	for _, a := range pki.AttestRows {
		rows = append(rows, pki.Row{Attempt: a, Mechanism: "bubblewrap", Tier: 1, Outcome: "held"})
	}
	rows[0].Outcome = "escaped"
	if code := register("nx", key, rows); code != http.StatusOK {
		t.Fatalf("register with rows that did not hold: %d", code)
	}
	forger, _ := pki.NewKey()
	rows[0].Outcome = "held"
	if code := register("nx", forger, rows); code != http.StatusForbidden {
		t.Errorf("register with a forged signature: got %d, want 403", code)
	}
	var nodes []api.NodeEntry
	f.get("/v1/nodes", &nodes)
	var nx api.NodeEntry
	for _, n := range nodes {
		if n.ID == "nx" {
			nx = n
		}
	}
	if nx.Tier != 0 || nx.ClaimedTier != 1 || !strings.Contains(strings.Join(nx.Findings, "\n"), pki.AttestRows[0]+" escaped") {
		t.Fatalf("nx is listed as %+v; want tier 0 with the row that escaped", nx)
	}

	m := regexp.MustCompile(`Temporal on (127\.0\.0\.1:\d+)`).FindStringSubmatch(f.stderr.String())
	if m == nil {
		t.Fatalf("no Temporal address in %s", f.stderr.String())
	}
	if c, err := client.Dial(client.Options{HostPort: m[1], Namespace: jobs.DefaultNamespace}); err == nil {
		c.Close()
		t.Errorf("a client without a certificate connected to the server's Temporal")
	}
	c, err := client.Dial(client.Options{HostPort: m[1], Namespace: jobs.DefaultNamespace, ConnectionOptions: client.ConnectionOptions{TLS: tc}})
	if err != nil {
		t.Fatalf("dial with nx's certificate: %v", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.WorkflowService().PollActivityTaskQueue(ctx, &workflowservice.PollActivityTaskQueueRequest{
		Namespace: jobs.DefaultNamespace, TaskQueue: &taskqueuepb.TaskQueue{Name: jobs.FloorQueue("ci")}})
	var pd *serviceerror.PermissionDenied
	if !errors.As(err, &pd) || !strings.Contains(pd.Reason, "attested sandbox tier is below 1") {
		t.Errorf("nx polls floor.ci: got %v, want PermissionDenied for its attested tier", err)
	}
}

// The API is served over TLS too, with a certificate of the fleet CA: the
// CLI checks it against --ca-file, and trusts no other CA for it.
func TestFleetAPIOverTLS(t *testing.T) {
	f := startFleet(t, 3*time.Second)
	secure := strings.Replace(f.url, "http://", "https://", 1)
	caFile := filepath.Join(f.dir, "server", "pki", "ca.pem")
	code, out, stderr := f.run("job", "list", "--server", secure, "--token-file", f.tokenF, "--ca-file", caFile)
	if code != 0 {
		t.Fatalf("job list over TLS: exit %d %q %q", code, out, stderr)
	}
	other, err := pki.LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	otherFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(otherFile, other.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := f.run("job", "list", "--server", secure, "--token-file", f.tokenF, "--ca-file", otherFile); code == 0 || !strings.Contains(stderr, "not the fleet's server's") {
		t.Errorf("job list trusting another CA: exit %d %q; want refused", code, stderr)
	}
	// A client of the system's roots does not take the fleet's server for
	// anyone's.
	if resp, err := http.Get(secure + "/v1/jobs"); err == nil {
		resp.Body.Close()
		t.Errorf("a client of the system's roots reached the API over TLS: %s", resp.Status)
	}

	// A node given the https:// URL enrols by the pin in the enrolment
	// token file, registers and runs a job over TLS.
	node := f.start("node nt", "node", "--server", secure, "--pool", "ci", "--id", "nt",
		"--enroll-token-file", filepath.Join(f.dir, "server", "enroll-token"),
		"--sandbox", "off", "--state", filepath.Join(f.dir, "nodes", "nt"))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var nodes []api.NodeEntry
		f.get("/v1/nodes", &nodes)
		if len(nodes) == 1 && nodes[0].ID == "nt" && nodes[0].Live {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node nt did not register over TLS: %s", node.String())
		}
	}
	time.Sleep(200 * time.Millisecond)
	code, out, stderr = f.run("job", "start", "--server", secure, "--token-file", f.tokenF, "--ca-file", caFile,
		"--pool", "ci", "--tier0", "--wait", "--json", "--", "echo", "over-tls")
	if code != 0 || !strings.Contains(out, `"stdout": "over-tls\n"`) && !strings.Contains(out, `"stdout":"over-tls\n"`) {
		t.Fatalf("a job over TLS: exit %d %s %s (node: %s)", code, out, stderr, node.String())
	}
}
