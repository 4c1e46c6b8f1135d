package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: t.TempDir(),
		Environ: []string{"HOME=" + t.TempDir()}}
	code = Main(context.Background(), args, env)
	return code, out.String(), errb.String()
}

// TestHelpEverywhere checks every command and group answers --help with its
// usage, once, on standard output, and exit 0.
func TestHelpEverywhere(t *testing.T) {
	var paths [][]string
	for _, c := range commands() {
		paths = append(paths, []string{c.Name})
		for _, s := range c.Sub {
			paths = append(paths, []string{c.Name, s.Name})
		}
	}
	for _, p := range paths {
		t.Run(strings.Join(p, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, append(p, "--help")...)
			if code != 0 {
				t.Errorf("got exit %d, want 0 (stderr %q)", code, errOut)
			}
			if n := strings.Count(out, "Usage:"); n != 1 {
				t.Errorf("usage printed %d times, want once:\n%s", n, out)
			}
		})
	}
}

func TestUnknownCommandIsAUsageError(t *testing.T) {
	code, _, errOut := runCLI(t, "frobnicate")
	if code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("got exit %d and stderr %q, want 2 and one line naming the command", code, errOut)
	}
}

func TestCompletion(t *testing.T) {
	code, out, _ := runCLI(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "complete -F _airlock airlock") || !strings.Contains(out, "run") {
		t.Errorf("completion bash: exit %d, script %q", code, out)
	}
	if code, _, _ := runCLI(t, "completion", "fish"); code != 2 {
		t.Errorf("completion fish: got exit %d, want 2", code)
	}
}
