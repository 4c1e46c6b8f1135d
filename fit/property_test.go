package fit

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// docs returns the texts of testdata/docs by name.
func docs(tb testing.TB) map[string]string {
	tb.Helper()
	files, err := filepath.Glob("testdata/docs/*")
	if err != nil || len(files) == 0 {
		tb.Fatalf("testdata/docs: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// queriesFor are queries of every form, some naming nothing.
var queriesFor = map[string][]string{
	"guide.md":    {"", "Configure", "from-source", "20-27", "Kubernetes"},
	"server.go":   {"", "New", "Server.Submit", "30-", "nothing"},
	"tasks.py":    {"", "Scheduler", "drain", "1-5"},
	"widget.ts":   {"", "Widget", "clamp", "[3]"},
	"lib.rs":      {"", "push", "Ring", "Display"},
	"change.diff": {"", "server/server.go", "server/server.go#2", "docs/", "x.go#1", "40-"},
	"config.json": {"", "database", "queues", "[0]", "10-20"},
	"items.json":  {"", "[2]", "[9]", "3-4"},
	"listing.txt": {"", "go.mod", "server", "2-4"},
	"tree.txt":    {"", "server/store", "README.md"},
	"app.log":     {"", "9-11", "100-200"},
	"notes.txt":   {"", "3-4", "heading"},
}

var allViews = []View{"", Full, Section, Summary, Stub}

// TestSmallerBudgetNeverBiggerView walks every document, view and query
// down from a large budget to 1: the view never grows as the budget
// shrinks, never exceeds the one asked for, and every answer keeps its
// bounds.
func TestSmallerBudgetNeverBiggerView(t *testing.T) {
	budgets := []int{60000, 5000, 2000, 1000, 600, 400, 300, 250, 200, 150, 120, 100, 80, 60, 40, 30, 20, 10, 5, 1}
	for name, text := range docs(t) {
		for _, q := range queriesFor[name] {
			for _, v := range allViews {
				prev := 99
				for _, b := range budgets {
					r := Request{View: v, Budget: b, Query: q, Name: name}
					res := Fit(text, r)
					checkBounds(t, text, r, res)
					rank := res.Note.View.rank()
					if rank > prev {
						t.Errorf("%s view %q query %q: budget %d gave %s, bigger than at a larger budget", name, v, q, b, res.Note.View)
					}
					if v.Valid() && rank > v.rank() {
						t.Errorf("%s: asked for %s, got the bigger %s", name, v, res.Note.View)
					}
					prev = rank
				}
			}
		}
	}
}

// TestDeterministic: the same input always gives the same answer.
func TestDeterministic(t *testing.T) {
	for name, text := range docs(t) {
		for _, q := range queriesFor[name] {
			r := Request{Budget: 150, Query: q, Name: name}
			a, b := Fit(text, r), Fit(text, r)
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("%s %q: two calls differ:\n%s", name, q, diff)
			}
		}
	}
}

// TestWeighAdditive: Weigh of a text cut at the start of non-blank lines is
// the sum of the pieces (the outline's part sizes and the parallel weighing
// rely on it), and the parallel weighing of a big text equals the serial one.
func TestWeighAdditive(t *testing.T) {
	corpus := loadCorpus(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var all strings.Builder
	for _, s := range corpus {
		all.WriteString(s.text)
		whole := weighMilli(s.text, nil)
		if slow := weighMilli(s.text, func(piece) {}); slow != whole {
			t.Errorf("%s/%s: the inline path weighs %d, the piece path %d", s.class, s.name, whole, slow)
		}
		var sum int64
		prev := 0
		for k := 0; k < 5; k++ {
			c := safeCut(s.text, prev+rng.IntN(len(s.text)/5+1))
			sum += weighMilli(s.text[prev:c], nil)
			prev = c
		}
		sum += weighMilli(s.text[prev:], nil)
		if sum != whole {
			t.Errorf("%s/%s: pieces weigh %d, the whole %d", s.class, s.name, sum, whole)
		}
	}
	big := all.String()
	if got, want := weighAll(big), weighMilli(big, nil); got != want {
		t.Errorf("parallel weighing of %d bytes gave %d, serial %d", len(big), got, want)
	}
	// Parts weighed apart add up to the whole too.
	for name, text := range docs(t) {
		d := parse(ReadForm(text, Detect(text, name)), Detect(text, name))
		if got, want := d.total(), weighMilli(d.text, nil); got != want {
			t.Errorf("%s: parts weigh %d, the whole %d", name, got, want)
		}
	}
}

func TestDefaultBudget(t *testing.T) {
	for _, c := range []struct {
		name   string
		used   int
		warned bool
		want   int
	}{
		{"empty context", 0, false, 8000},
		{"quarter of what is left", 100000, false, 7000},
		{"floor", 126000, false, 500},
		{"over the context", 200000, false, 500},
		{"negative used", -5, false, 8000},
		{"halved", 0, true, 4000},
		{"halved floor", 127000, true, 250},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := DefaultBudget(c.used, c.warned); got != c.want {
				t.Errorf("DefaultBudget(%d, %v) = %d, want %d", c.used, c.warned, got, c.want)
			}
		})
	}
}

func TestWanted(t *testing.T) {
	for _, c := range []struct {
		view   View
		budget int
		query  string
		want   bool
	}{
		{"", 0, "", false},
		{"", 0, "  ", false},
		{Stub, 0, "", true},
		{"", 100, "", true},
		{"", -1, "", true},
		{"", 0, "Install", true},
	} {
		if got := Wanted(c.view, c.budget, c.query); got != c.want {
			t.Errorf("Wanted(%q, %d, %q) = %v, want %v", c.view, c.budget, c.query, got, c.want)
		}
	}
}

func TestDetect(t *testing.T) {
	d := docs(t)
	for _, c := range []struct {
		doc, name string
		want      Kind
	}{
		{"guide.md", "", Markdown},
		{"guide.md", "guide.md", Markdown},
		{"server.go", "", Code},
		{"tasks.py", "", Code},
		{"widget.ts", "", Code},
		{"lib.rs", "", Code},
		{"change.diff", "", Diff},
		{"config.json", "", JSON},
		{"items.json", "", JSON},
		{"listing.txt", "", FileList},
		{"tree.txt", "", FileList},
		{"app.log", "", Text},
		{"notes.txt", "", Text},
		{"notes.txt", "notes.md", Markdown},
		{"notes.txt", "bad.json", Text},
		{"guide.md", "values.yaml", Text},
	} {
		t.Run(c.doc+"/"+c.name, func(t *testing.T) {
			if got := Detect(d[c.doc], c.name); got != c.want {
				t.Errorf("Detect(%s, %q) = %s, want %s", c.doc, c.name, got, c.want)
			}
		})
	}
}

func TestDetectText(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       Kind
	}{
		{"shell script", "#!/bin/sh\n# install the thing\nset -e\nmake install\n", Code},
		{"yaml comments by content", "# settings\nkey: value\nother: 2\n", Markdown},
		{"empty", "", Text},
		{"blank", "  \n\n", Text},
		{"json scalar", "42", Text},
		{"unified diff without git", "--- a.txt\n+++ b.txt\n@@ -1 +1 @@\n-a\n+b\n", Diff},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Detect(c.text, ""); got != c.want {
				t.Errorf("Detect(%q) = %s, want %s", c.text, got, c.want)
			}
		})
	}
}

func TestReadForm(t *testing.T) {
	got := ReadForm(`{"a":1,"b":[true,null]}`, JSON)
	want := "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ]\n}\n"
	if got != want {
		t.Errorf("ReadForm(JSON) = %q, want %q", got, want)
	}
	if got := ReadForm("not json", JSON); got != "not json" {
		t.Errorf("ReadForm of invalid JSON = %q, want it as it is", got)
	}
	if got := ReadForm("# x\n", Markdown); got != "# x\n" {
		t.Errorf("ReadForm(Markdown) changed the text: %q", got)
	}
}

func TestDescribeAndOutline(t *testing.T) {
	d := docs(t)
	info := Describe(d["config.json"], "config.json")
	if want := (Info{Kind: JSON, Bytes: len(d["config.json"]), Tokens: Count(d["config.json"]), Weight: Weigh(d["config.json"]), Lines: 43}); info != want {
		t.Errorf("Describe(config.json) = %+v, want %+v", info, want)
	}
	for name, text := range d {
		for _, budget := range []int{0, 20, 100, 1000} {
			o := Outline(text, name, budget)
			if n := Weigh(o); n > budget {
				t.Errorf("Outline(%s, %d) weighs %d", name, budget, n)
			}
			if Outline(text, name, budget) != o {
				t.Errorf("Outline(%s, %d) is not deterministic", name, budget)
			}
		}
	}
	if got := Outline(d["guide.md"], "guide.md", 1000); !strings.Contains(got, "## Configure") || !strings.Contains(got, "The service reads") {
		t.Errorf("Outline(guide.md, 1000) = %q, want headings with first sentences", got)
	}
}

// TestHugeInputs feeds inputs at the size limit and pathological shapes:
// each answer is defined and within its bounds.
func TestHugeInputs(t *testing.T) {
	size := 31 << 20
	if testing.Short() {
		size = 2 << 20
	}
	cases := map[string]string{
		"markdown":       hugeMarkdown(size),
		"one long line":  strings.Repeat("abcdefghij", size/10),
		"blank lines":    strings.Repeat("\n", size/4),
		"spaces":         strings.Repeat(" ", size/4),
		"headings only":  strings.Repeat("# h\n", size/16),
		"nested json":    strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		"binary":         strings.Repeat("\x00\x01\x02\xff", size/16),
		"invalid utf-8":  strings.Repeat("ok \xc3\x28 ", size/32),
		"cjk":            strings.Repeat("日本語のテキストです。", size/300),
		"long json line": `{"k":"` + strings.Repeat("x", size/8) + `"}`,
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			for _, r := range []Request{{Budget: 8000}, {View: Summary, Budget: 2000, Query: "1-100"}} {
				res := Fit(text, r)
				checkBounds(t, text, r, res)
			}
		})
	}
}

// FuzzFit: no input, view, budget, query or bound panics or breaks a
// bound, and the same call gives the same answer.
func FuzzFit(f *testing.F) {
	for name, text := range docs(f) {
		for _, q := range queriesFor[name] {
			f.Add(text, "", 200, q, 0, name)
			f.Add(text, "summary", 60, q, 300, "")
		}
	}
	f.Add("", "stub", 0, "", 0, "")
	f.Add("\xff\xfe\x00", "full", -3, "[", -1, "x.json")
	f.Add("# a\n## b\n```\n# not\n```\n", "section", 5, "#", 10, "a.md")
	f.Add("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", "", 30, "x#1", 0, "")
	f.Add("{\"a\": [1, 2, {\"b\": \"c\"}]}", "section", 50, "a", 0, "")
	f.Add("func (\nfunc ) x\ndef\nclass :\nimpl<\n", "summary", 40, "x", 0, "y.go")
	f.Fuzz(func(t *testing.T, text, view string, budget int, query string, chars int, name string) {
		r := Request{View: View(view), Budget: budget, Query: query, Chars: chars, Name: name}
		res := Fit(text, r)
		checkBounds(t, text, r, res)
		if again := Fit(text, r); again != res {
			t.Errorf("two calls differ: %+v and %+v", res.Note, again.Note)
		}
	})
}

// FuzzWeigh: the estimate never panics, is never negative, and is additive
// at safe cuts.
func FuzzWeigh(f *testing.F) {
	f.Add("hello world\n  indented\n")
	f.Add("\u3000\u00a0 \t\r\n\r\n x")
	f.Add("'s 'T 'll don't ABCDef getHTTPServer 123456789 ½ ²")
	f.Add("日本語 한국어 Ελληνικά кириллица")
	f.Add("\xff\xfe\xc3")
	f.Add(" A b Cd efghijk LMNOPQR s1 t_ u\n v")
	f.Fuzz(func(t *testing.T, s string) {
		w := weighMilli(s, nil)
		if slow := weighMilli(s, func(piece) {}); slow != w {
			t.Errorf("the inline path weighs %d, the piece path %d: %q", w, slow, s)
		}
		if w < 0 {
			t.Fatalf("negative weight %d", w)
		}
		if len(s) > 0 && w == 0 {
			t.Fatalf("a non-empty text weighs nothing: %q", s)
		}
		c := safeCut(s, len(s)/2)
		if a, b := weighMilli(s[:c], nil), weighMilli(s[c:], nil); a+b != w {
			t.Errorf("cut at %d: %d + %d != %d for %q", c, a, b, w, s)
		}
	})
}
