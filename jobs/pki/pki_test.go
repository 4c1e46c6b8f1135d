package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func newCA(t *testing.T) *CA {
	t.Helper()
	ca, err := LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestCAIsCreatedOnceAndKeptPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	ca, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "ca.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	again, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cert.Equal(ca.Cert) {
		t.Errorf("a second start made a new CA")
	}
	os.Chmod(filepath.Join(dir, "ca.key"), 0o644)
	if _, err := LoadOrCreateCA(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key others may read: got %v, want a refusal naming chmod 600", err)
	}
}

func TestKeyThroughALinkIsRefused(t *testing.T) {
	dir := t.TempDir()
	k, _ := NewKey()
	real := filepath.Join(dir, "real.key")
	if err := WriteKey(real, k); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "node.key")
	os.Symlink(real, link)
	if _, err := ReadKey(link); err == nil {
		t.Errorf("ReadKey followed a link")
	}
	// Writing through the link replaces the link, never the file it names.
	k2, _ := NewKey()
	if err := WriteKey(link, k2); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadKey(real); err != nil || !got.Equal(k) {
		t.Errorf("the file behind the link changed: %v", err)
	}
}

func TestNodeCertificateTakesOnlyTheKeyFromTheCSR(t *testing.T) {
	ca := newCA(t)
	key, _ := NewKey()
	// A CSR that asks for the server's identity and a server certificate.
	der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "airlock://server"},
		URIs:    []*url.URL{{Scheme: "airlock", Host: "server"}},
	}, key)
	csr := pemEncode("CERTIFICATE REQUEST", der)
	certPEM, err := ca.IssueNode(csr, "n1", "ci", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := ParseCert(certPEM)
	id, err := ca.Verify(cert)
	if err != nil || id != (Identity{Role: RoleNode, Node: "n1", Pool: "ci"}) {
		t.Fatalf("got %v, %v; want node n1 of pool ci", id, err)
	}
	if slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || cert.IsCA {
		t.Errorf("a node certificate may serve or sign: %v", cert.ExtKeyUsage)
	}
	if got := cert.NotAfter.Sub(cert.NotBefore); got > time.Hour+backdate+time.Minute {
		t.Errorf("lifetime %s, want about an hour", got)
	}
	for _, bad := range []struct{ name, node, pool string }{
		{"a node id with a dot", "n1.floor", "ci"},
		{"a pool with a slash", "n1", "ci/x"},
		{"an empty node", "", "ci"},
	} {
		if _, err := ca.IssueNode(csr, bad.node, bad.pool, 0); err == nil {
			t.Errorf("%s: issued", bad.name)
		}
	}
	if _, err := ca.IssueNode([]byte("junk"), "n1", "ci", 0); err == nil {
		t.Errorf("junk CSR: issued")
	}
}

func TestVerifyRefusesAnotherCAAndServerCertificates(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	key, _ := NewKey()
	csr, _ := CSR(key, "n1")
	p, _ := other.IssueNode(csr, "n1", "ci", 0)
	cert, _ := ParseCert(p)
	if _, err := ca.Verify(cert); err == nil {
		t.Errorf("a certificate of another CA verified")
	}
	tc, _ := ca.IssueTemporal([]string{"127.0.0.1"})
	if id, err := ca.Verify(tc.Leaf); err != nil || id.Role != RoleTemporal {
		t.Errorf("the services' certificate: %v, %v", id, err)
	}
	sc, _ := ca.IssueServerClient()
	if id, err := ca.Verify(sc.Leaf); err != nil || id.Role != RoleServer {
		t.Errorf("the server's client certificate: %v, %v", id, err)
	}
}

func TestIdentityOf(t *testing.T) {
	u := func(s ...string) *x509.Certificate {
		c := &x509.Certificate{}
		for _, x := range s {
			pu, _ := url.Parse(x)
			c.URIs = append(c.URIs, pu)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		want Identity
		ok   bool
	}{
		{"server", u("airlock://server"), Identity{Role: RoleServer}, true},
		{"node", u("airlock://node/n1", "airlock://pool/ci"), Identity{Role: RoleNode, Node: "n1", Pool: "ci"}, true},
		{"none", u(), Identity{}, false},
		{"server and node", u("airlock://server", "airlock://node/n1", "airlock://pool/ci"), Identity{}, false},
		{"node without pool", u("airlock://node/n1"), Identity{}, false},
		{"two pools", u("airlock://node/n1", "airlock://pool/ci", "airlock://pool/x"), Identity{}, false},
		{"a dotted node", u("airlock://node/floor.ci", "airlock://pool/ci"), Identity{}, false},
		{"a foreign URI", u("airlock://server", "spiffe://x/y"), Identity{}, false},
		{"pool alone", u("airlock://pool/ci"), Identity{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := IdentityOf(tc.cert)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("got %v, %v; want %v (ok %v)", got, err, tc.want, tc.ok)
			}
		})
	}
}

func heldRows(tier int, mech string) []Row {
	var rows []Row
	for _, a := range AttestRows {
		rows = append(rows, Row{Attempt: a, Mechanism: mech, Tier: tier, Outcome: "held"})
	}
	return rows
}

func enrolled(t *testing.T, ca *CA, node, pool string) (*ecdsa.PrivateKey, []byte) {
	key, _ := NewKey()
	csr, _ := CSR(key, node)
	p, _, err := ca.Enrol(csr, node, pool, 0)
	if err != nil {
		t.Fatal(err)
	}
	return key, p
}

func TestAttestation(t *testing.T) {
	ca := newCA(t)
	key, certPEM := enrolled(t, ca, "n1", "ci")
	now := time.Now()
	rep := Report{Node: "n1", Pool: "ci", Tier: 1, Rows: heldRows(1, "bubblewrap")}
	good, err := Sign(key, certPEM, rep, now)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := ca.VerifyAttestation(good); err != nil || r.Tier != 1 {
		t.Fatalf("a good attestation: %v, %v", r, err)
	}
	other, _ := NewKey()
	_, otherCert := enrolled(t, ca, "n2", "ci")
	wrongNode, _ := Sign(key, certPEM, Report{Node: "n2", Pool: "ci", Tier: 1}, now)
	old, _ := Sign(key, certPEM, rep, now.Add(-time.Hour))
	alien := newCA(t)
	alienKey, alienCert := enrolled(t, alien, "n1", "ci")
	alienSigned, _ := Sign(alienKey, alienCert, rep, now)
	for _, tc := range []struct {
		name string
		a    Attestation
		want string
	}{
		{"signed by another key", func() Attestation { a, _ := Sign(other, certPEM, rep, now); return a }(), "signature"},
		{"another node's certificate", func() Attestation { a := good; a.Cert = otherCert; return a }(), "signature"},
		{"a report edited after signing", func() Attestation {
			a := good
			var r Report
			json.Unmarshal(a.Report, &r)
			r.Tier = 2
			a.Report, _ = json.Marshal(r)
			return a
		}(), "signature"},
		{"a report naming another node", wrongNode, "names node n2"},
		{"an old report", old, "server's clock"},
		{"another fleet's CA", alienSigned, "not issued by this fleet's CA"},
		{"no certificate", Attestation{Report: good.Report, Signature: good.Signature}, "CERTIFICATE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ca.VerifyAttestation(tc.a); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a refusal containing %q", err, tc.want)
			}
		})
	}
	// Revoked: the binding removed, the certificate still within its life.
	if err := os.Remove(filepath.Join(ca.dir, "nodes", "n1")); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.VerifyAttestation(good); err == nil || !strings.Contains(err.Error(), "not enrolled") {
		t.Errorf("a revoked node's attestation: %v, want refused", err)
	}
}

func TestProven(t *testing.T) {
	escaped := heldRows(1, "bubblewrap")
	escaped[0].Outcome = "escaped"
	twice := append(heldRows(1, "bubblewrap"), Row{Attempt: AttestRows[2], Tier: 1, Outcome: "escaped"})
	for _, tc := range []struct {
		name    string
		r       Report
		want    int
		whyHas  string
		whyNone bool
	}{
		{"all held at tier 1", Report{Tier: 1, Rows: heldRows(1, "bubblewrap")}, 1, "", true},
		{"claims 0", Report{Tier: 0, Rows: heldRows(1, "bubblewrap")}, 0, "", true},
		{"no rows", Report{Tier: 1}, 0, AttestRows[0] + " missing", false},
		{"one escaped", Report{Tier: 1, Rows: escaped}, 0, AttestRows[0] + " escaped", false},
		{"an escape listed beside a held", Report{Tier: 1, Rows: twice}, 0, AttestRows[2] + " escaped", false},
		{"held only at tier 0", Report{Tier: 1, Rows: heldRows(0, "none")}, 0, "missing", false},
		{"claims 2, proves 1", Report{Tier: 2, Rows: heldRows(1, "bubblewrap")}, 1, "missing", false},
		{"claims 2, proves 2", Report{Tier: 2, Rows: append(heldRows(1, "bubblewrap"), heldRows(2, "gvisor")...)}, 2, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := tc.r.Proven()
			if got != tc.want {
				t.Errorf("tier: got %d, want %d (%v)", got, tc.want, why)
			}
			if tc.whyNone != (len(why) == 0) || !strings.Contains(strings.Join(why, ";"), tc.whyHas) {
				t.Errorf("why: got %v, want it to hold %q", why, tc.whyHas)
			}
		})
	}
}

func TestAnyKeyOnlyP256(t *testing.T) {
	ca := newCA(t)
	k, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, k)
	if _, err := ca.IssueNode(pemEncode("CERTIFICATE REQUEST", der), "n1", "ci", 0); err == nil {
		t.Errorf("a P-384 key was certified")
	}
}

func pemEncode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func TestTakeChallenge(t *testing.T) {
	ca, err := LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca.now = func() time.Time { return now }
	c1, _ := ca.Challenge("n1", "node")
	old, _ := ca.Challenge("n1", "node")
	c2, _ := ca.Challenge("n2", "node")
	if _, err := ca.Challenge("n.1", "node"); err == nil {
		t.Error("a challenge for a node id that is no plain name was issued")
	}
	take := func(node, c string) error { return ca.TakeChallenge(Report{Node: node, Challenge: c}) }
	if err := take("n1", c2); err == nil {
		t.Error("n1 used n2's challenge")
	}
	if err := take("n1", ""); err == nil || !strings.Contains(err.Error(), "no challenge") {
		t.Errorf("no challenge: %v", err)
	}
	if err := take("n1", c1); err != nil {
		t.Fatalf("n1's fresh challenge: %v", err)
	}
	if err := take("n1", c1); err == nil {
		t.Error("a challenge was taken twice")
	}
	now = now.Add(ChallengeTTL + time.Second)
	if err := take("n1", old); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("an expired challenge: %v", err)
	}
	// Only the newest few are kept: a flood of asks keeps memory bounded
	// and leaves the newest usable.
	var last string
	for range 3 * maxChallenges {
		last, _ = ca.Challenge("n1", "node")
	}
	if n := len(ca.challenges.byNode["n1"]); n > maxChallenges {
		t.Errorf("%d challenges kept for n1, want at most %d", n, maxChallenges)
	}
	if err := take("n1", last); err != nil {
		t.Errorf("the newest challenge: %v", err)
	}
	// Another asker's flood of n1's challenges leaves n1's own usable.
	own, _ := ca.Challenge("n1", "node")
	for range 3 * maxChallenges {
		ca.Challenge("n1", "operator:acme")
	}
	if err := take("n1", own); err != nil {
		t.Errorf("n1's own challenge after another asker's: %v", err)
	}
	// Challenges asked for many ids are swept once they expired.
	for i := range sweepAt {
		ca.Challenge(fmt.Sprintf("x%d", i), "node")
	}
	now = now.Add(ChallengeTTL + time.Second)
	ca.Challenge("n1", "node")
	if n := len(ca.challenges.byNode); n != 1 {
		t.Errorf("%d nodes' challenges kept after they expired, want the fresh one's", n)
	}
}
