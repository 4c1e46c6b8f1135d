package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/airlock-run/airlock/fit"
)

func fitCmd() *Command {
	const usage = "[--view V] [--budget N] [--query Q] [--chars N] [--name NAME] [--json] [FILE|-]"
	const long = `Cuts a text (FILE, or standard input when FILE is "-" or absent) to what a
model can read: view "full", "section" (the whole parts --query names: a
heading, a definition's name, a path, PATH#N for a diff's n-th hunk, a line
range such as 120-180, a JSON key or item [3]), "summary" (the outline with
each part's first sentence) or "stub" (the outline). Without --view, the
biggest view that fits the budget. Prints the fitted text; the fit note
{view, budget, size, tokens, omitted} goes to standard error, or with --json
both go to standard output as {"content": ..., "fit": {...}}.`
	return &Command{Name: "fit", Usage: usage, Short: "fit a text to a token budget", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock fit", usage, long)
			view := fs.String("view", "", "stub, summary, section or full (default: the biggest that fits)")
			budget := fs.Int("budget", 0, "the most tokens the answer may take (0: only the caps)")
			query := fs.String("query", "", "the section to show: heading, name, path, PATH#N, 120-180, key, [3]")
			chars := fs.Int("chars", 0, "a bound of your own in characters (0: none)")
			name := fs.String("name", "", "the document's name, to tell its kind (default: FILE)")
			asJSON := fs.Bool("json", false, `print {"content": ..., "fit": {...}} as JSON`)
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if *budget < 0 || *chars < 0 {
				return usagef("--budget and --chars are counts: 0 or more")
			}
			if *view != "" && !fit.View(*view).Valid() {
				return usagef("--view %q is not a view (stub, summary, section or full)", *view)
			}
			text, fileName, err := readTextArg(env, fs.Args(), "airlock fit")
			if err != nil {
				return err
			}
			if *name == "" {
				*name = fileName
			}
			res := fit.Fit(text, fit.Request{View: fit.View(*view), Budget: *budget, Query: *query, Chars: *chars, Name: *name})
			if *asJSON {
				enc := json.NewEncoder(env.Stdout)
				enc.SetEscapeHTML(false)
				return enc.Encode(struct {
					Content string   `json:"content"`
					Fit     fit.Note `json:"fit"`
				}{res.Text, res.Note})
			}
			if _, err := fmt.Fprint(env.Stdout, res.Text); err != nil {
				return err
			}
			var note strings.Builder
			enc := json.NewEncoder(&note)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(res.Note); err != nil {
				return err
			}
			fmt.Fprintf(env.Stderr, "fit: %s", note.String())
			return nil
		}}
}
