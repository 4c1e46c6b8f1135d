package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/privfile"
)

// A node id names a queue (node.<id>) and every run sent to it, so it is
// bound at its first enrolment to that enrolment's pool and key, kept in
// the CA's directory (nodes/<id>), and every later enrolment of the id must
// present the same key and pool: a renewal. Without the binding anyone
// holding the enrolment token could enrol as an existing node and take its
// queue, its runs and its attested tier.

// Enrol issues node's certificate like IssueNode, after binding node to
// csrPEM's key and pool, or checking that it is bound to them already.
func (ca *CA) Enrol(csrPEM []byte, node, pool string, lifetime time.Duration) ([]byte, error) {
	return ca.issueNode(csrPEM, node, pool, lifetime, ca.bind)
}

// bind records node's pool and key on first use and refuses any other
// pool or key later.
func (ca *CA) bind(node, pool string, pub *ecdsa.PublicKey) error {
	if ca.dir == "" {
		return errs.Unavailablef("enrol node %s: the CA has no directory to keep enrolled nodes in", node)
	}
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return errs.Wrap(errs.Internal, err, "enrol node %s: key", node)
	}
	sum := sha256.Sum256(spki)
	want := "pool " + pool + "\nkey sha256:" + hex.EncodeToString(sum[:]) + "\n"
	path := filepath.Join(ca.dir, "nodes", node)
	ca.mu.Lock()
	defer ca.mu.Unlock()
	got, err := privfile.ReadFile(path, 4096, privfile.Options{})
	switch {
	case err == nil && string(got) == want:
		return nil
	case err == nil:
		what := "key"
		if !strings.HasPrefix(string(got), "pool "+pool+"\n") {
			what = "pool"
		}
		return errs.New(errs.Denied, "enrol node %s: the id is enrolled already with another %s: a node renews with its own key (STATE/pki/node.key); "+
			"to enrol a new machine under this id, remove the server's STATE/pki/nodes/%s first, or pick another --id", node, what, node)
	case !errors.Is(err, fs.ErrNotExist):
		return errs.Wrap(errs.Unavailable, err, "enrol node %s: its binding", node)
	}
	if err := privfile.WriteFile(path, []byte(want), 0o600, privfile.Options{MakeDirs: true}); err != nil {
		return errs.Wrap(errs.Unavailable, err, "enrol node %s: record its binding", node)
	}
	return nil
}

// csrKey is the P-256 key of a CSR whose signature verifies.
func csrKey(csrPEM []byte) (*ecdsa.PublicKey, error) {
	der, err := pemBlock(csrPEM, "CERTIFICATE REQUEST")
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "csr")
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, errs.Invalidf("csr: %v", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, errs.Invalidf("csr: its signature does not verify with its key: %v", err)
	}
	pub, ok := csr.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errs.Invalidf("csr: want an ECDSA P-256 key")
	}
	return pub, nil
}
