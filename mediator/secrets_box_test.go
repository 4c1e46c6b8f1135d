package mediator

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// upstream is an HTTPS server on one loopback address with a leaf from a
// test root, recording what it receives.
type upstream struct {
	port    int
	mu      sync.Mutex
	got     []string
	handler http.Handler
}

func (u *upstream) all() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return strings.Join(u.got, "\n")
}

func startUpstream(t *testing.T, rootCert *x509.Certificate, rootKey *ecdsa.PrivateKey, ip string) *upstream {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: ip},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP(ip)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, rootCert, &key.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", ip+":0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	u := &upstream{port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.got = append(u.got, fmt.Sprintf("%s %s auth=%s", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization")))
		h := u.handler
		u.mu.Unlock()
		if h != nil {
			h.ServeHTTP(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "ok %s %s body=%d\n", r.Method, r.URL.Path, len(b))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return u
}

// newTestRoot is a CA standing in for the public roots: upstreams get
// leaves from it, and the kernel trusts it through egressRoots.
func newTestRoot() (*x509.Certificate, *ecdsa.PrivateKey) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rt := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, _ := x509.CreateCertificate(rand.Reader, rt, rt, &key.PublicKey, key)
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

// TestPhantomInRealBox runs curl and python3 in a real tier-1 box whose
// policy binds GITHUB_TOKEN to one host: the box's environment holds only
// the placeholder, the bound host receives the real token, another
// allowed host receives only the placeholder, a read-only host refuses a
// POST with its reason, and the box CA's key is on no disk.
func TestPhantomInRealBox(t *testing.T) {
	testsupport.Require(t, testsupport.Root, testsupport.Program("curl"))
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "tier 1 unavailable here: %s", r.Why)
	}
	rootCert, rootKey := newTestRoot()
	bound := startUpstream(t, rootCert, rootKey, "127.0.0.1")
	other := startUpstream(t, rootCert, rootKey, "127.0.0.2")
	ruled := startUpstream(t, rootCert, rootKey, "127.0.0.3")

	const token = "ghp_Z9yXwVuTsRqPoNmLkJiHgFeDcBa0123456789"
	doc := fmt.Sprintf(`
shell: {allow: [sh, curl, env, cat, grep, python3, tail, sleep]}
net:
  allow:
    - "127.0.0.1:%d"
    - "127.0.0.2:%d"
    - {host: "127.0.0.3:%d", methods: [GET, HEAD], paths: ["/repos/acme/**"], reason: "read-only for this agent"}
env: {allow: [GITHUB_TOKEN]}
secrets:
  GITHUB_TOKEN: {hosts: ["127.0.0.1"], header: "Authorization: Bearer {}"}
`, bound.port, other.port, ruled.port)
	w := policy.World{Workdir: t.TempDir(), Home: "/home/someone", PATH: strings.Split(BoxPATH, ":"), LookPath: exec.LookPath}
	environ := []string{"GITHUB_TOKEN=" + token, "PATH=" + BoxPATH}

	// The old shape: without the binding, env.allow puts the token itself
	// in the box, and any allowed host can be sent it.
	old, err := policy.Parse("old.yaml", []byte(doc[:strings.Index(doc, "secrets:")]))
	if err != nil {
		t.Fatal(err)
	}
	k0, err := New(old, w, Options{Tier: sandbox.Tier1, Exe: testsupport.AirlockBin(t), Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	var out0 strings.Builder
	if _, err := k0.Exec(context.Background(), Call{Kind: KindShell, Command: fmt.Sprintf(
		`curl -sSk --max-time 20 -H "Authorization: Bearer $GITHUB_TOKEN" https://127.0.0.2:%d/old`, other.port)},
		ExecOptions{Stdout: &out0, Stderr: &out0}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(other.all(), token) {
		t.Fatalf("old shape: the token should have reached another host; it saw %q (%s)", other.all(), out0.String())
	}
	other.mu.Lock()
	other.got = nil
	other.mu.Unlock()

	p, err := policy.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the egress directory is made here
	k, err := New(p, w, Options{Tier: sandbox.Tier1, Exe: testsupport.AirlockBin(t), Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(rootCert)
	k.egressRoots = pool

	// While the box runs, everything airlock wrote under TMPDIR is read.
	stopScan := make(chan struct{})
	var seenFiles []string
	var keyOnDisk string
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		for {
			filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					b, _ := os.ReadFile(path)
					if strings.Contains(string(b), "PRIVATE KEY") || strings.Contains(string(b), token) {
						keyOnDisk = path
					}
					if !strings.Contains(strings.Join(seenFiles, " "), d.Name()) {
						seenFiles = append(seenFiles, d.Name())
					}
				}
				return nil
			})
			select {
			case <-stopScan:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	script := fmt.Sprintf(`
env | grep -E '^(GITHUB_TOKEN|SSL_CERT_FILE|CURL_CA_BUNDLE|REQUESTS_CA_BUNDLE)='
echo "--- bound"; curl -sS --max-time 20 -H "Authorization: Bearer $GITHUB_TOKEN" https://127.0.0.1:%[1]d/user
echo "--- other"; curl -sSk --max-time 20 -H "Authorization: Bearer $GITHUB_TOKEN" https://127.0.0.2:%[2]d/leak
echo "--- get"; curl -sS --max-time 20 https://127.0.0.3:%[3]d/repos/acme/widget
echo "--- post"; curl -sS --max-time 20 -X POST -d x https://127.0.0.3:%[3]d/repos/acme/widget
echo "--- python"; python3 -c 'import os, urllib.request as u; r = u.Request("https://127.0.0.1:%[1]d/py", headers={"Authorization": "Bearer " + os.environ["GITHUB_TOKEN"]}); print(u.urlopen(r, timeout=20).read().decode().strip())' 2>&1 | tail -1
echo "--- key"; grep -c "PRIVATE KEY" "$SSL_CERT_FILE"
sleep 0.3
`, bound.port, other.port, ruled.port)
	var out strings.Builder
	res, err := k.Exec(context.Background(), Call{Kind: KindShell, Command: script}, ExecOptions{Stdout: &out, Stderr: &out})
	close(stopScan)
	<-scanned
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	o := out.String()
	t.Logf("exit %d\n%s", res.Result.ExitCode, o)
	if strings.Contains(o, token) {
		t.Fatal("the real token reached the box")
	}
	if !strings.Contains(o, "GITHUB_TOKEN=ghp_") || !strings.Contains(o, "SSL_CERT_FILE="+BoxCAPath) {
		t.Fatalf("the box's environment lacks the placeholder or the CA bundle:\n%s", o)
	}
	if !strings.Contains(o, "--- bound\nok GET /user") || !strings.Contains(bound.all(), "auth=Bearer "+token) {
		t.Fatalf("the bound host did not get the real token; it saw %q", bound.all())
	}
	if strings.Contains(other.all(), token) || !strings.Contains(other.all(), "auth=Bearer ghp_") {
		t.Fatalf("another host saw %q, want only the placeholder", other.all())
	}
	if !strings.Contains(o, "--- get\nok GET /repos/acme/widget") || !strings.Contains(o, "read-only for this agent") ||
		strings.Contains(ruled.all(), "POST") {
		t.Fatalf("request rules: box saw\n%s\nupstream saw %q", o, ruled.all())
	}
	if !strings.Contains(o, "--- python\nok GET /py") {
		t.Errorf("python3 urllib through the bundle failed:\n%s", o)
	}
	if !strings.Contains(o, "--- key\n0") {
		t.Errorf("the bundle in the box holds a private key:\n%s", o)
	}
	if keyOnDisk != "" || !strings.Contains(strings.Join(seenFiles, " "), "ca.pem") {
		t.Fatalf("disk scan: key or token in %q; files seen %v (ca.pem must be among them)", keyOnDisk, seenFiles)
	}
}

// TestGitOverPhantomBasic clones, commits, pushes and fetches over
// `https://…` in a real tier-1 box against git's own smart-HTTP server: git
// sends the placeholder from the URL's user information as a Basic
// credential, the proxy writes the real token into it, and the server,
// which accepts only the real token, takes the push.
func TestGitOverPhantomBasic(t *testing.T) {
	testsupport.Require(t, testsupport.Root, testsupport.Program("git"))
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "tier 1 unavailable here: %s", r.Why)
	}
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("no %s", backend)
	}
	const token = "ghs_Q1w2E3r4T5y6U7i8O9p0AaSsDdFfGgHhJjKk"
	repos := t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	work := t.TempDir()
	git(work, "init", "-q", "-b", "main")
	git(work, "commit", "-q", "--allow-empty", "-m", "one")
	git(repos, "clone", "-q", "--bare", work, "widget.git")
	git(filepath.Join(repos, "widget.git"), "config", "http.receivepack", "true")

	rootCert, rootKey := newTestRoot()
	srv := startUpstream(t, rootCert, rootKey, "127.0.0.1")
	cgiHandler := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1"}}
	srv.mu.Lock()
	srv.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, pw, ok := r.BasicAuth(); !ok || u != "x-access-token" || pw != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		cgiHandler.ServeHTTP(w, r)
	})
	srv.mu.Unlock()

	doc := fmt.Sprintf(`
shell: {allow: [sh, git]}
net: {allow: ["127.0.0.1:%d"]}
secrets:
  GH_GIT_TOKEN: {hosts: ["127.0.0.1"], basic: "x-access-token:{}"}
`, srv.port)
	p, err := policy.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	w := policy.World{Workdir: t.TempDir(), Home: "/home/someone", PATH: strings.Split(BoxPATH, ":"), LookPath: exec.LookPath}
	k, err := New(p, w, Options{Tier: sandbox.Tier1, Exe: testsupport.AirlockBin(t),
		Environ: []string{"GH_GIT_TOKEN=" + token, "PATH=" + BoxPATH}})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(rootCert)
	k.egressRoots = pool
	script := fmt.Sprintf(`set -e; cd /tmp
git clone -q "https://x-access-token:$GH_GIT_TOKEN@127.0.0.1:%d/widget.git" w; cd w
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@a GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@a
git commit -q --allow-empty -m two
git push -q origin main
git fetch -q origin
git ls-remote origin`, srv.port)
	var out strings.Builder
	res, err := k.Exec(context.Background(), Call{Kind: KindShell, Command: script}, ExecOptions{Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if res.Result.ExitCode != 0 || !strings.Contains(out.String(), "refs/heads/main") || strings.Contains(out.String(), token) {
		t.Fatalf("git clone, push, fetch: exit %d\n%s\nserver saw %q", res.Result.ExitCode, out.String(), srv.all())
	}
	// The push landed on the server with the real token: main is at "two".
	cmd := exec.Command("git", "--git-dir", filepath.Join(repos, "widget.git"), "log", "-1", "--format=%s", "main")
	if b, err := cmd.Output(); err != nil || strings.TrimSpace(string(b)) != "two" {
		t.Fatalf("the server's main after the push: %q, %v; want the box's commit \"two\"", b, err)
	}
}

// TestBoxEnvWithholdsKeys: a bound secret and, with the model proxy on,
// the provider keys never enter the box's environment, even when
// env.allow names them.
func TestBoxEnvWithholdsKeys(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(`
env: {allow: [GITHUB_TOKEN, OPENAI_API_KEY, ANTHROPIC_API_KEY, KEEP]}
models: {allow: ["claude-*"]}
secrets:
  GITHUB_TOKEN: {hosts: [api.github.com], header: "Authorization: Bearer {}"}
`))
	if err != nil {
		t.Fatal(err)
	}
	w := policy.World{Workdir: t.TempDir(), Home: "/home/someone"}
	env := strings.Join(boxEnv(p, w, []string{"GITHUB_TOKEN=ghp_x", "OPENAI_API_KEY=sk-x", "ANTHROPIC_API_KEY=sk-ant-x", "KEEP=1"}), "\n")
	if strings.Contains(env, "ghp_x") || strings.Contains(env, "sk-x") || strings.Contains(env, "sk-ant-x") || !strings.Contains(env, "KEEP=1") {
		t.Fatalf("box environment:\n%s", env)
	}
	if got, err := modelProviders([]string{"ANTHROPIC_API_KEY=sk-ant-x"}); err != nil || got["anthropic"].Key != "sk-ant-x" || got["anthropic"].Host != "api.anthropic.com" || len(got) != 1 {
		t.Fatalf("providers = %+v, %v", got, err)
	}
}

// TestModelBaseURL: the operator's AIRLOCK_MODEL_BASE_URL replaces the
// OpenAI endpoint, keyed by OPENAI_API_KEY; anything but a plain https
// URL is refused rather than read loosely.
func TestModelBaseURL(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		want      egress.Provider
		bad       bool
	}{
		{"with port and path", "https://llm.internal:8443/api/v1", egress.Provider{Host: "llm.internal", Port: 8443, Path: "/api"}, false},
		{"bare host", "https://LLM.example/", egress.Provider{Host: "llm.example", Port: 443, Path: ""}, false},
		{"v1 only", "https://127.0.0.1:9000/v1", egress.Provider{Host: "127.0.0.1", Port: 9000, Path: ""}, false},
		{"plain http", "http://llm.internal/v1", egress.Provider{}, true},
		{"user info", "https://u:p@llm.internal/v1", egress.Provider{}, true},
		{"query", "https://llm.internal/v1?x=1", egress.Provider{}, true},
		{"bad port", "https://llm.internal:0/v1", egress.Provider{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := modelProviders([]string{"OPENAI_API_KEY=sk-k", "AIRLOCK_MODEL_BASE_URL=" + tc.url})
			if tc.bad {
				if err == nil {
					t.Fatalf("accepted: %+v", got)
				}
				return
			}
			o := got["openai"]
			if err != nil || o.Host != tc.want.Host || o.Port != tc.want.Port || o.Path != tc.want.Path || o.Key != "sk-k" || o.Header != "Authorization" {
				t.Fatalf("%+v, %v", o, err)
			}
		})
	}
}

// TestModelProxyInRealBox: curl in a real tier-1 box reaches the model
// proxy through ANTHROPIC_BASE_URL with the stand-in key; the provider
// (a loopback TLS server) receives the real key, which the box never
// holds; a model outside models.allow is refused.
func TestModelProxyInRealBox(t *testing.T) {
	testsupport.Require(t, testsupport.Root, testsupport.Program("curl"))
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "tier 1 unavailable here: %s", r.Why)
	}
	rootCert, rootKey := newTestRoot()
	prov := startUpstream(t, rootCert, rootKey, "127.0.0.1")
	prov.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prov.mu.Lock()
		prov.got = append(prov.got, "key="+r.Header.Get("X-Api-Key"))
		prov.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\n")
	})
	const key = "sk-ant-api03-HostOnlyProviderKey0123456789"
	doc := fmt.Sprintf(`
shell: {allow: [sh, curl, env, grep]}
net: {allow: ["127.0.0.1:%d"]}
env: {allow: [ANTHROPIC_API_KEY]}
models: {allow: ["claude-*"]}
`, prov.port)
	p, err := policy.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	w := policy.World{Workdir: t.TempDir(), Home: "/home/someone", PATH: strings.Split(BoxPATH, ":"), LookPath: exec.LookPath}
	k, err := New(p, w, Options{Tier: sandbox.Tier1, Exe: testsupport.AirlockBin(t),
		Environ: []string{"ANTHROPIC_API_KEY=" + key, "PATH=" + BoxPATH}})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(rootCert)
	k.egressRoots = pool
	k.egressModels = map[string]egress.Provider{"anthropic": {Host: "127.0.0.1", Port: prov.port, Header: "X-Api-Key"}}
	script := `env | grep -E '^ANTHROPIC_'
echo "--- ok"; curl -sSN --max-time 20 -H "x-api-key: $ANTHROPIC_API_KEY" -d '{"model":"claude-sonnet-4","stream":true}' "$ANTHROPIC_BASE_URL/v1/messages"
echo "--- refused"; curl -sS --max-time 20 -d '{"model":"gpt-4o"}' "$ANTHROPIC_BASE_URL/v1/messages"`
	var out strings.Builder
	if _, err := k.Exec(context.Background(), Call{Kind: KindShell, Command: script}, ExecOptions{Stdout: &out, Stderr: &out}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	o := out.String()
	t.Log(o)
	if strings.Contains(o, key) || !strings.Contains(o, "ANTHROPIC_BASE_URL=http://127.0.0.1:") {
		t.Fatalf("box environment or output:\n%s", o)
	}
	if !strings.Contains(o, "--- ok\ndata: {\"type\":\"message_delta\"") || !strings.Contains(o, "not in this policy's models.allow") {
		t.Fatalf("model proxy answers:\n%s", o)
	}
	if got := prov.all(); !strings.Contains(got, "key="+key) || strings.Count(got, "key=") != 1 {
		t.Fatalf("provider saw %q, want one request with the real key", got)
	}
}

// TestNodeFetchPhantom runs Node's fetch in a real tier-1 box (Node 20's
// fetch reads no proxy variables itself: the script routes it through the
// box's HTTPS_PROXY with undici's EnvHttpProxyAgent, as a Node program in
// a proxied network does). It trusts the box's CA through
// NODE_EXTRA_CA_CERTS: the bound host receives the real token; the
// placeholder sent to another intercepted host is refused there with the
// reason, and never reaches it.
func TestNodeFetchPhantom(t *testing.T) {
	testsupport.Require(t, testsupport.Root, testsupport.Program("node"))
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "tier 1 unavailable here: %s", r.Why)
	}
	npm := os.Getenv("AIRLOCK_NPM_DIR")
	if npm == "" {
		npm, _ = filepath.Abs("../.airlock-ci/npm")
	}
	undici, err := filepath.EvalSymlinks(filepath.Join(npm, "node_modules", "undici"))
	if err != nil {
		testsupport.Missing(t, "undici is not installed under %s (run bash scripts/setup.sh): %v", npm, err)
	}
	rootCert, rootKey := newTestRoot()
	bound := startUpstream(t, rootCert, rootKey, "127.0.0.1")
	ruled := startUpstream(t, rootCert, rootKey, "127.0.0.3")

	const token = "ghp_N0deFetchT0kenValue0123456789abcdefAB"
	doc := fmt.Sprintf(`
fs: {read: [".", %q]}
shell: {allow: [sh, node]}
net:
  allow:
    - "127.0.0.1:%d"
    - {host: "127.0.0.3:%d", methods: [GET], paths: ["/repos/**"], reason: "read-only for this agent"}
secrets:
  GITHUB_TOKEN: {hosts: ["127.0.0.1"], header: "Authorization: Bearer {}"}
`, undici, bound.port, ruled.port)
	p, err := policy.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	w := policy.World{Workdir: t.TempDir(), Home: "/home/someone", PATH: strings.Split(BoxPATH, ":"), LookPath: exec.LookPath}
	k, err := New(p, w, Options{Tier: sandbox.Tier1, Exe: testsupport.AirlockBin(t),
		Environ: []string{"GITHUB_TOKEN=" + token, "PATH=" + BoxPATH}})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(rootCert)
	k.egressRoots = pool
	script := fmt.Sprintf(`node -e '
const { setGlobalDispatcher, EnvHttpProxyAgent } = require(%q);
setGlobalDispatcher(new EnvHttpProxyAgent());
const auth = { headers: { Authorization: "Bearer " + process.env.GITHUB_TOKEN } };
(async () => {
  console.log("ca=" + process.env.NODE_EXTRA_CA_CERTS);
  for (const [name, url] of [["bound", "https://127.0.0.1:%d/user"], ["other", "https://127.0.0.3:%d/repos/acme"]]) {
    try {
      const r = await fetch(url, auth);
      console.log("--- " + name + " " + r.status + " " + (await r.text()).trim());
    } catch (e) { console.log("--- " + name + " error " + (e.cause ? e.cause.message : e.message)); }
  }
})();'`, undici, bound.port, ruled.port)
	var out strings.Builder
	if _, err := k.Exec(context.Background(), Call{Kind: KindShell, Command: script}, ExecOptions{Stdout: &out, Stderr: &out}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	o := out.String()
	t.Log(o)
	if strings.Contains(o, token) {
		t.Fatal("the real token reached the box")
	}
	if !strings.Contains(o, "ca="+BoxCAPath) || !strings.Contains(o, "--- bound 200 ok GET /user") ||
		!strings.Contains(bound.all(), "auth=Bearer "+token) {
		t.Fatalf("node fetch to the bound host: box saw\n%s\nhost saw %q", o, bound.all())
	}
	if !strings.Contains(o, "--- other 403") || !strings.Contains(o, "placeholder of GITHUB_TOKEN") || ruled.all() != "" {
		t.Fatalf("node fetch with the placeholder to another host: box saw\n%s\nhost saw %q", o, ruled.all())
	}
}

// TestPhantomsSigV4: a SigV4 binding makes both AWS variables phantom,
// bound to the same hosts, and neither real value enters the box's
// environment, even when env.allow names them; a binding whose key ID is
// unset is refused rather than half-phantom.
func TestPhantomsSigV4(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(`
env: {allow: [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY]}
secrets:
  AWS_SECRET_ACCESS_KEY: {hosts: [s3.amazonaws.com], sigv4: AWS_ACCESS_KEY_ID}
`))
	if err != nil {
		t.Fatal(err)
	}
	const id, secret = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	environ := []string{"AWS_ACCESS_KEY_ID=" + id, "AWS_SECRET_ACCESS_KEY=" + secret}
	got, err := phantoms(p, environ)
	if err != nil || len(got) != 2 {
		t.Fatalf("phantoms = %+v, %v", got, err)
	}
	byName := map[string]egress.Secret{}
	for _, s := range got {
		byName[s.Name] = s
	}
	k, s := byName["AWS_ACCESS_KEY_ID"], byName["AWS_SECRET_ACCESS_KEY"]
	if k.Value != id || len(k.Placeholder) != len(id) || k.Placeholder == id || s.SigV4KeyID != "AWS_ACCESS_KEY_ID" ||
		strings.Join(k.Hosts, ",") != "s3.amazonaws.com" {
		t.Fatalf("key id %+v, secret %+v", k, s)
	}
	w := policy.World{Workdir: t.TempDir(), Home: "/home/someone"}
	env := strings.Join(withPlaceholders(boxEnv(p, w, environ), got), "\n")
	if strings.Contains(env, id) || strings.Contains(env, secret) || !strings.Contains(env, "AWS_ACCESS_KEY_ID="+k.Placeholder) {
		t.Fatalf("box environment:\n%s", env)
	}
	if _, err := phantoms(p, environ[1:]); err == nil {
		t.Fatal("a SigV4 binding without its key ID was accepted")
	}
}
