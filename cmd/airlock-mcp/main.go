// Command airlock-mcp is `airlock mcp serve` and `airlock mcp wrap`, the
// MCP front ends, which link the MCP SDK, and `airlock files` and `airlock
// read-result`, which open the file store and link its SQLite driver. It is
// a binary of its own so that the airlock binary, which every `airlock
// run`, its guard and every box's init start, carries neither; those
// commands hand their arguments (and their standard streams, an MCP
// client's) here. Its own boxes run the
// airlock-box beside it (scripts/setup.sh builds both), else this binary;
// either refuses a plan of another build's protocol (boxconf.Fingerprint).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/airlock-run/airlock/egress/forward"
	"github.com/airlock-run/airlock/escape"
	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/internal/mcpcli"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxinit"
)

// handedHere are the commands the airlock binary hands to this one: the
// MCP front ends, which link the MCP SDK, and the commands that open the
// file store, which link SQLite.
var handedHere = map[string]bool{"mcp": true, "files": true, "read-result": true}

func main() {
	// The modes this binary runs in as its boxes' guard and init come
	// first, as in cmd/airlock: inside a box nothing of MCP is wanted.
	switch {
	case len(os.Args) > 2 && os.Args[1] == boxinit.Arg && os.Args[2] == sandbox.GuardArg:
		os.Exit(sandbox.Guard(os.Stdin))
	case len(os.Args) > 1 && os.Args[1] == boxinit.Arg:
		os.Exit(boxinit.Main(os.Args[2:]))
	case len(os.Args) > 1 && os.Args[1] == escape.AttackArg:
		os.Exit(escape.AttackMain(os.Args[2:]))
	case forward.IsConnect(os.Args):
		os.Exit(forward.ConnectMain(os.Args))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Run as airlock hands over (airlock-mcp mcp serve ..., airlock-mcp
	// files ls ...) or directly (airlock-mcp serve ...).
	args := os.Args[1:]
	if len(args) == 0 || !handedHere[args[0]] {
		args = append([]string{"mcp"}, args...)
	}
	in, out, errTerm := term.IsTerminal(int(os.Stdin.Fd())), term.IsTerminal(int(os.Stdout.Fd())), term.IsTerminal(int(os.Stderr.Fd()))
	env := cli.DefaultEnv(in && errTerm, out, errTerm)
	env.MCP = mcpcli.Commands()
	code := cli.Main(ctx, args, env)
	stop()
	os.Exit(code)
}
