package jobs

import "context"

// deliverActivity is the node's side of AnswerActivity.
func deliverActivity(w *Waiters) func(ctx context.Context, a Answer) error {
	return func(ctx context.Context, a Answer) error { return w.Deliver(a) }
}
