package fleetcli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/escape"
	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/jobs/pki"
)

// TestAttestRowsAreAttempts: every row a node attests with is an attempt
// of the escape matrix on this platform, so a report can hold it.
func TestAttestRowsAreAttempts(t *testing.T) {
	ids := escape.AttemptIDs()
	cases, err := escape.Parse(escape.CaseFile)
	if err != nil {
		t.Fatal(err)
	}
	inFile := map[string]bool{}
	for _, a := range cases.Attempts {
		inFile[a.ID] = true
	}
	for _, r := range pki.AttestRows {
		if _, ok := ids[r]; !ok || !inFile[r] {
			t.Errorf("attest row %q is not an attempt of the escape matrix here (code %v, case file %v)", r, ok, inFile[r])
		}
	}
}

// TestNodeReadsNoOperatorToken: airlock node neither needs nor reads the
// operator's token: --token-file naming no file only draws a warning, and
// without it (and no local server's token) the node goes on to enrol,
// failing here only because no server listens.
func TestNodeReadsNoOperatorToken(t *testing.T) {
	dir := t.TempDir()
	enroll := filepath.Join(dir, "enroll-token")
	if err := os.WriteFile(enroll, []byte("fedcba9876543210fedcba9876543210\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		warn bool
	}{
		{"--token-file naming no file", []string{"--token-file", filepath.Join(dir, "no-such-token")}, true},
		{"no --token-file", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			env := &cli.Env{Node: Node, Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &stderr, Dir: dir,
				Environ: []string{"HOME=" + dir, "XDG_STATE_HOME=" + filepath.Join(dir, "state"), "PATH=/usr/bin:/bin"}}
			args := append([]string{"node", "--server", "http://127.0.0.1:1", "--enroll-token-file", enroll,
				"--sandbox", "off", "--id", "n1", "--state", filepath.Join(dir, "node-"+strconv.Itoa(len(tc.args)))}, tc.args...)
			code := cli.Main(context.Background(), args, env)
			out := stderr.String()
			if code == 0 || !strings.Contains(out, "/v1/nodes/enroll") {
				t.Fatalf("exit %d: %s; want the enrolment to fail for want of a server", code, out)
			}
			if strings.Contains(out, "no-such-token") || strings.Contains(out, "set --token-file") {
				t.Errorf("the node read an operator's token file: %s", out)
			}
			if got := strings.Contains(out, "--token-file is unused"); got != tc.warn {
				t.Errorf("warning shown %v, want %v: %s", got, tc.warn, out)
			}
		})
	}
}
