package api

// Tenancy: every job-scoped request is held to the caller's tenant. An
// operator's token acts on its own tenant's jobs only (reads, kills,
// questions and answers, audit records, lists); another tenant's job is
// answered exactly as one that does not exist, so ids are never confirmed.
// Admins act on every tenant's jobs. A node's token is not a tenant's: the
// handlers a node may reach hold it to its own runs instead (actsAs, the
// workflow's check of the node that runs the job).

import (
	"context"
	"net/http"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
)

// ownJob is job id's summary (its tenant filled in) when the request may
// act on that job: an admin's or a node's on any job, an operator's on its
// own tenant's only. Every handler that takes a job id calls it before it
// reads or touches the job:
//
//	if _, err := s.ownJob(r, id); err != nil { writeErr(w, err); return }
//
// Another tenant's job, and a job without a recorded summary, is the same
// NotFound (404, the same message) as an id no job has.
func (s *Server) ownJob(r *http.Request, id string) (jobs.Summary, error) {
	if err := jobs.CheckName("job id", id); err != nil {
		return jobs.Summary{}, err
	}
	sum, err := s.summary(r.Context(), id)
	if err != nil && errs.ClassOf(err) != errs.NotFound {
		return jobs.Summary{}, err // Temporal is away: the same for every id
	}
	if err != nil || !sees(r.Context(), sum) {
		return jobs.Summary{}, jobNotFound(id)
	}
	return sum, nil
}

// jobNotFound is the one answer for a job the request may not see or that
// does not exist: the same words as jobs.Client.Get's.
func jobNotFound(id string) error { return errs.NotFoundf("job %s: not found", id) }

// summary is job id's summary, from Temporal: every id, unknown or any
// tenant's, running or ended, costs the one describe, so the time a
// refusal takes does not tell them apart. A job without one (its memo
// missing) has an empty Pool.
func (s *Server) summary(ctx context.Context, id string) (jobs.Summary, error) {
	sum, err := s.cfg.Jobs.Summary(ctx, id)
	if err != nil {
		return jobs.Summary{}, err
	}
	return withTenant(sum), nil
}

// withTenant fills in the tenant of a job recorded before tenants (the
// default tenant's); a summary that was never recorded stays without.
func withTenant(sum jobs.Summary) jobs.Summary {
	if sum.Pool != "" {
		sum.Tenant = cmpTenant(sum.Tenant)
	}
	return sum
}

// sees says whether the request's principal may act on the job of sum:
// admins and nodes on any, an operator on its tenant's only, and nobody
// but an admin on a job whose summary was never recorded.
func sees(ctx context.Context, sum jobs.Summary) bool {
	switch p := PrincipalOf(ctx); p.Role {
	case RoleAdmin, RoleNode:
		return true
	case RoleOperator:
		return sum.Pool != "" && p.Tenant != "" && cmpTenant(sum.Tenant) == p.Tenant
	}
	return false
}

// seesTenant says whether the request's principal may read what belongs
// to tenant ("" is no tenant's: admins only).
func seesTenant(ctx context.Context, tenant string) bool {
	switch p := PrincipalOf(ctx); p.Role {
	case RoleAdmin:
		return true
	case RoleOperator:
		return tenant != "" && tenant == p.Tenant
	}
	return false
}

// fleetKinds are the audit records that name no job and concern every
// tenant alike (a node's sandbox opt-out, which GET /v1/nodes shows every
// operator too); every other record without a tenant is admins' only.
var fleetKinds = map[string]bool{AuditOptOut: true}

// auditTenants says whose each audit record is, reading the log in order:
// a record's own "tenant" field; else, for a record naming a "job", the
// tenant that job's job.start recorded (a job.start without one is the
// default tenant's, recorded before tenants); else no tenant's.
type auditTenants map[string]string

func (t auditTenants) of(rec audit.Record) string {
	job, _ := rec.Fields["job"].(string)
	tenant, _ := rec.Fields["tenant"].(string)
	if rec.Kind == AuditJobStart && job != "" {
		tenant = cmpTenant(tenant)
		if _, seen := t[job]; !seen { // the first start of an id is its job's
			t[job] = tenant
		}
		return tenant
	}
	if tenant == "" && job != "" {
		tenant = t[job]
	}
	return tenant
}

// seesRecord says whether the request may read rec, whose tenant is
// tenant: admins every record, an operator its tenant's and the fleet's.
func seesRecord(ctx context.Context, rec audit.Record, tenant string) bool {
	if PrincipalOf(ctx).Role == RoleOperator && tenant == "" && fleetKinds[rec.Kind] {
		_, job := rec.Fields["job"]
		return !job
	}
	return seesTenant(ctx, tenant)
}
