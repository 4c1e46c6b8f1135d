package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs airlock in-process in dir and returns its exit code and
// output.
func runPolicyCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: dir,
		Environ: []string{"HOME=/home/nobody"}}
	code := Main(context.Background(), args, env)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyCheck(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "good.yaml", "shell:\n  allow: [git, python3]\nisolation: none\n")
	writeFile(t, dir, "bad.yaml", "fs:\n  read: [\".\"]\n  writ: [x]\n")
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"valid", []string{"policy", "check", "good.yaml"}, 0, "good.yaml: valid\n", "isolation: none runs every command unconfined"},
		{"valid warns about interpreters", []string{"policy", "check", "good.yaml"}, 0, "", `"python3", an interpreter`},
		{"invalid", []string{"policy", "check", "bad.yaml"}, 1, "", "airlock: policy check: bad.yaml:3:3: fs.writ: unknown field"},
		{"missing is a usage mistake", []string{"policy", "check", "none.yaml"}, 2, "", "airlock: policy check: none.yaml: no such file"},
		{"no file", []string{"policy", "check"}, 2, "", "one FILE is required"},
		{"json invalid", []string{"policy", "check", "--json", "bad.yaml"}, 1, `"valid":false,"error":"bad.yaml:3:3: fs.writ: unknown field`, ""},
		{"help", []string{"policy", "check", "--help"}, 0, "Usage: airlock policy check", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runPolicyCLI(t, dir, tc.args...)
			if code != tc.code {
				t.Errorf("got exit %d, want %d (stderr %q)", code, tc.code, errs)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("got stdout %q, want it to contain %q", out, tc.stdout)
			}
			if !strings.Contains(errs, tc.stderr) {
				t.Errorf("got stderr %q, want it to contain %q", errs, tc.stderr)
			}
		})
	}
}

func TestPolicyExplain(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "airlock.yaml", "shell:\n  allow: [git, ls]\n  args:\n    git:\n      deny: [\"push --force\"]\n")
	writeFile(t, dir, "bad.yaml", "shell:\n  alow: [git]\n")
	empty := t.TempDir()
	tests := []struct {
		name   string
		dir    string
		args   []string
		code   int
		stdout string
	}{
		{"allowed", dir, []string{"policy", "explain", "--", "git", "status"}, 0, "=> ALLOW (shell.allow[0])"},
		{"chained", dir, []string{"policy", "explain", "--shell", "git status && curl x | sh"}, 0,
			`deny     curl x      shell.allow     the program "curl" is not allowed here`},
		{"flag spelling", dir, []string{"policy", "explain", "--shell", "git push -f origin"}, 0, "=> DENY (shell.args.git.deny[0])"},
		{"wrapper argv", dir, []string{"policy", "explain", "--", "sh", "-c", "ls; curl x"}, 0, "curl x  (via sh)"},
		{"workspace catastrophic", empty, []string{"policy", "explain", "--shell", "rm -rf /"}, 0, "=> ESCALATE (builtin.rm-root)"},
		{"workspace observe write", empty, []string{"policy", "explain", "--shell", "echo x > f"}, 0, "=> DENY (mode)"},
		{"workspace fix write", empty, []string{"policy", "explain", "--mode", "fix", "--shell", "echo x > f"}, 0, "=> ALLOW"},
		{"other policy", empty, []string{"policy", "explain", "--policy", filepath.Join(dir, "airlock.yaml"), "--", "curl", "x"}, 0, "=> DENY (shell.allow)"},
		{"parse error", dir, []string{"policy", "explain", "--shell", "ls &&"}, 0, "=> ESCALATE (shell.parse)"},
		{"both", dir, []string{"policy", "explain", "--shell", "ls", "--", "ls"}, 2, ""},
		{"neither", dir, []string{"policy", "explain"}, 2, ""},
		{"bad mode", dir, []string{"policy", "explain", "--mode", "write", "--", "ls"}, 2, ""},
		{"missing policy is a usage mistake", dir, []string{"policy", "explain", "--policy", "nope.yaml", "--", "ls"}, 2, ""},
		{"invalid policy", dir, []string{"policy", "explain", "--policy", "bad.yaml", "--", "ls"}, 125, ""},
		{"workdir", empty, []string{"policy", "explain", "--workdir", dir, "--", "git", "status"}, 0, "=> ALLOW (shell.allow[0])"},
		{"relative workdir", filepath.Dir(dir), []string{"policy", "explain", "--workdir", filepath.Base(dir), "--", "git", "push", "-f"}, 0, "=> DENY (shell.args.git.deny[0])"},
		{"missing workdir is a usage mistake", dir, []string{"policy", "explain", "--workdir", "nope", "--", "ls"}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runPolicyCLI(t, tc.dir, tc.args...)
			if code != tc.code {
				t.Errorf("got exit %d, want %d (stderr %q)", code, tc.code, errs)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("got stdout:\n%s\nwant it to contain %q", out, tc.stdout)
			}
		})
	}
}

func TestPolicyExplainJSON(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runPolicyCLI(t, dir, "policy", "explain", "--json", "--shell", "ls | curl x > /etc/passwd")
	if code != 0 {
		t.Fatalf("got exit %d, want 0 (stderr %q)", code, errs)
	}
	var ex struct {
		Policy   string
		Overall  struct{ Verdict, Rule, Reason, Category string }
		Commands []struct {
			Argv     []string
			Decision struct{ Verdict, Rule string }
		}
	}
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if ex.Overall.Verdict != "deny" || ex.Overall.Rule != "mode" || ex.Overall.Category != "fs" {
		t.Errorf("got overall %+v, want deny by mode in fs", ex.Overall)
	}
	if strings.Contains(ex.Overall.Reason, "mode\"") || ex.Overall.Reason == "" {
		t.Errorf("got reason %q, want a sentence that does not quote the rule", ex.Overall.Reason)
	}
	if len(ex.Commands) != 2 || ex.Commands[0].Decision.Verdict != "allow" {
		t.Errorf("got commands %+v, want ls allowed and curl refused", ex.Commands)
	}
	if !strings.Contains(ex.Policy, "workspace") {
		t.Errorf("got policy %q, want the workspace profile", ex.Policy)
	}
}

func TestPolicyShow(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "airlock.yaml", "limits:\n  memory: 512M\n")
	code, out, errs := runPolicyCLI(t, dir, "policy", "show")
	if code != 0 {
		t.Fatalf("got exit %d, want 0 (stderr %q)", code, errs)
	}
	if !strings.Contains(out, `"memory": "512M"`) || !strings.Contains(out, `"read": [`) {
		t.Errorf("got %s, want the policy with defaults filled in", out)
	}
}

// TestPolicyShowWorkdir: show reads airlock.yaml in --workdir, as run does.
func TestPolicyShowWorkdir(t *testing.T) {
	proj := t.TempDir()
	writeFile(t, proj, "airlock.yaml", "limits:\n  memory: 256M\n")
	code, out, errs := runPolicyCLI(t, t.TempDir(), "policy", "show", "--workdir", proj)
	if code != 0 || !strings.Contains(out, `"memory": "256M"`) {
		t.Errorf("got exit %d and %s (stderr %q), want the policy of --workdir", code, out, errs)
	}
	if code, _, errs := runPolicyCLI(t, proj, "policy", "show", "--workdir", "nope"); code != 2 || !strings.HasPrefix(errs, "airlock: policy show: --workdir: ") {
		t.Errorf("missing --workdir: got exit %d, stderr %q; want 2 and one line naming --workdir", code, errs)
	}
}
