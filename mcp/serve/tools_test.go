package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
)

const testPolicy = `
shell:
  allow: [echo, sh, cat, sleep, "true", "false", rm, head, tr]
  args:
    sh:
      deny: ["-c *forbidden*"]
    echo:
      escalate: ["please-ask*"]
fs:
  read: [.]
  write: [.]
limits:
  wall: 30s
escalation:
  timeout: 1s
`

func setupWork(work string) {
	os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hello\nworld\n"), 0o644)
	os.MkdirAll(filepath.Join(work, "sub"), 0o755)
	os.WriteFile(filepath.Join(work, "sub", "deep.go"), []byte("package sub\n\nfunc Hello() {}\n"), 0o644)
}

// want is what a call must give: a denial code and category, or a text
// that holds every part of contains (and, with isError, a failed call).
type want struct {
	denial, category string
	contains         []string
	isError          bool
}

func check(t *testing.T, f *fixture, tool string, args map[string]any, w want) string {
	t.Helper()
	text, res, err := f.call(tool, args)
	if w.denial != "" {
		d, ok := denialOf(err)
		if !ok {
			t.Fatalf("got result %q, err %v; want denial %s", text, err, w.denial)
		}
		if d.Code != w.denial || d.Category != w.category || d.Reason == "" {
			t.Fatalf("got denial %+v, want code %s category %s with a reason", d, w.denial, w.category)
		}
		return ""
	}
	if err != nil {
		t.Fatalf("got error %v, want a result", err)
	}
	if res.IsError != w.isError {
		t.Errorf("got isError %v, want %v (text %q)", res.IsError, w.isError, text)
	}
	for _, c := range w.contains {
		if !strings.Contains(text, c) {
			t.Errorf("got text %q, want it to contain %q", text, c)
		}
	}
	return text
}

func TestToolsFixMode(t *testing.T) {
	f := newFixture(t, testPolicy, "fix", setupWork, nil)
	os.WriteFile(filepath.Join(f.Outside, "secret"), []byte("s3cret\n"), 0o644)
	outside := filepath.Join(f.Outside, "secret")
	tests := []struct {
		name string
		tool string
		args map[string]any
		want want
	}{
		{"exec argv allowed", "exec", map[string]any{"argv": []string{"echo", "hi", "there"}}, want{contains: []string{"hi there\n", "[exit code 0]"}}},
		{"exec exit status", "exec", map[string]any{"argv": []string{"false"}}, want{contains: []string{"[exit code 1]"}, isError: true}},
		{"exec stderr kept apart", "exec", map[string]any{"command": "echo out; echo err >&2"}, want{contains: []string{"out\n[stderr]\nerr\n"}}},
		{"exec program refused", "exec", map[string]any{"argv": []string{"curl", "http://127.0.0.1:9/"}}, want{denial: errs.CodePolicyDenied, category: "shell"}},
		{"exec argument refused", "exec", map[string]any{"argv": []string{"sh", "-c", "echo forbidden"}}, want{denial: errs.CodePolicyDenied, category: "shell"}},
		{"exec shell string refused per command", "exec", map[string]any{"command": "echo a; curl http://127.0.0.1:9/"}, want{denial: errs.CodePolicyDenied, category: "shell"}},
		{"exec escalated, nobody answers", "exec", map[string]any{"argv": []string{"rm", "-rf", "/"}}, want{denial: errs.CodeEscalationTimeout, category: "shell"}},
		{"exec timeout ends it", "exec", map[string]any{"argv": []string{"sleep", "30"}, "timeout": 1}, want{contains: []string{"[ended by the time limit]"}, isError: true}},
		{"exec cannot read outside the box", "exec", map[string]any{"argv": []string{"cat", outside}}, want{isError: true, contains: []string{"[exit code 1]"}}},
		{"exec bad arguments", "exec", map[string]any{"argv": []string{"true"}, "command": "true"}, want{isError: true, contains: []string{"not both"}}},
		{"exec unknown argument", "exec", map[string]any{"argv": []string{"true"}, "cwd": "/"}, want{isError: true, contains: []string{"cwd"}}},
		{"read_file", "read_file", map[string]any{"path": "hello.txt"}, want{contains: []string{"hello\nworld\n"}}},
		{"read_file absolute inside", "read_file", map[string]any{"path": filepath.Join(f.Work, "sub/deep.go")}, want{contains: []string{"func Hello"}}},
		{"read_file outside refused", "read_file", map[string]any{"path": "../outside/secret"}, want{denial: errs.CodePolicyDenied, category: "fs"}},
		{"read_file missing", "read_file", map[string]any{"path": "nope.txt"}, want{isError: true, contains: []string{"nope.txt"}}},
		{"read_file no path", "read_file", map[string]any{}, want{isError: true, contains: []string{"path is required"}}},
		{"write_file", "write_file", map[string]any{"path": "new/made.txt", "content": "made\n"}, want{contains: []string{"wrote 5 bytes to new/made.txt"}}},
		{"write_file outside refused", "write_file", map[string]any{"path": filepath.Join(f.Outside, "planted"), "content": "x"}, want{denial: errs.CodePolicyDenied, category: "fs"}},
		{"write_file policy file refused", "write_file", map[string]any{"path": "airlock.yaml", "content": "shell: {}\n"}, want{denial: errs.CodePolicyDenied, category: "fs"}},
		{"write_file git hook escalates", "write_file", map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}, want{denial: errs.CodeEscalationTimeout, category: "fs"}},
		{"list_dir", "list_dir", map[string]any{"path": "."}, want{contains: []string{"hello.txt\t12 bytes\n", "sub/\n"}}},
		{"list_dir default", "list_dir", map[string]any{}, want{contains: []string{"sub/\n"}}},
		{"list_dir of a file", "list_dir", map[string]any{"path": "hello.txt"}, want{isError: true, contains: []string{"not a directory"}}},
		{"list_dir outside refused", "list_dir", map[string]any{"path": f.Outside}, want{denial: errs.CodePolicyDenied, category: "fs"}},
		{"search", "search", map[string]any{"pattern": "func [A-Z]"}, want{contains: []string{"sub/deep.go:3:func Hello() {}"}}},
		{"search in a path", "search", map[string]any{"pattern": "wor", "path": "hello.txt"}, want{contains: []string{"hello.txt:2:world"}}},
		{"search no match", "search", map[string]any{"pattern": "zzzz"}, want{contains: []string{"no matches"}}},
		{"search outside refused", "search", map[string]any{"pattern": "s3cret", "path": f.Outside}, want{denial: errs.CodePolicyDenied, category: "fs"}},
		{"read_result unknown ref", "read_result", map[string]any{"ref": "airlock-file:sha256:" + strings.Repeat("ab", 32)}, want{isError: true, contains: []string{"not found"}}},
		{"bad view", "read_file", map[string]any{"path": "hello.txt", "view": "everything"}, want{isError: true, contains: []string{"view"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, f, tt.tool, tt.args, tt.want) })
	}
	if b, err := os.ReadFile(filepath.Join(f.Work, "new/made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("write_file: got %q, %v on disk, want %q", b, err, "made\n")
	}
	for _, p := range []string{filepath.Join(f.Outside, "planted"), filepath.Join(f.Work, ".git/hooks/pre-commit")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists after a refused write", p)
		}
	}
}

func TestToolsObserveMode(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", setupWork, nil)
	check(t, f, "read_file", map[string]any{"path": "hello.txt"}, want{contains: []string{"hello"}})
	check(t, f, "write_file", map[string]any{"path": "hello.txt", "content": "changed"}, want{denial: errs.CodePolicyDenied, category: "fs"})
	// A shell string's redirect is a write, decided as one.
	check(t, f, "exec", map[string]any{"command": "echo changed > hello.txt"}, want{denial: errs.CodePolicyDenied, category: "fs"})
	if b, _ := os.ReadFile(filepath.Join(f.Work, "hello.txt")); string(b) != "hello\nworld\n" {
		t.Errorf("hello.txt is %q after observe-mode calls, want it unchanged", b)
	}
}

func TestPolicyToolsAndRawShell(t *testing.T) {
	f := newFixture(t, `
shell:
  allow: [echo]
  raw: false
fs:
  read: [.]
tools:
  search: false
  list_dir: true
`, "observe", setupWork, nil)
	check(t, f, "exec", map[string]any{"command": "echo hi"}, want{denial: errs.CodePolicyDenied, category: "shell"})
	check(t, f, "exec", map[string]any{"argv": []string{"echo", "hi"}}, want{contains: []string{"hi\n"}})
	check(t, f, "search", map[string]any{"pattern": "hello"}, want{denial: errs.CodePolicyDenied, category: "tools"})
	check(t, f, "list_dir", map[string]any{}, want{contains: []string{"hello.txt"}})
}
