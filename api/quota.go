package api

// Tenants and quotas: each operator token names a tenant, the server puts
// it on every job the token starts (never the request body), and the
// fleet's quotas count a job's slot by its pool and its tenant.

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
)

// Tenant is one tenant's operator token: every job the token starts is
// the tenant's, counted against its quota.
type Tenant struct {
	Name  string
	Token string
}

// QuotaView is what the API shows of the fleet's quotas (jobs.Quotas).
type QuotaView interface {
	Usage() jobs.QuotaUsage
}

// TenantOf is the tenant a request acts for: the one its operator token
// names (the server's STATE/token and the admins are tenant
// jobs.DefaultTenant), "" for a node or a request without a known token.
// It is the one place the API reads a tenant from: never from a body.
func TenantOf(r *http.Request) string { return tenantOf(r.Context()) }

func tenantOf(ctx context.Context) string { return PrincipalOf(ctx).Tenant }

// tenantToken finds the tenant whose token got is, comparing every
// tenant's in constant time (the time taken says nothing of which came
// close).
func (s *Server) tenantToken(got string) (string, bool) {
	var name string
	for _, t := range s.cfg.Tenants {
		if t.Token != "" && len(got) > 0 && subtle.ConstantTimeCompare([]byte(got), []byte(t.Token)) == 1 && name == "" {
			name = t.Name
		}
	}
	return name, name != ""
}

// own puts the starting token's tenant on j, and refuses a job whose
// parent is another tenant's: a job tree is one tenant's (its files and
// results are scoped to the tree).
func (s *Server) own(ctx context.Context, j *jobs.Job) error {
	j.Tenant = tenantOf(ctx)
	if j.Tenant == "" {
		return errs.New(errs.Denied, "job %s: the token names no tenant; start jobs with an operator's token", j.ID)
	}
	if j.Parent == "" {
		return nil
	}
	p, err := s.parent(j.Parent)
	if err != nil {
		return err
	}
	if owner := cmpTenant(p.Tenant); owner != j.Tenant {
		// Said as a parent that does not exist: a tenant does not learn
		// another's job ids.
		return parentNotFound(j.Parent)
	}
	return nil
}

// parentNotFound is the one answer for a parent that does not exist and
// for another tenant's job named as one.
func parentNotFound(id string) error {
	return errs.NotFoundf("parent: job %s: not found (a job's parent is a job of its own tenant)", id)
}

// cmpTenant is a recorded job's tenant: a job recorded before tenants is
// the default tenant's.
func cmpTenant(t string) string {
	if t == "" {
		return jobs.DefaultTenant
	}
	return t
}

// ceilings holds j's run on its node to the server's wall-clock ceiling
// as a whole (questions, every call): the workflow ends a run that
// outlasts it, whatever the node does, while the node holds each box to
// it too.
func (s *Server) ceilings(j *jobs.Job) {
	if s.cfg.MaxWall <= 0 {
		return
	}
	if j.RunTimeout <= 0 || j.RunTimeout > s.cfg.MaxWall {
		j.RunTimeout = s.cfg.MaxWall
	}
}

// QuotasView is the answer to GET /v1/quotas.
type QuotasView struct {
	jobs.QuotaUsage
	// MaxWall and MaxMemory are the ceilings every job gets (0: none).
	MaxWall   string `json:"max_wall,omitempty"`
	MaxMemory int64  `json:"max_memory,omitempty"`
	// Tenant is the asking token's.
	Tenant string `json:"tenant"`
	// OthersHeld counts, by pool, the slots other tenants' jobs hold, for
	// an operator, whose Held and Tenants are its own tenant's only.
	OthersHeld map[string]int `json:"others_held,omitempty"`
}

// getQuotas answers GET /v1/quotas: each quota and the slots held now.
func (s *Server) getQuotas(w http.ResponseWriter, r *http.Request) {
	v := QuotasView{Tenant: TenantOf(r), MaxMemory: s.cfg.MaxMemory}
	if s.cfg.MaxWall > 0 {
		v.MaxWall = s.cfg.MaxWall.String()
	}
	if s.cfg.Quotas != nil {
		v.QuotaUsage = s.cfg.Quotas.Usage()
	}
	if PrincipalOf(r.Context()).Role != RoleAdmin {
		v = ownUsage(v)
	}
	if v.Held == nil {
		v.Held = []jobs.Slot{}
	}
	writeJSON(w, http.StatusOK, v)
}

// ownUsage is what an operator sees of the quotas: its own tenant's slots
// and quota (and the one for every tenant, "*"), and of other tenants'
// only how many slots they hold in each pool (why a job of its own may
// wait), never their jobs' ids or their names.
func ownUsage(v QuotasView) QuotasView {
	held := []jobs.Slot{}
	for _, sl := range v.Held {
		if cmpTenant(sl.Tenant) == v.Tenant {
			held = append(held, sl)
			continue
		}
		if v.OthersHeld == nil {
			v.OthersHeld = map[string]int{}
		}
		v.OthersHeld[sl.Pool]++
	}
	tenants := map[string]int{}
	for t, n := range v.Tenants {
		if t == v.Tenant || t == "*" {
			tenants[t] = n
		}
	}
	v.Held, v.Tenants = held, tenants
	return v
}

// tenantField is the message for a body naming its tenant: refused, so a
// request never believes it chose one.
func tenantField(field string) (string, bool) {
	if !strings.EqualFold(field, `"tenant"`) {
		return "", false
	}
	return fmt.Sprintf("field %s: a job's tenant is the token's that starts it (the server's tenants file), never the request's", field), true
}
