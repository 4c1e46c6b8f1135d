package wire

import (
	"sync"
	"time"

	"github.com/airlock-run/airlock/errs"
)

// Names of the approval round trip on the wire. A node raises a question
// through the server, which signals it to the job's workflow; a person's
// answer reaches the workflow as a signal too, and the workflow hands it to
// the waiting call on the node's own queue.
const (
	// SignalAsk carries a Question to the job's workflow.
	SignalAsk = "airlock.ask"
	// SignalAnswer carries an Answer to the job's workflow.
	SignalAnswer = "airlock.answer"
	// AnswerActivity delivers an answer to the node whose call waits.
	AnswerActivity = "airlock.deliver"
	// QueryQuestions lists the job's questions still waiting.
	QueryQuestions = "airlock.questions"
)

// Question is an escalation of a job's call, as the node's kernel put it:
// the call and what the policy decided, exactly, under Digest (the
// mediator's Escalation digest). An answer names the digest it answers.
type Question struct {
	ID     string `json:"id"`
	Job    string `json:"job"`
	Node   string `json:"node"`
	Digest string `json:"digest"`
	// Call is the call as one line (escaped for a terminal by whoever
	// shows it); Kind, Verdict, Rule and Reason are the decision's.
	Call    string `json:"call"`
	Kind    string `json:"kind"`
	Verdict string `json:"verdict"`
	Rule    string `json:"rule,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Timeout is how long the call waits; past it the call is denied.
	Timeout time.Duration `json:"timeout"`
	// Deadline is set by the workflow when it records the question.
	Deadline time.Time `json:"deadline,omitzero"`
}

// Answer is a person's answer to one question.
type Answer struct {
	Question string `json:"question"`
	// Digest is the question's digest the person saw: an answer never
	// applies to another call.
	Digest string `json:"digest"`
	// Answer is "allow-once" or "deny".
	Answer string `json:"answer"`
	// By names who answered.
	By string `json:"by,omitempty"`
}

// Answers of the wire.
const (
	AnswerAllowOnce = "allow-once"
	AnswerDeny      = "deny"
)

// Validate refuses an answer that names no question, digest or known
// answer.
func (a Answer) Validate() error {
	switch {
	case a.Question == "":
		return errs.Invalidf("question: empty")
	case a.Digest == "":
		return errs.Invalidf("digest: empty (the question's digest, as GET /v1/approvals lists it)")
	case a.Answer != AnswerAllowOnce && a.Answer != AnswerDeny:
		return errs.Invalidf("answer %q: want %s or %s", a.Answer, AnswerAllowOnce, AnswerDeny)
	}
	return nil
}

// Waiters holds a node's calls waiting for an answer, by question id.
type Waiters struct {
	mu sync.Mutex
	m  map[string]waiter
}

type waiter struct {
	digest string
	ch     chan Answer
}

// Expect registers a call waiting on question id with digest; it must be
// registered before the question is raised, so no answer is missed. Done
// unregisters it.
func (w *Waiters) Expect(id, digest string) (answers <-chan Answer, done func()) {
	ch := make(chan Answer, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]waiter{}
	}
	w.m[id] = waiter{digest: digest, ch: ch}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.m, id)
		w.mu.Unlock()
	}
}

// Deliver hands a to the call waiting on its question. An answer whose
// digest is not the waiting question's is refused: it was given for
// another call.
func (w *Waiters) Deliver(a Answer) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt, ok := w.m[a.Question]
	if !ok {
		return errs.NotFoundf("question %s: no call waits for it (it timed out, or was answered)", a.Question)
	}
	if wt.digest != a.Digest {
		return errs.Invalidf("question %s: the answer's digest is not the question's", a.Question)
	}
	delete(w.m, a.Question)
	wt.ch <- a
	return nil
}
