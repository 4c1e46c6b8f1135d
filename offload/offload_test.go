package offload

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/fit"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var ctx = context.Background()

func newStore(t testing.TB) *files.Store {
	t.Helper()
	s, err := files.Open(t.TempDir(), files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var scope = files.Scope{Tenant: "acme", Tree: "job-1"}

// Deterministic documents of each kind, big enough to be offloaded.
func markdownDoc() string {
	var b strings.Builder
	b.WriteString("# Release notes\n\nThese notes cover every part of the release.\n\n")
	for i := 0; i < 120; i++ {
		fmt.Fprintf(&b, "## Part %d\n\nPart %d begins here. It changes the handling of case %d in detail.\n\n", i, i, i)
		for j := 0; j < 12; j++ {
			fmt.Fprintf(&b, "- item %d.%d adjusts the scheduler so that queue %d drains before queue %d\n", i, j, j, j+1)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func jsonDoc() string {
	type item struct {
		ID    int      `json:"id"`
		Name  string   `json:"name"`
		Tags  []string `json:"tags"`
		Score float64  `json:"score"`
	}
	doc := map[string]any{"source": "inventory", "count": 900}
	var items []item
	for i := 0; i < 900; i++ {
		items = append(items, item{ID: i, Name: fmt.Sprintf("widget %d", i), Tags: []string{"a", fmt.Sprint(i % 7)}, Score: float64(i%13) / 4})
	}
	doc["items"] = items
	b, _ := json.Marshal(doc) // one line, as tools often write it
	return string(b)
}

// jsonArray is a JSON array over DefaultThreshold by a margin: cl100k_base
// takes its 800 items for some 11,200 tokens.
func jsonArray() string {
	var parts []string
	for i := 0; i < 800; i++ {
		parts = append(parts, fmt.Sprintf(`{"n":%d,"text":"entry number %d of the list"}`, i, i))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func logText() string {
	var b strings.Builder
	for i := 0; i < 4000; i++ {
		fmt.Fprintf(&b, "2026-01-02T03:04:%02d worker-%d processed batch %d in %dms\n", i%60, i%5, i, 10+i%90)
	}
	return b.String()
}

func oneLine() string { return strings.Repeat("abcdefghij ", 8000) }

var docs = []struct {
	name  string
	text  func() string
	first string // how the outline's first line starts
}{
	{"markdown", markdownDoc, "# Release notes"},
	{"json-object", jsonDoc, `"count"`},
	{"json-array", jsonArray, "[0]"},
	{"log", logText, "lines 1-"},
	{"one-line", oneLine, ""},
}

func TestThreshold(t *testing.T) {
	for _, tc := range []struct {
		name           string
		agent          string
		deflt, ceiling int
		want           int
		bad            bool
	}{
		{"nothing set", "", 0, 0, DefaultThreshold, false},
		{"tenant default", "", 4000, 0, 4000, false},
		{"agent value", "20000", 4000, 0, 20000, false},
		{"agent within ceiling", "20000", 0, 15000, 15000, false},
		{"default over ceiling", "", 0, 5000, 5000, false},
		{"off", "off", 0, 0, 0, false},
		{"off under a ceiling", "off", 0, 30000, 30000, false},
		{"not a number", "lots", 0, 0, 0, true},
		{"zero", "0", 0, 0, 0, true},
		{"negative", "-5", 0, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Threshold(tc.agent, tc.deflt, tc.ceiling)
			if tc.bad {
				if errs.ClassOf(err) != errs.Invalid {
					t.Fatalf("got %d, %v; want invalid", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestInline(t *testing.T) {
	st := newStore(t)
	for _, tc := range []struct {
		name      string
		threshold int
		text      string
	}{
		{"small result", DefaultThreshold, "total 3\n-rw-r--r-- 1 a a 0 x\n"},
		{"offloading off", 0, markdownDoc()},
		{"exactly at the threshold", fit.Weigh(logText()), logText()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Offloader{Store: st, Threshold: tc.threshold}
			out, err := o.Offload(ctx, scope, "acme.tool", tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if out.Stub != nil || out.Text != tc.text {
				t.Fatalf("got a stub, want the result inline")
			}
		})
	}
	if list, _ := st.List(ctx, scope); len(list) != 0 {
		t.Errorf("inline results kept %d files", len(list))
	}
}

// TestStubGolden offloads each kind of document and compares its stub with
// a golden file; it also checks the stub's promises.
func TestStubGolden(t *testing.T) {
	for _, d := range docs {
		for _, threshold := range []int{2000, DefaultThreshold} {
			name := fmt.Sprintf("%s-%d", d.name, threshold)
			t.Run(name, func(t *testing.T) {
				text := d.text()
				st := newStore(t)
				o := &Offloader{Store: st, Threshold: threshold}
				out, err := o.Offload(ctx, scope, "acme_docs.get_page", text)
				if err != nil {
					t.Fatal(err)
				}
				if out.Stub == nil {
					t.Fatalf("a %d-token result was not offloaded at threshold %d", fit.Weigh(text), threshold)
				}
				var pretty bytes.Buffer
				json.Indent(&pretty, []byte(out.Text), "", "  ")
				pretty.WriteByte('\n')
				// The result's weight is fit's estimate, tuned in fit's own
				// tests, and the outline is fit's too (checked below against
				// fit itself and by its first line): the golden file fixes
				// what this package decides, not the estimator's numbers.
				outlineJSON, _ := json.Marshal(out.Stub.Outline)
				pretty = *bytes.NewBufferString(maskWeights(strings.Replace(pretty.String(), string(outlineJSON), `"<outline>"`, 1)))
				golden := filepath.Join("testdata", "stub-"+name+".golden")
				if *update {
					if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to write it)", err)
				}
				if d := cmp.Diff(string(want), pretty.String()); d != "" {
					t.Errorf("stub (-want +got):\n%s", d)
				}

				// The same text gives the same stub, from another store too.
				again, err := (&Offloader{Store: newStore(t), Threshold: threshold}).Offload(ctx, files.Scope{Tenant: "x", Tree: "y"}, "acme_docs.get_page", text)
				if err != nil || again.Text != out.Text {
					t.Errorf("a second offload of the same text gave another stub (%v)", err)
				}
				budget := min(threshold/4, OutlineCap)
				if want := fit.Outline(text, "", budget); want != "" && out.Stub.Outline != want {
					t.Errorf("the outline is not fit's outline of the text in %d tokens", budget)
				}
				if first, _, _ := strings.Cut(out.Stub.Outline, "\n"); !strings.HasPrefix(first, d.first) {
					t.Errorf("the outline starts %q, want %q", first, d.first)
				}
				if w := fit.Weigh(out.Stub.Outline); w > min(threshold/4, OutlineCap) {
					t.Errorf("the outline weighs %d tokens, over min(threshold/4, %d)", w, OutlineCap)
				}
				info := fit.Describe(text, "")
				got := out.Stub.Offloaded
				if got.Kind != info.Kind || got.Size != info.Bytes || got.Tokens != info.Tokens || got.Lines != info.Lines {
					t.Errorf("offloaded %+v, want it to agree with fit.Describe %+v", got, info)
				}
				kept, err := st.Get(ctx, scope, out.Ref)
				if err != nil || string(kept) != text {
					t.Errorf("the kept file is not the whole result (%v)", err)
				}
			})
		}
	}
}

// maskWeights replaces token counts in a pretty-printed stub with "N".
func maskWeights(s string) string {
	s = regexp.MustCompile(`"tokens": [0-9]+`).ReplaceAllString(s, `"tokens": N`)
	return regexp.MustCompile(`\([0-9]+ tokens,`).ReplaceAllString(s, `(N tokens,`)
}

func TestTooLarge(t *testing.T) {
	st := newStore(t)
	o := &Offloader{Store: st, Threshold: DefaultThreshold}
	for _, tc := range []struct {
		name string
		text string
	}{
		{"over 31 MiB of text", strings.Repeat("a", MaxResult)},
		// Under 31 MiB as text, over it once quotes are escaped as JSON.
		{"over 31 MiB once escaped", strings.Repeat(`"`, MaxResult/2+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := o.Offload(ctx, scope, "big.tool", tc.text)
			if errs.ClassOf(err) != errs.Invalid || !strings.Contains(err.Error(), "ask for less") {
				t.Fatalf("got %v, want an invalid call asking for less", err)
			}
		})
	}
	if list, _ := st.List(ctx, scope); len(list) != 0 {
		t.Errorf("a refused result kept %d files", len(list))
	}
	// Just under the limit is kept.
	text := strings.Repeat("b", MaxResult-2)
	if out, err := o.Offload(ctx, scope, "big.tool", text); err != nil || out.Stub == nil {
		t.Errorf("a result at the limit: %v; want it offloaded", err)
	}
}

func TestJSONSize(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\"", "\\", "\n", "\t", "\x00", "\x1f", "<", ">", "&", "é", "\u2028", "\u2029", "😀", "\xff", "\b", "\f", "\r", " "}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for j := rnd.IntN(40); j > 0; j-- {
			b.WriteString(alphabet[rnd.IntN(len(alphabet))])
		}
		s := b.String()
		enc, _ := json.Marshal(s)
		if got := JSONSize(s); got != len(enc) {
			t.Fatalf("JSONSize(%q) = %d, want %d (%s)", s, got, len(enc), enc)
		}
	}
}

func FuzzJSONSize(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\n", "\xff\xfe", "\u2028<>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc, _ := json.Marshal(s)
		if got := JSONSize(s); got != len(enc) {
			t.Fatalf("JSONSize(%q) = %d, want %d", s, got, len(enc))
		}
	})
}

func TestStubOfInvalidUTF8(t *testing.T) {
	text := strings.Repeat("line with a bad byte \xff here\n", 3000)
	st := newStore(t)
	out, err := (&Offloader{Store: st, Threshold: 1000}).Offload(ctx, scope, "t", text)
	if err != nil || out.Stub == nil {
		t.Fatalf("got %v, want a stub", err)
	}
	if !json.Valid([]byte(out.Text)) || !utf8.ValidString(out.Text) {
		t.Errorf("the stub is not valid UTF-8 JSON")
	}
	if out.Stub.Offloaded.Size != len(text) {
		t.Errorf("got size %d, want the kept file's %d bytes", out.Stub.Offloaded.Size, len(text))
	}
	kept, err := st.Get(ctx, scope, out.Ref)
	if err != nil || string(kept) != text {
		t.Errorf("the kept file is not the result byte for byte (%v)", err)
	}
}
