package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
)

func auditCmd() *Command {
	return &Command{Name: "audit", Usage: "COMMAND", Short: "check the audit log",
		Long: `airlock writes one record per decision (and per run, egress connection and
file handed over) to an append-only, hash-chained JSON Lines log, by default
$XDG_STATE_HOME/airlock/audit.jsonl (~/.local/state/airlock/audit.jsonl).`,
		Sub: []*Command{auditVerifyCmd()}}
}

func auditVerifyCmd() *Command {
	const usage = "[--json] [--head HASH] [FILE]"
	const long = `Reads the audit log FILE (the default log when absent) and checks that every
record matches its own hash and chains to the one before it. Any edited,
deleted, inserted or reordered record, or a cut in the middle of the file, is
reported with its line; an incomplete last line is reported as a truncated
tail. A hash chain cannot notice records cut from the end: keep the head
hash this command prints somewhere safe and pass it back with --head.

Exit status: 0 when the log is sound, 1 when it is not, 125 when it cannot
be read.`
	return &Command{Name: "verify", Usage: usage, Short: "detect any change to an audit log", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock audit verify", usage, long)
			asJSON := fs.Bool("json", false, "print the report as JSON")
			head := fs.String("head", "", "a head hash noted earlier that the log must still contain")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			var path string
			switch fs.NArg() {
			case 0:
				p, err := audit.DefaultPath(env.Getenv)
				if err != nil {
					return err
				}
				path = p
			case 1:
				path = fs.Arg(0)
				if !filepath.IsAbs(path) && env.Dir != "" {
					path = filepath.Join(env.Dir, path)
				}
			default:
				return usagef("one FILE at most (see airlock audit verify --help)")
			}
			f, err := os.Open(path)
			if err != nil {
				return errs.Wrap(errs.Unavailable, err, "read the audit log")
			}
			defer f.Close()
			rep, err := audit.VerifyWith(f, audit.VerifyOptions{Head: *head})
			if err != nil {
				return errs.Wrap(errs.Unavailable, err, "%s", path)
			}
			if *asJSON {
				if err := json.NewEncoder(env.Stdout).Encode(rep); err != nil {
					return err
				}
			} else {
				printAuditReport(env, path, rep)
			}
			if !rep.OK {
				return &ExitError{Code: 1}
			}
			return nil
		}}
}

func printAuditReport(env *Env, path string, rep audit.Report) {
	if rep.OK {
		fmt.Fprintf(env.Stdout, "%s: ok: %d records, head %d %s\n", path, rep.Records, rep.LastSeq, rep.Head)
		return
	}
	for _, p := range rep.Problems {
		if p.Seq != 0 {
			fmt.Fprintf(env.Stdout, "%s:%d: %s (seq %d): %s\n", path, p.Line, p.Kind, p.Seq, p.Detail)
		} else {
			fmt.Fprintf(env.Stdout, "%s:%d: %s: %s\n", path, p.Line, p.Kind, p.Detail)
		}
	}
	if rep.MoreProblems > 0 {
		fmt.Fprintf(env.Stdout, "%s: and %d more problems\n", path, rep.MoreProblems)
	}
	fmt.Fprintf(env.Stdout, "%s: NOT OK: %d problems in %d records\n", path, len(rep.Problems)+rep.MoreProblems, rep.Records)
}
