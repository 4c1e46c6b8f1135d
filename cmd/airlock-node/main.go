// Command airlock-node is `airlock node`: a node of the fleet, which links
// the Temporal SDK. It is a binary of its own so that the airlock binary,
// which every `airlock run`, its guard and every box's init start, never
// carries the SDK; `airlock node` hands its arguments here. Its own boxes
// run the airlock-box beside it (scripts/setup.sh builds both), else this
// binary; either refuses a plan of another build's protocol
// (boxconf.Fingerprint).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/airlock-run/airlock/egress/forward"
	"github.com/airlock-run/airlock/escape"
	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/internal/fleetcli"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxinit"
)

func main() {
	// The modes this binary runs in as its boxes' init come first, as in
	// cmd/airlock: inside a box nothing of the node is wanted.
	switch {
	case len(os.Args) > 2 && os.Args[1] == boxinit.Arg && os.Args[2] == sandbox.GuardArg:
		os.Exit(sandbox.Guard(os.Stdin))
	case len(os.Args) > 1 && os.Args[1] == boxinit.Arg:
		os.Exit(boxinit.Main(os.Args[2:]))
	case len(os.Args) > 1 && os.Args[1] == escape.AttackArg: // the attest rows' attacks
		os.Exit(escape.AttackMain(os.Args[2:]))
	case forward.IsConnect(os.Args):
		os.Exit(forward.ConnectMain(os.Args))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	args := os.Args[1:]
	if len(args) == 0 || args[0] != "node" {
		args = append([]string{"node"}, args...)
	}
	env := cli.DefaultEnv(false, false, false)
	env.Node = fleetcli.Node
	code := cli.Main(ctx, args, env)
	stop()
	os.Exit(code)
}
