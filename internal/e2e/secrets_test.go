package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPhantomSecretThroughTheCLI runs `airlock run` with a policy that
// binds GITHUB_TOKEN: the box's environment (printed through the run's
// output) holds a placeholder of the token's shape, never the token; a
// plain-HTTP request carrying the placeholder to an allowed host is
// refused before anything connects; the audit log names the secret and
// holds neither the token nor any private key. Without the binding (the
// old shape) the same policy's env.allow puts the token itself in the box.
func TestPhantomSecretThroughTheCLI(t *testing.T) {
	requireBwrap(t)
	const token = "ghp_E2eT0kenValue0123456789abcdefABCDxy"
	allowed := newCanary(t, "allowed")
	h := newHome(t)
	base := fmt.Sprintf(`
shell: {allow: [sh, env, curl, grep]}
net: {allow: ["127.0.0.1:%d"]}
env: {allow: [GITHUB_TOKEN]}
limits: {wall: 60s}
`, allowed.port)
	environ := append(append([]string(nil), h.environ...), "GITHUB_TOKEN="+token)

	// The old shape runs in a home of its own: its output is the token.
	h0 := newHome(t)
	h0.write("airlock.yaml", base)
	if r := h0.runEnv(append(append([]string(nil), h0.environ...), "GITHUB_TOKEN="+token), "run", "--", "env"); !strings.Contains(r.Stdout, "GITHUB_TOKEN="+token) {
		t.Fatalf("old shape: want the token in the box's environment; got exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}

	h.write("airlock.yaml", base+`secrets:
  GITHUB_TOKEN: {hosts: [api.github.com], header: "Authorization: Bearer {}"}
`)
	r := h.runEnv(environ, "run", "--", "env")
	if r.Code != 0 || strings.Contains(r.Stdout+r.Stderr, token) || !strings.Contains(r.Stdout, "GITHUB_TOKEN=ghp_") {
		t.Fatalf("box environment: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var ph string
	for _, line := range strings.Split(r.Stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "GITHUB_TOKEN="); ok {
			ph = v
		}
	}
	if len(ph) != len(token) || ph == token {
		t.Fatalf("placeholder %q is not of the token's shape", ph)
	}

	r = h.runEnv(environ, "run", "--", "sh", "-c",
		`curl -sS --max-time 20 -w '\n%{http_code}\n' -H "Authorization: Bearer $GITHUB_TOKEN" `+allowed.url("127.0.0.1"))
	if !strings.Contains(r.Stdout, "placeholder of GITHUB_TOKEN") || !strings.HasSuffix(r.Stdout, "\n403\n") {
		t.Fatalf("placeholder to another host: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if n := allowed.conns.Load(); n != 0 {
		t.Fatalf("the allowed canary saw %d connections; a refused request must connect to nothing", n)
	}

	// Nothing airlock keeps on disk holds the token or a private key, and
	// the audit log names the secret of the refusal.
	named := ""
	filepath.Walk(h.State, func(path string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() || strings.HasSuffix(path, "airlock.yaml") {
			return nil
		}
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), "placeholder of GITHUB_TOKEN") {
			named = path
		}
		if strings.Contains(string(b), token) || strings.Contains(string(b), "PRIVATE KEY") {
			t.Errorf("%s holds the token or a private key", path)
		}
		return nil
	})
	if named == "" {
		t.Fatal("no file in the state directory records the refusal naming GITHUB_TOKEN")
	}
	t.Logf("the refusal is recorded in %s", named)
}
