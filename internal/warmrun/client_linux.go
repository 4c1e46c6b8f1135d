package warmrun

import (
	"context"

	"github.com/airlock-run/airlock/internal/warmhand"
)

// HandOver hands req to the server in dir with the descriptors fds
// (standard input, output and error, then the terminal when req.TTY). It
// does nothing else before: no policy, no kernel. ctx ending (a signal)
// cancels the call on the server. The client is warmhand's, which the
// airlock binary runs at its start (warmhand.Start).
func HandOver(ctx context.Context, dir string, req Request, fds []int) Result {
	return warmhand.HandOver(ctx, dir, req, fds)
}
