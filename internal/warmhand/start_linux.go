package warmhand

import (
	"context"
	"os"
	"os/signal"
	"path"
	"syscall"

	"github.com/airlock-run/airlock/internal/starttrace"
)

// exitCannotRun is errs.ExitCannotRun, which a lost run exits with (the
// test holds them equal; errs imports fmt).
const exitCannotRun = 125

// Start hands this process's `airlock run` to the warm server, as
// internal/cli's run does first (handOverWarm), from the same arguments,
// environment, directory and streams, before the rest of the binary is
// initialised. It returns false when the process is no such run or the
// hand-over is off: nothing was tried. It returns true when the hand-over
// was tried and the run goes cold: main runs it cold without trying again.
// A run the server ran, or lost, ends the process here with its exit code,
// as main would end it.
func Start() (tried bool) {
	if !isRun(os.Args) {
		return false
	}
	mode := os.Getenv(Env)
	dir, _ := os.Getwd()
	if mode == "off" || !isAbs(dir) {
		return false
	}
	starttrace.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Fd as cli's Env has them: the standard streams, in blocking mode.
	fds := []int{int(os.Stdin.Fd()), int(os.Stdout.Fd()), int(os.Stderr.Fd())}
	req := Request{Args: os.Args[2:], Env: os.Environ(), Dir: dir}
	if isTerminal(fds[0]) && isTerminal(fds[2]) {
		// As cold: the person is asked on the controlling terminal.
		if tty, err := openTerminal(); err == nil {
			defer tty.Close()
			req.TTY, fds = true, append(fds, int(tty.Fd()))
		}
	}
	r := HandOver(ctx, DefaultSocketDir(os.Getenv), req, fds)
	switch {
	case r.Outcome == Ran:
		exit(stop, r.Code)
	case r.Outcome == Lost:
		os.Stderr.WriteString("airlock: run: " + r.Reason + "\n")
		exit(stop, exitCannotRun)
	case r.Warn != "":
		os.Stderr.WriteString("airlock: " + r.Warn + "\n")
	case mode == "verbose" && r.Reason != "":
		os.Stderr.WriteString("airlock: warm: running cold: " + r.Reason + "\n")
	}
	return true
}

// connectName is the name under which the airlock binary is git's proxy
// command in a box (egress/forward's, which the test holds equal): main
// runs that mode before any command, whatever its arguments.
const connectName = "airlock-connect"

// isRun reports whether the process's arguments are an `airlock run` as
// cmd/airlock's main reaches the CLI with them: "run" first, and not the
// proxy command main runs first (a host named "run").
func isRun(args []string) bool {
	return len(args) > 1 && args[1] == "run" && path.Base(args[0]) != connectName
}

// exit ends the process as cmd/airlock's main does: the signals let go,
// the start trace written, the code.
func exit(stop func(), code int) {
	stop()
	starttrace.Write(os.Stderr)
	os.Exit(code)
}
