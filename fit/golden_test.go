package fit

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenCase is one fitted answer kept as a golden file: the text, a line
// "---- fit ----" and the note as JSON.
type goldenCase struct {
	name string
	doc  string // a file of testdata/docs, or "" for text
	text string
	req  Request
}

func goldenCases() []goldenCase {
	return []goldenCase{
		// Markdown: every view, a heading, a line range, a section too big
		// for the budget, a query that names nothing.
		{name: "markdown-full", doc: "guide.md"},
		{name: "markdown-query-full-first", doc: "guide.md", req: Request{Query: "Configure"}},
		{name: "markdown-section-heading", doc: "guide.md", req: Request{View: Section, Query: "Configure"}},
		{name: "markdown-query-auto-section", doc: "guide.md", req: Request{Query: "Configure", Budget: 200}},
		{name: "markdown-section-slug", doc: "guide.md", req: Request{Query: "from-source", View: Section}},
		{name: "markdown-section-lines", doc: "guide.md", req: Request{View: Section, Query: "20-27"}},
		{name: "markdown-section-lines-cut", doc: "guide.md", req: Request{Query: "1-60", View: Section, Budget: 120}},
		{name: "markdown-section-too-big", doc: "guide.md", req: Request{Query: "Operate", View: Section, Budget: 45}},
		{name: "markdown-section-too-big-summary", doc: "guide.md", req: Request{Query: "Configure", View: Section, Budget: 110}},
		{name: "markdown-summary", doc: "guide.md", req: Request{View: Summary}},
		{name: "markdown-stub", doc: "guide.md", req: Request{View: Stub}},
		{name: "markdown-auto-small", doc: "guide.md", req: Request{Budget: 250}},
		{name: "markdown-auto-tiny", doc: "guide.md", req: Request{Budget: 120}},
		{name: "markdown-query-names-nothing", doc: "guide.md", req: Request{Query: "Kubernetes", Budget: 200}},
		{name: "markdown-query-names-nothing-full", doc: "guide.md", req: Request{Query: "Kubernetes"}},
		{name: "markdown-chars-bound", doc: "guide.md", req: Request{Chars: 600}},
		// Code in four languages: definitions by name, methods, summary, stub.
		{name: "go-section-func", doc: "server.go", req: Request{View: Section, Query: "New"}},
		{name: "go-section-method", doc: "server.go", req: Request{View: Section, Query: "Server.Submit"}},
		{name: "go-section-type", doc: "server.go", req: Request{View: Section, Query: "type Job"}},
		{name: "go-section-method-pointer", doc: "server.go", req: Request{View: Section, Query: "(*Server).Close"}},
		{name: "go-summary", doc: "server.go", req: Request{View: Summary}},
		{name: "go-stub", doc: "server.go", req: Request{View: Stub}},
		{name: "python-section-class", doc: "tasks.py", req: Request{Query: "Scheduler", View: Section}},
		{name: "python-section-method", doc: "tasks.py", req: Request{View: Section, Query: "drain"}},
		{name: "python-summary", doc: "tasks.py", req: Request{View: Summary}},
		{name: "ts-section-function", doc: "widget.ts", req: Request{View: Section, Query: "formatValue"}},
		{name: "ts-section-arrow", doc: "widget.ts", req: Request{View: Section, Query: "clamp"}},
		{name: "ts-section-interface", doc: "widget.ts", req: Request{View: Section, Query: "WidgetOptions"}},
		{name: "ts-stub", doc: "widget.ts", req: Request{View: Stub}},
		{name: "rust-section-impl-method", doc: "lib.rs", req: Request{View: Section, Query: "push"}},
		{name: "rust-section-struct", doc: "lib.rs", req: Request{Query: "Ring", View: Section}},
		{name: "rust-summary", doc: "lib.rs", req: Request{View: Summary}},
		// Diffs: a path, a hunk, a directory, a line range.
		{name: "diff-section-path", doc: "change.diff", req: Request{View: Section, Query: "server/server_test.go"}},
		{name: "diff-section-hunk", doc: "change.diff", req: Request{View: Section, Query: "server/server.go#2"}},
		{name: "diff-section-hunk-suffix", doc: "change.diff", req: Request{View: Section, Query: "server.go#3"}},
		{name: "diff-section-a-side", doc: "change.diff", req: Request{View: Section, Query: "a/docs/guide.md"}},
		{name: "diff-section-dir", doc: "change.diff", req: Request{Query: "server/", View: Section}},
		{name: "diff-section-lines", doc: "change.diff", req: Request{View: Section, Query: "5-12"}},
		{name: "diff-summary", doc: "change.diff", req: Request{View: Summary}},
		{name: "diff-stub", doc: "change.diff", req: Request{View: Stub}},
		{name: "diff-hunk-names-nothing", doc: "change.diff", req: Request{Query: "server/server.go#9", View: Section}},
		// JSON: a key, an item, lines of the indented form, views.
		{name: "json-full", doc: "config.json"},
		{name: "json-section-key", doc: "config.json", req: Request{View: Section, Query: "database"}},
		{name: "json-section-lines", doc: "config.json", req: Request{View: Section, Query: "20-30"}},
		{name: "json-summary", doc: "config.json", req: Request{View: Summary}},
		{name: "json-stub", doc: "config.json", req: Request{View: Stub}},
		{name: "json-array-item", doc: "items.json", req: Request{View: Section, Query: "[2]"}},
		{name: "json-array-summary", doc: "items.json", req: Request{View: Summary}},
		// File lists: ls -l and find output.
		{name: "filelist-ls-section-path", doc: "listing.txt", req: Request{View: Section, Query: "go.mod"}},
		{name: "filelist-ls-stub", doc: "listing.txt", req: Request{View: Stub}},
		{name: "filelist-ls-summary", doc: "listing.txt", req: Request{View: Summary}},
		{name: "filelist-find-section-dir", doc: "tree.txt", req: Request{View: Section, Query: "server/store"}},
		{name: "filelist-find-stub", doc: "tree.txt", req: Request{View: Stub}},
		// Plain text: paragraphs, runs of log lines, line ranges.
		{name: "text-notes-summary", doc: "notes.txt", req: Request{View: Summary}},
		{name: "text-notes-stub", doc: "notes.txt", req: Request{View: Stub}},
		{name: "text-log-section-lines", doc: "app.log", req: Request{View: Section, Query: "9-11"}},
		{name: "text-log-summary", doc: "app.log", req: Request{View: Summary}},
		{name: "text-section-without-query", doc: "notes.txt", req: Request{View: Section}},
		// Bad input.
		{name: "bad-empty", text: ""},
		{name: "bad-empty-stub", text: "", req: Request{View: Stub, Budget: 10}},
		{name: "bad-binary", text: "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00\x01\x00\x00\x00", req: Request{Budget: 100}},
		{name: "bad-invalid-utf8", text: "caf\xe9 au lait\nsecond line \xff\xfe\n", req: Request{View: Full}},
		{name: "bad-negative-budget", doc: "notes.txt", req: Request{Budget: -5}},
		{name: "bad-unknown-view", doc: "notes.txt", req: Request{View: "everything", Budget: 60}},
		{name: "bad-budget-below-floor", doc: "guide.md", req: Request{Budget: 5}},
	}
}

func TestGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			text := c.text
			if c.doc != "" {
				b, err := os.ReadFile(filepath.Join("testdata/docs", c.doc))
				if err != nil {
					t.Fatal(err)
				}
				text = string(b)
				if c.req.Name == "" {
					c.req.Name = c.doc
				}
			}
			res := Fit(text, c.req)
			var nb strings.Builder
			enc := json.NewEncoder(&nb)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(res.Note); err != nil {
				t.Fatal(err)
			}
			note := strings.TrimSuffix(nb.String(), "\n")
			got := res.Text + "\n---- fit (" + string(res.Kind) + ") ----\n" + string(note) + "\n"
			path := filepath.Join("testdata/golden", c.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./fit -run Golden -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("Fit(%s, %+v) differs from %s (-want +got):\n%s", c.doc, c.req, path, diff)
			}
			checkBounds(t, text, c.req, res)
		})
	}
}

// checkBounds asserts what every answer keeps: the caps, the caller's
// character bound, CharsPerToken per token of budget, and the budget itself
// when it is at least the floor.
func checkBounds(t *testing.T, text string, r Request, res Result) {
	t.Helper()
	if n := len(res.Text); n > CapChars {
		t.Errorf("answer is %d characters, over the cap %d", n, CapChars)
	}
	if res.Note.Tokens > CapTokens {
		t.Errorf("answer is %d tokens, over the cap %d", res.Note.Tokens, CapTokens)
	}
	if r.Chars > 0 && len(res.Text) > r.Chars {
		t.Errorf("answer is %d characters, over the caller's bound %d", len(res.Text), r.Chars)
	}
	if r.Budget > 0 && len(res.Text) > r.Budget*CharsPerToken {
		t.Errorf("answer is %d characters, over %d per token of a budget of %d", len(res.Text), CharsPerToken, r.Budget)
	}
	if r.Budget > 0 && r.Budget >= floorTokens(text, r) && res.Note.Tokens > r.Budget {
		t.Errorf("answer is %d tokens, over the budget %d (floor %d)", res.Note.Tokens, r.Budget, floorTokens(text, r))
	}
	if res.Note.Tokens != Weigh(res.Text) {
		t.Errorf("note says %d tokens, the text weighs %d", res.Note.Tokens, Weigh(res.Text))
	}
	if valid := strings.ToValidUTF8(text, "\uFFFD"); res.Note.Size != Weigh(valid) {
		t.Errorf("note says the whole is %d tokens, it weighs %d", res.Note.Size, Weigh(valid))
	}
	if !res.Note.View.Valid() {
		t.Errorf("note's view %q is not a view", res.Note.View)
	}
	if res.Note.View != Full && strings.TrimSpace(res.Note.Omitted) == "" && text != "" {
		t.Errorf("a %s answer without an omitted sentence", res.Note.View)
	}
}

// floorTokens is the weight of the smallest answer Fit gives for text.
func floorTokens(text string, r Request) int {
	return Weigh(floorOf(text, r))
}
