// Command airlock mediates, confines and fits what an AI agent does. All logic
// lives in importable packages; this file only picks the mode.
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
	"github.com/airlock-run/airlock/internal/starttrace"
	"github.com/airlock-run/airlock/internal/warmhand/atstart"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxinit"
)

func main() {
	// The in-box mode comes first: inside the box nothing of the CLI is
	// wanted, and its environment is not the caller's.
	if len(os.Args) > 2 && os.Args[1] == boxinit.Arg && os.Args[2] == sandbox.GuardArg {
		// The guard runs on the host beside a box, outside it: the host
		// planner's, not the in-box init's.
		os.Exit(sandbox.Guard(os.Stdin))
	}
	if len(os.Args) > 1 && os.Args[1] == boxinit.Arg {
		os.Exit(boxinit.Main(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == escape.AttackArg { // the escape matrix's attacks, run inside a box
		os.Exit(escape.AttackMain(os.Args[2:]))
	}
	if forward.IsConnect(os.Args) { // git/ssh ProxyCommand inside the box
		os.Exit(forward.ConnectMain(os.Args))
	}
	starttrace.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := cli.DefaultEnv(term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stderr.Fd())), term.IsTerminal(int(os.Stdout.Fd())), term.IsTerminal(int(os.Stderr.Fd())))
	// `airlock run` was handed to `airlock warm` while the packages were
	// initialised (atstart); here only when it went cold.
	env.WarmTried = atstart.Tried()
	code := cli.Main(ctx, os.Args[1:], env)
	stop()
	starttrace.Write(os.Stderr)
	os.Exit(code)
}
