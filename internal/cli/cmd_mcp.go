package cli

func mcpCmd() *Command { return notYet("mcp", "MCP server and gateway") }
