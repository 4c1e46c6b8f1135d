package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runFilesCLI(t *testing.T, dir string, environ []string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Dir: dir,
		Environ: append([]string{"HOME=" + dir, "AIRLOCK_FILES=" + filepath.Join(dir, "store")}, environ...)}
	code := Main(context.Background(), args, env)
	return code, out.String(), errb.String()
}

// TestFilesCLI walks a shell session: put, get, ls, read-result from the
// same tree; the same ref from another tree; erase; holds.
func TestFilesCLI(t *testing.T) {
	dir := t.TempDir()
	var doc strings.Builder
	doc.WriteString("# Notes\n\nAll the notes.\n\n")
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&doc, "## Part %d\n\nPart %d text.\n\n", i, i)
	}
	writeFile(t, dir, "notes.md", doc.String())
	code, out, serr := runFilesCLI(t, dir, nil, "", "files", "put", "notes.md")
	if code != 0 || !strings.HasPrefix(out, "airlock-file:sha256:") {
		t.Fatalf("files put: exit %d, %q, %q", code, out, serr)
	}
	ref := strings.TrimSpace(out)
	for _, tc := range []struct {
		name      string
		stdin     string
		args      []string
		code      int
		out, serr string
	}{
		{"get", "", []string{"files", "get", ref}, 0, doc.String(), ""},
		{"put from standard input", "hello\n", []string{"files", "put", "-"}, 0, "airlock-file:sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03", ""},
		{"ls", "", []string{"files", "ls"}, 0, ref, ""},
		{"ls as JSON", "", []string{"files", "ls", "--json"}, 0, `"via":"stored"`, ""},
		{"read a section", "", []string{"read-result", ref, "--section", "Part 7"}, 0, "## Part 7\n\nPart 7 text.", `"view":"section"`},
		{"read a range as JSON", "", []string{"read-result", "--json", "--range", "1-3", ref}, 0, `"content":"# Notes\n\nAll the notes.\n"`, ""},
		{"read a stub", "", []string{"read-result", ref, "--view", "stub", "--budget", "300"}, 0, "Markdown document", `"view":"stub"`},
		{"another tree is not found", "", []string{"files", "get", "--tree", "job-9", ref}, 125, "", "not found"},
		{"read-result from another tree", "", []string{"read-result", ref, "--tree", "job-9"}, 125, "", "not found"},
		{"malformed ref", "", []string{"files", "get", "airlock-file:sha256:abc"}, 2, "", "want 64 hex digits"},
		{"bad range", "", []string{"read-result", ref, "--range", "5-1"}, 125, "", "is not lines such as"},
		{"missing file", "", []string{"files", "put", "nope.txt"}, 2, "", "nope.txt does not exist"},
		{"put needs a file", "", []string{"files", "put"}, 2, "", "wants [FLAGS] FILE|-, got 0 arguments"},
		{"hand to another tree", "", []string{"files", "hand", "--to", "job-9", ref}, 0, ref, ""},
		{"the other tree reads it now", "", []string{"files", "get", "--tree", "job-9", ref}, 0, "# Notes", ""},
		{"hand what the tree cannot read", "", []string{"files", "hand", "--tree", "job-8", "--to", "job-7", ref}, 125, "", "not ones this tree may read"},
		{"hold the tree", "", []string{"files", "hold", "case-1", "--reason", "audit"}, 0, "", ""},
		{"list holds", "", []string{"files", "hold", "--list"}, 0, "case-1", ""},
		{"erase under a hold", "", []string{"files", "erase", "--tree", userTree()}, 126, "", "legal hold \"case-1\""},
		{"release", "", []string{"files", "hold", "--release", "case-1"}, 0, "", ""},
		{"gc keeps fresh files", "", []string{"files", "gc", "--json"}, 0, `"removed":0`, ""},
		{"check", "", []string{"files", "check"}, 0, "2 files checked, 0 damaged", ""},
		{"erase needs one target", "", []string{"files", "erase"}, 2, "", "exactly one of"},
		{"erase the tree", "", []string{"files", "erase", "--tree", userTree()}, 0, "2 files erased", ""},
		{"gone after erasure", "", []string{"files", "get", ref}, 125, "", "not found"},
		{"help", "", []string{"files", "put", "--help"}, 0, "Usage: airlock files put", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, serr := runFilesCLI(t, dir, nil, tc.stdin, tc.args...)
			if code != tc.code {
				t.Errorf("got exit %d, want %d (stderr %q)", code, tc.code, serr)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("got stdout %q, want it to contain %q", head(out), tc.out)
			}
			if !strings.Contains(serr, tc.serr) {
				t.Errorf("got stderr %q, want it to contain %q", serr, tc.serr)
			}
		})
	}
}

func head(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

func userTree() string { return fmt.Sprintf("user-%d", os.Getuid()) }

func TestFilesCLISealed(t *testing.T) {
	dir := t.TempDir()
	key := "AIRLOCK_TEST_FILES_KEY=" + hex.EncodeToString(bytes.Repeat([]byte{5}, 32))
	sealed := []string{"AIRLOCK_FILES_KEY_ENV=AIRLOCK_TEST_FILES_KEY", key}
	code, out, serr := runFilesCLI(t, dir, sealed, "SECRET-MARKER text", "files", "put", "-")
	if code != 0 {
		t.Fatalf("put: %d %q", code, serr)
	}
	ref := strings.TrimSpace(out)
	if code, out, _ := runFilesCLI(t, dir, sealed, "", "files", "get", ref); code != 0 || out != "SECRET-MARKER text" {
		t.Errorf("get with the key: exit %d, %q", code, out)
	}
	code, _, serr = runFilesCLI(t, dir, nil, "", "files", "get", ref)
	if code != 125 || !strings.Contains(serr, "no key is configured") {
		t.Errorf("get without the key: exit %d, %q; want a missing-key error", code, serr)
	}
	wrong := []string{"AIRLOCK_FILES_KEY_ENV=K", "K=" + hex.EncodeToString(bytes.Repeat([]byte{6}, 32))}
	code, _, serr = runFilesCLI(t, dir, wrong, "", "files", "get", ref)
	if code != 125 || !strings.Contains(serr, "not the key") {
		t.Errorf("get with a wrong key: exit %d, %q; want a wrong-key error", code, serr)
	}
	filepath.Walk(filepath.Join(dir, "store"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("SECRET-MARKER")) {
				t.Errorf("%s holds the plaintext", p)
			}
		}
		return nil
	})
}
