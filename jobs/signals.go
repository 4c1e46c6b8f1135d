package jobs

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"

	"github.com/airlock-run/airlock/errs"
)

// Ask signals a node's question to job id's workflow.
func (c *Client) Ask(ctx context.Context, id string, q Question) error {
	return c.signal(ctx, id, SignalAsk, q)
}

// Answer signals a person's answer to job id's workflow, which hands it to
// the waiting call only when it names a waiting question's digest.
func (c *Client) Answer(ctx context.Context, id string, a Answer) error {
	if err := a.Validate(); err != nil {
		return err
	}
	return c.signal(ctx, id, SignalAnswer, a)
}

// Questions are job id's questions still waiting, as its workflow holds
// them.
func (c *Client) Questions(ctx context.Context, id string) ([]Question, error) {
	v, err := c.c.QueryWorkflow(ctx, id, "", QueryQuestions)
	if err != nil {
		return nil, notFoundOr(err, "job %s: questions", id)
	}
	var qs []Question
	if err := v.Get(&qs); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "job %s: questions", id)
	}
	return qs, nil
}

func (c *Client) signal(ctx context.Context, id, name string, arg any) error {
	if err := c.c.SignalWorkflow(ctx, id, "", name, arg); err != nil {
		return notFoundOr(err, "job %s: %s", id, name)
	}
	return nil
}

// notFoundOr classes a Temporal error: a job that is not running is not
// found, anything else is unavailable.
func notFoundOr(err error, format string, args ...any) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return errs.Wrap(errs.NotFound, err, format+": no such running job", args...)
	}
	return errs.Wrap(errs.Unavailable, err, format, args...)
}
