package jobs

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"sync/atomic"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/airlock-run/airlock/errs"
)

// Client starts and reads jobs.
type Client struct {
	c client.Client
	// quotas are the quotas this client's orchestration holds (nil
	// before OrchestrateWith): Start marks a job QuotaFree only when they
	// say no quota applies to it.
	quotas atomic.Pointer[Quotas]
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
// the returned function. No quota bounds its jobs (OrchestrateWith).
func (c *Client) Orchestrate() (stop func(), err error) { return c.OrchestrateWith(nil) }

// OrchestrateWith is Orchestrate under the server's quotas (nil: none):
// the worker also answers the quota's asks and releases, on the same
// queue, and frees at start the slots of jobs that ended while the server
// was away.
func (c *Client) OrchestrateWith(q *Quotas) (stop func(), err error) {
	if q == nil {
		if q, err = NewQuotas(QuotaConfig{}); err != nil {
			return nil, err
		}
	}
	q.running = c.running
	// Before any job asks: a job started quota free that a quota now
	// bounds counts against it while it runs.
	if err := c.adoptQuotaFree(context.Background(), q); err != nil {
		return nil, err
	}
	c.quotas.Store(q)
	w := worker.New(c.c, WorkflowQueue, worker.Options{DisableRegistrationAliasing: true})
	w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	registerQuotas(w, q)
	if err := w.Start(); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "poll %s", WorkflowQueue)
	}
	go q.Sweep(context.Background())
	return w.Stop, nil
}

// adoptQuotaFree gives each running job that was started quota free and
// that q bounds (the server started again with a quota added) a slot of
// q: it took none, and would otherwise run beside the quota's full count.
// Its workflow never releases the slot (it holds none to its knowledge):
// Sweep frees it once the job ends. A list that fails fails the start,
// rather than run with quotas that do not see every job.
func (c *Client) adoptQuotaFree(ctx context.Context, q *Quotas) error {
	infos, err := c.list(ctx, true)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "quotas: jobs started quota free")
	}
	for _, info := range infos {
		s := c.status(ctx, info)
		if s.Summary.QuotaFree && s.Summary.Tenant != "" && q.Applies(s.Summary.Pool, s.Summary.Tenant) {
			if err := q.adopt(Slot{Job: s.ID, Pool: s.Summary.Pool, Tenant: s.Summary.Tenant, Since: s.Started}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Start starts j's workflow under j.ID. j.QuotaFree is this client's to
// set, whatever j says: true only when the quotas of its orchestration
// bound neither j's pool nor its tenant (a client that orchestrates
// nothing knows no quotas, and its jobs take their slot as before).
func (c *Client) Start(ctx context.Context, j Job) error {
	if err := j.Validate(); err != nil {
		return err
	}
	q := c.quotas.Load()
	j.QuotaFree = q != nil && !q.Applies(j.Pool, j.Tenant)
	// The summary rides in the memo, which Temporal's visibility returns
	// with every list entry: the server keeps no list of its own to lose.
	// Eager: the start's answer carries the workflow's first task to this
	// client's own worker (OrchestrateWith), a trip through the queue
	// fewer; a client that orchestrates nothing gets none and the task
	// goes through the queue as before.
	_, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: j.ID, TaskQueue: WorkflowQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE, EnableEagerStart: true,
		Memo: map[string]any{memoKey: j.Summary()}}, WorkflowName, j)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return errs.Invalidf("job %s: an id already used", j.ID)
	}
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "start job %s", j.ID)
	}
	return nil
}

// memoKey is the memo field that holds a job's Summary.
const memoKey = "airlock.job"

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
	info, err := c.describe(ctx, id)
	if err != nil {
		return Status{}, err
	}
	return c.status(ctx, info), nil
}

// describe is job id's workflow as Temporal describes it; an id no
// workflow has is not found.
func (c *Client) describe(ctx context.Context, id string) (*workflowpb.WorkflowExecutionInfo, error) {
	d, err := c.c.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, errs.NotFoundf("job %s: not found", id)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "job %s", id)
	}
	return d.GetWorkflowExecutionInfo(), nil
}

// Summary is job id's summary as its start recorded it (the workflow's
// memo; empty when it has none), read with one describe whether the job
// runs or ended, so the time taken says nothing of its state.
func (c *Client) Summary(ctx context.Context, id string) (Summary, error) {
	info, err := c.describe(ctx, id)
	if err != nil {
		return Summary{}, err
	}
	var sum Summary
	if p, ok := info.GetMemo().GetFields()[memoKey]; ok {
		// A memo that does not decode is no summary: the caller treats the
		// job as one without.
		if converter.GetDefaultDataConverter().FromPayload(p, &sum) != nil {
			sum = Summary{}
		}
	}
	return sum, nil
}

// status reads a workflow's state, summary and, once it ended, its result
// or failure.
func (c *Client) status(ctx context.Context, info *workflowpb.WorkflowExecutionInfo) Status {
	id := info.GetExecution().GetWorkflowId()
	s := Status{ID: id, State: states[info.GetStatus()], Started: info.GetStartTime().AsTime()}
	if info.GetCloseTime() != nil {
		s.Closed = info.GetCloseTime().AsTime()
	}
	if p, ok := info.GetMemo().GetFields()[memoKey]; ok {
		// A memo that does not decode leaves the summary empty: the job's
		// state still shows.
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s.Summary)
	}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return s
	}
	var r Result
	if err := c.c.GetWorkflow(ctx, id, info.GetExecution().GetRunId()).Get(ctx, &r); err != nil {
		s.Error = failureMessage(err)
		return s
	}
	s.Result = &r
	return s
}

// listPage bounds one page of a list from Temporal's visibility.
const listPage = 500

// List is every job Temporal's visibility holds (running or ended, until
// the namespace's retention removes it), oldest first; running only
// lists those still running.
func (c *Client) List(ctx context.Context, running bool) ([]Status, error) {
	infos, err := c.list(ctx, running)
	if err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(infos))
	for i := len(infos) - 1; i >= 0; i-- { // visibility lists the newest first
		out = append(out, c.status(ctx, infos[i]))
	}
	return out, nil
}

// list pages through the job workflows visibility holds.
func (c *Client) list(ctx context.Context, running bool) ([]*workflowpb.WorkflowExecutionInfo, error) {
	q := "WorkflowType = '" + WorkflowName + "'"
	if running {
		q += " AND ExecutionStatus = 'Running'"
	}
	var out []*workflowpb.WorkflowExecutionInfo
	var token []byte
	for {
		resp, err := c.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: listPage, NextPageToken: token, Query: q})
		if err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "list jobs")
		}
		out = append(out, resp.GetExecutions()...)
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
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
// heartbeat (within HeartbeatEvery) and tears the box down.
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

// KillAgent cancels every running job of agent whose summary mine
// accepts (an agent's name is its tenant's: mine holds the kill to the
// caller's tenant), on whichever node runs it, and returns their ids. A
// job that ended between the list and its cancel is no error; any other
// failure is returned after the rest were cancelled, so one refusal never
// shields the agent's other jobs.
func (c *Client) KillAgent(ctx context.Context, agent string, mine func(Summary) bool) ([]string, error) {
	if err := CheckName("agent", agent); err != nil {
		return nil, err
	}
	if mine == nil {
		return nil, errs.Invalidf("kill agent %s: no tenant's jobs are named (a nil filter kills none)", agent)
	}
	infos, err := c.list(ctx, true)
	if err != nil {
		return nil, err
	}
	var killed []string
	var failed []error
	for _, info := range infos {
		var s Summary
		if p, ok := info.GetMemo().GetFields()[memoKey]; !ok || converter.GetDefaultDataConverter().FromPayload(p, &s) != nil || s.Agent != agent || !mine(s) {
			continue
		}
		id := info.GetExecution().GetWorkflowId()
		err := c.Kill(ctx, id)
		switch {
		case err == nil:
			killed = append(killed, id)
		case errs.ClassOf(err) != errs.NotFound:
			failed = append(failed, err)
		}
	}
	return killed, errors.Join(failed...)
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
