package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/jobs"
)

const (
	acmeToken = "acme-0123456789abcdef0123456789ab"
	betaToken = "beta-0123456789abcdef0123456789ab"
)

var twoTenants = []Tenant{{Name: "acme", Token: acmeToken}, {Name: "beta", Token: betaToken}}

// TestTenants: each operator token's jobs are its tenant's (STATE/token's
// and the admins' the default tenant's), whatever the body says; a body
// naming a tenant is refused with the reason; job.start records it.
func TestTenants(t *testing.T) {
	s, f, _, _ := serveAudited(t, Config{Tenants: twoTenants})
	for _, tt := range []struct {
		name, token, want string
	}{
		{"the server's operator token", token, jobs.DefaultTenant},
		{"a tenant's token", acmeToken, "acme"},
		{"another tenant's token", betaToken, "beta"},
		{"an admin's token", adminA, jobs.DefaultTenant},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out := do(t, s, http.MethodPost, "/v1/jobs", "Bearer "+tt.token, `{"argv":["true"]}`)
			if code != http.StatusCreated {
				t.Fatalf("start: %d %v", code, out)
			}
			id := fmt.Sprint(out["id"])
			f.mu.Lock()
			j := f.started[len(f.started)-1]
			f.mu.Unlock()
			if j.ID != id || j.Tenant != tt.want || j.Summary().Tenant != tt.want {
				t.Errorf("job %s: tenant %q (summary %q), want %q", j.ID, j.Tenant, j.Summary().Tenant, tt.want)
			}
			recs := auditOf(t, s, id)
			if len(recs) == 0 || recs[0].Kind != AuditJobStart || recs[0].Fields["tenant"] != tt.want {
				t.Errorf("job.start: %+v, want tenant %q", recs, tt.want)
			}
		})
	}
	for _, body := range []string{
		`{"argv":["true"],"tenant":"beta"}`,
		`{"argv":["true"],"Tenant":"beta"}`,
		`{"argv":["true"],"tenant":"default"}`,
	} {
		t.Run("a body naming a tenant: "+body, func(t *testing.T) {
			f.mu.Lock()
			before := len(f.started)
			f.mu.Unlock()
			code, out := do(t, s, http.MethodPost, "/v1/jobs", "Bearer "+acmeToken, body)
			if msg, _ := out["error"].(string); code != http.StatusBadRequest || !strings.Contains(msg, "a job's tenant is the token's that starts it") {
				t.Errorf("got %d %v, want 400 saying the tenant is the token's", code, out)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.started) != before {
				t.Errorf("a body naming its tenant started a job: %+v", f.started[len(f.started)-1])
			}
		})
	}
}

// TestTenantOf: the one place the tenant is read, from the token only.
func TestTenantOf(t *testing.T) {
	a := New(Config{Token: token, Tenants: twoTenants, Jobs: &fakeJobs{}})
	var got string
	h := a.authorized(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = TenantOf(r) }))
	for _, tt := range []struct{ token, want string }{
		{token, jobs.DefaultTenant}, {acmeToken, "acme"}, {betaToken, "beta"},
	} {
		got = "unset"
		req, _ := http.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Authorization", "Bearer "+tt.token)
		h.ServeHTTP(noWriter{}, req)
		if got != tt.want {
			t.Errorf("token %s…: tenant %q, want %q", tt.token[:4], got, tt.want)
		}
	}
	if tenant := TenantOf(&http.Request{}); tenant != "" {
		t.Errorf("a request outside the handler: tenant %q, want none", tenant)
	}
}

type noWriter struct{}

func (noWriter) Header() http.Header         { return http.Header{} }
func (noWriter) Write(b []byte) (int, error) { return len(b), nil }
func (noWriter) WriteHeader(int)             {}

// TestParentOfAnotherTenant: a job tree is one tenant's, so a child naming
// another tenant's job as its parent is refused as not found, in the words
// a parent that does not exist gets.
func TestParentOfAnotherTenant(t *testing.T) {
	s, f := serve(t, Config{Tenants: twoTenants})
	code, out := do(t, s, http.MethodPost, "/v1/jobs", "Bearer "+acmeToken, `{"argv":["true"]}`)
	if code != http.StatusCreated {
		t.Fatal(code, out)
	}
	parent := fmt.Sprint(out["id"])
	body := fmt.Sprintf(`{"argv":["true"],"parent":%q}`, parent)
	code, got := rawTenant(t, s, http.MethodPost, "/v1/jobs", betaToken, body)
	ucode, want := rawTenant(t, s, http.MethodPost, "/v1/jobs", betaToken, `{"argv":["true"],"parent":"j-00000000000000ff"}`)
	if got, want = strings.ReplaceAll(got, parent, "ID"), strings.ReplaceAll(want, "j-00000000000000ff", "ID"); code != http.StatusNotFound || ucode != code || got != want {
		t.Errorf("beta's child of acme's job: %d %s; of an unknown job: %d %s; want both the same 404", code, got, ucode, want)
	}
	if code, out := do(t, s, http.MethodPost, "/v1/jobs", "Bearer "+acmeToken, body); code != http.StatusCreated {
		t.Errorf("acme's child of its own job: %d %v", code, out)
	}
	if n := len(f.started); n != 2 {
		t.Errorf("started %d jobs, want 2", n)
	}
}

// TestQuotasShown: GET /v1/quotas shows each quota, the ceilings and the
// slots held: to a tenant its own slots and quota, and of other tenants'
// only how many slots each pool holds; to an admin every tenant's.
func TestQuotasShown(t *testing.T) {
	q, err := jobs.NewQuotas(jobs.QuotaConfig{Pools: map[string]int{"ci": 1}, Tenants: map[string]int{"acme": 2, "beta": 3}})
	if err != nil {
		t.Fatal(err)
	}
	q.Acquire(t.Context(), jobs.SlotRequest{Job: "j-1", Pool: "ci", Tenant: "acme"})
	s, _ := serve(t, Config{Tenants: twoTenants, Admins: twoAdmins, Quotas: q, MaxWall: time.Minute, MaxMemory: 1 << 30})
	quotas := func(token string) QuotasView {
		var v QuotasView
		getAs(t, s, token, "/v1/quotas", &v)
		return v
	}
	if v := quotas(acmeToken); v.Pools["ci"] != 1 || v.Tenants["acme"] != 2 || len(v.Tenants) != 1 || len(v.Held) != 1 || v.Held[0].Job != "j-1" ||
		v.Tenant != "acme" || v.OthersHeld != nil || v.MaxWall != "1m0s" || v.MaxMemory != 1<<30 {
		t.Errorf("acme's view: %+v", v)
	}
	if v := quotas(betaToken); len(v.Held) != 0 || v.OthersHeld["ci"] != 1 || v.Tenants["beta"] != 3 || len(v.Tenants) != 1 {
		t.Errorf("beta's view %+v, want no slot of acme's named, one held in ci by others", v)
	}
	if v := quotas(adminA); len(v.Held) != 1 || v.Held[0].Tenant != "acme" || len(v.Tenants) != 2 || v.OthersHeld != nil {
		t.Errorf("an admin's view %+v, want every tenant's", v)
	}
}

// TestWallCeilingBoundsTheRun: under --max-wall the run on the node as a
// whole ends by the ceiling (the workflow's timeout), whatever the request
// asks.
func TestWallCeilingBoundsTheRun(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		maxWall    time.Duration
		want       time.Duration
	}{
		{"no ceiling: the request's", `{"argv":["a"],"run_timeout":"3h"}`, 0, 3 * time.Hour},
		{"the ceiling over the request's", `{"argv":["a"],"run_timeout":"3h"}`, time.Minute, time.Minute},
		{"the ceiling over the default", `{"argv":["a"]}`, time.Minute, time.Minute},
		{"a request below the ceiling keeps its own", `{"argv":["a"],"run_timeout":"10s"}`, time.Minute, 10 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, f := serve(t, Config{MaxWall: tt.maxWall})
			if code, out := do(t, s, http.MethodPost, "/v1/jobs", "Bearer "+token, tt.body); code != http.StatusCreated {
				t.Fatal(code, out)
			}
			if j := f.started[0]; j.RunTimeout != tt.want || j.MaxWall != tt.maxWall {
				t.Errorf("run timeout %s, max wall %s; want %s, %s", j.RunTimeout, j.MaxWall, tt.want, tt.maxWall)
			}
		})
	}
}
