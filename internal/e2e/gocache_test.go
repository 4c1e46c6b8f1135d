package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestGrantedGoCache: a cache the policy grants under ~ is the box's cache
// without any variable set by hand: go in the box names the granted path
// as GOCACHE, and a build fills it on the host, so the next run starts
// warm. Before, the box's HOME was empty and the grant had no effect
// without GOCACHE.
func TestGrantedGoCache(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		testsupport.Missing(t, "needs Go at /usr/local/go: %v", err)
	}
	h := newHome(t)
	home := h.home()
	cache := filepath.Join(home, ".cache", "go-build")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	h.write("go.mod", "module x\n\ngo 1.22\n")
	h.write("main.go", "package main\n\nfunc main() {}\n")
	pol := filepath.Join(h.State, "policy.yaml")
	os.WriteFile(pol, []byte(`shell:
  allow: [/usr/local/go/bin/go]
fs:
  read: [".", "/usr/local/go"]
  write: [".", "~/.cache/go-build"]
env:
  set: {GOTOOLCHAIN: local}
`), 0o644)
	r := h.run("run", "--policy", pol, "--mode", "fix", "--", "/usr/local/go/bin/go", "env", "GOCACHE")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != cache {
		t.Fatalf("go env GOCACHE in the box: exit %d, %q (stderr %s); want %s", r.Code, r.Stdout, r.Stderr, cache)
	}
	r = h.run("run", "--policy", pol, "--mode", "fix", "--", "/usr/local/go/bin/go", "build", "-o", "out", ".")
	if r.Code != 0 {
		t.Fatalf("go build in the box: exit %d, stderr %s", r.Code, r.Stderr)
	}
	ents, err := os.ReadDir(cache)
	if err != nil || len(ents) == 0 {
		t.Errorf("the granted cache %s is empty after a build (%v): the box did not use it", cache, err)
	}
}
