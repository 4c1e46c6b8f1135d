package approvals

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// forgeries are calls an agent might shape to make the prompt lie: a fake
// line that looks like airlock's own, escape sequences that erase or move
// the cursor, a carriage return that overwrites the line, right-to-left
// overrides and look-alike letters.
var forgeries = []struct {
	name string
	req  Request
}{
	{"newline and a fake prompt", Request{Kind: "argv", Argv: []string{"echo", "hi\n  call:     ls\n  [o]nce, [d]eny (denied in 30s)? "}, Reason: "r"}},
	{"escape sequences", Request{Kind: "argv", Argv: []string{"rm", "-rf", "/\x1b[2K\x1b[1A\x1b[0Gls"}, Reason: "r"}},
	{"carriage return", Request{Kind: "shell", Command: "rm -rf ~\rls -l    ", Reason: "r"}},
	{"bidi override", Request{Kind: "argv", Argv: []string{"cat", "\u202etxt.hsab"}, Reason: "r"}},
	{"look-alike letters", Request{Kind: "argv", Argv: []string{"g\u0456t", "push"}, Reason: "r"}},
	{"tool arguments", Request{Kind: "tool", Tool: "fs.write\n  why:", Args: map[string]any{"path\x07": "/etc/passwd\x00", "n": 2.0, "list": []any{"a\u200bb", nil, true}}, Reason: "writes\x1b]0;title\x07 a file"}},
}

func TestPromptCannotBeForged(t *testing.T) {
	created := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var golden strings.Builder
	for _, f := range forgeries {
		t.Run(f.name, func(t *testing.T) {
			req := f.req
			req.ID = "4242-0badc0de"
			text := promptText(Pending{Request: req, Pid: 4242, Created: created, Deadline: created.Add(30 * time.Second)})
			for _, r := range text {
				if (r < 0x20 && r != '\n') || r > 0x7e {
					t.Errorf("prompt holds %U", r)
				}
			}
			// Every line is airlock's: the header, or an indented label.
			lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(text, "\n"), "? "), "\n")
			labels := []string{"  call:", "  from:", "  in:", "  why:", "  rule:", "  always saves:", "  (allow always", "  [o]nce"}
			for i, l := range lines {
				if i == 0 {
					continue
				}
				ok := false
				for _, p := range labels {
					ok = ok || strings.HasPrefix(l, p)
				}
				if !ok {
					t.Errorf("line %q is not one of the prompt's own", l)
				}
			}
			if n := strings.Count(text, "\n  [o]nce"); n != 1 {
				t.Errorf("the choice line starts %d lines, want one", n)
			}
			golden.WriteString("== " + f.name + "\n" + text + "\n")
		})
	}
	path := filepath.Join("testdata", "prompts.golden")
	if *update {
		if err := os.WriteFile(path, []byte(golden.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), golden.String()); diff != "" {
		t.Errorf("prompts (-golden +got):\n%s", diff)
	}
}

func TestShow(t *testing.T) {
	tests := []struct{ in, want string }{
		{"git", "git"},
		{"--force-with-lease=main", "--force-with-lease=main"},
		{"", `""`},
		{"a b", `"a b"`},
		{"x\ny", `"x\ny"`},
		{"\x1b[2K", `"\x1b[2K"`},
		{"caf\u00e9", `"caf\u00e9"`},
		{"\xff", `"\xff"`},
		{"$(id)", `"$(id)"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := Show(tc.in); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
