package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestSelftestBadInput: every mistake is one line naming what is wrong, and
// nothing is attacked.
func TestSelftestBadInput(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "cases.json")
	os.WriteFile(broken, []byte(`{"rows":[{"id":"x","mechanism":"firejail","platform":"linux/amd64","status":"run","reason":"r"}],"attempts":[]}`), 0o644)
	type selftestCase struct {
		name string
		exe  string
		args []string
		code int
		want string
	}
	cases := []selftestCase{
		{"unknown attempt", "/bin/false", []string{"--only", "read-absolute,no-such-attempt"}, 2, `no attempt "no-such-attempt"`},
		{"stray argument", "/bin/false", []string{"now"}, 2, `unexpected argument "now"`},
		{"missing case file", "/bin/false", []string{"--cases", "/nonexistent/cases.json"}, 2, "--cases"},
		{"broken case file", "/bin/false", []string{"--cases", broken}, 125, `rows[0] (id "x"): unknown mechanism "firejail"`},
	}
	if runtime.GOOS == "linux" {
		cases = append(cases, selftestCase{"a binary without the attack tool", "/bin/false", []string{"--only", "read-absolute"}, 125, "does not run the attack tool"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Exe: c.exe}
			code := Main(context.Background(), append([]string{"sandbox", "selftest"}, c.args...), env)
			if code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.code, errb.String())
			}
			if !strings.Contains(errb.String(), c.want) {
				t.Errorf("stderr %q lacks %q", errb.String(), c.want)
			}
			if out.Len() != 0 {
				t.Errorf("printed a report: %q", out.String())
			}
		})
	}
}
