package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
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
// csrPEM's key and pool, or checking that it is bound to them already. It
// also issues the node's API token (see NodeOfToken): a fresh one at every
// enrolment, so a renewal rotates it, and only its SHA-256 is kept, in the
// binding.
func (ca *CA) Enrol(csrPEM []byte, node, pool string, lifetime time.Duration) (certPEM []byte, token string, err error) {
	certPEM, err = ca.issueNode(csrPEM, node, pool, lifetime, func(node, pool string, pub *ecdsa.PublicKey) error {
		var berr error
		token, berr = ca.bind(node, pool, pub)
		return berr
	})
	if err != nil {
		return nil, "", err
	}
	return certPEM, token, nil
}

// nodeTokenPrefix begins every node's API token: node.<id>.<secret>. The
// id (which has no '.') says which binding holds the token's hash.
const nodeTokenPrefix = "node."

// NewNodeToken is a fresh API token for node: its id and 32 random bytes.
func NewNodeToken(node string) string {
	var b [32]byte
	rand.Read(b[:])
	return nodeTokenPrefix + node + "." + hex.EncodeToString(b[:])
}

// TokenOf reports whether token has the shape of node's API token (it says
// nothing of whether the server still knows it).
func TokenOf(token, node string) bool {
	return strings.HasPrefix(token, nodeTokenPrefix+node+".") && len(token) > len(nodeTokenPrefix+node+".")
}

// NodeOfToken is the node whose current API token is token: the one its
// binding (nodes/<id>) holds the SHA-256 of, compared in constant time.
// Anything else, a token of a node enrolled again since, or a node whose
// binding was removed, is no node.
func (ca *CA) NodeOfToken(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, nodeTokenPrefix)
	node, secret, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || secret == "" || checkName("node id", node) != nil || ca.dir == "" {
		return "", false
	}
	ca.mu.Lock()
	got, err := privfile.ReadFile(filepath.Join(ca.dir, "nodes", node), 4096, privfile.Options{})
	ca.mu.Unlock()
	if err != nil {
		return "", false
	}
	want := parseBinding(string(got))["token"]
	sum := sha256.Sum256([]byte(token))
	have := "sha256:" + hex.EncodeToString(sum[:])
	if want == "" || subtle.ConstantTimeCompare([]byte(have), []byte(want)) != 1 {
		return "", false
	}
	return node, true
}

// parseBinding reads a binding's "NAME VALUE" lines.
func parseBinding(s string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(s) {
		if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " "); ok {
			out[k] = v
		}
	}
	return out
}

// bind records node's pool and key on first use and refuses any other
// pool or key later; either way it records the hash of a new API token
// for the node and returns the token.
func (ca *CA) bind(node, pool string, pub *ecdsa.PublicKey) (string, error) {
	if ca.dir == "" {
		return "", errs.Unavailablef("enrol node %s: the CA has no directory to keep enrolled nodes in", node)
	}
	key, err := keyDigest(pub)
	if err != nil {
		return "", errs.Wrap(errs.Internal, err, "enrol node %s: key", node)
	}
	path := filepath.Join(ca.dir, "nodes", node)
	ca.mu.Lock()
	defer ca.mu.Unlock()
	got, err := privfile.ReadFile(path, 4096, privfile.Options{})
	switch {
	case err == nil:
		b := parseBinding(string(got))
		if b["pool"] != pool || b["key"] != key {
			what := "key"
			if b["pool"] != pool {
				what = "pool"
			}
			return "", errs.New(errs.Denied, "enrol node %s: the id is enrolled already with another %s: a node renews with its own key (STATE/pki/node.key); "+
				"to enrol a new machine under this id, remove the server's STATE/pki/nodes/%s first, or pick another --id", node, what, node)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", errs.Wrap(errs.Unavailable, err, "enrol node %s: its binding", node)
	}
	token := NewNodeToken(node)
	tsum := sha256.Sum256([]byte(token))
	rec := "pool " + pool + "\nkey " + key + "\ntoken sha256:" + hex.EncodeToString(tsum[:]) + "\n"
	if err := privfile.WriteFile(path, []byte(rec), 0o600, privfile.Options{MakeDirs: true}); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "enrol node %s: record its binding", node)
	}
	return token, nil
}

// Enrolled says whether node is bound now (its binding, nodes/<id>,
// reads): removing the binding revokes the node, whose certificate may
// still be within its life.
func (ca *CA) Enrolled(node string) bool {
	if checkName("node id", node) != nil || ca.dir == "" {
		return false
	}
	ca.mu.Lock()
	defer ca.mu.Unlock()
	_, err := privfile.ReadFile(filepath.Join(ca.dir, "nodes", node), 4096, privfile.Options{})
	return err == nil
}

// keyDigest is how a binding names a key: the SHA-256 of its PKIX form.
func keyDigest(pub *ecdsa.PublicKey) (string, error) {
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(spki)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Bound refuses a node's certificate unless the node id it names is bound
// now to its key and pool (see checkBound).
func (ca *CA) Bound(cert *x509.Certificate) error {
	id, err := IdentityOf(cert)
	if err != nil {
		return err
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if id.Role != RoleNode || !ok {
		return errs.New(errs.Denied, "the certificate is not a node's")
	}
	return ca.checkBound(id.Node, id.Pool, pub)
}

// checkBound refuses unless node is bound now to pool and pub: a
// certificate still within its life proves nothing for an id whose
// binding was removed (revoked) or made again with another key (moved).
func (ca *CA) checkBound(node, pool string, pub *ecdsa.PublicKey) error {
	key, err := keyDigest(pub)
	if err != nil || ca.dir == "" {
		return errs.New(errs.Denied, "node %s: no binding to check its key against", node)
	}
	ca.mu.Lock()
	got, err := privfile.ReadFile(filepath.Join(ca.dir, "nodes", node), 4096, privfile.Options{})
	ca.mu.Unlock()
	if errors.Is(err, fs.ErrNotExist) {
		return errs.New(errs.Denied, "node %s is not enrolled on this server (its binding was removed): enrol it again", node)
	}
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "node %s: its binding", node)
	}
	b := parseBinding(string(got))
	if b["pool"] != pool || subtle.ConstantTimeCompare([]byte(b["key"]), []byte(key)) != 1 {
		return errs.New(errs.Denied, "node %s is enrolled now with another key or pool than this certificate's (the id was enrolled again): the old certificate proves nothing", node)
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
