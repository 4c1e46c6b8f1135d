package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestServeThroughHandOver: an MCP client configured with `airlock mcp
// serve` starts the airlock binary, which hands over to the airlock-mcp
// beside it in the same process (same pid, its standard streams the
// client's): the client lists airlock's tools and reads a file through
// them.
func TestServeThroughHandOver(t *testing.T) {
	airlock := testsupport.AirlockBin(t)
	want, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(airlock), "airlock-mcp"))
	if err != nil {
		t.Fatalf("no airlock-mcp beside %s (go build -o %s ./cmd/airlock-mcp): %v", airlock, filepath.Join(filepath.Dir(airlock), "airlock-mcp"), err)
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "notes.md"), []byte("through the hand-over\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Tier 0: the test is of the hand-over, not of the box.
	cmd := exec.Command(airlock, "mcp", "serve", "--sandbox", "off", "--workdir", work)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(root, "home"),
		"XDG_STATE_HOME=" + filepath.Join(root, "state"), "XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(root, "config"), "XDG_RUNTIME_DIR=" + root}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to airlock mcp serve: %v", err)
	}
	defer cs.Close()

	// The process the client started is now airlock-mcp.
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe"); err != nil || exe != want {
		t.Errorf("the client's server process runs %q (%v); want the airlock-mcp beside airlock, %s", exe, err, want)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(" "+strings.Join(names, " ")+" ", " read_file ") {
		t.Fatalf("tools %v: want airlock's own, read_file among them", names)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.md"}})
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError || !strings.Contains(text, "through the hand-over") {
		t.Errorf("read_file: error %v, %q; want the file's text", res.IsError, text)
	}
}

// TestStoreCommandsThroughHandOver: `airlock files put` and `airlock
// read-result`, which open the file store and so link SQLite, run in the
// airlock-mcp beside airlock: a file put through one is read back through
// the other.
func TestStoreCommandsThroughHandOver(t *testing.T) {
	airlock := testsupport.AirlockBin(t)
	root := t.TempDir()
	environ := []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(root, "home"), "AIRLOCK_FILES=" + filepath.Join(root, "store")}
	run := func(stdin string, args ...string) string {
		cmd := exec.Command(airlock, args...)
		cmd.Env, cmd.Stdin = environ, strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("airlock %v: %v: %s", args, err, stderr)
		}
		return string(out)
	}
	ref := strings.TrimSpace(run("# Notes\n\nkept in the store\n", "files", "put", "-"))
	if !strings.HasPrefix(ref, "airlock-file:sha256:") {
		t.Fatalf("files put printed %q, want a reference", ref)
	}
	if got := run("", "read-result", ref, "--view", "full"); !strings.Contains(got, "kept in the store") {
		t.Errorf("read-result %s: %q; want the file's text", ref, got)
	}
	if got := run("", "files", "ls"); !strings.Contains(got, ref) {
		t.Errorf("files ls: %q; want %s listed", got, ref)
	}
}
