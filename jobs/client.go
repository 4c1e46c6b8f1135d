package jobs

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/airlock-run/airlock/errs"
)

// Client starts and reads jobs.
type Client struct {
	c client.Client
}

// Dial connects to a Temporal frontend. tlsConfig is the client's mutual
// TLS (its certificate, and the fleet CA as the only root); nil connects
// without TLS, which a frontend of `airlock server` refuses.
func Dial(hostPort, namespace string, tlsConfig *tls.Config, log *slog.Logger) (*Client, error) {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: namespace, Logger: slogAdapter{log},
		ConnectionOptions: client.ConnectionOptions{TLS: tlsConfig}})
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "temporal at %s", hostPort)
	}
	return &Client{c: c}, nil
}

// Close closes the connection.
func (c *Client) Close() { c.c.Close() }

// Orchestrate polls the workflow queue and runs the job workflows: the
// server's own worker, which routes jobs and runs no call. Stop it with
// the returned function.
func (c *Client) Orchestrate() (stop func(), err error) {
	w := worker.New(c.c, WorkflowQueue, worker.Options{DisableRegistrationAliasing: true})
	w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	if err := w.Start(); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "poll %s", WorkflowQueue)
	}
	return w.Stop, nil
}

// Start starts j's workflow under j.ID.
func (c *Client) Start(ctx context.Context, j Job) error {
	if err := j.Validate(); err != nil {
		return err
	}
	_, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: j.ID, TaskQueue: WorkflowQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE}, WorkflowName, j)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return errs.Invalidf("job %s: an id already used", j.ID)
	}
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "start job %s", j.ID)
	}
	return nil
}

// Status is a job as a client reads it.
type Status struct {
	ID string `json:"id"`
	// State is "running", "completed", "failed", "canceled",
	// "terminated" or "timed out".
	State  string  `json:"state"`
	Result *Result `json:"result,omitempty"`
	// Error is why a failed job failed, as a person may read it.
	Error string `json:"error,omitempty"`
	// Started and Closed are when it began and ended (Closed zero while
	// it runs).
	Started time.Time `json:"started"`
	Closed  time.Time `json:"closed,omitzero"`
}

var states = map[enumspb.WorkflowExecutionStatus]string{
	enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:          "running",
	enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:        "completed",
	enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:           "failed",
	enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:         "canceled",
	enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:       "terminated",
	enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:        "timed out",
	enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW: "continued",
}

// Get reads job id: its state and, once it ended, its result or failure.
func (c *Client) Get(ctx context.Context, id string) (Status, error) {
	d, err := c.c.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return Status{}, errs.NotFoundf("job %s: not found", id)
	}
	if err != nil {
		return Status{}, errs.Wrap(errs.Unavailable, err, "job %s", id)
	}
	info := d.GetWorkflowExecutionInfo()
	s := Status{ID: id, State: states[info.GetStatus()], Started: info.GetStartTime().AsTime()}
	if info.GetCloseTime() != nil {
		s.Closed = info.GetCloseTime().AsTime()
	}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return s, nil
	}
	var r Result
	err = c.c.GetWorkflow(ctx, id, "").Get(ctx, &r)
	if err != nil {
		s.Error = failureMessage(err)
		return s, nil
	}
	s.Result = &r
	return s, nil
}

// Wait blocks until job id ends and returns its status.
func (c *Client) Wait(ctx context.Context, id string) (Status, error) {
	var r Result
	_ = c.c.GetWorkflow(ctx, id, "").Get(ctx, &r) // the status below reads how it ended
	if ctx.Err() != nil {
		return Status{}, errs.Wrap(errs.Timeout, ctx.Err(), "job %s", id)
	}
	return c.Get(ctx, id)
}

// Kill cancels job id: the run's node sees the cancellation on its next
// heartbeat and tears the box down.
func (c *Client) Kill(ctx context.Context, id string) error {
	err := c.c.CancelWorkflow(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return errs.NotFoundf("job %s: not found", id)
	}
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "kill job %s", id)
	}
	return nil
}

// failureMessage is the innermost application failure's message: the
// reason the workflow gave, without the SDK's wrapping.
func failureMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return "the job was killed"
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		return "the job timed out (" + te.TimeoutType().String() + ")"
	}
	return err.Error()
}

// History is job id's workflow history as JSON (the form replay tests
// read), for recording a history into testdata.
func (c *Client) History(ctx context.Context, id string) ([]byte, error) {
	it := c.c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "job %s: history", id)
		}
		h.Events = append(h.Events, e)
	}
	return protojson.MarshalOptions{Indent: "  "}.Marshal(h)
}
