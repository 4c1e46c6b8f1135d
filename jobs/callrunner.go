package jobs

import "context"

// CallRunner is a Runner that keeps a job's kernel open between its calls:
// Open builds it (and the job's directory), Call runs one call through it,
// Close tears it down (every box gone). Close of a job not open is a no-op.
type CallRunner interface {
	Runner
	Open(ctx context.Context, req LeaseRequest) (Lease, error)
	Call(ctx context.Context, req CallRequest) (CallResult, error)
	Close(ctx context.Context, job string) error
}
