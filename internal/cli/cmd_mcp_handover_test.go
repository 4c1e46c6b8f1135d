package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestMCPHandsOver: `airlock mcp serve|wrap ...`, `airlock files ...` and
// `airlock read-result ...` run the airlock-mcp binary in its place — the one beside the airlock binary, never one on
// PATH — with the same arguments, environment and standard streams (an
// MCP client speaks on them). A stand-in airlock-mcp echoes what it was
// given and a line of its standard input.
func TestMCPHandsOver(t *testing.T) {
	bin := t.TempDir()
	airlock := filepath.Join(bin, "airlock")
	copyExe(t, testsupport.AirlockBin(t), airlock)
	onPath := t.TempDir()
	standIn := func(dir, where string) {
		script := "#!/bin/sh\necho \"" + where + ": $*\"\necho \"env: $AIRLOCK_TRACE_FILE\"\nread line\necho \"stdin: $line\"\nexit 7\n"
		if err := os.WriteFile(filepath.Join(dir, "airlock-mcp"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string) {
		return runExe(t, airlock, []string{"PATH=" + onPath + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "AIRLOCK_TRACE_FILE=/dev/null"},
			"{\"jsonrpc\":\"2.0\"}\n", args...)
	}

	// Nowhere: one line naming the binary and the command that builds it.
	code, out := run("mcp", "serve", "--sandbox", "off")
	if code != 125 || !strings.Contains(out, "go build -o "+filepath.Join(bin, "airlock-mcp")+" ./cmd/airlock-mcp") ||
		!strings.Contains(out, "the MCP SDK") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("no airlock-mcp: exit %d, %q; want 125 and one line naming the build", code, out)
	}
	code, out = run("files", "ls")
	if code != 125 || !strings.Contains(out, "go build -o "+filepath.Join(bin, "airlock-mcp")+" ./cmd/airlock-mcp") ||
		!strings.Contains(out, "SQLite") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("files ls without airlock-mcp: exit %d, %q; want 125 and one line naming the build", code, out)
	}
	// On PATH only: never run.
	standIn(onPath, "on path")
	if code, out := run("mcp", "serve"); code != 125 || strings.Contains(out, "on path:") {
		t.Errorf("airlock-mcp on PATH only: exit %d, %q; want 125, the one on PATH not run", code, out)
	}
	// Beside the airlock binary: run, with the arguments, the environment
	// and the standard input.
	standIn(bin, "beside")
	for _, args := range [][]string{
		{"mcp", "serve", "--sandbox", "off", "--workdir", "a b"},
		{"mcp", "wrap", "--name", "fs", "--", "srv", "--flag"},
		{"mcp", "serve", "--help"},
		// The commands that open the file store link SQLite: airlock-mcp's.
		{"files", "put", "-"},
		{"files", "ls", "--json"},
		{"read-result", "airlock-file:sha256:" + strings.Repeat("1", 64), "--budget", "5"},
	} {
		code, out := run(args...)
		if code != 7 || !strings.Contains(out, "beside: "+strings.Join(args, " ")+"\n") ||
			!strings.Contains(out, "env: /dev/null\n") || !strings.Contains(out, "stdin: {\"jsonrpc\":\"2.0\"}\n") {
			t.Errorf("airlock %v with airlock-mcp beside: exit %d, %q; want the stand-in's exit 7, the arguments, environment and standard input", args, code, out)
		}
	}
	// The group's help is the airlock binary's own and lists the commands.
	if code, out := run("mcp", "--help"); code != 0 || strings.Contains(out, "beside:") ||
		!strings.Contains(out, "serve") || !strings.Contains(out, "wrap") {
		t.Errorf("airlock mcp --help: exit %d, %q; want airlock's own list of serve and wrap", code, out)
	}
}

// TestMCPRunsNoBinaryFromPath: in-process, with airlock-mcp only in the
// working directory and on PATH, `airlock mcp serve` executes nothing and
// names the airlock-mcp beside airlock.
func TestMCPRunsNoBinaryFromPath(t *testing.T) {
	install, work := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "airlock-mcp"), []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{".:/usr/bin", work + ":/usr/bin", "/usr/bin::/bin"} {
		var ran []string
		var stderr bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &stderr, Dir: work,
			Exe: filepath.Join(install, "airlock"), Environ: []string{"HOME=" + t.TempDir(), "PATH=" + path},
			Exec: func(p string, argv, envv []string) error { ran = append(ran, p); return os.ErrPermission }}
		code := Main(context.Background(), []string{"mcp", "serve"}, env)
		if len(ran) != 0 {
			t.Fatalf("PATH=%s: airlock executed %v", path, ran)
		}
		if code != 125 || !strings.Contains(stderr.String(), "there is none at "+filepath.Join(install, "airlock-mcp")) {
			t.Errorf("PATH=%s: exit %d, %q; want 125 naming the airlock-mcp beside airlock", path, code, stderr.String())
		}
	}
}
