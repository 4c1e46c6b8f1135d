package node

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// identity is the node's enrolled key, certificate and API token, kept
// under STATE/pki (node.key, node.pem, ca.pem, node.token, each 0600). The
// key is made here and never leaves the node; the certificate is renewed
// when a third of its life is left, and every enrolment brings a new token
// (the server's answer is the only place it is ever seen: the server keeps
// its SHA-256). The token registers this node and raises its runs'
// questions, nothing else: a node holds no operator's token.
type identity struct {
	dir string
	key *ecdsa.PrivateKey

	mu      sync.Mutex
	cert    tls.Certificate
	certPEM []byte
	caPEM   []byte
	token   string
}

// enrolledAnswer is the server's answer to an enrolment.
type enrolledAnswer struct {
	Cert      string    `json:"cert"`
	CA        string    `json:"ca"`
	Temporal  string    `json:"temporal"`
	Namespace string    `json:"namespace"`
	Expires   time.Time `json:"expires"`
	Token     string    `json:"token"`
}

// loadIdentity reads the node's key (making it on first start), the
// certificate and the token it holds, and enrols when either is missing,
// names another node (or pool), or the certificate is due for renewal.
func loadIdentity(ctx context.Context, cfg Config) (*identity, error) {
	id := &identity{dir: filepath.Join(cfg.StateDir, "pki")}
	keyPath := filepath.Join(id.dir, "node.key")
	key, err := pki.ReadKey(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		if key, err = pki.NewKey(); err == nil {
			err = pki.WriteKey(keyPath, key)
		}
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "node %s: key", cfg.ID)
	}
	id.key = key
	cert, certPEM, cerr := pki.ReadCert(filepath.Join(id.dir, "node.pem"))
	_, caPEM, caErr := pki.ReadCert(filepath.Join(id.dir, "ca.pem"))
	// A CA other than the one the enrolment token file pins is the CA of
	// another server (or of this one before its CA was made again): the
	// node enrols again rather than trust it.
	pinned := cfg.CAPin == "" || pki.FingerprintPEM(caPEM) == cfg.CAPin
	if cerr == nil && caErr == nil && pinned && sameKey(cert, key) {
		if who, err := pki.IdentityOf(cert); err == nil && who.Node == cfg.ID && who.Pool == cfg.Pool {
			id.set(cert.Raw, certPEM, caPEM)
		}
	}
	if id.caPEM == nil && caErr == nil && pinned {
		// No certificate to keep, but the CA still says who the server
		// is for the enrolment.
		id.caPEM = caPEM
	}
	// A token file others may read is not used: the node enrols again,
	// which makes the server forget that token.
	if tok, err := pki.ReadToken(filepath.Join(id.dir, "node.token")); err == nil && pki.TokenOf(tok, cfg.ID) {
		id.token = tok
	} else if !errors.Is(err, fs.ErrNotExist) {
		cfg.Log.Warn("node: its token is not used; enrolling again", "err", err)
	}
	if err := id.useTLS(cfg); err != nil {
		return nil, err
	}
	if id.due(time.Now()) || id.apiToken() == "" {
		if err := id.enrol(ctx, cfg); err != nil {
			return nil, err
		}
	}
	return id, nil
}

// set installs a certificate (DER and PEM) and the CA it chains to.
func (id *identity) set(der, certPEM, caPEM []byte) {
	id.mu.Lock()
	defer id.mu.Unlock()
	leaf, _ := pki.ParseCert(certPEM)
	id.cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: id.key, Leaf: leaf}
	id.certPEM, id.caPEM = certPEM, caPEM
}

// apiToken is the node's own API token ("" before it enrolled).
func (id *identity) apiToken() string {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.token
}

// due reports whether the certificate is missing or has a third of its
// life or less left.
func (id *identity) due(now time.Time) bool {
	id.mu.Lock()
	defer id.mu.Unlock()
	l := id.cert.Leaf
	return l == nil || now.After(l.NotAfter.Add(-l.NotAfter.Sub(l.NotBefore)/3))
}

// enrol sends a CSR for the node's key with the enrolment token and keeps
// the certificate it gets.
func (id *identity) enrol(ctx context.Context, cfg Config) error {
	if cfg.EnrollToken == "" {
		return errs.Unavailablef("node %s: no certificate and no enrolment token (pass --enroll-token-file, the server's STATE/enroll-token)", cfg.ID)
	}
	csr, err := pki.CSR(id.key, cfg.ID)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"id": cfg.ID, "pool": cfg.Pool, "csr": string(csr)})
	var ans enrolledAnswer
	if err := post(ctx, cfg, "/v1/nodes/enroll", cfg.EnrollToken, body, &ans); err != nil {
		return err
	}
	cert, err := pki.ParseCert([]byte(ans.Cert))
	if err != nil || !sameKey(cert, id.key) {
		return errs.Unavailablef("node %s: enrol with %s: the answer is not a certificate of this node's key", cfg.ID, cfg.Server)
	}
	if _, err := pki.CAPool([]byte(ans.CA)); err != nil {
		return errs.Wrap(errs.Unavailable, err, "node %s: enrol with %s: the fleet CA", cfg.ID, cfg.Server)
	}
	if cfg.CAPin != "" && pki.FingerprintPEM([]byte(ans.CA)) != cfg.CAPin {
		// Over plain HTTP this is the only check of who answered: a CA
		// of anyone else's would also be trusted for Temporal.
		return errs.Unavailablef("node %s: enrol with %s: the answer's fleet CA is not the one the enrolment token file pins (%s): refused", cfg.ID, cfg.Server, cfg.CAPin)
	}
	if !pki.TokenOf(ans.Token, cfg.ID) {
		return errs.Unavailablef("node %s: enrol with %s: the answer carries no token of this node (a server older than the node role? upgrade it)", cfg.ID, cfg.Server)
	}
	// The token first: the server forgot the one before it already.
	if err := pki.WriteToken(filepath.Join(id.dir, "node.token"), ans.Token); err != nil {
		return err
	}
	if err := pki.WriteCert(filepath.Join(id.dir, "node.pem"), []byte(ans.Cert)); err != nil {
		return err
	}
	if err := pki.WriteCert(filepath.Join(id.dir, "ca.pem"), []byte(ans.CA)); err != nil {
		return err
	}
	id.set(cert.Raw, []byte(ans.Cert), []byte(ans.CA))
	id.mu.Lock()
	id.token = ans.Token
	id.mu.Unlock()
	cfg.Log.Info("node enrolled", "id", cfg.ID, "expires", cert.NotAfter)
	return nil
}

// useTLS makes the node's API client check an https:// server against
// the fleet CA the node holds or, before it holds one, the CA the
// enrolment token file pins; without either it sends nothing there. A
// client whose transport the caller set is left as it is. A plain http://
// server beyond loopback is warned of: the tokens cross in clear.
func (id *identity) useTLS(cfg Config) error {
	u, err := url.Parse(cfg.Server)
	if err != nil {
		return errs.Invalidf("node: --server %q: %v", cfg.Server, err)
	}
	if cfg.HTTP == nil {
		return errs.Invalidf("node %s: no HTTP client", cfg.ID)
	}
	if u.Scheme != "https" {
		if ip := net.ParseIP(u.Hostname()); (ip == nil || !ip.IsLoopback()) && u.Hostname() != "localhost" {
			cfg.Log.Warn("node: the server is plain HTTP beyond loopback: the node's tokens cross in clear (use https://)", "server", cfg.Server)
		}
		return nil
	}
	if cfg.HTTP.Transport == nil {
		cfg.HTTP.Transport = &http.Transport{TLSHandshakeTimeout: 10 * time.Second,
			TLSClientConfig: pki.APIClientTLS(id.heldCA, cfg.CAPin)}
	}
	return nil
}

// apiTransport is the transport of a client of the server other than
// the identity's own (the file tree's), made before the node enrolled:
// nil (the default) for a plain http:// server; for https:// the chain is
// checked against the CA of STATE/pki/ca.pem, read at each handshake,
// or before there is one that the pin names, as useTLS does.
func apiTransport(cfg Config) http.RoundTripper {
	if u, err := url.Parse(cfg.Server); err != nil || u.Scheme != "https" {
		return nil
	}
	held := func() []byte {
		_, b, err := pki.ReadCert(filepath.Join(cfg.StateDir, "pki", "ca.pem"))
		if err != nil || cfg.CAPin != "" && pki.FingerprintPEM(b) != cfg.CAPin {
			return nil
		}
		return b
	}
	return &http.Transport{TLSHandshakeTimeout: 10 * time.Second, TLSClientConfig: pki.APIClientTLS(held, cfg.CAPin)}
}

// heldCA is the fleet CA the node holds (nil before its first enrolment).
func (id *identity) heldCA() []byte {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.caPEM
}

// tlsConfig is the node's mutual TLS to the frontend: the fleet CA as
// the only root, and the current certificate at every handshake, so a
// renewed one is used by the next connection.
func (id *identity) tlsConfig() (*tls.Config, error) {
	id.mu.Lock()
	ca := id.caPEM
	id.mu.Unlock()
	return pki.ClientTLS(ca, func() (*tls.Certificate, error) {
		id.mu.Lock()
		defer id.mu.Unlock()
		c := id.cert
		return &c, nil
	})
}

// sign signs the node's report of its tier, rows and findings, now, with
// a challenge the server issued for it: the server takes each challenge
// once, so the report is good for this registration only. Without one (a
// server older than the node) the report goes unchallenged, and a server
// that checks records it at tier 0.
func (id *identity) sign(ctx context.Context, cfg Config, rows []pki.Row) (*pki.Attestation, error) {
	id.mu.Lock()
	certPEM, token := id.certPEM, id.token
	id.mu.Unlock()
	var ch struct {
		Challenge string `json:"challenge"`
	}
	if err := post(ctx, cfg, "/v1/nodes/"+cfg.ID+"/challenge", token, []byte("{}"), &ch); err != nil {
		cfg.Log.Warn("node: no attestation challenge from the server", "err", err)
	}
	a, err := pki.Sign(id.key, certPEM, pki.Report{Node: cfg.ID, Pool: cfg.Pool, Tier: cfg.Tier, Rows: rows, Findings: cfg.Findings,
		Challenge: ch.Challenge}, time.Now())
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// sameKey reports whether cert certifies key.
func sameKey(cert *x509.Certificate, key *ecdsa.PrivateKey) bool {
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	return ok && pub.Equal(&key.PublicKey)
}

// errUnknownToken is a 401: the server does not know the token sent.
var errUnknownToken = errors.New("the server does not know this token")

// post sends body to path with the bearer token and decodes a 200 answer.
func post(ctx context.Context, cfg Config, path, token string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(cfg.Server, "/")+path, bytes.NewReader(body))
	if err != nil {
		return errs.Invalidf("node: --server %q: %v", cfg.Server, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := cfg.HTTP.Do(req)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "node: %s at %s", path, cfg.Server)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusUnauthorized {
		return errs.Wrap(errs.Unavailable, errUnknownToken, "node: %s at %s: %s: %s", path, cfg.Server, resp.Status, bytes.TrimSpace(b))
	}
	if resp.StatusCode != http.StatusOK {
		return errs.Unavailablef("node: %s at %s: %s: %s", path, cfg.Server, resp.Status, bytes.TrimSpace(b))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return errs.Unavailablef("node: %s at %s: an answer that is not JSON", path, cfg.Server)
	}
	return nil
}
