//go:build tools

// Package deps pins the project's third-party modules in go.mod while the
// packages that use them are being written, so that parallel work on separate
// packages never races on go.mod. It is never built.
package deps

import (
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/tiktoken-go/tokenizer"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "golang.org/x/net/bpf"
	_ "golang.org/x/net/idna"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "golang.org/x/text/unicode/norm"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
	_ "mvdan.cc/sh/v3/syntax"
)
