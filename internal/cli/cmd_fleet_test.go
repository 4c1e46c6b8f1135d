package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestCheckListen(t *testing.T) {
	tests := []struct {
		name, addr string
		ok         bool
	}{
		{"loopback v4", "127.0.0.1:8420", true},
		{"loopback v6", "[::1]:0", true},
		{"another loopback", "127.0.0.2:1", true},
		{"every address", ":8420", false},
		{"0.0.0.0", "0.0.0.0:8420", false},
		{"a name", "localhost:8420", false},
		{"v6 unspecified", "[::]:1", false},
		{"no port", "127.0.0.1", false},
		// Beyond loopback the API is TLS only (plain HTTP there too only
		// with --insecure-listen, which changes no address taken).
		{"a network address", "10.0.0.1:80", true},
		{"a name beyond loopback", "example.com:80", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkListen(tt.addr)
			if (err == nil) != tt.ok {
				t.Errorf("checkListen(%q): got %v, want ok=%v", tt.addr, err, tt.ok)
			}
		})
	}
}

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

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true}, {"512", 512, true}, {"64M", 64 << 20, true}, {"2g", 2 << 30, true}, {"8K", 8 << 10, true},
		{"0", 0, false}, {"-1M", 0, false}, {"M", 0, false}, {"1.5G", 0, false}, {"2T", 0, false}, {"9999999999G", 0, false},
	}
	for _, tt := range tests {
		got, err := parseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
