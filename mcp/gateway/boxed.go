package gateway

import (
	"context"
	"io"

	"github.com/airlock-run/airlock/mediator"
)

// Boxed starts the server's command call (an exec call) through the
// kernel k, exactly as `airlock run` would: decided as a command, confined
// by the policy's box (narrowed by call.Narrow), its network through
// egress, its standard error to stderr; cancelling ctx tears the box down.
func Boxed(k *mediator.Kernel, call mediator.Call, stderr io.Writer) Starter {
	return func(ctx context.Context) (*Server, error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := k.Exec(ctx, call, mediator.ExecOptions{
				Stdin: inR, Stdout: outW, Stderr: stderr,
				// The server lives as long as the client's session; the
				// session's end (ctx) tears its box down.
				Session: true,
			})
			outW.Close()
			inR.Close()
			done <- err
		}()
		return &Server{Stdin: inW, Stdout: outR, Done: done}, nil
	}
}
