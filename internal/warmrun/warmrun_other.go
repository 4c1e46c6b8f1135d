//go:build !linux

package warmrun

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/warmhand"
)

type streams struct{}

// Server is not supported off Linux: SO_PEERCRED, pidfds and /proc are
// what a call's fidelity is read from.
type Server struct{}

// Listen fails off Linux.
func Listen(dir string, log *slog.Logger) (*Server, error) {
	return nil, errs.Unavailablef("warm: airlock warm needs Linux")
}

// Path is "".
func (s *Server) Path() string { return "" }

// Serve fails off Linux.
func (s *Server) Serve(ctx context.Context, h Handler, idle time.Duration) error {
	return errs.Unavailablef("warm: airlock warm needs Linux")
}

// HandOver runs everything cold off Linux.
func HandOver(ctx context.Context, dir string, req Request, fds []int) Result {
	return warmhand.HandOver(ctx, dir, req, fds)
}

// Streams are the call's standard streams as they are off Linux, where no
// call is served.
func (c *Call) Streams() (stdin io.Reader, stdout, stderr io.Writer) {
	return c.Stdin, c.Stdout, c.Stderr
}
