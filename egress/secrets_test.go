package egress_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-run/airlock/egress"
)

// testRoot is a CA standing in for the public roots: upstream servers get
// leaves from it, and the proxy trusts it through UpstreamRoots.
type testRoot struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestRoot(t testing.TB) *testRoot {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testRoot{cert: cert, key: key, pool: pool}
}

func (r *testRoot) leaf(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: names,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, r.cert, &key.PublicKey, r.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// seen is what an upstream received.
type seen struct {
	mu   sync.Mutex
	reqs []string // "METHOD PATH?QUERY auth=... body=..."
	// handler, when set, answers instead of the echo.
	handler atomic.Pointer[func(http.ResponseWriter, *http.Request)]
}

func (s *seen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.reqs, "\n")
}

// tlsUpstream serves HTTPS on loopback with a leaf for names, recording
// each request and echoing its Authorization header back.
func tlsUpstream(t testing.TB, root *testRoot, names ...string) (netip.AddrPort, *seen) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{root.leaf(t, names...)}})
	if err != nil {
		t.Fatal(err)
	}
	s := &seen{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, fmt.Sprintf("%s %s auth=%s body=%s host=%s", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), b, r.Host))
		s.mu.Unlock()
		if h := s.handler.Load(); h != nil {
			(*h)(w, r)
			return
		}
		fmt.Fprintf(w, "ok %s %s echo=%s", r.Method, r.URL.Path, r.Header.Get("Authorization"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return netip.MustParseAddrPort(ln.Addr().String()), s
}

const realToken = "ghp_R3alT0kenValue0123456789abcdefABCD"

// secretStack is a proxy with GITHUB_TOKEN bound to api.github.test, a
// read-only rule on rules.test, and other.test allowed without either.
type secretStack struct {
	*stack
	root        *testRoot
	ca          *egress.CA
	placeholder string
	bound       *seen
	other       *seen
	ruled       *seen
	port        int
	plain       *canary
}

func newSecretStack(t testing.TB) *secretStack {
	t.Helper()
	root := newTestRoot(t)
	ap, bound := tlsUpstream(t, root, "api.github.test")
	op, other := tlsUpstream(t, root, "other.test")
	rp, ruled := tlsUpstream(t, root, "rules.test")
	plain := loopbackCanary(t, "plain", "127.0.0.1:0")
	ph, err := egress.Phantom(realToken)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := egress.NewCA("test-box", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	o := policyOpts(t, []string{"api.github.test:*", "other.test:*", "rules.test:*", "plain.test:*", "127.0.0.1:*"}, nil)
	o.Resolver = newResolver(map[string][]string{"api.github.test": {"127.0.0.1"}, "other.test": {"127.0.0.1"},
		"rules.test": {"127.0.0.1"}, "plain.test": {"127.0.0.1"}})
	o.CA, o.UpstreamRoots = ca, root.pool
	o.Secrets = []egress.Secret{{Name: "GITHUB_TOKEN", Value: realToken, Placeholder: ph,
		Hosts: []string{"api.github.test"}, Header: "Authorization", Basic: true, Query: "access_token"}}
	o.Rules = []egress.RequestRule{{Rule: "net.allow[2]", Match: func(h string, _ int) bool { return h == "rules.test" },
		Methods: []string{"GET", "HEAD"}, Paths: []string{"/repos/acme/**"}, Reason: "read-only for this agent"}}
	s := newStack(t, o)
	if ap.Port() == op.Port() || ap.Port() == rp.Port() {
		t.Fatal("ports collide")
	}
	ss := &secretStack{stack: s, root: root, ca: ca, placeholder: ph, bound: bound, other: other, ruled: ruled, plain: plain}
	// Each upstream is reached by name at its own port.
	ss.port = int(ap.Port())
	ports["api.github.test"], ports["other.test"], ports["rules.test"] = int(ap.Port()), int(op.Port()), int(rp.Port())
	return ss
}

var ports = map[string]int{}

// client is an HTTPS client through the forwarder that trusts the box's
// bundle, as a program in the box does: the roots (the test root stands in
// for the system's) and the box's CA.
func (s *secretStack) client() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca.CertPEM())
	pool.AddCert(s.root.cert)
	pu, _ := url.Parse("http://" + s.httpAddr)
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu),
		TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
}

func (s *secretStack) url(host, rest string) string {
	return fmt.Sprintf("https://%s:%d%s", host, ports[host], rest)
}

func do(t *testing.T, c *http.Client, method, u, auth, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if body == "" {
		req.Body = nil
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return send(t, c, req)
}

// TestPhantomCredential: the bound host receives the real token while the
// box sends and reads back only the placeholder; the placeholder anywhere
// else is refused and never reaches the upstream.
func TestPhantomCredential(t *testing.T) {
	leakCheck(t)
	s := newSecretStack(t)
	c := s.client()
	ph := s.placeholder
	if len(ph) != len(realToken) || !strings.HasPrefix(ph, "ghp_") || ph == realToken {
		t.Fatalf("placeholder %q is not of the token's shape", ph)
	}

	code, body := do(t, c, "GET", s.url("api.github.test", "/user"), "Bearer "+ph, "")
	if code != 200 || !strings.Contains(s.bound.all(), "auth=Bearer "+realToken) {
		t.Fatalf("bound host: %d %q; upstream saw %q", code, body, s.bound.all())
	}
	if strings.Contains(body, realToken) || !strings.Contains(body, "echo=Bearer "+ph) {
		t.Fatalf("the echoed credential reached the box as %q", body)
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+ph))
	if code, _ := do(t, c, "GET", s.url("api.github.test", "/repo.git/info/refs"), basic, ""); code != 200 ||
		!strings.Contains(s.bound.all(), base64.StdEncoding.EncodeToString([]byte("x-access-token:"+realToken))) {
		t.Fatalf("basic auth: %d; upstream saw %q", code, s.bound.all())
	}
	if code, _ := do(t, c, "GET", s.url("api.github.test", "/q?access_token="+ph), "", ""); code != 200 ||
		!strings.Contains(s.bound.all(), "access_token="+realToken) {
		t.Fatalf("query: %d; upstream saw %q", code, s.bound.all())
	}

	before := s.bound.all()
	refused := []struct {
		name                           string
		method, host, path, auth, body string
	}{
		{"an intercepted host without the binding, in the header", "GET", "rules.test", "/repos/acme/x", "Bearer " + ph, ""},
		{"an intercepted host without the binding, basic", "GET", "rules.test", "/repos/acme/x", basic, ""},
		{"bound host, in the path", "GET", "api.github.test", "/x/" + ph, "", ""},
		{"bound host, percent-encoded in the path", "GET", "api.github.test", "/x/%" + fmt.Sprintf("%02x", ph[0]) + ph[1:], "", ""},
		{"bound host, another query parameter", "GET", "api.github.test", "/q?leak=" + ph, "", ""},
		{"bound host, in the body", "POST", "api.github.test", "/gists", "", `{"content":"` + ph + `"}`},
		{"ruled host, in the query", "GET", "rules.test", "/repos/acme/x?t=" + ph, "", ""},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, c, tc.method, s.url(tc.host, tc.path), tc.auth, tc.body)
			if code != 403 || !strings.Contains(body, "placeholder of GITHUB_TOKEN") {
				t.Fatalf("got %d %q, want a 403 naming the placeholder", code, body)
			}
		})
	}
	if s.bound.all() != before || s.ruled.all() != "" {
		t.Fatalf("a refused request reached an upstream:\nbound %q\nruled %q", s.bound.all(), s.ruled.all())
	}
	// Plain HTTP: a placeholder is never written into cleartext.
	st, b, err := s.httpGet(fmt.Sprintf("http://plain.test:%d/?t=%s", s.plain.port(), ph), false)
	if err != nil || st != 403 {
		t.Fatalf("plain http with a placeholder: %d %q %v", st, b, err)
	}
	s.plain.mustBeUntouched(t)

	// The audit records name the secret, never its value.
	used := false
	for _, e := range s.audited() {
		if strings.Contains(fmt.Sprintf("%+v", e), realToken) {
			t.Fatalf("an audit record holds the real value: %+v", e)
		}
		if len(e.Secrets) == 1 && e.Secrets[0] == "GITHUB_TOKEN" {
			used = true
		}
	}
	if !used {
		t.Fatal("no audit record names the secret used")
	}
}

// TestLeakToAnotherHost is the attack: a program in the box sends the
// variable it holds to another allowed host over an opaque tunnel. In the
// old shape the variable is the token, and the host receives it; now it is
// the placeholder, which that host receives and cannot use, and which an
// intercepted or plain-HTTP host refuses outright.
func TestLeakToAnotherHost(t *testing.T) {
	s := newSecretStack(t)
	c := s.client()
	if code, _ := do(t, c, "GET", s.url("other.test", "/"), "Bearer "+realToken, ""); code != 200 ||
		!strings.Contains(s.other.all(), realToken) {
		t.Fatalf("old shape: the token should reach other.test; it saw %q", s.other.all())
	}
	t.Log("old shape: a box holding the token leaks it to any allowed host")
	if code, _ := do(t, c, "GET", s.url("other.test", "/again"), "Bearer "+s.placeholder, ""); code != 200 {
		t.Fatalf("opaque tunnel: %d", code)
	}
	last := s.other.all()[strings.LastIndex(s.other.all(), "\n")+1:]
	if !strings.Contains(last, s.placeholder) || strings.Contains(last, realToken) {
		t.Fatalf("other.test saw %q, want only the placeholder", last)
	}
	if _, err := egress.Phantom("short-value"); err == nil {
		t.Fatal("a short value was given a guessable placeholder")
	}
}

// TestRequestRules: GET under the allowed path passes, POST and a path
// outside the glob are refused with the rule's reason, and path spellings
// that could be read differently upstream are refused.
func TestRequestRules(t *testing.T) {
	leakCheck(t)
	s := newSecretStack(t)
	c := s.client()
	if code, body := do(t, c, "GET", s.url("rules.test", "/repos/acme/widget/issues"), "", ""); code != 200 {
		t.Fatalf("allowed GET: %d %q", code, body)
	}
	for _, tc := range []struct{ name, method, path string }{
		{"post", "POST", "/repos/acme/widget/issues"},
		{"outside the glob", "GET", "/repos/other/x"},
		{"dot-dot", "GET", "/repos/acme/../other/x"},
		{"encoded slash", "GET", "/repos/acme%2F..%2Fother/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.method == "POST" {
				body = strings.NewReader("x")
			}
			req, _ := http.NewRequest(tc.method, s.url("rules.test", "/"), body)
			req.URL.Opaque = tc.path // keep the spelling as is
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 403 {
				t.Fatalf("got %d %q, want 403", resp.StatusCode, b)
			}
			if tc.name == "post" && !strings.Contains(string(b), "read-only for this agent") {
				t.Fatalf("refusal %q lacks the rule's reason", b)
			}
		})
	}
	if n := strings.Count(s.ruled.all(), "\n") + 1; n != 1 {
		t.Fatalf("upstream saw %d requests, want only the allowed one: %q", n, s.ruled.all())
	}
}

// TestForgedHostAndSNI: after TLS is terminated, a Host header or a TLS
// server name other than the CONNECT target is refused.
func TestForgedHostAndSNI(t *testing.T) {
	s := newSecretStack(t)
	c := s.client()
	req, _ := http.NewRequest("GET", s.url("api.github.test", "/user"), nil)
	req.Host = fmt.Sprintf("other.test:%d", ports["other.test"])
	req.Header.Set("Authorization", "Bearer "+s.placeholder)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "Host header") {
		t.Fatalf("forged Host: %d %q", resp.StatusCode, b)
	}
	// SNI other.test inside a CONNECT to api.github.test.
	conn, err := net.Dial("tcp", s.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT api.github.test:%d HTTP/1.1\r\nHost: x\r\n\r\n", ports["api.github.test"])
	br := bufio.NewReader(conn)
	if r, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || r.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", r, err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca.CertPEM())
	tc := tls.Client(&readConn{conn, br}, &tls.Config{ServerName: "other.test", RootCAs: pool})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a TLS server name other than the CONNECT target was accepted")
	}
	if s.bound.all() != "" {
		t.Fatalf("upstream saw %q", s.bound.all())
	}
}

type readConn struct {
	net.Conn
	r io.Reader
}

func (c *readConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// TestUpstreamVerified: an upstream whose certificate the roots do not
// vouch for is never sent the credential.
func TestUpstreamVerified(t *testing.T) {
	s := newSecretStack(t)
	c := s.client()
	// The proxy trusts the test root; a server with a self-made root is
	// refused.
	other := newTestRoot(t)
	ap, got := tlsUpstream(t, other, "api.github.test")
	ports["api.github.test"] = int(ap.Port())
	code, body := do(t, c, "GET", s.url("api.github.test", "/user"), "Bearer "+s.placeholder, "")
	if code != 502 || got.all() != "" {
		t.Fatalf("unverified upstream: %d %q; it saw %q", code, body, got.all())
	}
}

// TestCurlThroughInterception runs the real curl through the forwarder,
// trusting only the box's bundle, with the placeholder in its header.
func TestCurlThroughInterception(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	s := newSecretStack(t)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, s.ca.Bundle(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(curl, "-sS", "--max-time", "20", "-x", "http://"+s.httpAddr, "--cacert", bundle,
		"-H", "Authorization: token "+s.placeholder, s.url("api.github.test", "/user")).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok GET /user") || strings.Contains(string(out), realToken) {
		t.Fatalf("curl: %v %q", err, out)
	}
	if !strings.Contains(s.bound.all(), "auth=token "+realToken) {
		t.Fatalf("upstream saw %q", s.bound.all())
	}
	out, _ = exec.Command(curl, "-sS", "--max-time", "20", "-x", "http://"+s.httpAddr, "--cacert", bundle,
		"-X", "POST", "-d", "x", s.url("rules.test", "/repos/acme/x")).CombinedOutput()
	if !strings.Contains(string(out), "read-only for this agent") {
		t.Fatalf("curl POST to a read-only host: %q", out)
	}
}
