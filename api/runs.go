package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/airlock-run/airlock/errs"
)

// runsOn says whether a node runs a job: the Temporal workflow's own
// record of its started activities (jobs.Client.RunsOn), never the node's
// word.
type runsOn interface {
	RunsOn(ctx context.Context, job, node string) (bool, error)
}

// nodeRuns refuses a node's request about job unless node runs it now
// (403): a node raises questions only for its own runs, so a person is
// never shown a question a node made up for another node's job. Other
// principals pass. A Jobs that cannot say who runs a job refuses every
// node (fail closed).
func (s *Server) nodeRuns(w http.ResponseWriter, r *http.Request, job, node string) bool {
	if PrincipalOf(r.Context()).Role != RoleNode {
		return true
	}
	ro, ok := s.cfg.Jobs.(runsOn)
	if !ok {
		writeErr(w, errs.Unavailablef("%s %s: this server cannot tell which node runs job %s, so it takes no node's question", r.Method, r.URL.Path, job))
		return false
	}
	runs, err := ro.RunsOn(r.Context(), job, node)
	if err != nil {
		writeErr(w, err)
		return false
	}
	if !runs {
		writeError(w, http.StatusForbidden, fmt.Sprintf("%s %s: node %s does not run job %s; a node raises questions only for the jobs it runs", r.Method, r.URL.Path, node, job))
		return false
	}
	return true
}
