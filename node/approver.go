package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/mediator"
)

// serverApprover puts a job's escalations to a person through the server:
// the question (the kernel's own escalation, under its digest) is raised
// on the job's workflow, and the call waits for the answer the workflow
// delivers on this node's queue, or denies at the kernel's timeout.
type serverApprover struct {
	cfg Config
	// token is the node's own API token: the server takes a question
	// from it only in this node's name.
	token   func() string
	job     string
	waiters *jobs.Waiters
}

func (a *serverApprover) Ask(ctx context.Context, e mediator.Escalation) mediator.Reply {
	q := jobs.Question{ID: newQuestionID(), Job: a.job, Node: a.cfg.ID, Digest: e.Digest(),
		Call: describeCall(e.Call), Kind: string(e.Call.Kind), Verdict: e.Decision.Verdict.String(),
		Rule: e.Decision.Rule, Reason: e.Decision.Reason, Timeout: e.Timeout}
	answers, done := a.waiters.Expect(q.ID, q.Digest)
	defer done()
	if err := a.raise(ctx, q); err != nil {
		return mediator.Reply{Answer: mediator.AnswerError, Decider: "error", Err: err}
	}
	select {
	case <-ctx.Done():
		return mediator.Reply{Answer: mediator.AnswerTimeout, Decider: "timeout"}
	case ans := <-answers:
		if ans.Digest != q.Digest { // Deliver checked it; a second look costs nothing
			return mediator.Reply{Answer: mediator.AnswerError, Decider: "error", Err: errs.Invalidf("an answer for another question")}
		}
		by := "person:" + strings.TrimPrefix(nonEmpty(ans.By, "operator"), "person:")
		if ans.Answer == jobs.AnswerAllowOnce {
			return mediator.Reply{Answer: mediator.AnswerAllowOnce, Decider: by}
		}
		return mediator.Reply{Answer: mediator.AnswerDeny, Decider: by}
	}
}

// raise posts the question to the server, which records it and signals it
// to the job's workflow.
func (a *serverApprover) raise(ctx context.Context, q jobs.Question) error {
	body, _ := json.Marshal(q)
	url := strings.TrimRight(a.cfg.Server, "/") + "/v1/jobs/" + q.Job + "/questions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return errs.Invalidf("node: question: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token())
	req.Header.Set("Content-Type", "application/json")
	c := a.cfg.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "node: raise question with %s", a.cfg.Server)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return errs.Unavailablef("node: raise question with %s: %s: %s", a.cfg.Server, resp.Status, bytes.TrimSpace(b))
	}
	return nil
}

// describeCall is the call as one line for the person: what it runs or
// where it goes. Shown escaped by the client.
func describeCall(c mediator.Call) string {
	switch c.Kind {
	case mediator.KindExec:
		return strings.Join(c.Argv, " ")
	case mediator.KindShell:
		return c.Command
	case mediator.KindNet:
		return "connect " + net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	case mediator.KindTool:
		return "tool " + c.Tool
	}
	return string(c.Kind) + " " + c.Path
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func newQuestionID() string {
	var b [8]byte
	rand.Read(b[:])
	return "q-" + hex.EncodeToString(b[:])
}
