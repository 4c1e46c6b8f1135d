package api

import (
	"context"

	"github.com/airlock-run/airlock/jobs"
)

// A job's output read through the API (GET /v1/jobs/ID, the list, a
// call's result) goes back, as far as the server can tell, to the job
// that started it: a child runs for its parent. So the output of a
// tainted child taints its parent from then on, as a read of the child's
// file with ?job= does (recorded in the provenance file and audited as
// job.taint): the parent's later calls carry the taint to its node, and
// the jobs it starts are tainted.

// outputRead records that st's output was read; out says whether what
// was answered holds any of the job's output.
func (s *Server) outputRead(st jobs.Status, out bool) error {
	parent := st.Summary.Parent
	if !out || parent == "" {
		return nil
	}
	if !st.Summary.Tainted && s.readTaint(st.ID) == "" {
		return nil
	}
	why := "read the output of tainted job " + st.ID
	added, err := s.prov.read(parent, why)
	if err != nil || !added {
		return err
	}
	return s.record(AuditJobTaint, map[string]any{"job": parent, "taint": why, "from": st.ID})
}

// hasOutput says whether r holds any of a job's output.
func hasOutput(r *jobs.Result) bool {
	if r == nil {
		return false
	}
	if r.Stdout != "" || r.Stderr != "" {
		return true
	}
	for _, c := range r.Calls {
		if callOutput(c) {
			return true
		}
	}
	return false
}

// callOutput says whether a call's result holds any of its output.
func callOutput(c jobs.CallResult) bool { return c.Stdout != "" || c.Stderr != "" || c.Text != "" }

// callOutputRead records that a call's result of job id was read.
func (s *Server) callOutputRead(ctx context.Context, id string, c jobs.CallResult) error {
	if !callOutput(c) {
		return nil
	}
	st, err := s.cfg.Jobs.Get(ctx, id)
	if err != nil {
		return err
	}
	return s.outputRead(st, true)
}
