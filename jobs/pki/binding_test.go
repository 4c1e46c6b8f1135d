package pki

import (
	"path/filepath"
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
	if _, err := ca.Enrol(ownerCSR, "n1", "ci", 0); err != nil {
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
			_, err := again.Enrol(tc.csr, "n1", tc.pool, 0)
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
		})
	}
	t.Run("another id is free", func(t *testing.T) {
		if _, err := again.Enrol(otherCSR, "n2", "ci", 0); err != nil {
			t.Fatal(err)
		}
	})
}
