package cli

func mcpServeCmd() *Command { return notYet("serve", "serve airlock's own tools over MCP") }
