package mediator

import (
	"context"
	"time"

	"github.com/airlock-run/airlock/runner"
)

// Session is the warm boxes of one front-end session (an `mcp serve`
// session): calls made with its context (Bind) that the runner can run
// warm (tier 1 or 2, no placeholders on the host; with network, tier 1,
// each call's connections served by its own egress proxy) run in a box
// made once for their confinement instead of a fresh one. Every call is still
// decided, planned, recorded and fitted exactly as without a session; only
// the start of the box changes. Close it when the session ends; its boxes
// end then, after DefaultIdle without a call, and with airlock.
type Session struct {
	pool *runner.Pool
}

// NewSession returns a session whose boxes run the kernel's airlock binary
// as their init, each ended after idle without a call (0 is
// runner.DefaultIdle).
func (k *Kernel) NewSession(idle time.Duration) *Session {
	return &Session{pool: runner.NewPool(k.run.exe, idle)}
}

// Close ends every box of the session and waits until nothing of them is
// left. Calls still bound to the session afterwards run in fresh boxes.
func (s *Session) Close() {
	if s != nil {
		s.pool.Close()
	}
}

type sessionKey struct{}

// Bind returns ctx carrying s: the kernel's calls made with it run in the
// session's boxes.
func (s *Session) Bind(ctx context.Context) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// runBox runs req in the session ctx carries, or in a fresh box when it
// carries none or req is a command that lives as long as its caller
// (ExecOptions.Session, which has its own box).
func (k *Kernel) runBox(ctx context.Context, req runner.Request, long bool) (runner.Result, error) {
	if s, _ := ctx.Value(sessionKey{}).(*Session); s != nil && !long {
		return s.pool.Run(ctx, req)
	}
	return runner.Run(ctx, k.run.exe, req)
}
