package fleetcli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/jobs"
)

// TestServerExternalRefusals: an existing cluster airlock cannot rely on
// to authorize nodes' polls is refused before anything starts, with the
// fix named, and the embedded server is never started in its place.
func TestServerExternalRefusals(t *testing.T) {
	tls := []string{"--temporal-tls-cert", "c.pem", "--temporal-tls-key", "c.key", "--temporal-tls-ca", "ca.pem"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no TLS, no authorizer", []string{"--temporal", "127.0.0.1:7233"},
			"a cluster without mutual TLS lets any process poll floor queues"},
		{"no TLS with the authorizer", []string{"--temporal", "127.0.0.1:7233", "--temporal-authorizer", "airlock"},
			"give --temporal-tls-cert, --temporal-tls-key and --temporal-tls-ca"},
		{"no key", []string{"--temporal", "127.0.0.1:7233", "--temporal-authorizer", "airlock", "--temporal-tls-cert", "c.pem", "--temporal-tls-ca", "ca.pem"},
			"give --temporal-tls-cert, --temporal-tls-key and --temporal-tls-ca"},
		{"no CA", []string{"--temporal", "127.0.0.1:7233", "--temporal-authorizer", "airlock", "--temporal-tls-cert", "c.pem", "--temporal-tls-key", "c.key"},
			"give --temporal-tls-cert, --temporal-tls-key and --temporal-tls-ca"},
		{"TLS, no authorizer statement", append([]string{"--temporal", "127.0.0.1:7233"}, tls...),
			"say so with --temporal-authorizer airlock"},
		{"another authorizer", append([]string{"--temporal", "127.0.0.1:7233", "--temporal-authorizer", "default"}, tls...),
			"say so with --temporal-authorizer airlock"},
		{"TLS flags without a cluster", append([]string{"--temporal-authorizer", "airlock"}, tls...),
			"give its address with --temporal HOST:PORT"},
		{"a namespace without a cluster", []string{"--namespace", "fleet"},
			"give its address with --temporal HOST:PORT"},
		{"no port", append([]string{"--temporal", "temporal.example", "--temporal-authorizer", "airlock"}, tls...),
			"want HOST:PORT"},
		{"a bad namespace", append([]string{"--temporal", "127.0.0.1:7233", "--namespace", "a/b", "--temporal-authorizer", "airlock"}, tls...),
			"--namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started := false
			start := func(context.Context, jobs.DevConfig) (jobs.DevServer, error) {
				started = true
				return nil, context.Canceled
			}
			dir := t.TempDir()
			var stderr bytes.Buffer
			env := &cli.Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &stderr, Dir: dir,
				Environ: []string{"HOME=" + dir}}
			args := append([]string{"--listen", "127.0.0.1:0", "--state", dir}, tt.args...)
			err := Server(start)(context.Background(), env, args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the refusal is more than one line: %q", err)
			}
			if started {
				t.Error("the embedded Temporal server was started")
			}
		})
	}
}
