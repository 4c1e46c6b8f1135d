package mcpcli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/cli"
)

// mcpHome is a user's world for the MCP commands.
func mcpHome(t *testing.T) (string, []string) {
	dir := t.TempDir()
	return dir, []string{"HOME=" + dir, "XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_DATA_HOME=" + filepath.Join(dir, "data"),
		"XDG_RUNTIME_DIR=" + dir}
}

// TestMCPHTTPFlags: mcp serve and mcp wrap take the same HTTP flags and
// refuse the same mistakes the same way.
func TestMCPHTTPFlags(t *testing.T) {
	dir, environ := mcpHome(t)
	open := filepath.Join(dir, "open-token")
	if err := os.WriteFile(open, []byte(strings.Repeat("a", 64)), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o644)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no-auth off loopback", []string{"--http", "0.0.0.0:0", "--allow-host", "box.example", "--no-auth"}, 2, "--no-auth: only on a loopback address"},
		{"no-auth without http", []string{"--no-auth"}, 2, "--no-auth: only with --http"},
		{"token file without http", []string{"--token-file", open}, 2, "--token-file: only with --http"},
		{"caps without http", []string{"--max-sessions", "3"}, 2, "--max-sessions: only with --http"},
		{"no-auth and a token file", []string{"--http", "127.0.0.1:0", "--no-auth", "--token-file", open}, 2, "give one of them"},
		{"zero sessions", []string{"--http", "127.0.0.1:0", "--max-sessions", "0"}, 2, "--max-sessions 0: want at least 1"},
		{"zero boxes per client", []string{"--http", "127.0.0.1:0", "--max-client-boxes", "0"}, 2, "--max-client-boxes 0"},
		{"negative idle", []string{"--http", "127.0.0.1:0", "--session-idle", "-1s"}, 2, "--session-idle"},
		{"public address", []string{"--http", "0.0.0.0:8931"}, 2, "only a loopback address"},
		{"no port", []string{"--http", "127.0.0.1"}, 2, "HOST:PORT"},
		{"token file others can read", []string{"--http", "127.0.0.1:0", "--token-file", open}, 125, "chmod 600"},
	}
	for _, cmd := range [][]string{{"mcp", "serve"}, {"mcp", "wrap"}} {
		for _, tt := range tests {
			t.Run(cmd[1]+"/"+tt.name, func(t *testing.T) {
				args := append(append([]string{}, cmd...), tt.args...)
				if cmd[1] == "wrap" {
					args = append(args, "--", "srv")
				}
				var out, errb bytes.Buffer
				env := &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: dir, Environ: environ}
				code := runMCP(context.Background(), args, env)
				if code != tt.wantCode || !strings.Contains(errb.String(), tt.wantErr) {
					t.Errorf("got exit %d, stderr %q; want exit %d and %q", code, errb.String(), tt.wantCode, tt.wantErr)
				}
			})
		}
	}
}

// TestMCPHTTPHelpShared: both commands list the HTTP flags with the same
// words.
func TestMCPHTTPHelpShared(t *testing.T) {
	dir, _ := mcpHome(t)
	help := func(cmd string) map[string]string {
		var out bytes.Buffer
		if code := runMCP(context.Background(), []string{"mcp", cmd, "--help"}, &cli.Env{Stdout: &out, Stderr: &out, Dir: dir}); code != 0 {
			t.Fatalf("mcp %s --help: exit %d", cmd, code)
		}
		flags := map[string]string{}
		var cur string
		for _, line := range strings.Split(out.String(), "\n") {
			if m := regexp.MustCompile(`^  -(\S+)`).FindStringSubmatch(line); m != nil {
				cur = m[1]
			}
			if cur != "" {
				flags[cur] += line + "\n"
			}
		}
		return flags
	}
	serve, wrap := help("serve"), help("wrap")
	for _, f := range []string{"http", "token-file", "no-auth", "allow-host", "max-sessions", "max-client-sessions",
		"max-boxes", "max-client-boxes", "session-idle"} {
		if serve[f] == "" || serve[f] != wrap[f] {
			t.Errorf("--%s: serve says %q, wrap %q; want the same, non-empty", f, serve[f], wrap[f])
		}
	}
}

// syncBuffer is a buffer written by the server while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMCPServeHTTPToken: with no --token-file, mcp serve prints the token
// it made once; with one, it prints none, and only that token opens the
// endpoint.
func TestMCPServeHTTPToken(t *testing.T) {
	dir, environ := mcpHome(t)
	tokenFile := filepath.Join(dir, "token")
	fileToken := strings.Repeat("7f", 32)
	if err := os.WriteFile(tokenFile, []byte(fileToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	start := func(t *testing.T, flags ...string) (url string, stderr *syncBuffer) {
		ctx, cancel := context.WithCancel(context.Background())
		stderr = &syncBuffer{}
		env := &cli.Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Dir: dir, Environ: environ, Exe: exe}
		done := make(chan int, 1)
		go func() { done <- runMCP(ctx, append([]string{"mcp", "serve", "--http", "127.0.0.1:0"}, flags...), env) }()
		t.Cleanup(func() { cancel(); <-done })
		re := regexp.MustCompile(`serving MCP on (http://\S+/mcp)`)
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if m := re.FindStringSubmatch(stderr.String()); m != nil {
				return m[1], stderr
			}
			select {
			case code := <-done:
				t.Fatalf("mcp serve ended with %d: %s", code, stderr.String())
			default:
			}
		}
		t.Fatalf("mcp serve did not say where it serves: %s", stderr.String())
		return "", nil
	}
	status := func(t *testing.T, url, token string) int {
		r, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("generated", func(t *testing.T) {
		url, stderr := start(t)
		m := regexp.MustCompile(`airlock: mcp serve: token: ([0-9a-f]{64})\n`).FindStringSubmatch(stderr.String())
		if m == nil {
			t.Fatalf("no token printed: %s", stderr.String())
		}
		if n := strings.Count(stderr.String(), m[1]); n != 1 || !strings.Contains(stderr.String(), "Authorization: Bearer") {
			t.Errorf("the token is printed %d times, want once with how to send it: %s", n, stderr.String())
		}
		if got := status(t, url, ""); got != http.StatusUnauthorized {
			t.Errorf("no token: got %d, want 401", got)
		}
		if got := status(t, url, m[1]); got != http.StatusOK {
			t.Errorf("the printed token: got %d, want 200", got)
		}
	})
	t.Run("from a file", func(t *testing.T) {
		url, stderr := start(t, "--token-file", tokenFile)
		if strings.Contains(stderr.String(), fileToken) || strings.Contains(stderr.String(), "token: ") {
			t.Errorf("the token of --token-file was printed: %s", stderr.String())
		}
		if got := status(t, url, strings.Repeat("ab", 32)); got != http.StatusUnauthorized {
			t.Errorf("another token: got %d, want 401", got)
		}
		if got := status(t, url, fileToken); got != http.StatusOK {
			t.Errorf("the file's token: got %d, want 200", got)
		}
	})
	t.Run("no-auth on loopback", func(t *testing.T) {
		url, stderr := start(t, "--no-auth")
		if got := status(t, url, ""); got != http.StatusOK || !strings.Contains(stderr.String(), "--no-auth") {
			t.Errorf("no token with --no-auth: got %d, stderr %q; want 200 and a warning", got, stderr.String())
		}
	})
}
