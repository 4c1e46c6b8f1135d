package warmrun

import (
	"context"
	"net"
	"syscall"

	"github.com/airlock-run/airlock/internal/warmhand"
)

// exchange runs the client's exchange (warmhand.Exchange) on c, a
// connection a test made itself, through a blocking duplicate of it.
func exchange(ctx context.Context, c *net.UnixConn, req Request, fds []int) Result {
	f, err := c.File()
	if err != nil {
		return Result{Outcome: Cold, Reason: err.Error()}
	}
	defer f.Close()
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, false); err != nil {
		return Result{Outcome: Cold, Reason: err.Error()}
	}
	return warmhand.Exchange(ctx, fd, req, fds)
}
