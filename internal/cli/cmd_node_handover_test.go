package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestNodeHandsOver: `airlock node ...` runs the airlock-node binary in
// its place with the same arguments — the one beside the airlock binary,
// never one on PATH — while `airlock node list` stays an HTTP client
// of the airlock binary's own. A stand-in airlock-node prints what it was
// given, so the test sees exactly what the real one would get.
func TestNodeHandsOver(t *testing.T) {
	bin := t.TempDir()
	airlock := filepath.Join(bin, "airlock")
	copyExe(t, testsupport.AirlockBin(t), airlock)
	onPath := t.TempDir()
	standIn := func(dir, where string) string {
		p := filepath.Join(dir, "airlock-node")
		script := "#!/bin/sh\necho \"" + where + ": $*\"\necho \"env: $AIRLOCK_SERVER\"\nexit 7\n"
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(args ...string) (int, string) {
		return runExe(t, airlock, []string{"PATH=" + onPath + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "AIRLOCK_SERVER=http://127.0.0.1:1"}, "", args...)
	}

	// Nowhere: one line naming the binary and the fix.
	code, out := run("node", "--pool", "ci")
	if code != 125 || !strings.Contains(out, "airlock-node") || !strings.Contains(out, "go build -o "+filepath.Join(bin, "airlock-node")+" ./cmd/airlock-node") ||
		strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("no airlock-node: exit %d, %q; want 125 and one line naming the build", code, out)
	}
	// On PATH only: never run.
	standIn(onPath, "on path")
	if code, out := run("node", "--pool", "ci"); code != 125 || strings.Contains(out, "on path:") {
		t.Errorf("airlock-node on PATH only: exit %d, %q; want 125, the one on PATH not run", code, out)
	}
	// Beside the airlock binary: run, with the arguments and environment.
	standIn(bin, "beside")
	if code, out := run("node", "--pool", "ci", "--id", "n 1"); code != 7 || !strings.Contains(out, "beside: node --pool ci --id n 1\n") ||
		!strings.Contains(out, "env: http://127.0.0.1:1") {
		t.Errorf("airlock-node beside airlock: exit %d, %q; want the stand-in's exit 7, the arguments and the environment", code, out)
	}
	// node list is the airlock binary's own: it fails reaching no server.
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := run("node", "list", "--token-file", tok); code == 7 || strings.Contains(out, "beside:") || !strings.Contains(out, "127.0.0.1:1") {
		t.Errorf("airlock node list: exit %d, %q; want it run by airlock itself, failing for want of a server", code, out)
	}
}

// TestNodeWithoutAirlockNode: in-process, with no airlock-node anywhere,
// `airlock node` fails with the fix and runs nothing.
func TestNodeWithoutAirlockNode(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &stderr, Dir: dir, Exe: filepath.Join(dir, "airlock"),
		Environ: []string{"HOME=" + dir, "PATH=" + t.TempDir()}}
	code := Main(context.Background(), []string{"node", "--pool", "ci"}, env)
	if code != 125 || !strings.Contains(stderr.String(), "there is none at "+filepath.Join(dir, "airlock-node")) {
		t.Errorf("got exit %d, %q", code, stderr.String())
	}
}

// runExe runs exe with args, the environment environ and stdin as its
// standard input, and returns its exit code and what it printed.
func runExe(t *testing.T, exe string, environ []string, stdin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = environ
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", exe, args, err)
	}
	return code, string(out)
}

// copyExe copies the executable from to to.
func copyExe(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
