package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/policy/shellread"
	"github.com/airlock-run/airlock/termsafe"
)

func policyCmd() *Command {
	return &Command{Name: "policy", Usage: "COMMAND [ARGS]", Short: "check and explain policies",
		Long: `A policy (airlock.yaml in the working directory by default, YAML or JSON)
says what calls may do: files, network, programs and their arguments, the
environment, tools and limits. Without one, the built-in workspace profile
applies. See docs/policy.md for every field.`,
		Sub: []*Command{policyCheckCmd(), policyExplainCmd(), policyShowCmd(), policyTrustCmd()}}
}

func policyCheckCmd() *Command {
	const usage = "[--json] FILE"
	const long = `Validates a policy file and reports the first problem as FILE:LINE:COL: field:
message. Exits 0 when the policy is valid, 1 when it is not (nothing would run
with it), 2 on a usage mistake.`
	return &Command{Name: "check", Usage: usage, Short: "validate a policy file", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock policy check", usage, long)
			asJSON := fs.Bool("json", false, "print {file, valid, error, warnings} as JSON")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() != 1 {
				return usagef("one FILE is required (see airlock policy check --help)")
			}
			name := fs.Arg(0)
			p, err := readPolicyFile(env, name)
			if err != nil && (isUsage(err) || !errs.Is(err, errs.Invalid)) {
				return err
			}
			var warnings []string
			if p != nil {
				warnings = policyWarnings(p)
			}
			if *asJSON {
				out := struct {
					File     string   `json:"file"`
					Valid    bool     `json:"valid"`
					Error    string   `json:"error,omitempty"`
					Warnings []string `json:"warnings,omitempty"`
				}{File: name, Valid: err == nil, Warnings: warnings}
				if err != nil {
					out.Error = err.Error()
				}
				if e := json.NewEncoder(env.Stdout).Encode(out); e != nil {
					return e
				}
			} else if err == nil {
				fmt.Fprintf(env.Stdout, "%s: valid\n", name)
				for _, w := range warnings {
					fmt.Fprintf(env.Stderr, "airlock: warning: %s: %s\n", name, w)
				}
			} else {
				fmt.Fprintf(env.Stderr, "airlock: policy check: %s\n", failureMessage("policy check", err))
			}
			if err != nil {
				return &ExitError{Code: 1}
			}
			return nil
		}}
}

// readPolicyFile reads and parses a policy named on the command line.
func readPolicyFile(env *Env, name string) (*policy.Policy, error) {
	path := name
	if !filepath.IsAbs(path) && env.Dir != "" {
		path = filepath.Join(env.Dir, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usagef("%s: no such file (name an existing policy file)", name)
		}
		return nil, errs.Wrap(errs.Unavailable, err, "read policy %s", name)
	}
	return policy.Parse(name, data)
}

// policyWarnings lists what a valid policy does that a reader should not
// miss.
func policyWarnings(p *policy.Policy) []string {
	var w []string
	if p.Isolation == "none" {
		w = append(w, "isolation: none runs every command unconfined, with this user's rights")
	}
	for _, e := range p.FS.Write {
		if e == "/" || e == "~" || e == "/**" {
			w = append(w, fmt.Sprintf("fs.write holds %q: a run may change almost anything", e))
		}
	}
	for _, e := range p.Env.Allow {
		if e == "*" {
			w = append(w, `env.allow holds "*": the caller's whole environment (tokens included) enters the box`)
		}
	}
	for _, a := range p.Shell.Allow {
		if policy.Interpreter(a) {
			w = append(w, fmt.Sprintf("shell.allow holds %q, an interpreter: it runs whatever code it is given", a))
		}
	}
	return w
}

func policyExplainCmd() *Command {
	const usage = "[--policy FILE] [--workdir DIR] [--mode observe|fix] [--json] (--shell STRING | -- CMD [ARG...])"
	const long = `Decides a command without running it and prints, for every simple command
it would run (after wrappers, nested sh -c strings, substitutions and
redirections are read), the verdict, the policy field that decided and the
reason an agent would be given. The policy is FILE, or airlock.yaml in the
working directory (--workdir, as for run), or the built-in workspace profile.

Exits 0 when the command was explained, whatever the verdict; the verdict is
in the output (and in --json).`
	return &Command{Name: "explain", Usage: usage, Short: "show how a policy decides a command", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock policy explain", usage, long)
			file := fs.String("policy", "", "the policy file (default: airlock.yaml in the working directory, else the workspace profile)")
			workdir := fs.String("workdir", "", "the working `directory` the command would run in (default: the current one)")
			mode := fs.String("mode", "observe", "observe (read only) or fix (writes as fs.write allows)")
			src := fs.String("shell", "", "a shell command string to decide")
			asJSON := fs.Bool("json", false, "print the decisions as JSON")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			argv := fs.Args()
			shellGiven := false
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "shell" {
					shellGiven = true
				}
			})
			switch {
			case shellGiven && len(argv) > 0:
				return usagef("give --shell STRING or -- CMD ARG..., not both")
			case !shellGiven && len(argv) == 0:
				return usagef("nothing to explain: give --shell STRING or -- CMD ARG... (see airlock policy explain --help)")
			}
			m := policy.Observe
			switch *mode {
			case "observe":
			case "fix":
				m = policy.Fix
			default:
				return usagef("--mode %q: want observe or fix", *mode)
			}
			c, source, err := explainChecker(env, *file, *workdir, m)
			if err != nil {
				return err
			}
			ex := explanation{Policy: source, Mode: m.String()}
			if shellGiven {
				ex.Shell = *src
				sd := c.Shell(*src)
				ex.Overall, ex.Commands = sd.Overall, sd.Commands
			} else {
				ex.Argv = argv
				ex.Overall = c.Argv(argv)
				if cmds, err := shellread.ReadArgv(argv); err == nil {
					ex.Commands = c.Commands(cmds).Commands
				}
			}
			if *asJSON {
				return json.NewEncoder(env.Stdout).Encode(ex)
			}
			return ex.print(env.Stdout)
		}}
}

// explainChecker compiles the policy explain uses, in the working
// directory a run with the same flags would have.
func explainChecker(env *Env, file, workdirFlag string, m policy.Mode) (*policy.Checker, string, error) {
	p, source, workdir, err := loadPolicyAt(env, file, workdirFlag, m.String())
	if err != nil {
		return nil, "", err
	}
	if source == "" {
		source = "workspace (built-in)"
	}
	c, err := p.Compile(wiring.World(workdir, env.Getenv("HOME"), m))
	if err != nil {
		return nil, "", err
	}
	return c, source, nil
}

// loadPolicyAt reads the policy the kernel flags name, as run would: the
// flag values are checked the same way (a bad one is a usage mistake), and
// it returns the policy, its file ("" for the built-in profile) and the
// working directory.
func loadPolicyAt(env *Env, file, workdirFlag, mode string) (*policy.Policy, string, string, error) {
	if err := checkKernelValues(env, mode, workdirFlag, file); err != nil {
		return nil, "", "", err
	}
	workdir, err := wiring.Workdir(env.Dir, workdirFlag)
	if err != nil {
		return nil, "", "", err
	}
	p, source, err := wiring.LoadPolicy(env.Dir, workdir, file, env.Getenv)
	if err != nil {
		return nil, "", "", err
	}
	return p, source, workdir, nil
}

type explanation struct {
	Policy   string                   `json:"policy"`
	Mode     string                   `json:"mode"`
	Shell    string                   `json:"shell,omitempty"`
	Argv     []string                 `json:"argv,omitempty"`
	Overall  policy.Decision          `json:"overall"`
	Commands []policy.CommandDecision `json:"commands"`
}

func (ex *explanation) print(w io.Writer) error {
	fmt.Fprintf(w, "policy: %s (mode %s)\n", ex.Policy, ex.Mode)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERDICT\tCOMMAND\tRULE\tREASON")
	for _, cd := range ex.Commands {
		cmd := quoteArgv(cd.Argv)
		if len(cd.Via) > 0 {
			cmd += "  (via " + strings.Join(cd.Via, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cd.Decision.Verdict, cmd, cd.Decision.Rule, cd.Decision.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	d := ex.Overall
	line := fmt.Sprintf("=> %s (%s)", strings.ToUpper(d.Verdict.String()), d.Rule)
	if d.Reason != "" {
		line += ": " + d.Reason
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// quoteArgv shows an argv the way a shell would need it typed.
func quoteArgv(argv []string) string {
	if len(argv) == 0 {
		return "(redirection only)"
	}
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`;&|<>()*?[]{}~#!") {
			parts[i] = a
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	s := strings.Join(parts, " ")
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

func policyShowCmd() *Command {
	const usage = "[--policy FILE] [--workdir DIR]"
	const long = `Prints the effective policy as JSON: the file (or the built-in workspace
profile) with every default filled in. Without --policy it is airlock.yaml in
the working directory (--workdir, as for run).`
	return &Command{Name: "show", Usage: usage, Short: "print the effective policy as JSON", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock policy show", usage, long)
			file := fs.String("policy", "", "the policy file (default: airlock.yaml in the working directory, else the workspace profile)")
			workdir := fs.String("workdir", "", "the working `directory` whose airlock.yaml is read (default: the current one)")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() > 0 {
				return usagef("unexpected argument %q (see airlock policy show --help)", fs.Arg(0))
			}
			p, _, _, err := loadPolicyAt(env, *file, *workdir, "observe")
			if err != nil {
				return err
			}
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(p)
		}}
}

func policyTrustCmd() *Command {
	const usage = "FILE"
	const long = `Records the SHA-256 and the content of the policy FILE in the trusted list
($XDG_CONFIG_HOME/airlock/trusted.yaml). A policy whose content is trusted is
in force wherever it lies. A policy that is not trusted is held against the
one that is: the content last trusted at its path, or — where a box may have
written it — the built-in workspace profile; if it asks for less confinement
(isolation: none, wider fs, net, shell or env), runs refuse it and name this
command. When FILE was trusted before with other content, the difference is
shown first. Read the file before you trust it: it says what every later run
under it may do.`
	return &Command{Name: "trust", Usage: usage, Short: "trust a policy file's content", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock policy trust", usage, long)
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() != 1 {
				return usagef("one FILE is required (see airlock policy trust --help)")
			}
			list, err := wiring.TrustedPath(env.Getenv)
			if err != nil {
				return err
			}
			res, err := wiring.Trust(list, env.Dir, fs.Arg(0), time.Now())
			if err != nil {
				return err
			}
			// The file may be a box's: what it says reaches the terminal
			// shown, never obeyed.
			out := termsafe.NewWriter(env.Stdout)
			defer out.Flush()
			switch prev := res.Previous; {
			case prev != nil && prev.SHA256 == res.SHA256:
				fmt.Fprintf(out, "%s: already trusted (sha256 %s)\n", res.Path, res.SHA256)
				return nil
			case prev != nil:
				fmt.Fprintf(out, "%s changed since it was trusted on %s:\n", res.Path, prev.Trusted.Format(time.DateTime))
				writeDiff(out, prev.Content, res.Content)
			}
			fmt.Fprintf(out, "trusted %s (sha256 %s)\n", res.Path, res.SHA256)
			return nil
		}}
}

// maxDiffLines bounds the files writeDiff compares line by line; longer
// ones are shown whole on both sides.
const maxDiffLines = 2000

// writeDiff writes the lines that differ between old and new: "-" for a
// line only old has, "+" for one only new has, in file order.
func writeDiff(w io.Writer, old, new string) {
	a, b := strings.SplitAfter(old, "\n"), strings.SplitAfter(new, "\n")
	line := func(prefix, s string) { fmt.Fprintf(w, "%s%s\n", prefix, strings.TrimSuffix(s, "\n")) }
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		for _, s := range a {
			line("-", s)
		}
		for _, s := range b {
			line("+", s)
		}
		return
	}
	// lcs[i][j] is the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			if a[i] != "" {
				line("-", a[i])
			}
			i++
		default:
			if b[j] != "" {
				line("+", b[j])
			}
			j++
		}
	}
}
