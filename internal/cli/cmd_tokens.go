package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/fit"
)

func tokensCmd() *Command {
	const usage = "[--json] [FILE|-]"
	const long = `Prints airlock's token count of a text (FILE, or standard input when
FILE is "-" or absent): an estimate of a cl100k-class tokenizer, about 3% off
on average. With --json it also prints the text's weight, the number budgets,
caps and offload thresholds are measured in: the count, with runs of white
space longer than tokenizers take as a few tokens charged by their length.`
	return &Command{Name: "tokens", Usage: usage, Short: "estimate the tokens of a text", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock tokens", usage, long)
			asJSON := fs.Bool("json", false, "print {count, weight, kind, size, lines} as JSON")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			text, name, err := readTextArg(env, fs.Args(), "airlock tokens")
			if err != nil {
				return err
			}
			if !*asJSON {
				_, err = fmt.Fprintln(env.Stdout, fit.Count(text))
				return err
			}
			info := fit.Describe(text, name)
			return json.NewEncoder(env.Stdout).Encode(tokensReport{
				Count: info.Tokens, Weight: info.Weight, Kind: info.Kind, Size: info.Bytes, Lines: info.Lines,
			})
		}}
}

// tokensReport is what airlock tokens --json prints.
type tokensReport struct {
	Count  int      `json:"count"`  // fit.Count: the tokenizer's estimate
	Weight int      `json:"weight"` // fit.Weigh: what budgets measure
	Kind   fit.Kind `json:"kind"`
	Size   int      `json:"size"` // bytes
	Lines  int      `json:"lines"`
}

// maxInput is the most a command reads as one text: a little over the 31 MiB
// beyond which a result is refused anyway, so a runaway pipe cannot take all
// memory.
const maxInput = 32 << 20

// readTextArg reads the text named by the only argument (a file, or "-" or
// nothing for standard input) and returns it with the name to show for it.
// place is the command, named in the pointer to its help.
func readTextArg(env *Env, args []string, place string) (string, string, error) {
	if len(args) > 1 {
		return "", "", usagef("one FILE at most, got %d (see %s --help)", len(args), place)
	}
	var r io.Reader = env.Stdin
	name := ""
	if len(args) == 1 && args[0] != "-" {
		p := args[0]
		if !filepath.IsAbs(p) && env.Dir != "" {
			p = filepath.Join(env.Dir, p)
		}
		f, err := os.Open(p)
		if err != nil {
			if os.IsNotExist(err) {
				return "", "", usagef("%s does not exist (name an existing file, or - for standard input)", args[0])
			}
			return "", "", errs.Wrap(errs.Invalid, err, "open %s", args[0])
		}
		defer f.Close()
		r, name = f, args[0]
	}
	if r == nil {
		return "", "", errs.Invalidf("no standard input (name a FILE)")
	}
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return "", "", errs.Wrap(errs.Invalid, err, "read the input")
	}
	if len(b) > maxInput {
		return "", "", errs.Invalidf("input is over %d MiB (cut it first, e.g. with head -c)", maxInput>>20)
	}
	return string(b), name, nil
}
