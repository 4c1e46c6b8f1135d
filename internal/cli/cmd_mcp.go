package cli

// mcpCmd groups airlock's MCP entry points: serve (airlock's own tools) and
// wrap (a gateway in front of another MCP server).
func mcpCmd() *Command {
	return &Command{Name: "mcp", Usage: "COMMAND [ARGS]", Short: "MCP server and gateway",
		Sub: []*Command{mcpServeCmd(), mcpWrapCmd()}}
}

func mcpWrapCmd() *Command {
	return notYet("wrap", "run another MCP server in a box and mediate its tools")
}
