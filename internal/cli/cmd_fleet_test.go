package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestKillAndRetryUsage: the kill switch needs an agent's name, and a
// job not marked idempotent is never offered a retry; both are refused
// before any request is sent.
func TestKillAndRetryUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"kill without an agent", []string{"kill"}, "airlock kill --agent NAME"},
		{"kill of a name that is not one", []string{"kill", "--agent", "a/b"}, `--agent "a/b"`},
		{"a retry of a job not marked idempotent", []string{"job", "start", "--retry", "2", "--", "make"}, "only a job marked --idempotent runs again"},
		{"job kill of an id that is not one", []string{"job", "kill", "../x"}, `job id "../x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &stderr, Dir: t.TempDir(),
				Environ: []string{"HOME=" + t.TempDir(), "AIRLOCK_SERVER=http://127.0.0.1:1"}}
			if code := Main(context.Background(), tt.args, env); code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("got exit %d, %q; want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// TestServerNeedsAirlockServer: the airlock binary carries no Temporal
// server, and says which binary does.
func TestServerNeedsAirlockServer(t *testing.T) {
	var stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &stderr, Dir: t.TempDir(),
		Environ: []string{"HOME=" + t.TempDir()}}
	code := Main(context.Background(), []string{"server", "--listen", "127.0.0.1:0"}, env)
	if code != 125 || !strings.Contains(stderr.String(), "run `airlock-server --listen 127.0.0.1:0` instead") {
		t.Errorf("got exit %d, %q", code, stderr.String())
	}
}

func TestJobStartNeedsACommand(t *testing.T) {
	var stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &stderr, Dir: t.TempDir()}
	if code := Main(context.Background(), []string{"job", "start", "--pool", "ci"}, env); code != 2 {
		t.Errorf("got exit %d, %q, want 2", code, stderr.String())
	}
}
