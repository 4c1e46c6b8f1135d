package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
)

// CallJobs is what the API needs of the fleet for a job's calls and trace
// (jobs.Client): a Jobs without it answers those routes 501.
type CallJobs interface {
	// Call signals a call to an open job; CallResult reads its result
	// once it ended (done false before).
	Call(ctx context.Context, id string, c jobs.Call) error
	CallResult(ctx context.Context, id, call string) (r jobs.CallResult, done bool, err error)
	Release(ctx context.Context, id string) error
	Trace(ctx context.Context, id string) (jobs.Trace, error)
}

// AuditJobCall records a call an operator added to an open job (by its
// description's SHA-256, never its text).
const AuditJobCall = "job.call"

// callWait bounds how long POST /v1/jobs/{id}/calls waits for the call's
// result (?wait=DURATION asks for less); a call not ended by then is
// answered 202 with its id, and its result is read from the trace.
const callWait = 5 * time.Minute

// callPoll is how often a waiting call's result is looked for.
const callPoll = 100 * time.Millisecond

// CallAccepted is the answer to POST /v1/jobs/{id}/calls for a call that
// had not ended within the wait.
type CallAccepted struct {
	Job   string `json:"job"`
	Call  string `json:"call"`
	State string `json:"state"`
}

// callRoute is the fleet's calls and the route's job id, checked and held
// to the token's tenant; false when it answered already (501: a fleet
// without calls; 400: a bad id; 404: no job of the tenant's).
func (s *Server) callRoute(w http.ResponseWriter, r *http.Request) (CallJobs, string, bool) {
	cj, ok := s.cfg.Jobs.(CallJobs)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this server's fleet takes no calls")
		return nil, "", false
	}
	id := r.PathValue("id")
	if err := jobs.CheckName("job id", id); err != nil {
		writeErr(w, err)
		return nil, "", false
	}
	// Another tenant's job is answered as one that does not exist.
	if _, err := s.ownJob(r, id); err != nil {
		writeErr(w, err)
		return nil, "", false
	}
	return cj, id, true
}

// openJob refuses a job that is not running or not open: a call signalled
// to it would never run.
func (s *Server) openJob(ctx context.Context, id string, c jobs.Call) error {
	st, err := s.cfg.Jobs.Get(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case st.State != "running":
		return conflictf("job %s is %s: it takes no more calls", id, st.State)
	case !st.Summary.Open:
		return conflictf("job %s is not open: start it with \"open\": true (airlock job start --open) to add calls", id)
	case c.Kind == jobs.CallTool && !slices.Contains(st.Summary.MCP, c.Server):
		return errs.Invalidf("call %s: server %q: not one of job %s's MCP servers (mcp)", c.ID, c.Server, id)
	}
	return nil
}

// addCall adds a call to an open job and answers its result, waiting for
// it (bounded): the call runs through the job's kernel on its node, after
// the calls before it, decided by the job's policy.
func (s *Server) addCall(w http.ResponseWriter, r *http.Request) {
	cj, id, ok := s.callRoute(w, r)
	if !ok {
		return
	}
	wait := callWait
	if q := r.URL.Query().Get("wait"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d < 0 {
			writeErr(w, errs.Invalidf("wait %q: want a duration such as 30s", q))
			return
		}
		wait = min(d, callWait)
	}
	var c jobs.Call
	if !decode(w, r, &c) {
		return
	}
	// The server names every call it adds, so no caller names another
	// call's id: a second call under one would be refused by the job,
	// and its caller would read the first call's result as its own.
	if c.ID != "" {
		writeErr(w, errs.Invalidf("field \"id\": the server names each call it adds (the answer's \"call\"); leave it out"))
		return
	}
	c.ID = newCallID()
	if c.Taint != "" {
		writeErr(w, errs.Invalidf("field \"taint\": the server sets it (the job's taint); leave it out"))
		return
	}
	if err := c.Validate(); err != nil {
		writeErr(w, err)
		return
	}
	if err := s.openJob(r.Context(), id, c); err != nil {
		writeCallErr(w, err)
		return
	}
	// The job's kernel was built with its start's taint; what the job read
	// since (a read the server recorded, by an operator for it, say) goes
	// with each call, and the node taints the kernel before it runs.
	c.Taint = s.readTaint(id)
	if err := cj.Call(r.Context(), id, c); err != nil {
		writeErr(w, err)
		return
	}
	s.record(AuditJobCall, map[string]any{"job": id, "call": c.ID, "kind": c.Kind, "call_sha256": sha(c.Describe()),
		"by": PrincipalOf(r.Context()).Name})
	res, done, err := s.awaitCall(r.Context(), cj, id, c.ID, wait)
	if err == nil && done {
		err = s.callOutputRead(r.Context(), id, res)
	}
	switch {
	case err != nil:
		writeCallErr(w, err)
	case !done:
		writeJSON(w, http.StatusAccepted, CallAccepted{Job: id, Call: c.ID, State: "running"})
	default:
		writeJSON(w, http.StatusOK, res)
	}
}

// awaitCall waits up to wait for call's result, and stops early when the
// job ended without running it.
func (s *Server) awaitCall(ctx context.Context, cj CallJobs, id, call string, wait time.Duration) (jobs.CallResult, bool, error) {
	// The queries run under the request's context, not the wait's: a
	// query cut short by the wait's end (Temporal answers its own deadline
	// error a little before ours) is a call still running, not a failure.
	end := time.NewTimer(wait)
	defer end.Stop()
	t := time.NewTicker(callPoll)
	defer t.Stop()
	for i := 0; ; i++ {
		res, done, err := cj.CallResult(ctx, id, call)
		if done || err != nil {
			return res, done, err
		}
		if i%20 == 19 { // every 2 s: a job that ended runs no more calls
			if st, err := s.cfg.Jobs.Get(ctx, id); err == nil && st.State != "running" {
				if res, done, err := cj.CallResult(ctx, id, call); done || err != nil {
					return res, done, err
				}
				return jobs.CallResult{}, false, conflictf("job %s ended (%s) before call %s ran", id, st.State, call)
			}
		}
		select {
		case <-end.C:
			return jobs.CallResult{}, false, nil
		case <-ctx.Done():
			return jobs.CallResult{}, false, ctx.Err()
		case <-t.C:
		}
	}
}

// release ends an open job once its calls are done.
func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	cj, id, ok := s.callRoute(w, r)
	if !ok {
		return
	}
	if err := s.openJob(r.Context(), id, jobs.Call{}); err != nil {
		writeCallErr(w, err)
		return
	}
	if err := cj.Release(r.Context(), id); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"id": id, "state": "releasing"})
}

// trace answers a job's trace: each call, its node, tier and decision.
func (s *Server) trace(w http.ResponseWriter, r *http.Request) {
	cj, id, ok := s.callRoute(w, r)
	if !ok {
		return
	}
	t, err := cj.Trace(r.Context(), id)
	if err != nil {
		writeErr(w, err)
		return
	}
	// The workflow knows the taint the job started with and what its node
	// reported; what the server recorded since (a read for the job) is
	// the server's, as in the job's view.
	if why := s.readTaint(id); why != "" {
		t.Tainted, t.Taint = true, joinTaint(t.Taint, why)
	}
	writeJSON(w, http.StatusOK, t)
}

// startCalls reads a start request's calls, open and idle timeout into j.
func startCalls(req StartRequest, j *jobs.Job) error {
	j.Calls, j.Open, j.MCP = req.Calls, req.Open, req.MCP
	for i, c := range req.Calls {
		if c.Taint != "" {
			return errs.Invalidf("calls[%d]: field \"taint\": the server sets it (the job's taint); leave it out", i)
		}
	}
	if req.IdleTimeout != "" {
		d, err := time.ParseDuration(req.IdleTimeout)
		if err != nil || d <= 0 {
			return errs.Invalidf("idle_timeout %q: want a positive duration such as 10m", req.IdleTimeout)
		}
		if !req.Open {
			return errs.Invalidf("idle_timeout: only an open job (\"open\": true) waits for calls")
		}
		j.IdleTimeout = d
	}
	return nil
}

// maxRunTimeout is the longest run a job may ask for: an open job holds
// its kernel, and a slot of its node, for as long as its run goes on.
const maxRunTimeout = 24 * time.Hour

// leaseBounds refuses a job that would hold its node's kernel past what
// the server allows: a run timeout over maxRunTimeout, or an open job's
// idle timeout over its run timeout (its lease ends at the run timeout
// whatever the idle timeout says).
func leaseBounds(j jobs.Job) error {
	run := j.RunTimeout
	if run <= 0 {
		run = jobs.DefaultRunTimeout
	}
	switch {
	case j.RunTimeout > maxRunTimeout:
		return errs.Invalidf("run_timeout %s: at most %s", j.RunTimeout, maxRunTimeout)
	case j.IdleTimeout > run:
		return errs.Invalidf("idle_timeout %s: over the job's run timeout %s, which ends its lease; ask for a longer run_timeout (at most %s) or a shorter idle_timeout", j.IdleTimeout, run, maxRunTimeout)
	}
	return nil
}

// lowestTier is what a job's view shows as the lowest tier its calls ran
// at: its result's tier once it ended.
func lowestTier(st jobs.Status) *int {
	if st.Result == nil {
		return nil
	}
	t := st.Result.Tier
	return &t
}

func newCallID() string {
	var b [6]byte
	rand.Read(b[:])
	return "c-" + hex.EncodeToString(b[:])
}

// conflict is a request the job's state refuses (409): it is not running,
// not open, or ended before the call ran.
type conflict struct{ msg string }

func (c *conflict) Error() string { return c.msg }

func conflictf(format string, args ...any) error { return &conflict{fmt.Sprintf(format, args...)} }

// writeCallErr answers err: a conflict 409, anything else by its class.
func writeCallErr(w http.ResponseWriter, err error) {
	var c *conflict
	if errors.As(err, &c) {
		writeError(w, http.StatusConflict, c.msg)
		return
	}
	writeErr(w, err)
}
