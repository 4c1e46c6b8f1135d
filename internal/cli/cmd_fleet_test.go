package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8420", "[::1]:0", "127.0.0.2:1"} {
		if err := checkLoopback(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{":8420", "0.0.0.0:8420", "localhost:8420", "[::]:1", "10.0.0.1:80", "127.0.0.1"} {
		if err := checkLoopback(bad); err == nil {
			t.Errorf("%s: got nil, want a refusal", bad)
		}
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
