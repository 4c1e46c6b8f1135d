package api

import (
	"net/http"
	"sort"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
)

// maxQuestionTimeout bounds how long a question may say it waits: the
// node's kernel denies at the policy's timeout, which is never longer.
const maxQuestionTimeout = 24 * time.Hour

// questionEntry is a question raised on this server, waiting.
type questionEntry struct {
	q        jobs.Question
	deadline time.Time
	// answered is set, under s.mu, by the one answer that is signalled;
	// the entry stays until its deadline so its id is not raised again
	// and a second answer finds it taken.
	answered bool
	// tenant is the question's job's: only its operators (and admins)
	// list or answer it.
	tenant string
}

// raise answers POST /v1/jobs/{id}/questions: a node's question about a
// call of job id. It is recorded and signalled to the job's workflow,
// which keeps it only when it comes from the node running the job.
func (s *Server) raise(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var q jobs.Question
	if !decode(w, r, &q) {
		return
	}
	if err := checkQuestion(id, q); err != nil {
		writeErr(w, err)
		return
	}
	// A node raises questions in its own name only; the workflow keeps
	// one only from the node its run is on.
	if !actsAs(w, r, q.Node) || !s.nodeRuns(w, r, id, q.Node) {
		return
	}
	sum, err := s.ownJob(r, id)
	if err != nil {
		writeErr(w, err)
		return
	}
	// The id is taken before the signal, so a second raise of it (another
	// call line under the same digest) cannot change what a person is
	// shown; the workflow keeps the first as well.
	s.mu.Lock()
	if _, dup := s.questions[q.ID]; dup {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "id: question "+q.ID+" was raised already; a question is never raised twice (raise a new one with a new id)")
		return
	}
	s.questions[q.ID] = questionEntry{q: q, deadline: s.cfg.Now().Add(q.Timeout), tenant: sum.Tenant}
	s.mu.Unlock()
	if err := s.cfg.Jobs.Ask(r.Context(), id, q); err != nil {
		s.mu.Lock()
		delete(s.questions, q.ID)
		s.mu.Unlock()
		writeErr(w, err)
		return
	}
	s.record(AuditAsked, map[string]any{"job": id, "tenant": sum.Tenant, "question": q.ID, "node": q.Node, "digest": q.Digest,
		"kind": q.Kind, "rule": q.Rule, "reason": q.Reason, "timeout": q.Timeout.String()})
	writeJSON(w, http.StatusAccepted, map[string]string{"id": q.ID})
}

// checkQuestion refuses a question that could not be shown or answered,
// naming the field.
func checkQuestion(job string, q jobs.Question) error {
	switch {
	case jobs.CheckName("job id", job) != nil:
		return jobs.CheckName("job id", job)
	case q.Job != job:
		return errs.Invalidf("job: %q is not the job of the path, %q", q.Job, job)
	case jobs.CheckName("id", q.ID) != nil:
		return errs.Invalidf("id: %v", jobs.CheckName("id", q.ID))
	case jobs.CheckName("node", q.Node) != nil:
		return errs.Invalidf("node: %v", jobs.CheckName("node", q.Node))
	case len(q.Digest) != len("sha256:")+64:
		return errs.Invalidf("digest: want sha256: and 64 hex digits")
	case q.Timeout <= 0 || q.Timeout > maxQuestionTimeout:
		return errs.Invalidf("timeout: want a positive duration of at most %s", maxQuestionTimeout)
	}
	return nil
}

// listApprovals answers GET /v1/approvals: the questions of the caller's
// tenant's jobs (an admin's: every tenant's) still waiting, soonest denied
// first. With ?job=ID they are read from that job's workflow, which holds
// them across a restart of this server.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	if job := r.URL.Query().Get("job"); job != "" {
		qs, _, err := s.workflowQuestions(r, job)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, qs)
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	out := []jobs.Question{}
	for id, e := range s.questions {
		if !now.Before(e.deadline) {
			delete(s.questions, id)
			continue
		}
		if e.answered || !seesTenant(r.Context(), e.tenant) {
			continue
		}
		q := e.q
		q.Deadline = e.deadline
		out = append(out, q)
	}
	s.mu.Unlock()
	sort.Slice(out, func(a, b int) bool { return out[a].Deadline.Before(out[b].Deadline) })
	writeJSON(w, http.StatusOK, out)
}

// workflowQuestions are job's waiting questions as its workflow holds
// them, with their deadlines, and job's tenant; another tenant's job is
// not found.
func (s *Server) workflowQuestions(r *http.Request, job string) ([]jobs.Question, string, error) {
	sum, err := s.ownJob(r, job)
	if err != nil {
		return nil, "", err
	}
	qs, err := s.cfg.Jobs.Questions(r.Context(), job)
	return qs, sum.Tenant, err
}

// answer answers POST /v1/approvals/{id}: a person's answer, signalled to
// the job's workflow and from there to the node's waiting call.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req AnswerRequest
	if !decode(w, r, &req) {
		return
	}
	by := "person:" + PrincipalOf(r.Context()).Name
	a := jobs.Answer{Question: id, Digest: req.Digest, Answer: req.Answer, By: by}
	if err := a.Validate(); err != nil {
		writeErr(w, err)
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	e, ok := s.questions[id]
	if ok && !now.Before(e.deadline) {
		delete(s.questions, id)
		ok = false
	}
	s.mu.Unlock()
	// Another tenant's question is one that does not wait, whatever state
	// it is in.
	ok = ok && seesTenant(r.Context(), e.tenant)
	if ok && e.answered {
		writeErr(w, errs.NotFoundf("question %s: it was answered already; an answer is given once", id))
		return
	}
	if !ok && req.Job != "" {
		qs, tenant, err := s.workflowQuestions(r, req.Job)
		if err != nil {
			writeErr(w, err)
			return
		}
		for _, q := range qs {
			if q.ID == id {
				e, ok = questionEntry{q: q, deadline: q.Deadline, tenant: tenant}, true
			}
		}
	}
	if !ok {
		writeErr(w, errs.NotFoundf("question %s: none waits (it was answered, or denied at its timeout)", id))
		return
	}
	if e.q.Digest != req.Digest {
		s.record(AuditAnswerRefused, map[string]any{"job": e.q.Job, "tenant": e.tenant, "question": id, "by": by, "why": "digest"})
		writeError(w, http.StatusConflict, "digest: not the digest of question "+id+"; an answer is for the call it was given for (list it again)")
		return
	}
	// Taken under the lock before the signal, so of two answers at once
	// one is signalled and recorded, the other refused.
	s.mu.Lock()
	if cur, held := s.questions[id]; held && cur.answered {
		s.mu.Unlock()
		writeErr(w, errs.NotFoundf("question %s: it was answered already; an answer is given once", id))
		return
	} else if held && cur.q.Job != e.q.Job {
		// Another job's question under the same id, raised since a
		// restart: never taken over by this answer.
		s.mu.Unlock()
		writeErr(w, errs.NotFoundf("question %s: none waits (it was answered, or denied at its timeout)", id))
		return
	}
	e.answered = true
	s.questions[id] = e
	s.mu.Unlock()
	if err := s.cfg.Jobs.Answer(r.Context(), e.q.Job, a); err != nil {
		s.mu.Lock()
		e.answered = false
		s.questions[id] = e
		s.mu.Unlock()
		writeErr(w, err)
		return
	}
	s.record(AuditAnswered, map[string]any{"job": e.q.Job, "tenant": e.tenant, "question": id, "digest": e.q.Digest, "answer": a.Answer, "by": by})
	writeJSON(w, http.StatusAccepted, map[string]string{"id": id, "answer": a.Answer})
}
