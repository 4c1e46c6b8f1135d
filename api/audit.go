package api

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
)

// Kinds of the server's audit records.
const (
	AuditJobStart      = "job.start"
	AuditJobEnd        = "job.end"
	AuditJobTaint      = "job.taint"
	AuditOptOut        = "tenant.sandbox_optout"
	AuditTier0         = "run.sandbox.tier0"
	AuditAsked         = "approval.asked"
	AuditAnswered      = "approval.answered"
	AuditAnswerRefused = "approval.refused"
)

// record appends one record to the server's audit log. Nothing recorded
// holds a secret: a job's command and an event's body are kept by their
// SHA-256 only, tokens never. A record that cannot be written is logged;
// the request it records has already been decided.
func (s *Server) record(kind string, fields map[string]any) error {
	if s.cfg.Audit == nil {
		return nil
	}
	if err := s.cfg.Audit.Append(audit.Record{Kind: kind, Time: s.cfg.Now(), Fields: fields}); err != nil {
		s.cfg.Log.Error("server audit", "kind", kind, "err", err)
		return errs.Wrap(errs.Unavailable, err, "the server's audit log")
	}
	return nil
}

// sha is the hex SHA-256 of s, how the server's records refer to text
// that may hold a secret.
func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// jobFields are what a job's records say of it.
func jobFields(j jobs.Job, by string) map[string]any {
	f := map[string]any{"job": j.ID, "pool": j.Pool, "source": j.Source, "floor": j.Floor(), "queue": j.Queue(),
		"command_sha256": sha(j.Describe()), "by": by, "outside_event": j.FromOutside(), "tainted": j.Tainted, "tenant": j.Tenant}
	if j.Taint != "" {
		f["taint"] = j.Taint
	}
	if j.Model != "" {
		f["model"] = j.Model
	}
	if j.Parent != "" {
		f["parent"] = j.Parent
	}
	if j.Input != "" {
		f["input_sha256"] = sha(j.Input)
	}
	if j.Dev {
		f["dev"] = true
	}
	return f
}

// getAudit answers GET /v1/audit?job=ID: the server's records of that
// job, oldest first (every record when job is not given), of those the
// caller may read: an operator its tenant's (and the fleet's, fleetKinds),
// an admin every record. Whose a record is is read from the log itself
// (auditTenants), so it holds for a job Temporal no longer keeps; another
// tenant's job reads as one with no records, as an unknown id does.
func (s *Server) getAudit(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("job")
	if id != "" {
		if err := jobs.CheckName("job", id); err != nil {
			writeErr(w, err)
			return
		}
	}
	out := []audit.Record{}
	if s.cfg.Audit == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	f, err := os.Open(s.cfg.Audit.Path())
	if err != nil {
		writeErr(w, errs.Wrap(errs.Unavailable, err, "the server's audit log"))
		return
	}
	defer f.Close()
	tenants := auditTenants{}
	err = audit.Read(f, func(rec audit.Record) error {
		tenant := tenants.of(rec)
		if (id == "" || rec.Fields["job"] == id) && seesRecord(r.Context(), rec, tenant) {
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		writeErr(w, errs.Wrap(errs.Unavailable, err, "the server's audit log"))
		return
	}
	writeJSON(w, http.StatusOK, out)
}
