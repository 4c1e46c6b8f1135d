package server

import (
	"path/filepath"
	"testing"

	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// TestAuthOptions: a cluster operator's options come only with the fleet
// CA, both certificates, the namespace and the bindings file; a part left
// out is refused rather than leaving the frontend open.
func TestAuthOptions(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	services, _ := ca.IssueTemporal([]string{"127.0.0.1"})
	client, _ := ca.IssueServerClient()
	full := jobs.DevAuth{CA: ca.PEM, Services: services, Client: client}
	bindings := filepath.Join(dir, "bindings.json")
	tests := []struct {
		name         string
		edit         func(*jobs.DevAuth)
		ns, bindings string
		ok           bool
	}{
		{"complete", func(*jobs.DevAuth) {}, "airlock", bindings, true},
		{"no CA", func(a *jobs.DevAuth) { a.CA = nil }, "airlock", bindings, false},
		{"no services' certificate", func(a *jobs.DevAuth) { a.Services.Certificate = nil }, "airlock", bindings, false},
		{"no system worker's certificate", func(a *jobs.DevAuth) { a.Client.Certificate = nil }, "airlock", bindings, false},
		{"no namespace", func(*jobs.DevAuth) {}, "", bindings, false},
		{"no bindings file", func(*jobs.DevAuth) {}, "airlock", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := full
			tt.edit(&a)
			opts, err := AuthOptions(a, tt.ns, tt.bindings)
			if (err == nil) != tt.ok {
				t.Fatalf("got %d options, %v; want ok=%v", len(opts), err, tt.ok)
			}
			// The TLS factory, claim mapper, authorizer, dynamic config
			// and the answers' interceptor.
			if tt.ok && len(opts) != 5 {
				t.Errorf("got %d options, want 5", len(opts))
			}
		})
	}
}
