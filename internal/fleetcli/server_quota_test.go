package fleetcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/jobs"
)

func TestTenantTokens(t *testing.T) {
	tok := func(c string) string { return strings.Repeat(c, 32) }
	tests := []struct {
		name    string
		text    string
		mode    os.FileMode
		want    string // tenant names, or the error's substring
		wantErr bool
	}{
		{name: "two tenants, a comment and a blank line", text: "# ours\nacme " + tok("a") + "\n\nbeta " + tok("b") + " # ci\n", mode: 0o600, want: "acme beta"},
		{name: "readable by others", text: "acme " + tok("a") + "\n", mode: 0o644, want: "lets others read its tokens", wantErr: true},
		{name: "the default tenant's name", text: "default " + tok("a") + "\n", mode: 0o600, want: "tenant default is the server's token file's", wantErr: true},
		{name: "a token alone", text: tok("a") + "\n", mode: 0o600, want: "want TENANT TOKEN", wantErr: true},
		{name: "a short token", text: "acme short\n", mode: 0o600, want: "shorter than 16", wantErr: true},
		{name: "a name that is no plain name", text: "Acme/1 " + tok("a") + "\n", mode: 0o600, want: "tenant \"Acme/1\"", wantErr: true},
		{name: "a tenant twice", text: "acme " + tok("a") + "\nacme " + tok("b") + "\n", mode: 0o600, want: "given twice", wantErr: true},
		{name: "a token holding # is the whole token", text: "acme 0123456789abcdef#" + tok("a") + "\n", mode: 0o600, want: "acme=0123456789abcdef#" + tok("a")},
		{name: "a token twice", text: "acme " + tok("a") + "\nbeta " + tok("a") + "\n", mode: 0o600, want: "given twice", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "tenants")
			if err := os.WriteFile(p, []byte(tt.text), tt.mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, tt.mode)
			got, err := tenantTokens(p)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, %v; want an error naming %q", got, err, tt.want)
				}
				return
			}
			var names []string
			for _, x := range got {
				if strings.Contains(tt.want, "=") {
					names = append(names, x.Name+"="+x.Token)
					continue
				}
				names = append(names, x.Name)
			}
			if err != nil || strings.Join(names, " ") != tt.want {
				t.Fatalf("got %v, %v; want %s", names, err, tt.want)
			}
		})
	}
	if got, err := tenantTokens(filepath.Join(t.TempDir(), "none")); err != nil || got != nil {
		t.Errorf("a missing file: %v, %v; want no tenant", got, err)
	}
}

func TestServerTenantsRefuseAnotherRolesToken(t *testing.T) {
	dir := t.TempDir()
	o := serverOptions{tenantsFile: filepath.Join(dir, "tenants"), dir: dir}
	op, enroll, admin := strings.Repeat("o", 32), strings.Repeat("e", 32), strings.Repeat("d", 32)
	for _, tt := range []struct{ token, want string }{
		{op, "the operator's token"}, {enroll, "the enrolment token"}, {admin, "admin ann's token"},
	} {
		os.WriteFile(o.tenantsFile, []byte("acme "+tt.token+"\n"), 0o600)
		if _, err := serverTenants(o, op, enroll, []api.Admin{{Name: "ann", Token: admin}}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("a tenant with %s: %v", tt.want, err)
		}
	}
	// A tenant's name is who answers in the audit log and a call's
	// decider ("person:NAME"): one that is an admin's, or the operator
	// token's, would pass a tenant's answers off as theirs.
	for _, name := range []string{"ann", "operator"} {
		os.WriteFile(o.tenantsFile, []byte(name+" "+strings.Repeat("t", 32)+"\n"), 0o600)
		if _, err := serverTenants(o, op, enroll, []api.Admin{{Name: "ann", Token: admin}}); err == nil || !strings.Contains(err.Error(), "tenant "+name+" is named as") {
			t.Errorf("a tenant named %s: %v, want it refused", name, err)
		}
	}
	o.tenantQuota = map[string]int{"acme": 1, "nobody": 1}
	if _, err := serverQuotas(o, []api.Tenant{{Name: "acme"}}, nil); err == nil || !strings.Contains(err.Error(), "--tenant-quota nobody: no such tenant") {
		t.Errorf("a quota of an unknown tenant: %v", err)
	}
}

func TestQuotaFlag(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: []string{"ci=2", "gpu=1", "*=4"}, want: "*=4,ci=2,gpu=1"},
		{args: []string{"ci=0"}, wantErr: "N at least 1"},
		{args: []string{"ci"}, wantErr: "want POOL=N"},
		{args: []string{"floor.ci=1"}, wantErr: `pool "floor.ci"`},
		{args: []string{"ci=1", "ci=2"}, wantErr: "given twice"},
	} {
		q := &quotaFlag{what: "pool"}
		var err error
		for _, a := range tt.args {
			if err = q.Set(a); err != nil {
				break
			}
		}
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: got %v, want an error naming %q", tt.args, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || q.String() != tt.want):
			t.Errorf("%v: got %q, %v; want %q", tt.args, q.String(), err, tt.want)
		}
	}
}

// TestQuotaFile: the slots are saved 0600 and read back at the next start;
// a broken file is refused naming the fix.
func TestQuotaFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "quota.json")
	held, save, err := quotaFile(p)
	if err != nil || held != nil {
		t.Fatalf("no file: %v, %v", held, err)
	}
	if err := save([]jobs.Slot{{Job: "j-1", Pool: "ci", Tenant: "acme"}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("slots file: %v, %v; want mode 600", fi, err)
	}
	if held, _, err := quotaFile(p); err != nil || len(held) != 1 || held[0].Job != "j-1" || held[0].Tenant != "acme" {
		t.Fatalf("read back: %+v, %v", held, err)
	}
	os.WriteFile(p, []byte("{not json"), 0o600)
	if _, _, err := quotaFile(p); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("a broken slots file: %v, want an error naming the fix", err)
	}
}
