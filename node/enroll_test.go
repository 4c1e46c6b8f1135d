package node

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/jobs/pki"
)

const operatorToken = "0123456789abcdef0123456789abcdef"

// enrolServer is the real API with enrolment on; its certificates live
// for lifetime.
func enrolServer(t *testing.T, lifetime time.Duration) (*httptest.Server, *pki.CA) {
	ca, err := pki.LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(api.New(api.Config{Token: operatorToken, CA: ca,
		EnrollToken: "fedcba9876543210fedcba9876543210", NodeCertLifetime: lifetime, Temporal: "127.0.0.1:1"}).Handler())
	t.Cleanup(s.Close)
	return s, ca
}

func enrolConfig(s *httptest.Server, dir string) Config {
	return Config{Server: s.URL, ID: "n1", Pool: "ci", StateDir: dir, EnrollToken: "fedcba9876543210fedcba9876543210",
		HTTP: &http.Client{Timeout: 5 * time.Second}, Log: slog.New(slog.DiscardHandler)}
}

func TestEnrolKeepsTheKeyAndRenews(t *testing.T) {
	s, ca := enrolServer(t, time.Hour)
	dir := t.TempDir()
	cfg := enrolConfig(s, dir)
	id, err := loadIdentity(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"node.key", "node.pem", "ca.pem"} {
		st, err := os.Stat(filepath.Join(dir, "pki", f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", f, err, st.Mode().Perm())
		}
	}
	if who, err := ca.Verify(id.cert.Leaf); err != nil || who.Node != "n1" || who.Pool != "ci" {
		t.Fatalf("certificate: %v, %v", who, err)
	}
	first := id.cert.Leaf.SerialNumber

	// A restart keeps the key and the certificate: no enrolment, so no
	// token is needed.
	cfg.EnrollToken = ""
	again, err := loadIdentity(context.Background(), cfg)
	if err != nil || again.cert.Leaf.SerialNumber.Cmp(first) != 0 || !again.key.Equal(id.key) {
		t.Fatalf("restart: %v; want the same key and certificate", err)
	}

	// Near its end the certificate is due, and enrolling again keeps the key.
	if id.due(time.Now()) || !id.due(id.cert.Leaf.NotAfter.Add(-time.Minute)) {
		t.Errorf("due: want false now and true a minute before the end")
	}
	cfg.EnrollToken = "fedcba9876543210fedcba9876543210"
	if err := id.enrol(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if id.cert.Leaf.SerialNumber.Cmp(first) == 0 {
		t.Errorf("renewal kept the old certificate")
	}

	// A certificate for another node id is not reused: the node enrols.
	cfg.ID = "n2"
	if _, err := loadIdentity(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	c, _, _ := pki.ReadCert(filepath.Join(dir, "pki", "node.pem"))
	if who, _ := pki.IdentityOf(c); who.Node != "n2" {
		t.Errorf("after a change of id the certificate names %v", who)
	}
}

func TestEnrolWithAWrongTokenFails(t *testing.T) {
	s, _ := enrolServer(t, time.Hour)
	cfg := enrolConfig(s, t.TempDir())
	cfg.EnrollToken = "wrong-token-wrong-token-wrong-token"
	if _, err := loadIdentity(context.Background(), cfg); err == nil {
		t.Fatal("enrolled with a wrong token")
	}
}

// TestNodeHoldsItsOwnTokenOnly: enrolment leaves the node a token of its
// own (0600, beside its key), never the operator's; a restart reads it
// back, a renewal rotates it, a token file others may read is replaced,
// and a token the server forgot is replaced by enrolling again.
func TestNodeHoldsItsOwnTokenOnly(t *testing.T) {
	s, _ := enrolServer(t, time.Hour)
	dir := t.TempDir()
	cfg := enrolConfig(s, dir)
	id, err := loadIdentity(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pki", "node.token")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("node.token: %v; want it, 0600", err)
	}
	first := id.apiToken()
	if !pki.TokenOf(first, "n1") {
		t.Fatalf("token %q: not node n1's", first)
	}
	// The operator's token is nowhere in the node's state directory.
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), operatorToken) {
				t.Errorf("%s holds the operator's token", p)
			}
		}
		return nil
	})

	cfg.EnrollToken = ""
	again, err := loadIdentity(context.Background(), cfg)
	if err != nil || again.apiToken() != first {
		t.Fatalf("restart: %v, token %q; want the same token without enrolling", err, again.apiToken())
	}

	cfg.EnrollToken = "fedcba9876543210fedcba9876543210"
	if err := id.enrol(context.Background(), cfg); err != nil || id.apiToken() == first {
		t.Fatalf("renewal: %v; want a new token", err)
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != id.apiToken() {
		t.Errorf("node.token holds %q, want the renewed token", b)
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	open, err := loadIdentity(context.Background(), cfg)
	if err != nil || open.apiToken() == id.apiToken() {
		t.Fatalf("a token others may read: %v; want a new enrolment", err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("node.token is %v after enrolling again, want 0600", st.Mode().Perm())
	}

	// The server forgets the token (another enrolment rotated it): the
	// registration's 401 makes the node enrol again, once, and register.
	a := &attesting{id: open}
	stale := open.apiToken()
	if err := open.enrol(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	open.mu.Lock()
	open.token = stale
	open.mu.Unlock()
	cfg.Tier = 0
	if _, err := a.register(context.Background(), cfg, Registration{ID: "n1", Pool: "ci", Queues: []string{"node.n1"}}); err != nil {
		t.Fatalf("register with a forgotten token: %v; want it to enrol again and register", err)
	}
	if open.apiToken() == stale {
		t.Error("the forgotten token is still used")
	}
}
