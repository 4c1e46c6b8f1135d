package jobs

import (
	"context"

	"github.com/airlock-run/airlock/errs"
)

// Call signals c to open job id's workflow, which runs it through the
// job's kernel after the calls before it; its result is read with
// CallResult once it ended. A malformed call is refused here, before it
// reaches the workflow (which refuses it too).
func (c *Client) Call(ctx context.Context, id string, call Call) error {
	if err := call.Validate(); err != nil {
		return err
	}
	return c.signal(ctx, id, SignalCall, call)
}

// Release signals open job id's workflow to end once its calls are done.
func (c *Client) Release(ctx context.Context, id string) error {
	return c.signal(ctx, id, SignalRelease, nil)
}

// Trace is job id's trace as its workflow holds it (a job that ended is
// read back from its history).
func (c *Client) Trace(ctx context.Context, id string) (Trace, error) {
	v, err := c.c.QueryWorkflow(ctx, id, "", QueryTrace)
	if err != nil {
		return Trace{}, notFoundOr(err, "job %s: trace", id)
	}
	var t Trace
	if err := v.Get(&t); err != nil {
		return Trace{}, errs.Wrap(errs.Unavailable, err, "job %s: trace", id)
	}
	return t, nil
}

// CallResult is the result of call of job id; done is false while the
// call has not ended (or was never taken).
func (c *Client) CallResult(ctx context.Context, id, call string) (r CallResult, done bool, err error) {
	v, err := c.c.QueryWorkflow(ctx, id, "", QueryCallResult, call)
	if err != nil {
		return CallResult{}, false, notFoundOr(err, "job %s: call %s", id, call)
	}
	if err := v.Get(&r); err != nil {
		return CallResult{}, false, errs.Wrap(errs.Unavailable, err, "job %s: call %s", id, call)
	}
	return r, r.Call != "", nil
}
