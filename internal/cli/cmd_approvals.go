package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlock-run/airlock/approvals"
	"github.com/airlock-run/airlock/errs"
)

func approvalsCmd() *Command {
	return &Command{Name: "approvals", Usage: "COMMAND", Short: "list and decide pending escalations",
		Long: `When policy escalates a call and no terminal can ask you, the call waits for an
answer from another terminal: list what is waiting, then decide it. Only your
own user can see or answer, through the sockets in $XDG_RUNTIME_DIR/airlock
(or /tmp/airlock-UID), one per running airlock. Unanswered calls are denied
at the escalation timeout (30s unless the policy says otherwise).

With --server URL both commands work on a fleet's server instead: the
escalations of its jobs' calls, raised by the nodes running them (answer
with allow-once or deny, bound to the escalation's digest).`,
		Sub: []*Command{approvalsListCmd(), approvalsDecideCmd()}}
}

func socketDirFlag(env *Env, fs interface {
	String(name, value, usage string) *string
}) *string {
	return fs.String("socket-dir", approvals.DefaultSocketDir(env.Getenv), "the directory of the approvals sockets")
}

func approvalsListCmd() *Command {
	const usage = "[--json] [--server URL [--token-file FILE] [--job ID]]"
	const long = `Lists the escalations waiting for an answer in every airlock process of yours,
oldest first: the ID to decide, the call (anything unusual in it escaped), why
it needs approval, and the exact grant "allow-always" would save.`
	return &Command{Name: "list", Usage: usage, Short: "show pending escalations", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock approvals list", usage, long)
			asJSON := fs.Bool("json", false, "print the pending escalations as a JSON array")
			dir := socketDirFlag(env, fs)
			cf := addClientFlags(fs)
			job := fs.String("job", "", "with --server: list `job`'s escalations from its workflow")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() != 0 {
				return usagef("no arguments expected (see airlock approvals list --help)")
			}
			if *cf.server != "" {
				return serverApprovals(ctx, env, cf, *job, *asJSON)
			}
			ps, err := approvals.List(ctx, *dir)
			if ps == nil && err != nil {
				return err
			}
			if err != nil {
				env.Log.Warn(err.Error())
			}
			if *asJSON {
				if ps == nil {
					ps = []approvals.Pending{}
				}
				return json.NewEncoder(env.Stdout).Encode(ps)
			}
			if len(ps) == 0 {
				fmt.Fprintln(env.Stdout, "no pending escalations")
				return nil
			}
			now := time.Now()
			for _, p := range ps {
				left := max(p.Deadline.Sub(now).Round(time.Second), 0)
				fmt.Fprintf(env.Stdout, "%s  (pid %d, denied in %s)\n", approvals.Show(p.ID), p.Pid, left)
				fmt.Fprintf(env.Stdout, "  call:   %s\n", approvals.ShowCall(p.Request))
				if p.Workdir != "" {
					fmt.Fprintf(env.Stdout, "  in:     %s\n", approvals.Show(p.Workdir))
				}
				fmt.Fprintf(env.Stdout, "  why:    %s\n", approvals.Show(p.Reason))
				if p.Rule != "" {
					fmt.Fprintf(env.Stdout, "  rule:   %s\n", approvals.Show(p.Rule))
				}
				if p.Grant != "" {
					fmt.Fprintf(env.Stdout, "  always saves: %s\n", approvals.Show(p.Grant))
				} else if p.NoGrant != "" {
					fmt.Fprintf(env.Stdout, "  allow-always not offered: %s\n", approvals.Show(p.NoGrant))
				}
			}
			return nil
		}}
}

func approvalsDecideCmd() *Command {
	const usage = "ID allow-once|allow-always|deny [--json] [--server URL [--token-file FILE] [--digest D] [--job ID]]"
	const long = `Answers the pending escalation ID (from airlock approvals list). allow-once
lets this one call run; allow-always lets it run and saves the narrowest grant
that covers exactly this call to the grants file, printing that grant first;
deny refuses it.`
	return &Command{Name: "decide", Usage: usage, Short: "answer a pending escalation", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock approvals decide", usage, long)
			asJSON := fs.Bool("json", false, "print the decision as JSON")
			dir := socketDirFlag(env, fs)
			cf := addClientFlags(fs)
			digest := fs.String("digest", "", "with --server: the escalation's digest as listed (default: the one listed now)")
			job := fs.String("job", "", "with --server: the escalation's `job` (read from its workflow)")
			// Flags may follow the two arguments.
			pos, err := parseInterleaved(fs, args)
			if err != nil {
				return err
			}
			if len(pos) != 2 {
				return usagef("want ID and an answer (see airlock approvals decide --help)")
			}
			id := pos[0]
			if *cf.server != "" {
				return serverDecide(ctx, env, cf, id, pos[1], *digest, *job, *asJSON)
			}
			a, err := approvals.ParseAnswer(pos[1])
			if err != nil || (pos[1] != "allow-once" && pos[1] != "allow-always" && pos[1] != "deny") {
				return usagef("answer with allow-once, allow-always or deny, not %s", approvals.Show(pos[1]))
			}
			grant := ""
			if a == approvals.AllowAlways {
				p, err := approvals.Find(ctx, *dir, id)
				if err != nil {
					return err
				}
				if p.Grant == "" {
					return errs.Invalidf("allow-always is not offered for %s: %s (answer allow-once or deny)", approvals.Show(id), approvals.Show(p.NoGrant))
				}
				grant = p.Grant
				if !*asJSON {
					fmt.Fprintf(env.Stdout, "saving grant: %s\n", approvals.Show(grant))
				}
			}
			d, err := approvals.Decide(ctx, *dir, id, a, grant)
			if err != nil {
				return err
			}
			if *asJSON {
				return json.NewEncoder(env.Stdout).Encode(map[string]string{"id": id, "answer": d.Answer.String(), "saved": d.Saved, "file": d.File})
			}
			switch d.Answer {
			case approvals.AllowAlways:
				fmt.Fprintf(env.Stdout, "%s: allowed; grant saved to %s\n", approvals.Show(id), approvals.Show(d.File))
			case approvals.AllowOnce:
				fmt.Fprintf(env.Stdout, "%s: allowed once\n", approvals.Show(id))
			default:
				fmt.Fprintf(env.Stdout, "%s: denied\n", approvals.Show(id))
			}
			return nil
		}}
}
