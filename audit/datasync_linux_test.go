package audit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDataSyncFails: a descriptor fdatasync(2) cannot make durable (a
// pipe) is an error, never a record reported durable.
func TestDataSyncFails(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := dataSync(w); err == nil {
		t.Fatal("dataSync of a pipe: got nil, want an error")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("x\n"); err != nil {
		t.Fatal(err)
	}
	if err := dataSync(f); err != nil {
		t.Fatalf("dataSync of a file: %v", err)
	}
}
