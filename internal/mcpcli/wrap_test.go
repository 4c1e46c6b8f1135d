package mcpcli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/cli"
)

func TestMCPWrapCommandLine(t *testing.T) {
	dir := t.TempDir()
	environ := []string{"HOME=" + dir, "XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_RUNTIME_DIR=" + dir}
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("tools: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no server", []string{"mcp", "wrap"}, 2, "no server command"},
		{"public http address", []string{"mcp", "wrap", "--http", "0.0.0.0:8931", "--", "srv"}, 2, "only a loopback address"},
		{"http without port", []string{"mcp", "wrap", "--http", "127.0.0.1", "--", "srv"}, 2, "HOST:PORT"},
		{"bad offload", []string{"mcp", "wrap", "--offload", "lots", "--", "srv"}, 2, "--offload"},
		{"bad tier", []string{"mcp", "wrap", "--sandbox", "9", "--", "srv"}, 2, "--sandbox"},
		{"invalid policy", []string{"mcp", "wrap", "--policy", "bad.yaml", "--", "srv"}, 125, "bad.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			env := &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: dir, Environ: environ}
			code := runMCP(context.Background(), tt.args, env)
			if code != tt.wantCode || !strings.Contains(errb.String(), tt.wantErr) {
				t.Errorf("got exit %d, stderr %q; want exit %d and %q", code, errb.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		var out bytes.Buffer
		code := runMCP(context.Background(), []string{"mcp", "wrap", "--help"}, &cli.Env{Stdout: &out, Stderr: &out, Dir: dir})
		if code != 0 || !strings.Contains(out.String(), "POLICY_DENIED") {
			t.Errorf("got exit %d, %q; want the help", code, out.String())
		}
	})
}

// runMCP runs the command line args as the airlock-mcp binary does: the
// CLI with Env.MCP set to this package's commands.
func runMCP(ctx context.Context, args []string, env *cli.Env) int {
	env.MCP = Commands()
	return cli.Main(ctx, args, env)
}

// TestMCPErrorShapes: a mistake in an MCP command's line is exit 2 and one
// line "airlock: mcp CMD: ...", nothing on standard output, as for every
// command of the airlock binary.
func TestMCPErrorShapes(t *testing.T) {
	dir, environ := mcpHome(t)
	tests := []struct {
		name, cmd, contains string
		args                []string
	}{
		{"serve unknown flag", "mcp serve", "-no-such-flag", []string{"mcp", "serve", "--no-such-flag"}},
		{"wrap unknown flag", "mcp wrap", "-no-such-flag", []string{"mcp", "wrap", "--no-such-flag"}},
		{"serve bad mode", "mcp serve", `--mode "write"`, []string{"mcp", "serve", "--mode", "write"}},
		{"serve extra argument", "mcp serve", `unexpected argument "x"`, []string{"mcp", "serve", "x"}},
		{"wrap no server", "mcp wrap", "no server command", []string{"mcp", "wrap"}},
		{"unknown command", "mcp", `unknown command "frob"`, []string{"mcp", "frob"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runMCP(context.Background(), tt.args, &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: dir, Environ: environ})
			line := errb.String()
			if code != 2 || strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "airlock: "+tt.cmd+": ") || !strings.Contains(line, tt.contains) {
				t.Errorf("got exit %d, stderr %q; want exit 2 and one line \"airlock: %s: ...%s...\"", code, line, tt.cmd, tt.contains)
			}
			if tt.cmd != "mcp" && out.Len() > 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
		})
	}
}
