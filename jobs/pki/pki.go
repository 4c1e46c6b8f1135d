// Package pki is the fleet's certificate authority: the CA `airlock server`
// creates on its first start (STATE/pki), the certificates it issues — one
// for the Temporal frontend and the services behind it, one for the
// server's own clients, a short-lived one per node at enrolment — the
// identity a verified certificate names, and the node's signed
// attestation of its sandbox tier.
//
// Identities are URI SANs, never the subject's common name (which anyone
// asking for a certificate writes): airlock://server, airlock://temporal,
// or airlock://node/<id> with airlock://pool/<pool>. A node's certificate
// is built by the CA from the enrolment request's node id and pool, and the
// CSR only lends it its public key, so nothing the node writes in the CSR
// reaches the certificate.
//
// Keys are ECDSA P-256. Private keys are written 0600 through privfile
// (never through a link) and read with O_NOFOLLOW; a key file others may
// read is refused.
//
// Who may import it: jobs/server (the frontend's TLS and the claim
// mapper), api (enrolment and attestation), node (its key, CSR and
// attestation) and internal/cli (the server's CA at start). It imports
// errs and internal/privfile.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/privfile"
)

// Identity URIs.
const (
	serverURI   = "airlock://server"
	temporalURI = "airlock://temporal"
	nodePrefix  = "airlock://node/"
	poolPrefix  = "airlock://pool/"
)

// Lifetimes.
const (
	// CALifetime is how long the fleet CA is valid.
	CALifetime = 10 * 365 * 24 * time.Hour
	// ServiceLifetime is how long the certificates the server issues
	// itself at each start are valid.
	ServiceLifetime = 30 * 24 * time.Hour
	// DefaultNodeLifetime is how long a node's certificate is valid; the
	// node enrols again before it ends.
	DefaultNodeLifetime = 24 * time.Hour
	// backdate absorbs a little clock skew between server and node.
	backdate = 5 * time.Minute
)

// Role is who a certificate names.
type Role int

const (
	// RoleNone is no identity airlock issued.
	RoleNone Role = iota
	// RoleServer is the server's own clients: its orchestrating worker and
	// the API's job client. It may do anything.
	RoleServer
	// RoleTemporal is the Temporal services themselves (frontend,
	// history, matching, worker) talking to each other.
	RoleTemporal
	// RoleNode is one node of one pool.
	RoleNode
)

func (r Role) String() string {
	switch r {
	case RoleServer:
		return "server"
	case RoleTemporal:
		return "temporal"
	case RoleNode:
		return "node"
	}
	return "none"
}

// Identity is what a verified certificate names.
type Identity struct {
	Role Role
	// Node and Pool are set for RoleNode.
	Node, Pool string
}

func (id Identity) String() string {
	if id.Role == RoleNode {
		return "node " + id.Node + " of pool " + id.Pool
	}
	return id.Role.String()
}

// namePattern is jobs' name rule (a task queue's part, a path's part): a
// node id or pool that is not a plain name is never put in a certificate.
// Compiled on first use: its bounded repeat makes a large program, which
// every start of airlock would otherwise build.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`) })

func checkName(what, name string) error {
	if !namePattern().MatchString(name) {
		return errs.Invalidf("%s %q: want lower-case letters, digits, '-' and '_', at most 63, starting with a letter or digit", what, name)
	}
	return nil
}

// IdentityOf reads the identity of a certificate the caller has already
// verified against the fleet CA: exactly one airlock:// role, and for a
// node exactly one node and one pool URI with plain names. Anything else —
// a certificate with no airlock URI, two roles, a name with a dot — names
// no identity.
func IdentityOf(cert *x509.Certificate) (Identity, error) {
	if cert == nil {
		return Identity{}, errs.New(errs.Denied, "no client certificate")
	}
	var id Identity
	roles := 0
	for _, u := range cert.URIs {
		s := u.String()
		switch {
		case s == serverURI:
			id.Role, roles = RoleServer, roles+1
		case s == temporalURI:
			id.Role, roles = RoleTemporal, roles+1
		case strings.HasPrefix(s, nodePrefix):
			if id.Node != "" {
				return Identity{}, errs.New(errs.Denied, "certificate names two nodes")
			}
			id.Node, roles = strings.TrimPrefix(s, nodePrefix), roles+1
			id.Role = RoleNode
		case strings.HasPrefix(s, poolPrefix):
			if id.Pool != "" {
				return Identity{}, errs.New(errs.Denied, "certificate names two pools")
			}
			id.Pool = strings.TrimPrefix(s, poolPrefix)
		default:
			return Identity{}, errs.New(errs.Denied, "certificate carries a URI airlock does not issue")
		}
	}
	switch {
	case roles != 1:
		return Identity{}, errs.New(errs.Denied, "certificate names no single airlock identity")
	case id.Role == RoleNode:
		if err := errors.Join(checkName("node id", id.Node), checkName("pool", id.Pool)); err != nil {
			return Identity{}, errs.Wrap(errs.Denied, err, "node certificate")
		}
	case id.Pool != "":
		return Identity{}, errs.New(errs.Denied, "certificate names a pool without a node")
	}
	return id, nil
}

// CA is the fleet's certificate authority.
type CA struct {
	// Cert is the CA certificate; PEM its encoding, which nodes trust.
	Cert *x509.Certificate
	PEM  []byte
	key  *ecdsa.PrivateKey
	now  func() time.Time
	// dir is the CA's directory; nodes/<id> there binds each enrolled
	// node id to its pool and key (see Enrol). mu serialises enrolments.
	dir string
	mu  sync.Mutex
	// challenges are the attestation challenges issued and not yet
	// used (see Challenge).
	challenges challenges
}

// LoadOrCreateCA reads the CA from dir (ca.pem, ca.key), creating both on
// first use. dir is made 0700 and checked through privfile, so no link or
// directory another user controls steers the key.
func LoadOrCreateCA(dir string) (*CA, error) {
	if err := privfile.MkdirAll(dir, privfile.Options{MakeDirs: true}); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "fleet CA directory")
	}
	keyPath, certPath := filepath.Join(dir, "ca.key"), filepath.Join(dir, "ca.pem")
	key, err := ReadKey(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		return createCA(dir, keyPath, certPath)
	}
	if err != nil {
		return nil, err
	}
	b, err := readNoFollow(certPath)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "fleet CA certificate %s", certPath)
	}
	cert, err := ParseCert(b)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "fleet CA certificate %s", certPath)
	}
	if !cert.IsCA || !publicKeyMatches(cert, key) {
		return nil, errs.Invalidf("fleet CA %s: the certificate is not a CA of the key in %s (remove both to make a new CA, then enrol every node again)", certPath, keyPath)
	}
	return &CA{Cert: cert, PEM: b, key: key, now: time.Now, dir: dir}, nil
}

func createCA(dir, keyPath, certPath string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "fleet CA key")
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "airlock fleet CA"},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "fleet CA certificate")
	}
	cert, _ := x509.ParseCertificate(der)
	if err := WriteKey(keyPath, key); err != nil {
		return nil, err
	}
	p := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := privfile.WriteFile(certPath, p, 0o644, privfile.Options{}); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "fleet CA certificate")
	}
	return &CA{Cert: cert, PEM: p, key: key, now: time.Now, dir: dir}, nil
}

// Pool is a pool holding the CA alone, for verifying peers.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// IssueTemporal issues the certificate of the Temporal services: the
// frontend's server certificate, also what the services present to each
// other. hosts are its IP and DNS names (127.0.0.1 and where it listens).
func (ca *CA) IssueTemporal(hosts []string) (tls.Certificate, error) {
	tmpl := ca.template(temporalURI, ServiceLifetime)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issueKeyPair(tmpl)
}

// IssueServerClient issues the certificate of the server's own clients.
func (ca *CA) IssueServerClient() (tls.Certificate, error) {
	tmpl := ca.template(serverURI, ServiceLifetime)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issueKeyPair(tmpl)
}

// IssueNode issues node's certificate for the public key of csrPEM, whose
// signature proves the node holds the key. Only the key is taken from the
// CSR: its names and extensions are ignored. It may only authenticate a
// client (no server, no CA use) and lives for lifetime (0 is
// DefaultNodeLifetime).
func (ca *CA) IssueNode(csrPEM []byte, node, pool string, lifetime time.Duration) ([]byte, error) {
	return ca.issueNode(csrPEM, node, pool, lifetime, nil)
}

// issueNode is IssueNode; before, when set, may refuse the key first.
func (ca *CA) issueNode(csrPEM []byte, node, pool string, lifetime time.Duration, before func(node, pool string, pub *ecdsa.PublicKey) error) ([]byte, error) {
	if err := errors.Join(checkName("node id", node), checkName("pool", pool)); err != nil {
		return nil, err
	}
	pub, err := csrKey(csrPEM)
	if err != nil {
		return nil, err
	}
	if before != nil {
		if err := before(node, pool, pub); err != nil {
			return nil, err
		}
	}
	if lifetime <= 0 {
		lifetime = DefaultNodeLifetime
	}
	tmpl := ca.template(nodePrefix+node, lifetime)
	tmpl.URIs = append(tmpl.URIs, mustURL(poolPrefix+pool))
	tmpl.Subject = pkix.Name{CommonName: "airlock node " + node}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.key)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "issue node %s's certificate", node)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// Verify checks that cert was issued by this CA for client use, is valid
// now, and names an identity.
func (ca *CA) Verify(cert *x509.Certificate) (Identity, error) {
	_, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: ca.now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return Identity{}, errs.Wrap(errs.Denied, err, "the certificate was not issued by this fleet's CA, or it expired")
	}
	return IdentityOf(cert)
}

func (ca *CA) template(uri string, lifetime time.Duration) *x509.Certificate {
	now := ca.now()
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: strings.TrimPrefix(uri, "airlock://")},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(lifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		URIs:         []*url.URL{mustURL(uri)},
	}
}

func (ca *CA) issueKeyPair(tmpl *x509.Certificate) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, errs.Wrap(errs.Unavailable, err, "key for %s", tmpl.Subject.CommonName)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, errs.Wrap(errs.Internal, err, "certificate for %s", tmpl.Subject.CommonName)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// NewKey makes a node's key: it never leaves the node.
func NewKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "node key")
	}
	return k, nil
}

// CSR is a certificate request for key (PEM). The CA takes only the key.
func CSR(key *ecdsa.PrivateKey, node string) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "airlock node " + node}}, key)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "certificate request")
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// WriteKey writes key to path, 0600, through privfile.
func WriteKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return errs.Wrap(errs.Internal, err, "key %s", path)
	}
	p := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	if err := privfile.WriteFile(path, p, 0o600, privfile.Options{MakeDirs: true}); err != nil {
		return errs.Wrap(errs.Unavailable, err, "key %s", path)
	}
	return nil
}

// WriteCert writes a certificate (PEM) to path through privfile.
func WriteCert(path string, certPEM []byte) error {
	if err := privfile.WriteFile(path, certPEM, 0o600, privfile.Options{MakeDirs: true}); err != nil {
		return errs.Wrap(errs.Unavailable, err, "certificate %s", path)
	}
	return nil
}

// ReadKey reads an ECDSA P-256 key from path without following a link,
// and refuses a file that others than its owner may read. A missing file
// is an error wrapping fs.ErrNotExist.
func ReadKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := readSecret(path, "key")
	if err != nil {
		return nil, err
	}
	der, err := pemBlock(b, "EC PRIVATE KEY")
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "key %s", path)
	}
	k, err := x509.ParseECPrivateKey(der)
	if err != nil || k.Curve != elliptic.P256() {
		return nil, errs.Invalidf("key %s: want an ECDSA P-256 key", path)
	}
	return k, nil
}

// readSecret reads the file at path (what names it in errors) without
// following a link, refusing one that is not regular or that others than
// its owner may read. A missing file is an error wrapping fs.ErrNotExist.
func readSecret(path, what string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "%s %s (a link is refused)", what, path)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, errs.Invalidf("%s %s: not a regular file", what, path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, errs.Invalidf("%s %s: mode %v lets others read it (fix: chmod 600 %s)", what, path, st.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<16))
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "%s %s", what, path)
	}
	return b, nil
}

// WriteToken writes a node's API token to path, 0600, through privfile.
func WriteToken(path, token string) error {
	if err := privfile.WriteFile(path, []byte(token+"\n"), 0o600, privfile.Options{MakeDirs: true}); err != nil {
		return errs.Wrap(errs.Unavailable, err, "node token %s", path)
	}
	return nil
}

// ReadToken reads a node's API token from path as readSecret does.
func ReadToken(path string) (string, error) {
	b, err := readSecret(path, "node token")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadCert reads a certificate (PEM) from path without following a link.
func ReadCert(path string) (*x509.Certificate, []byte, error) {
	b, err := readNoFollow(path)
	if err != nil {
		return nil, nil, err
	}
	c, err := ParseCert(b)
	if err != nil {
		return nil, nil, errs.Wrap(errs.Invalid, err, "certificate %s", path)
	}
	return c, b, nil
}

func readNoFollow(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<16))
}

// pemBlock is the bytes of the first PEM block of b, which must be of type
// typ.
func pemBlock(b []byte, typ string) ([]byte, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != typ {
		return nil, errs.Invalidf("want a PEM block of type %s", typ)
	}
	return blk.Bytes, nil
}

// ParseCert parses the first PEM certificate of b.
func ParseCert(b []byte) (*x509.Certificate, error) {
	der, err := pemBlock(b, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errs.Invalidf("certificate: %v", err)
	}
	return c, nil
}

// CAPool parses a CA certificate (PEM) into a pool of it alone.
func CAPool(caPEM []byte) (*x509.CertPool, error) {
	c, err := ParseCert(caPEM)
	if err != nil {
		return nil, err
	}
	if !c.IsCA {
		return nil, errs.Invalidf("the fleet CA certificate is not a CA")
	}
	p := x509.NewCertPool()
	p.AddCert(c)
	return p, nil
}

// ClientTLS is the TLS configuration of a client of the frontend: it trusts
// the fleet CA alone and presents what cert returns at each handshake (so a
// renewed certificate is used by the next connection).
func ClientTLS(caPEM []byte, cert func() (*tls.Certificate, error)) (*tls.Config, error) {
	pool, err := CAPool(caPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert() }}, nil
}

func publicKeyMatches(cert *x509.Certificate, key *ecdsa.PrivateKey) bool {
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	return ok && pub.Equal(&key.PublicKey)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// mustURL is one of the identity URIs as a URL: airlock://HOST[/NAME],
// NAME a checked plain name, so it never fails to parse back.
func mustURL(s string) *url.URL {
	host, name, _ := strings.Cut(strings.TrimPrefix(s, "airlock://"), "/")
	u := &url.URL{Scheme: "airlock", Host: host}
	if name != "" {
		u.Path = "/" + name
	}
	return u
}
