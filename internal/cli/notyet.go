package cli

import (
	"context"
	"fmt"

	"github.com/airlock-run/airlock/errs"
)

// notYet is a placeholder entry for a command whose part has not landed; it
// fails with exit 125 and says so, so nothing pretends to work.
func notYet(name, short string) *Command {
	return &Command{Name: name, Usage: "", Short: short + " (not available in this build)",
		Run: func(ctx context.Context, env *Env, args []string) error {
			if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
				fmt.Fprintf(env.Stdout, "Usage: airlock %s\n\n%s: not available in this build\n", name, name)
				return nil
			}
			return errs.Unavailablef("%s: not available in this build", name)
		}}
}
