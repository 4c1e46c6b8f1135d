package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/fit"
	"github.com/google/go-cmp/cmp"
)

func runFitCLI(t *testing.T, dir, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Dir: dir}
	code := Main(context.Background(), args, env)
	return code, out.String(), errb.String()
}

const fitDoc = "# Guide\n\nIntro sentence. More.\n\n## Install\n\nRun make. Then run it.\n\n## Configure\n\nEdit the file. Restart.\n"

func TestTokensCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "guide.md"), []byte(fitDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		out   string
	}{
		{"file", "", []string{"tokens", "guide.md"}, 0, "%d\n"},
		{"stdin dash", fitDoc, []string{"tokens", "-"}, 0, "%d\n"},
		{"stdin", fitDoc, []string{"tokens"}, 0, "%d\n"},
		{"missing file", "", []string{"tokens", "nope.md"}, 2, ""},
		{"two files", "", []string{"tokens", "a", "b"}, 2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runFitCLI(t, dir, c.stdin, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, c.code, errOut)
			}
			if c.out != "" {
				if want := strings.Replace(c.out, "%d", itoa(fit.Count(fitDoc)), 1); out != want {
					t.Errorf("got %q, want %q", out, want)
				}
			}
		})
	}
	code, out, _ := runFitCLI(t, dir, "", "tokens", "--json", "guide.md")
	var got tokensReport
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("tokens --json: exit %d, output %q", code, out)
	}
	info := fit.Describe(fitDoc, "guide.md")
	if want := (tokensReport{Count: info.Tokens, Weight: info.Weight, Kind: info.Kind, Size: info.Bytes, Lines: info.Lines}); got != want {
		t.Errorf("tokens --json = %+v, want %+v", got, want)
	}
	// A page of blanks: the count is the tokenizer's few tokens, the
	// weight charges it by its length.
	blank := "x" + strings.Repeat(" ", 4000) + "\n"
	code, out, _ = runFitCLI(t, dir, blank, "tokens", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("tokens --json of blanks: exit %d, output %q", code, out)
	}
	if got.Count != fit.Count(blank) || got.Weight != fit.Weigh(blank) || got.Weight < 500 || got.Count > 100 {
		t.Errorf("tokens --json of 4000 spaces = %+v, want a small count and a weight of at least 500", got)
	}
	code, out, _ = runFitCLI(t, dir, blank, "tokens")
	if want := itoa(fit.Count(blank)) + "\n"; code != 0 || out != want {
		t.Errorf("tokens of 4000 spaces = %q, want the count %q", out, want)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestFitCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "guide.md"), []byte(fitDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		req  fit.Request
	}{
		{"full", []string{"fit", "guide.md"}, fit.Request{Name: "guide.md"}},
		{"section", []string{"fit", "--view", "section", "--query", "Install", "guide.md"}, fit.Request{View: fit.Section, Query: "Install", Name: "guide.md"}},
		{"summary with budget", []string{"fit", "--budget", "60", "guide.md"}, fit.Request{Budget: 60, Name: "guide.md"}},
		{"stub with chars", []string{"fit", "--view", "stub", "--chars", "200", "guide.md"}, fit.Request{View: fit.Stub, Chars: 200, Name: "guide.md"}},
		{"name overrides", []string{"fit", "--name", "x.txt", "--view", "summary", "guide.md"}, fit.Request{View: fit.Summary, Name: "x.txt"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := fit.Fit(fitDoc, c.req)
			code, out, errOut := runFitCLI(t, dir, "", c.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if diff := cmp.Diff(want.Text, out); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(errOut, "fit: {") {
				t.Errorf("stderr %q, want the fit note", errOut)
			}
			args := append([]string{"fit", "--json"}, c.args[1:]...)
			code, out, errOut = runFitCLI(t, dir, "", args...)
			if code != 0 {
				t.Fatalf("--json: exit %d: %s", code, errOut)
			}
			var got struct {
				Content string   `json:"content"`
				Fit     fit.Note `json:"fit"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("--json output %q: %v", out, err)
			}
			if got.Content != want.Text || got.Fit != want.Note {
				t.Errorf("--json = %+v, want content %q and note %+v", got, want.Text, want.Note)
			}
		})
	}
	code, _, errOut := runFitCLI(t, dir, "", "fit", "--view", "everything", "guide.md")
	if code != 2 || !strings.Contains(errOut, "not a view") {
		t.Errorf("bad view: exit %d, stderr %q; want 2 and a usage error", code, errOut)
	}
	code, out, _ := runFitCLI(t, dir, fitDoc, "fit", "--view", "section", "--query", "Configure")
	if code != 0 || !strings.HasPrefix(out, "## Configure") {
		t.Errorf("from stdin: exit %d, output %q", code, out)
	}
}
