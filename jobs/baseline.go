package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/airlock-run/airlock/errs"
)

// Baseline's names: a task queue no job uses, so its workflows never meet
// the server's worker or a node.
const (
	baselineQueue    = "airlock.baseline"
	baselineWorkflow = "airlock.baseline"
	baselineActivity = "airlock.baseline.step"
)

// Baseline measures the Temporal server's own rate for workflows of the
// shape a short job has, with none of airlock's work in them: n workflows
// started at once, each running steps activities that do nothing, one
// after the other, on a task queue of their own polled by one worker of
// this client (options as the server's own worker's). It returns how long
// until every one ended. steps 0 is the empty workflow, the most the
// server does per second at all; a job's rate divided by it says how much
// of the job's time is the server's. A benchmark's tool: it starts
// workflows, so only the server's identity may call it.
func (c *Client) Baseline(ctx context.Context, n, steps int) (time.Duration, error) {
	w := worker.New(c.c, baselineQueue, worker.Options{DisableRegistrationAliasing: true})
	w.RegisterWorkflowWithOptions(baselineRun, workflow.RegisterOptions{Name: baselineWorkflow})
	w.RegisterActivityWithOptions(func(context.Context) error { return nil }, activity.RegisterOptions{Name: baselineActivity})
	if err := w.Start(); err != nil {
		return 0, errs.Wrap(errs.Unavailable, err, "poll %s", baselineQueue)
	}
	defer w.Stop()
	var b [6]byte
	rand.Read(b[:])
	prefix := "baseline-" + hex.EncodeToString(b[:])
	start := time.Now()
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			run, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%d", prefix, i), TaskQueue: baselineQueue},
				baselineWorkflow, steps)
			if err == nil {
				err = run.Get(ctx, nil)
			}
			if err != nil {
				errc <- err
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	close(errc)
	if err := <-errc; err != nil {
		return d, errs.Wrap(errs.Unavailable, err, "baseline workflows")
	}
	return d, nil
}

// baselineRun is Baseline's workflow: steps activities that do nothing,
// in sequence, each with the options of a claim.
func baselineRun(ctx workflow.Context, steps int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           baselineQueue,
		StartToCloseTimeout: claimStartToClose,
		RetryPolicy:         once,
	})
	for range steps {
		if err := workflow.ExecuteActivity(ctx, baselineActivity).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}
