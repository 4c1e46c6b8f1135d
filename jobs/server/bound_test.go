package server

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/server/common/authorization"
	"google.golang.org/grpc/credentials"

	"github.com/airlock-run/airlock/jobs/pki"
)

// enrolledCert enrols node of pool ci with ca (binding its key) and
// returns its certificate.
func enrolledCert(t *testing.T, ca *pki.CA, node string) *x509.Certificate {
	t.Helper()
	key, _ := pki.NewKey()
	csr, _ := pki.CSR(key, node)
	p, _, err := ca.Enrol(csr, node, "ci", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := pki.ParseCert(p)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// claimsOf maps a verified certificate as the frontend's interceptor does.
func claimsOf(m authorization.ClaimMapper, cert *x509.Certificate) error {
	_, err := m.GetClaims(&authorization.AuthInfo{TLSConnection: &credentials.TLSInfo{
		State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}}})
	return err
}

// A node's certificate stays valid for its life, but removing the node's
// binding revokes it, and enrolling the id again on another machine
// replaces it: from then on the old certificate must reach nothing at the
// frontend (no poll of the node's queues, no answer of its runs).
func TestAttackUnboundCertificateAtTheFrontend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	ca, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := claimMapper{bound: ca.Bound}
	old := enrolledCert(t, ca, "n1")
	if err := claimsOf(m, old); err != nil {
		t.Fatalf("the bound certificate: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "nodes", "n1")); err != nil {
		t.Fatal(err)
	}
	if err := claimsOf(m, old); err == nil {
		t.Error("a revoked node's certificate is still mapped to its identity")
	}
	moved := enrolledCert(t, ca, "n1")
	if err := claimsOf(m, old); err == nil {
		t.Error("the old machine's certificate of a moved id is still mapped to its identity")
	}
	if err := claimsOf(m, moved); err != nil {
		t.Errorf("the new machine's certificate: %v", err)
	}
	// The server's own identities carry no binding.
	sc, err := ca.IssueServerClient()
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(sc.Certificate[0])
	if err := claimsOf(m, leaf); err != nil {
		t.Errorf("the server's own client certificate: %v", err)
	}
}
