// Package cli is airlock's command line: the command table, flag parsing,
// help and the mapping of errors to exit codes. Only the mains import it
// (cmd/airlock; cmd/airlock-node and cmd/airlock-server through
// internal/fleetcli, which runs the commands that link Temporal; and
// cmd/airlock-mcp through internal/mcpcli, which runs the MCP commands).
// It wires parts together; decisions, confinement and fitting live in their
// own packages.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"syscall"

	"github.com/airlock-run/airlock/errs"
)

// Env is what a command may touch of the world. Nothing in this package reads
// os.Args, os.Environ or the standard streams directly, so tests run commands
// in-process with their own.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Environ is the caller's environment; a run's box never inherits it,
	// only what the policy passes in by name.
	Environ []string
	// Dir is the caller's working directory.
	Dir string
	// Exe is the path of the running airlock binary, re-executed for the
	// in-box init.
	Exe string
	// Log receives diagnostics; never nil after Main starts.
	Log *slog.Logger
	// IsTerminal reports whether standard input and error are a terminal a
	// person can answer on.
	IsTerminal bool
	// Node and Server run `airlock node` and `airlock server`. Only the
	// binaries that link Temporal set them (airlock-node the SDK,
	// airlock-server the server, through internal/fleetcli), so the airlock
	// binary never links either: there nil, `airlock node` hands its
	// arguments to the airlock-node binary and `airlock server` names
	// airlock-server.
	Node, Server func(ctx context.Context, env *Env, args []string) error
	// MCP runs `airlock mcp NAME` by NAME (serve, wrap). Only the
	// airlock-mcp binary sets it (internal/mcpcli), so the airlock binary
	// never links the MCP SDK: there nil, `airlock mcp` hands its arguments
	// to the airlock-mcp binary.
	MCP map[string]func(ctx context.Context, env *Env, args []string) error
	// Exec replaces this process with another program (syscall.Exec in
	// DefaultEnv): `airlock node` hands over to airlock-node with it, and
	// `airlock mcp` to airlock-mcp. nil,
	// as in a test's Env, hands over to nothing.
	Exec func(argv0 string, argv, envv []string) error
	// StdoutTerminal and StderrTerminal report whether Stdout and Stderr
	// are a terminal: what a boxed command prints there is passed through
	// termsafe, so it cannot program the person's terminal. False (a file,
	// a pipe, a test's buffer) passes the output unchanged.
	StdoutTerminal, StderrTerminal bool
	// WarmTried says this process already tried to hand its `airlock run`
	// to `airlock warm` while it started (warmhand.Start, in the airlock
	// binary) and the run went cold: run runs it cold at once.
	WarmTried bool

	// warm is set on the Env of a run `airlock warm` serves (cmd_warm.go):
	// nil for every other.
	warm *warmCall
	// cmd is the path of the command that ran ("policy check"), "" before
	// one is found; flags is the flag set it made with NewFlags, nil if
	// none. Main reads both to print a failure in the command's shape.
	cmd   string
	flags *flag.FlagSet
}

// Getenv returns the value of key in e.Environ.
func (e *Env) Getenv(key string) string {
	for i := len(e.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(e.Environ[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Command is one entry of the command table.
type Command struct {
	Name  string
	Usage string // the synopsis after "airlock NAME"
	Short string // one line for the list of commands
	Long  string // more help, printed by --help
	// Hidden commands are left out of the list (the in-box init).
	Hidden bool
	Sub    []*Command
	// Run runs the command with the arguments after its name. A nil Run
	// means the command only groups its Sub commands.
	Run func(ctx context.Context, env *Env, args []string) error
}

// ExitError carries an exit status chosen by a command (the exit status of
// the program airlock ran) without being a failure of airlock's.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// commands is the table of top-level commands. Each lives in its own file.
func commands() []*Command {
	return []*Command{
		runCmd(), warmCmd(),
		policyCmd(),
		sandboxCmd(),
		approvalsCmd(),
		auditCmd(),
		tokensCmd(),
		fitCmd(),
		filesCmd(),
		readResultCmd(),
		mcpCmd(),
		serverCmd(), nodeCmd(), jobCmd(), killCmd(),
		completionCmd(),
	}
}

// Main runs airlock with args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, env *Env) int {
	if env.Log == nil {
		env.Log = slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	root := &Command{Name: "airlock", Usage: "COMMAND [ARGS]", Short: "mediate and confine what an AI agent does", Sub: commands()}
	err := dispatch(ctx, env, root, args, "airlock")
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	code := exitCode(err)
	msg := failureMessage(env.cmd, err)
	if wantsJSON(env, args) {
		writeJSONError(env.Stdout, err, msg)
	}
	if env.cmd == "" {
		fmt.Fprintf(env.Stderr, "airlock: %s\n", msg)
	} else {
		fmt.Fprintf(env.Stderr, "airlock: %s: %s\n", env.cmd, msg)
	}
	return code
}

// exitCode is the exit status of a failure: 2 for a mistake in the command
// line, else the class's (errs.ExitCode).
func exitCode(err error) int {
	if isUsage(err) {
		return errs.ExitUsage
	}
	return errs.ExitCode(err)
}

// failureMessage is err as one line for the person at the command line (the
// whole chain: a person may read the causes), without the "airlock:" and
// command prefixes Main adds itself, so no line reads "airlock: airlock:".
func failureMessage(cmd string, err error) string {
	msg := oneLine(err.Error())
	for {
		old := msg
		msg = strings.TrimPrefix(msg, "airlock: ")
		if cmd != "" {
			msg = strings.TrimPrefix(msg, "airlock "+cmd+": ")
			msg = strings.TrimPrefix(msg, cmd+": ")
		}
		if msg == old {
			return msg
		}
	}
}

// wantsJSON reports whether the failed command takes --json and was given
// it. The flag may not have been parsed (the mistake came first), so the
// arguments before any "--" are read as well.
func wantsJSON(env *Env, args []string) bool {
	if env.flags == nil {
		return false
	}
	f := env.flags.Lookup("json")
	if f == nil {
		return false
	}
	if f.Value.String() == "true" {
		return true
	}
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-json", "--json", "-json=true", "--json=true", "-json=1", "--json=1":
			return true
		}
	}
	return false
}

// jsonError is what a command given --json prints on standard output when
// it fails: {"error": {"code": ..., "message": ...}}.
type jsonError struct {
	Error jsonErrorBody `json:"error"`
}

type jsonErrorBody struct {
	// Code is "usage" for a mistake in the command line, else the error's
	// class: "invalid", "not_found", "denied", "unavailable", "timeout" or
	// "internal".
	Code    string `json:"code"`
	Message string `json:"message"`
	// Denial is the structured refusal, when the failure is one.
	Denial *errs.Denial `json:"denial,omitempty"`
}

func writeJSONError(w io.Writer, err error, msg string) {
	body := jsonErrorBody{Code: errorCode(err), Message: msg}
	var d *errs.Denial
	if errors.As(err, &d) {
		body.Denial = d
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(jsonError{Error: body})
}

// errorCode is the stable code of err in a JSON error object.
func errorCode(err error) string {
	if isUsage(err) {
		return "usage"
	}
	return strings.ReplaceAll(errs.ClassOf(err).String(), " ", "_")
}

// usageError marks a mistake in the command line itself: an unknown flag or
// command, a missing or extra argument, a bad value. Err, when set, is the
// cause (a value's parse error).
type usageError struct {
	msg string
	err error
}

func (u *usageError) Error() string {
	switch {
	case u.err == nil:
		return u.msg
	case u.msg == "":
		return u.err.Error()
	}
	return u.msg + ": " + u.err.Error()
}
func (u *usageError) Unwrap() error        { return u.err }
func (u *usageError) ErrClass() errs.Class { return errs.Invalid }
func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }
func isUsage(err error) bool               { var u *usageError; return errors.As(err, &u) }

// badValue makes err, the refusal of a value given on the command line, a
// usage error with the context format gives ("" for none); nil stays nil.
func badValue(err error, format string, a ...any) error {
	if err == nil {
		return nil
	}
	return &usageError{msg: fmt.Sprintf(format, a...), err: err}
}

func dispatch(ctx context.Context, env *Env, c *Command, args []string, path string) error {
	env.cmd = strings.TrimPrefix(strings.TrimPrefix(path, "airlock"), " ")
	if len(c.Sub) > 0 {
		if len(args) == 0 && c.Run != nil {
			return c.Run(ctx, env, args) // a command that also groups others runs bare
		}
		if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			printGroupHelp(env.Stdout, c, path)
			if len(args) == 0 && c.Run == nil {
				return usagef("a command is required (see %s --help)", path)
			}
			if len(args) == 0 {
				return c.Run(ctx, env, args)
			}
			return nil
		}
		for _, s := range c.Sub {
			if s.Name == args[0] {
				return dispatch(ctx, env, s, args[1:], path+" "+s.Name)
			}
		}
		if c.Run == nil {
			return usagef("unknown command %q (see %s --help)", args[0], path)
		}
	}
	if c.Run == nil {
		return usagef("nothing to run (see %s --help)", path)
	}
	return c.Run(ctx, env, args)
}

func printGroupHelp(w io.Writer, c *Command, path string) {
	fmt.Fprintf(w, "Usage: %s %s\n", path, c.Usage)
	if c.Short != "" {
		fmt.Fprintf(w, "\n%s\n", c.Short)
	}
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.Long))
	}
	fmt.Fprintf(w, "\nCommands:\n")
	subs := append([]*Command(nil), c.Sub...)
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
	for _, s := range subs {
		if !s.Hidden {
			fmt.Fprintf(w, "  %-12s %s\n", s.Name, s.Short)
		}
	}
	fmt.Fprintf(w, "\nRun '%s COMMAND --help' for a command's flags.\n", path)
}

// NewFlags returns a flag set for a command whose --help prints the
// command's usage, its description and its flags to env.Stdout.
func NewFlags(env *Env, path, usage, long string) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	env.flags = fs
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "Usage: %s %s\n", path, usage)
		if long != "" {
			fmt.Fprintf(env.Stdout, "\n%s\n", strings.TrimSpace(long))
		}
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		if b.Len() > 0 {
			fmt.Fprintf(env.Stdout, "\nFlags:\n%s", b.String())
		}
	}
	return fs
}

// ParseFlags parses args with fs, printing help on -h/--help (returning
// flag.ErrHelp, which Main turns into exit 0) and turning any other flag
// mistake into a one-line usage error.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	// The flag package prints the usage on every mistake; only --help
	// should, so a mistake is one line (and --json output stays JSON).
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return flag.ErrHelp
		}
		return usagef("%v (see %s --help)", err, fs.Name())
	}
	return nil
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// DefaultEnv builds an Env from the real process; isTerminal is whether a
// person can answer on standard input and error, outTerm and errTerm
// whether standard output and error are terminals.
func DefaultEnv(isTerminal, outTerm, errTerm bool) *Env {
	dir, _ := os.Getwd()
	exe, _ := os.Executable()
	return &Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Environ: os.Environ(), Dir: dir, Exe: exe, IsTerminal: isTerminal,
		StdoutTerminal: outTerm, StderrTerminal: errTerm, Exec: syscall.Exec,
	}
}
