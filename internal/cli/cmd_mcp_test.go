package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: dir, Environ: environ}
			code := Main(context.Background(), tt.args, env)
			if code != tt.wantCode || !strings.Contains(errb.String(), tt.wantErr) {
				t.Errorf("got exit %d, stderr %q; want exit %d and %q", code, errb.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		var out bytes.Buffer
		code := Main(context.Background(), []string{"mcp", "wrap", "--help"}, &Env{Stdout: &out, Stderr: &out, Dir: dir})
		if code != 0 || !strings.Contains(out.String(), "POLICY_DENIED") {
			t.Errorf("got exit %d, %q; want the help", code, out.String())
		}
	})
}
