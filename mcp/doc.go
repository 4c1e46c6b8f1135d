// Package mcp holds what airlock's MCP server (mcp/serve) and gateway
// (mcp/gateway) share: the structured denial as a JSON-RPC error, the
// normalisation and validation of names, the refusal of JSON with duplicate
// keys, the detection of tools that follow the fit convention (an integer
// `budget` beside a `view` enum) and the `_meta` key under which a fitted or
// offloaded result says so; and the loopback guard of their HTTP endpoints
// against DNS rebinding.
//
// It decides nothing and does no I/O of its own. mcp/serve, mcp/gateway and
// internal/cli import it; the parts below the kernel (policy, sandbox,
// runner, fit, files) never do.
package mcp
