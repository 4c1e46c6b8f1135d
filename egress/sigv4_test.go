package egress_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/airlock-run/airlock/egress"
)

const (
	realKeyID        = "AKIAIOSFODNN7EXAMPLE"
	realSecret       = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	realSessionToken = "IQoJb3JpZ2luX2VjEXAMPLESessionToken0123456789abcdefABCDEF"
)

// awsUpstream stands in for an AWS endpoint: it checks each request's
// SigV4 signature with aws-sdk-go-v2's signer and the real key (an
// implementation independent of the proxy's), answering 200 only when it
// verifies and 403 otherwise.
type awsUpstream struct {
	mu  sync.Mutex
	got []string
}

func (u *awsUpstream) all() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return strings.Join(u.got, "\n")
}

func (u *awsUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	auth := r.Header.Get("Authorization")
	ok, why := verifySigV4(r, body, realKeyID, realSecret)
	u.mu.Lock()
	u.got = append(u.got, fmt.Sprintf("%s %s verified=%v auth=%s token=%s", r.Method, r.URL.RequestURI(), ok, auth, r.Header.Get("X-Amz-Security-Token")))
	u.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "<Error><Code>SignatureDoesNotMatch</Code><Message>%s</Message></Error>", why)
		return
	}
	fmt.Fprintf(w, "signed by %s: %s %s", realKeyID, r.Method, r.URL.Path)
}

// verifySigV4 signs a copy of r holding only the headers r's signature
// names, at r's X-Amz-Date, with the SDK, and compares.
func verifySigV4(r *http.Request, body []byte, keyID, secret string) (bool, string) {
	auth := r.Header.Get("Authorization")
	var cred, signed string
	for part := range strings.SplitSeq(strings.TrimPrefix(auth, "AWS4-HMAC-SHA256 "), ", ") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = v
		}
	}
	f := strings.Split(cred, "/")
	if len(f) != 5 || f[0] != keyID {
		return false, "credential " + cred
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return false, "date"
	}
	c, _ := http.NewRequest(r.Method, "https://"+r.Host+r.URL.RequestURI(), nil)
	c.URL.RawPath = r.URL.EscapedPath()
	for h := range strings.SplitSeq(signed, ";") {
		if h != "host" {
			c.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	if strings.Contains(signed, "content-length") {
		c.ContentLength = int64(len(body))
	}
	hash := r.Header.Get("X-Amz-Content-Sha256")
	if hash == "" {
		s := sha256.Sum256(body)
		hash = hex.EncodeToString(s[:])
	}
	s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = f[3] == "s3" })
	if err := s.SignHTTP(context.Background(), aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret}, c, hash, f[3], f[2], at); err != nil {
		return false, err.Error()
	}
	if c.Header.Get("Authorization") != auth {
		return false, "signature mismatch"
	}
	return true, ""
}

// awsStack binds AWS_SECRET_ACCESS_KEY (with AWS_ACCESS_KEY_ID) to
// s3.amazonaws.com and sts.amazonaws.com, both served on loopback by an
// awsUpstream with certificates from a test root; other.test is allowed
// without a binding.
type awsStack struct {
	*stack
	ca                *egress.CA
	root              *testRoot
	phKeyID, phSecret string
	phToken           string
	up, other         *awsUpstream
	port, otherPort   int
}

func newAWSStack(t testing.TB) *awsStack {
	t.Helper()
	root := newTestRoot(t)
	serve := func(h http.Handler, names ...string) int {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{root.leaf(t, names...)}})
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return int(netip.MustParseAddrPort(ln.Addr().String()).Port())
	}
	up, other := &awsUpstream{}, &awsUpstream{}
	port := serve(up, "s3.amazonaws.com", "sts.amazonaws.com")
	otherPort := serve(other, "other.test")
	phID, err := egress.Phantom(realKeyID)
	if err != nil {
		t.Fatal(err)
	}
	phSecret, err := egress.Phantom(realSecret)
	if err != nil {
		t.Fatal(err)
	}
	phToken, err := egress.Phantom(realSessionToken)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := egress.NewCA("aws-box", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	o := policyOpts(t, []string{"s3.amazonaws.com:*", "sts.amazonaws.com:*", "other.test:*", "127.0.0.1:*"}, nil)
	o.Resolver = newResolver(map[string][]string{"s3.amazonaws.com": {"127.0.0.1"}, "sts.amazonaws.com": {"127.0.0.1"}, "other.test": {"127.0.0.1"}})
	o.CA, o.UpstreamRoots = ca, root.pool
	hosts := []string{"s3.amazonaws.com", "sts.amazonaws.com"}
	o.Secrets = []egress.Secret{
		{Name: "AWS_ACCESS_KEY_ID", Value: realKeyID, Placeholder: phID, Hosts: hosts},
		{Name: "AWS_SECRET_ACCESS_KEY", Value: realSecret, Placeholder: phSecret, Hosts: hosts, SigV4KeyID: "AWS_ACCESS_KEY_ID"},
		{Name: "AWS_SESSION_TOKEN", Value: realSessionToken, Placeholder: phToken, Hosts: hosts, Header: "X-Amz-Security-Token"},
	}
	return &awsStack{stack: newStack(t, o), ca: ca, root: root, phKeyID: phID, phSecret: phSecret, phToken: phToken, up: up, other: other, port: port, otherPort: otherPort}
}

func (s *awsStack) client() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca.CertPEM())
	pool.AddCert(s.root.cert)
	pu, _ := url.Parse("http://" + s.httpAddr)
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu),
		TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
}

// signed builds a request the way an AWS SDK in the box does, signed with
// keyID and secret.
func signed(t *testing.T, method, u, body, service string, hashHeader bool, keyID, secret string) *http.Request {
	return signedWith(t, method, u, body, service, hashHeader, aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret})
}

func signedWith(t *testing.T, method, u, body, service string, hashHeader bool, creds aws.Credentials) *http.Request {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if body == "" {
		req.Body, req.ContentLength = nil, 0
	}
	sum := sha256.Sum256([]byte(body))
	hash := hex.EncodeToString(sum[:])
	if hashHeader {
		req.Header.Set("X-Amz-Content-Sha256", hash)
	}
	if service != "s3" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	}
	s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = service == "s3" })
	if err := s.SignHTTP(context.Background(), creds, req, hash, service, "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	return req
}

func send(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSigV4Resign: requests the box signs with its placeholder AWS keys
// reach the AWS endpoint signed with the real keys (verified there by
// the SDK's signer), S3's single-encoded paths and other services' double
// encoding, a hashed and an unhashed body alike. Signed with the real key
// (as a box holding it would) the old shape works, which is why the key
// must not be in the box; signed with the placeholder, without the proxy,
// the endpoint refuses it.
func TestSigV4Resign(t *testing.T) {
	leakCheck(t)
	s := newAWSStack(t)
	c := s.client()
	s3 := fmt.Sprintf("https://s3.amazonaws.com:%d", s.port)
	sts := fmt.Sprintf("https://sts.amazonaws.com:%d", s.port)

	// Without re-signing, a placeholder signature is worthless upstream.
	direct := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.root.pool, ServerName: "s3.amazonaws.com"}}}
	req := signed(t, "GET", s3+"/bucket/key", "", "s3", true, s.phKeyID, s.phSecret)
	req.URL.Host = fmt.Sprintf("127.0.0.1:%d", s.port)
	if code, body := send(t, direct, req); code != 403 {
		t.Fatalf("a placeholder signature sent straight to the endpoint: %d %q, want 403", code, body)
	}
	s.up.mu.Lock()
	s.up.got = nil
	s.up.mu.Unlock()

	for _, tc := range []struct {
		name, method, url, body, service string
		hashHeader                       bool
	}{
		{"s3 get", "GET", s3 + "/my-bucket/some%20dir/obj.txt?versionId=3&list-type=2&prefix=a%2Fb", "", "s3", true},
		{"s3 put", "PUT", s3 + "/my-bucket/new-object", "hello object", "s3", true},
		{"sts post", "POST", sts + "/", "Action=GetCallerIdentity&Version=2011-06-15", "sts", false},
		{"sts path escaping", "GET", sts + "/a%20b/c?Action=List&Marker=x%2By", "", "sts", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := send(t, c, signed(t, tc.method, tc.url, tc.body, tc.service, tc.hashHeader, s.phKeyID, s.phSecret))
			// The endpoint echoes the key ID; the box reads back only its
			// placeholder.
			if code != 200 || !strings.Contains(body, "signed by "+s.phKeyID) || strings.Contains(body, realKeyID) {
				t.Fatalf("%d %q; upstream saw %s", code, body, s.up.all())
			}
		})
	}
	// Temporary credentials: the session token's placeholder, which the
	// signature covers, becomes the real token before the re-signing.
	t.Run("s3 get with a session token", func(t *testing.T) {
		req := signedWith(t, "GET", s3+"/my-bucket/k", "", "s3", true,
			aws.Credentials{AccessKeyID: s.phKeyID, SecretAccessKey: s.phSecret, SessionToken: s.phToken})
		if code, body := send(t, c, req); code != 200 || !strings.Contains(s.up.all(), "token="+realSessionToken) {
			t.Fatalf("%d %q; upstream saw %s", code, body, s.up.all())
		}
	})
	got := s.up.all()
	if strings.Contains(got, s.phKeyID) || !strings.Contains(got, "Credential="+realKeyID+"/") {
		t.Fatalf("the endpoint saw %s", got)
	}
	for _, e := range s.audited() {
		if e.Proto == "https" && e.Allow && !strings.Contains(strings.Join(e.Secrets, ","), "AWS_SECRET_ACCESS_KEY") {
			t.Errorf("a re-signed request's record names no secret: %+v", e)
		}
	}
}

// TestSigV4Refusals: what cannot be re-signed faithfully, or carries a
// placeholder where it may not go, is refused and never reaches a host.
func TestSigV4Refusals(t *testing.T) {
	s := newAWSStack(t)
	c := s.client()
	s3 := fmt.Sprintf("https://s3.amazonaws.com:%d", s.port)
	other := fmt.Sprintf("https://other.test:%d", s.otherPort)
	streaming := signed(t, "PUT", s3+"/b/k", "data", "s3", true, s.phKeyID, s.phSecret)
	streaming.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
	tampered := signed(t, "GET", s3+"/b/k", "", "s3", true, s.phKeyID, s.phSecret)
	tampered.URL.Path = "/b/other"
	presigned, _ := http.NewRequest("GET", s3+"/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="+s.phKeyID+"%2F20260101%2Fus-east-1%2Fs3%2Faws4_request", nil)
	notSigV4, _ := http.NewRequest("GET", s3+"/b/k", nil)
	notSigV4.Header.Set("Authorization", "Bearer "+s.phSecret)
	for _, tc := range []struct {
		name string
		req  *http.Request
		want string
	}{
		{"signed with another secret", signed(t, "GET", s3+"/b/k", "", "s3", true, s.phKeyID, "not-the-placeholder-secret-0123456789abcd"), "does not verify"},
		{"another key id", signed(t, "GET", s3+"/b/k", "", "s3", true, "AKIAOTHERKEY00000000", s.phSecret), "not the placeholder of AWS_ACCESS_KEY_ID"},
		{"tampered after signing", tampered, "does not verify"},
		{"streaming payload", streaming, "streaming upload"},
		{"placeholder key id in a presigned query", presigned, "placeholder of AWS_ACCESS_KEY_ID in the URL query"},
		{"secret placeholder as a bearer token", notSigV4, "not an AWS SigV4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := send(t, c, tc.req)
			if code != 403 || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %q, want 403 naming %q", code, body, tc.want)
			}
		})
	}
	if s.up.all() != "" {
		t.Fatalf("a refused request reached the endpoint: %q", s.up.all())
	}
	// Another allowed host, reached through an opaque tunnel, gets the
	// placeholder signature as the box made it: worthless there.
	if code, _ := send(t, c, signed(t, "GET", other+"/b/k", "", "s3", true, s.phKeyID, s.phSecret)); code != 403 ||
		!strings.Contains(s.other.all(), "Credential="+s.phKeyID) || strings.Contains(s.other.all(), realKeyID) {
		t.Fatalf("another host: %d, it saw %q", code, s.other.all())
	}
}
