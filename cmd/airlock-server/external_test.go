package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
	"github.com/airlock-run/airlock/jobs/server"
)

// cluster is "an existing Temporal cluster": a real Temporal server built
// with jobs/server's claim mapper, authorizer and answer binding, with
// mutual TLS by the fleet CA, started apart from airlock server.
type cluster struct {
	hostPort, namespace string
	// pkiDir holds the fleet CA (ca.pem, ca.key) and the airlock server's
	// client certificate for the cluster (client.pem, client.key).
	pkiDir string
	// api is the airlock server's URL and operator token, once known:
	// the cluster's Eligible asks its node registry.
	api atomic.Pointer[[2]string]
}

// startCluster starts the cluster, stopped after everything the test
// starts later (its cleanup is registered first).
func startCluster(t *testing.T) *cluster {
	dir := t.TempDir()
	c := &cluster{namespace: "fleet-ext", pkiDir: filepath.Join(dir, "pki")}
	ca, err := pki.LoadOrCreateCA(c.pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	services, err := ca.IssueTemporal([]string{"127.0.0.1", "::1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.IssueServerClient()
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteKey(filepath.Join(c.pkiDir, "client.key"), client.PrivateKey.(*ecdsa.PrivateKey)); err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteCert(filepath.Join(c.pkiDir, "client.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: client.Certificate[0]})); err != nil {
		t.Fatal(err)
	}
	dev, err := server.Start(context.Background(), jobs.DevConfig{Dir: filepath.Join(dir, "temporal"), Namespace: c.namespace,
		Auth: &jobs.DevAuth{CA: ca.PEM, Services: services, Client: client, Eligible: c.eligible}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Stop() })
	c.hostPort = dev.HostPort()
	return c
}

// eligible answers the authorizer from the airlock server's registry over
// its API (GET /v1/nodes): a live node may poll its pool's floor queue at
// attested tier 1, tier2 at tier 2. Before the server is known, none may.
func (c *cluster) eligible(node, queue string) bool {
	at := c.api.Load()
	if at == nil {
		return false
	}
	req, _ := http.NewRequest(http.MethodGet, at[0]+"/v1/nodes", nil)
	req.Header.Set("Authorization", "Bearer "+at[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var nodes []api.NodeEntry
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&nodes) != nil {
		return false
	}
	for _, n := range nodes {
		if n.ID == node && n.Live {
			return (queue == jobs.FloorQueue(n.Pool) && n.Tier >= 1) || (queue == jobs.Tier2Queue(n.Pool) && n.Tier >= 2)
		}
	}
	return false
}

// args are the server's flags for the cluster.
func (c *cluster) args() []string {
	return []string{"--temporal", c.hostPort, "--namespace", c.namespace, "--temporal-authorizer", "airlock",
		"--temporal-tls-cert", filepath.Join(c.pkiDir, "client.pem"), "--temporal-tls-key", filepath.Join(c.pkiDir, "client.key"),
		"--temporal-tls-ca", filepath.Join(c.pkiDir, "ca.pem")}
}

// TestFleetExternalCluster: airlock server --temporal runs the fleet on an
// existing cluster — no embedded server started, nodes told the cluster's
// address at registration and connecting to it with their fleet
// certificates, floor work taken by the tier-1 node only, the job's
// result through the API as before.
func TestFleetExternalCluster(t *testing.T) {
	requireTier1(t)
	c := startCluster(t)
	// The server issues node certificates with the fleet CA the cluster
	// trusts: its state's pki holds that CA.
	shareCA := func(f *fleet) {
		dst := filepath.Join(f.dir, "server", "pki")
		if err := os.MkdirAll(dst, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"ca.pem", "ca.key"} {
			b, err := os.ReadFile(filepath.Join(c.pkiDir, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := startFleetWith(t, 5*time.Second, shareCA, c.args()...)
	c.api.Store(&[2]string{f.url, f.token})
	if _, err := os.Stat(filepath.Join(f.dir, "server", "temporal")); !os.IsNotExist(err) {
		t.Errorf("the server made an embedded Temporal state directory (%v); want none with --temporal", err)
	}
	if !strings.Contains(f.stderr.String(), "Temporal on "+c.hostPort) {
		t.Errorf("the server's start-up does not name the cluster %s: %s", c.hostPort, f.stderr.String())
	}
	f.node("n0", "off")
	f.node("n1", "1")

	var nodes []api.NodeEntry
	f.get("/v1/nodes", &nodes)
	for _, n := range nodes {
		wantTier := map[string]int{"n0": 0, "n1": 1}[n.ID]
		if n.Tier != wantTier || !n.Live {
			t.Errorf("node %s: tier %d live %v; want tier %d, live", n.ID, n.Tier, n.Live, wantTier)
		}
	}
	var floorJob string
	t.Run("floor work runs on the tier-1 node through the cluster", func(t *testing.T) {
		for range 3 {
			code, v := f.startJob("--", "echo", "on the cluster")
			if code != 0 || v.Result == nil || v.Result.Node != "n1" || v.Result.Tier != 1 || v.Result.Stdout != "on the cluster\n" {
				t.Fatalf("got exit %d, %+v; want n1's output at tier 1", code, v)
			}
			floorJob = v.ID
		}
	})
	t.Run("work consented to tier 0 runs on the pool queue", func(t *testing.T) {
		code, v := f.startJob("--tier0", "--", "echo", "tier0")
		if code != 0 || v.Result == nil || v.Result.Stdout != "tier0\n" {
			t.Fatalf("got exit %d, %+v", code, v)
		}
	})
	t.Run("the job is the cluster's, in its namespace", func(t *testing.T) {
		conf, err := pki.ClientTLS(mustRead(t, filepath.Join(c.pkiDir, "ca.pem")), func() (*tls.Certificate, error) {
			cert, err := tls.LoadX509KeyPair(filepath.Join(c.pkiDir, "client.pem"), filepath.Join(c.pkiDir, "client.key"))
			return &cert, err
		})
		if err != nil {
			t.Fatal(err)
		}
		jc, err := jobs.Dial(c.hostPort, c.namespace, conf, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer jc.Close()
		if floorJob == "" {
			t.Fatal("no floor job ran: the subtest before failed")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := jc.Get(ctx, floorJob)
		if err != nil || st.State != "completed" || st.Result == nil || st.Result.Node != "n1" {
			t.Fatalf("job %s in the cluster's namespace %s: %+v, %v; want it completed on n1", floorJob, c.namespace, st, err)
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
