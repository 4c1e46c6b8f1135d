package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/fit"
	"github.com/airlock-run/airlock/offload"
)

// readResultCmd is `airlock read-result`; like the files commands it opens
// the store, so a program without its SQLite driver (the airlock binary)
// hands it to airlock-mcp.
func readResultCmd() *Command {
	const usage = "REF [--view V] [--section S | --range A-B | --query Q] [--budget N] [--json]"
	const long = `Reads part of an offloaded result (or any stored file) fitted to a budget:
--section a heading, a top-level key or an item such as [3]; --range lines of
its read form such as 120-180 (JSON is read one indented line per value);
--query anything else fit understands. --view is stub, summary, section or
full (default: the biggest that fits); --budget defaults to 8000 tokens.
Prints the text; the fit note goes to standard error, or with --json both go
to standard output as {"content": ..., "fit": {...}}.

` + storeHelp
	return &Command{Name: "read-result", Usage: usage, Short: "read part of an offloaded result", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			if !files.DriverLinked() {
				return handOverOrHelp(env, storeTool, []string{"read-result"}, usage, long, args)
			}
			fs := NewFlags(env, "airlock read-result", usage, long)
			sf := addStoreFlags(fs)
			view := fs.String("view", "", "stub, summary, section or full")
			section := fs.String("section", "", "a heading, a top-level key or an item such as [3]")
			lines := fs.String("range", "", "lines such as 120-180")
			query := fs.String("query", "", "another query: a definition's name, a path, PATH#N")
			budget := fs.Int("budget", 0, "the most tokens the answer may take (default 8000)")
			asJSON := fs.Bool("json", false, `print {"content": ..., "fit": {...}}`)
			pos, err := parseInterspersed(fs, args)
			if err != nil {
				return err
			}
			if *budget < 0 {
				return usagef("--budget %d: want 0 (the default) or more tokens", *budget)
			}
			if len(pos) != 1 {
				return usagef("name one REF (see --help)")
			}
			if _, err := files.ParseRef(pos[0]); err != nil {
				return badValue(err, "")
			}
			st, sc, err := sf.open(env)
			if err != nil {
				return err
			}
			defer st.Close()
			res, err := offload.ReadResult(ctx, st, sc, offload.Args{Ref: pos[0], View: *view, Section: *section,
				Range: *lines, Query: *query, Budget: *budget})
			if err != nil {
				return err
			}
			return printFitted(env, res, *asJSON)
		}}
}

// printFitted prints a fitted answer: the text on standard output and the
// fit note on standard error, or with asJSON both on standard output as
// {"content": ..., "fit": {...}}.
func printFitted(env *Env, res fit.Result, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(struct {
			Content string   `json:"content"`
			Fit     fit.Note `json:"fit"`
		}{res.Text, res.Note})
	}
	if _, err := fmt.Fprint(env.Stdout, res.Text); err != nil {
		return err
	}
	note, _ := json.Marshal(res.Note)
	_, err := fmt.Fprintf(env.Stderr, "fit: %s\n", note)
	return err
}
