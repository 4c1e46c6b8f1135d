package pki

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An enrolled node id stays bound to its first key and pool, across a
// restart of the server (a CA loaded again from its directory).
func TestEnrolBindsIDToKeyAndPool(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	ca, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := NewKey()
	ownerCSR, _ := CSR(owner, "n1")
	if _, _, err := ca.Enrol(ownerCSR, "n1", "ci", 0); err != nil {
		t.Fatalf("first enrolment: %v", err)
	}
	again, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewKey()
	otherCSR, _ := CSR(other, "n1")
	for _, tc := range []struct {
		name string
		csr  []byte
		pool string
		ok   bool
	}{
		{"another key", otherCSR, "ci", false},
		{"another pool", ownerCSR, "gpu", false},
		{"another key and pool", otherCSR, "gpu", false},
		{"the same key and pool renews", ownerCSR, "ci", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := again.Enrol(tc.csr, "n1", tc.pool, 0)
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
		})
	}
	t.Run("another id is free", func(t *testing.T) {
		if _, _, err := again.Enrol(otherCSR, "n2", "ci", 0); err != nil {
			t.Fatal(err)
		}
	})
}

// A node's API token names that node only while it is the one its last
// enrolment issued: a renewal rotates it, and a token of another shape,
// another node's id or a removed binding names no node.
func TestNodeTokenIsBoundAndRotates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	ca, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := NewKey()
	csr, _ := CSR(key, "n1")
	_, first, err := ca.Enrol(csr, "n1", "ci", 0)
	if err != nil {
		t.Fatal(err)
	}
	if node, ok := ca.NodeOfToken(first); !ok || node != "n1" {
		t.Fatalf("the issued token names %q, %v; want n1", node, ok)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "nodes", "n1"))
	if strings.Contains(string(b), first) || strings.Contains(string(b), first[len("node.n1."):]) {
		t.Fatalf("the binding holds the token itself: %s", b)
	}
	_, second, err := ca.Enrol(csr, "n1", "ci", 0)
	if err != nil || second == first {
		t.Fatalf("renewal: %v; want a new token", err)
	}
	secret := second[len("node.n1."):]
	for _, tc := range []struct {
		name, token string
		ok          bool
	}{
		{"the current token", second, true},
		{"the token before the renewal", first, false},
		{"the secret under another node's id", "node.n2." + secret, false},
		{"the secret alone", secret, false},
		{"an empty secret", "node.n1.", false},
		{"a path in the id", "node.../n1." + secret, false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if node, ok := ca.NodeOfToken(tc.token); ok != tc.ok || (ok && node != "n1") {
				t.Fatalf("got %q, %v; want ok=%v", node, ok, tc.ok)
			}
		})
	}
	if err := os.Remove(filepath.Join(dir, "nodes", "n1")); err != nil {
		t.Fatal(err)
	}
	if _, ok := ca.NodeOfToken(second); ok {
		t.Fatal("a token of a removed binding still names its node")
	}
}
