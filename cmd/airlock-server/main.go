// Command airlock-server is `airlock server` with the embedded Temporal dev
// server linked in. It is a binary of its own so that the airlock binary,
// which runs on every node and inside every box, never carries the
// Temporal server.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/internal/fleetcli"
	"github.com/airlock-run/airlock/jobs/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	args := os.Args[1:]
	if len(args) == 0 || args[0] != "server" {
		args = append([]string{"server"}, args...)
	}
	env := cli.DefaultEnv(false, false, false)
	env.Server = fleetcli.Server(server.Start)
	code := cli.Main(ctx, args, env)
	stop()
	os.Exit(code)
}
