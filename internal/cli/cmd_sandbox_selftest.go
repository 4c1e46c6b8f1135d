package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/airlock-run/airlock/escape"
	"github.com/airlock-run/airlock/jobs/pki"
)

func sandboxSelftestCmd() *Command {
	const usage = "[--json] [--cases FILE] [--only ID,ID... | --attest]"
	const long = `Runs the escape matrix through this airlock binary: every attempt to
leave the box (reading files beside the working directory, writing protected
paths, reaching loopback canaries directly and through the egress proxy,
signalling or outliving processes, the refused system calls, the limits) is
first run unconfined, then inside a box of every mechanism this host has.

An attempt that does not reach its target unconfined is "untested" here,
never "held". Tier 0 confines nothing, so what reaches its target there is
"open". Prints a table of held / escaped / untested per attempt and
mechanism; exits 1 when anything escaped or a box failed to start.

--attest runs only the rows a fleet node signs and reports at start, from
which the server attests its tier.`
	return &Command{Name: "selftest", Usage: usage, Short: "attack the sandbox and report what held", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock sandbox selftest", usage, long)
			asJSON := fs.Bool("json", false, "print the report as JSON")
			casesPath := fs.String("cases", "", "read the case file from FILE instead of the one built in")
			only := fs.String("only", "", "run only these attempt ids (comma-separated)")
			attest := fs.Bool("attest", false, "run only the rows a fleet node attests its tier with")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() > 0 {
				return usagef("unexpected argument %q", fs.Arg(0))
			}
			data, err := escapeCases(*casesPath)
			if err != nil {
				return err
			}
			cases, err := escape.Parse(data)
			if err != nil {
				return err
			}
			var ids []string
			if *attest {
				if *only != "" {
					return usagef("--attest and --only: give one of them")
				}
				ids = pki.AttestRows
			}
			if *only != "" {
				ids = strings.Split(*only, ",")
				known := map[string]bool{}
				for _, a := range cases.Attempts {
					known[a.ID] = true
				}
				for _, id := range ids {
					if !known[id] {
						return usagef("--only: no attempt %q in the case file", id)
					}
				}
			}
			opts := escape.Options{Exe: env.Exe, Cases: cases, Only: ids}
			if !*asJSON {
				n := len(ids)
				if n == 0 {
					n = len(cases.Attempts)
				}
				fmt.Fprintf(env.Stderr, "airlock: sandbox selftest: %d attempts, each unconfined and on every mechanism here; this takes a minute or two\n", n)
			}
			rep, err := escape.Run(ctx, opts)
			if err != nil {
				return err
			}
			if *asJSON {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				rep.Table(env.Stdout)
			}
			if rep.Escapes > 0 || rep.Failures > 0 {
				if !*asJSON {
					fmt.Fprintf(env.Stderr, "airlock: sandbox selftest: %d escaped, %d boxes failed to start\n", rep.Escapes, rep.Failures)
				}
				return &ExitError{Code: 1}
			}
			return nil
		}}
}

// escapeCases returns the case file: FILE when given, else the one built
// into the binary.
func escapeCases(path string) ([]byte, error) {
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, badValue(err, "--cases")
		}
		return b, nil
	}
	return escape.CaseFile, nil
}
