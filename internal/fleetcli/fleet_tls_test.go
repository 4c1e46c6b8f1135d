package fleetcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/cli"
)

// The server's enrolment token file carries the CA's pin: a file from
// before the pin keeps its token and gains the pin, a stale pin is
// replaced, and a file of another shape is refused rather than read.
func TestEnrollTokenFile(t *testing.T) {
	pin := "sha256:" + strings.Repeat("0a", 32)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, before, token string
		ok                  bool
	}{
		{"a file from before the pin", "0123456789abcdef0123\n", "0123456789abcdef0123", true},
		{"another pin (the CA was made again)", "0123456789abcdef0123 sha256:" + strings.Repeat("ff", 32) + "\n", "0123456789abcdef0123", true},
		{"the pin already", "0123456789abcdef0123 " + pin + "\n", "0123456789abcdef0123", true},
		{"no file", "", "", true},
		{"a short token", "short " + pin, "", false},
		{"three fields", "a b c", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if tc.before != "" {
				if err := os.WriteFile(path, []byte(tc.before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tok, err := enrollTokenFile(path, pin)
			if (err == nil) != tc.ok {
				t.Fatalf("got %q, %v; want ok=%v", tok, err, tc.ok)
			}
			if !tc.ok {
				return
			}
			if tc.token != "" && tok != tc.token || len(tok) < 16 {
				t.Fatalf("token %q, want %q", tok, tc.token)
			}
			env := &cli.Env{Environ: []string{"HOME=" + dir}}
			got, gotPin, err := readEnrollFile(env, path)
			if err != nil || got != tok || gotPin != pin {
				t.Fatalf("the node reads %q %q %v; want %q %q", got, gotPin, err, tok, pin)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", st.Mode().Perm())
			}
		})
	}
}
