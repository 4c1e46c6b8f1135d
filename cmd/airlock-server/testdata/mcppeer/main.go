// Command mcppeer is a small real MCP server (the Go SDK's) on its
// standard input and output, for the fleet's tool call tests: echo
// (read-only, closed world), secret (neither) and hang (never answers).
// Only cmd/airlock-server's tests build it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcppeer", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)
	closed := false
	s.AddTool(&sdk.Tool{Name: "echo", Description: "echo", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &closed}},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Message string }
			json.Unmarshal(r.Params.Arguments, &a)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + a.Message}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "secret", Description: "secret", InputSchema: schema},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the secret"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "hang", Description: "hang", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &closed}},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			select {} // never answers, not even to a cancellation
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcppeer:", err)
		os.Exit(1)
	}
}
