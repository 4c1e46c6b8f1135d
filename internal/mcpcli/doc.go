// Package mcpcli runs `airlock mcp serve` and `airlock mcp wrap`, the
// MCP front ends, which link the MCP SDK (and through it gob, JSON Schema
// and OAuth), and links the file store's SQLite driver, for them and for
// `airlock files` and `airlock read-result`. The airlock binary never links
// it, so no `airlock run`, guard or box init pays for their start: only
// cmd/airlock-mcp imports it, and sets cli.Env's MCP to Commands.
package mcpcli

import (
	"context"

	// `airlock files`, `airlock read-result` and the MCP front ends open
	// the file store, whose SQLite driver the airlock binary leaves out.
	_ "github.com/airlock-run/airlock/files/sqldriver"
	"github.com/airlock-run/airlock/internal/cli"
)

// Commands are the MCP commands by name, for cli.Env's MCP.
func Commands() map[string]func(ctx context.Context, env *cli.Env, args []string) error {
	return map[string]func(ctx context.Context, env *cli.Env, args []string) error{"serve": serveCmd, "wrap": wrapCmd}
}
