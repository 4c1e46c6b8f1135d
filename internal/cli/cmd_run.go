package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/privfile"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/termsafe"
)

const runLong = `Decide CMD against the policy and, when it is allowed, run it in the sandbox.

The policy is --policy, else airlock.yaml in the working directory, else the
built-in workspace profile (the working directory readable, writable only in
fix mode; the system read-only; no network; an environment built from
nothing). A call the policy escalates is put to a person: on this terminal
when there is one, else through 'airlock approvals' from another terminal; it
is denied when the escalation timeout passes.

Exit status: the command's own; 126 refused (nothing ran); 125 airlock could
not run it; 124 the wall-clock limit ended it; 128+N signal N ended it.`

func runCmd() *Command {
	return &Command{
		Name: "run", Usage: "[flags] -- CMD [ARG...]", Short: "run a command through the policy and the sandbox", Long: runLong,
		Run: func(ctx context.Context, env *Env, args []string) error {
			// Before anything else: a warm server runs exactly what
			// follows, from the same arguments, environment and streams.
			if err, ok := handOverWarm(ctx, env, args); ok {
				return err
			}
			return runCold(ctx, env, args)
		},
	}
}

// runCold is `airlock run` with the arguments after "run": the kernel built
// in this process. `airlock warm` runs its calls through it too, with an
// Env made of what the caller handed over.
func runCold(ctx context.Context, env *Env, args []string) error {
	kf, argv, err := parseRunFlags(env, args)
	if err != nil {
		return err
	}
	report := kf.report
	if len(argv) == 0 {
		return usagef("no command (airlock run [flags] -- CMD [ARG...])")
	}
	k, err := kf.build(env, "airlock run", env.IsTerminal, env.warm.configure)
	if err != nil {
		return err
	}
	defer k.Close()
	ctx = env.warm.bind(ctx, k)
	if k.PolicyFile == "" {
		env.Log.Info("no policy file; using the built-in workspace profile")
	}
	call := mediator.Call{Kind: mediator.KindExec, Argv: argv}
	stdout, stderr, flush := terminalSafe(env)
	res, err := k.Exec(ctx, call, mediator.ExecOptions{Stdin: env.Stdin, Stdout: stdout, Stderr: stderr})
	flush()
	if *report != "" {
		if werr := writeReport(absFrom(env, *report), k.BoxWritable, call, res, err); werr != nil && err == nil {
			err = werr
		}
	}
	var d *errs.Denial
	if errors.As(err, &d) {
		b, _ := json.Marshal(d)
		fmt.Fprintf(env.Stderr, "airlock: run: refused: %s\n", b)
		return &ExitError{Code: errs.ExitRefused}
	}
	if err != nil {
		return err
	}
	if res.Truncated {
		fmt.Fprintln(env.Stderr, "airlock: output was cut at the output cap")
	}
	if res.WallTimeout {
		fmt.Fprintln(env.Stderr, "airlock: the wall-clock limit ended the command")
	}
	if res.ExitCode == errs.ExitRefused && execWalled(res.Description.Notes) {
		fmt.Fprintln(env.Stderr, "airlock: exit 126 in a box with the exec wall: a \"Permission denied\" above is the kernel refusing a program the policy does not list (shell.allow)")
	}
	return &ExitError{Code: res.ExitCode}
}

// parseRunFlags reads run's flags from args: the kernel's, --report, and
// the command after them.
func parseRunFlags(env *Env, args []string) (kf *kernelFlags, argv []string, err error) {
	fs := NewFlags(env, "airlock run", "[flags] -- CMD [ARG...]", runLong)
	kf = addKernelFlags(fs, "the command")
	kf.report = fs.String("report", "", "write a JSON report of the decision and of where and how the command ran to `file`")
	if err := ParseFlags(fs, args); err != nil {
		return nil, nil, err
	}
	return kf, fs.Args(), nil
}

// terminalSafe gives the streams a boxed command writes to: where a stream
// is the person's terminal, a termsafe.Writer in front of it, so what the
// command prints cannot set the clipboard, plant hyperlinks, retitle the
// window or make the terminal type answers into the person's input. flush
// shows a sequence the output ended in the middle of; call it once the
// command is done.
func terminalSafe(env *Env) (stdout, stderr io.Writer, flush func()) {
	stdout, stderr = env.Stdout, env.Stderr
	var ws []*termsafe.Writer
	if env.StdoutTerminal {
		w := termsafe.NewWriter(env.Stdout)
		stdout, ws = w, append(ws, w)
	}
	if env.StderrTerminal {
		w := termsafe.NewWriter(env.Stderr)
		stderr, ws = w, append(ws, w)
	}
	return stdout, stderr, func() {
		for _, w := range ws {
			w.Flush()
		}
	}
}

// execWalled reports whether the box's evidence says it had the exec wall.
func execWalled(notes []string) bool {
	for _, n := range notes {
		if strings.HasPrefix(n, "exec wall: ") {
			return true
		}
	}
	return false
}

// runReport is the --report file: the decision and the runner's evidence.
// Every key, nested ones included, is snake_case; the golden files in
// testdata hold its shape.
type runReport struct {
	Argv    []string     `json:"argv"`
	Verdict string       `json:"verdict"`
	Rule    string       `json:"rule,omitempty"`
	Reason  string       `json:"reason,omitempty"`
	Decider string       `json:"decider"`
	Denial  *errs.Denial `json:"denial,omitempty"`
	Error   string       `json:"error,omitempty"`
	// Result is where and how the command ran, when it did.
	Result *mediator.RunResult `json:"result,omitempty"`
	// Commands is, for a shell string, the decision of every simple
	// command in it.
	Commands []policy.CommandDecision `json:"commands,omitempty"`
}

// writeReport writes the report to path through privfile: airlock may run
// as root and path is often in a directory a box wrote, so never through a
// link, and never where a box under this policy may write (boxWritable).
func writeReport(path string, boxWritable []string, call mediator.Call, res mediator.ExecResult, runErr error) error {
	r := runReport{Argv: call.Argv, Verdict: res.Outcome.Decision.Verdict.String(), Rule: res.Outcome.Decision.Rule,
		Reason: res.Outcome.Decision.Reason, Decider: res.Outcome.Decider, Commands: res.Outcome.Commands}
	var d *errs.Denial
	switch {
	case errors.As(runErr, &d):
		r.Denial = d
	case runErr != nil:
		r.Error = runErr.Error()
	default:
		r.Result = &res.Result
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return errs.Wrap(errs.Internal, err, "--report")
	}
	if err := privfile.WriteFile(path, append(b, '\n'), 0o600, privfile.Options{BoxWritable: boxWritable}); err != nil {
		return errs.Wrap(errs.Unavailable, err, "--report")
	}
	return nil
}
