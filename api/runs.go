package api

import (
	"fmt"
	"net/http"

	"github.com/airlock-run/airlock/errs"
)

// nodeRuns refuses a node's request about job unless the job's workflow
// says node runs it now (runsNow, 403): a node raises questions only for
// its own runs, so a person is never shown a question a node made up for
// another node's job. Other principals pass.
func (s *Server) nodeRuns(w http.ResponseWriter, r *http.Request, job, node string) bool {
	if PrincipalOf(r.Context()).Role != RoleNode {
		return true
	}
	err := s.runsNow(r.Context(), node, job)
	switch {
	case errs.ClassOf(err) == errs.Denied:
		writeError(w, http.StatusForbidden, fmt.Sprintf("%s %s: node %s does not run job %s now; a node raises questions only for the jobs it runs", r.Method, r.URL.Path, node, job))
		return false
	case err != nil:
		writeErr(w, err)
		return false
	}
	return true
}
