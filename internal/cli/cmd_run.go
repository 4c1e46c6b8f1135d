package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mediator"
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
			fs := NewFlags(env, "airlock run", "[flags] -- CMD [ARG...]", runLong)
			kf := addKernelFlags(fs, "the command")
			report := fs.String("report", "", "write a JSON report of the decision and of where and how the command ran to `file`")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			argv := fs.Args()
			if len(argv) == 0 {
				return usagef("airlock run: no command (airlock run [flags] -- CMD [ARG...])")
			}
			tier, err := kf.tier("airlock run")
			if err != nil {
				return err
			}
			k, err := kf.build(env, env.IsTerminal)
			if err != nil {
				return err
			}
			defer k.Close()
			if k.PolicyFile == "" {
				env.Log.Info("no policy file; using the built-in workspace profile")
			}
			call := mediator.Call{Kind: mediator.KindExec, Argv: argv}
			res, err := k.Exec(ctx, call, mediator.ExecOptions{
				Tier: tier, Stdin: env.Stdin, Stdout: env.Stdout, Stderr: env.Stderr,
				Environ: env.Environ, Exe: env.Exe,
				Warn: func(s string) { fmt.Fprintf(env.Stderr, "airlock: %s\n", s) },
			})
			if *report != "" {
				if werr := writeReport(*report, call, res, err); werr != nil && err == nil {
					err = werr
				}
			}
			var d *errs.Denial
			if errors.As(err, &d) {
				b, _ := json.Marshal(d)
				fmt.Fprintf(env.Stderr, "airlock: refused: %s\n", b)
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
		},
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
type runReport struct {
	Argv     []string        `json:"argv"`
	Verdict  string          `json:"verdict"`
	Rule     string          `json:"rule,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Decider  string          `json:"decider"`
	Denial   *errs.Denial    `json:"denial,omitempty"`
	Error    string          `json:"error,omitempty"`
	Result   *mediatorResult `json:"result,omitempty"`
	Commands any             `json:"commands,omitempty"`
}

type mediatorResult = mediator.ExecResult

func writeReport(path string, call mediator.Call, res mediator.ExecResult, runErr error) error {
	r := runReport{Argv: call.Argv, Verdict: res.Outcome.Decision.Verdict.String(), Rule: res.Outcome.Decision.Rule,
		Reason: res.Outcome.Decision.Reason, Decider: res.Outcome.Decider}
	var d *errs.Denial
	switch {
	case errors.As(runErr, &d):
		r.Denial = d
	case runErr != nil:
		r.Error = runErr.Error()
	default:
		r.Result = &res
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return errs.Wrap(errs.Internal, err, "--report")
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return errs.Wrap(errs.Unavailable, err, "--report")
	}
	return errs.Wrap(errs.Unavailable, os.Rename(tmp, path), "--report")
}
