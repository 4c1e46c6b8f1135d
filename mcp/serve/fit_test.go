package serve

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/fit"
	"github.com/airlock-run/airlock/offload"
)

// bigDoc is a Markdown document of parts big enough (about 40,000 tokens)
// to be offloaded at the default threshold.
func bigDoc() string {
	var b strings.Builder
	b.WriteString("# Release notes\n\nWhat changed, part by part.\n\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "## Part %d\n\nPart %d begins here. ", i, i)
		for j := 0; j < 90; j++ {
			fmt.Fprintf(&b, "Line %d of part %d says something about widget %d. ", j, i, i*100+j)
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

func TestFitViews(t *testing.T) {
	doc := bigDoc()
	f := newFixture(t, testPolicy, "observe", func(work string) {
		os.WriteFile(filepath.Join(work, "notes.md"), []byte(doc), 0o644)
	}, nil)
	whole := fit.Weigh(doc)
	tests := []struct {
		name     string
		args     map[string]any
		wantView string
		contains string
		maxTok   int
	}{
		{"stub", map[string]any{"view": "stub"}, "stub", "Part 39", 0},
		{"summary within a budget", map[string]any{"view": "summary", "budget": 2000}, "summary", "Part 0 begins here", 2000},
		{"section by heading", map[string]any{"query": "Part 7", "budget": 3000}, "section", "widget 745", 3000},
		{"line range", map[string]any{"query": "1-3"}, "section", "What changed", 0},
		{"budget alone falls to a smaller view", map[string]any{"budget": 600}, "", "Part", 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"path": "notes.md"}
			for k, v := range tt.args {
				args[k] = v
			}
			text, res, err := f.call("read_file", args)
			if err != nil || res.IsError {
				t.Fatalf("got err %v, result %q; want a fitted answer", err, text)
			}
			m, ok := fitMeta(t, res)
			if !ok || m.Fit == nil {
				t.Fatalf("got _meta %v, want a fit note under airlock/fit", res.Meta)
			}
			if tt.wantView != "" && m.Fit.View != tt.wantView {
				t.Errorf("got view %q, want %q", m.Fit.View, tt.wantView)
			}
			if m.Fit.Size != whole {
				t.Errorf("got size %d, want the whole document's %d", m.Fit.Size, whole)
			}
			if tt.maxTok > 0 && fit.Weigh(text) > tt.maxTok {
				t.Errorf("got %d tokens, want at most %d", fit.Weigh(text), tt.maxTok)
			}
			if !strings.Contains(text, tt.contains) {
				t.Errorf("got %.300q, want it to contain %q", text, tt.contains)
			}
			if m.Offloaded != nil {
				t.Errorf("a fitted answer under the threshold was offloaded: %+v", m.Offloaded)
			}
		})
	}
}

// TestOffloadAndReadBack reads a result bigger than the threshold: the model
// gets the stub, and read_result gives parts of the kept file back.
func TestOffloadAndReadBack(t *testing.T) {
	doc := bigDoc()
	f := newFixture(t, testPolicy, "observe", func(work string) {
		os.WriteFile(filepath.Join(work, "notes.md"), []byte(doc), 0o644)
	}, nil)
	text, res, err := f.call("read_file", map[string]any{"path": "notes.md"})
	if err != nil || res.IsError {
		t.Fatalf("got err %v, result %.200q", err, text)
	}
	var stub offload.Stub
	if err := json.Unmarshal([]byte(text), &stub); err != nil {
		t.Fatalf("got %.200q, want the stub JSON: %v", text, err)
	}
	if stub.Offloaded.Tokens != fit.Weigh(doc) || stub.Offloaded.Size != len(doc) || !strings.Contains(stub.Outline, "Part 3") {
		t.Errorf("got stub %+v, want the document's size, tokens and outline", stub.Offloaded)
	}
	if fit.Weigh(text) > offload.DefaultThreshold {
		t.Errorf("the stub weighs %d tokens, more than the threshold", fit.Weigh(text))
	}
	m, ok := fitMeta(t, res)
	if !ok || m.Offloaded == nil || m.Offloaded.Ref != stub.Offloaded.Ref {
		t.Fatalf("got _meta %v, want airlock/fit to name the offloaded ref %s", res.Meta, stub.Offloaded.Ref)
	}
	tests := []struct {
		name     string
		args     map[string]any
		contains string
		lacks    string
	}{
		{"section", map[string]any{"section": "Part 12"}, "widget 1289", "widget 1389"},
		{"range", map[string]any{"range": "1-1"}, "# Release notes", "Part 0"},
		{"stub view", map[string]any{"view": "stub"}, "Part 39", "widget 100"},
		{"query", map[string]any{"query": "Part 39"}, "widget 3989", "widget 3889"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"ref": stub.Offloaded.Ref}
			for k, v := range tt.args {
				args[k] = v
			}
			got, res, err := f.call("read_result", args)
			if err != nil || res.IsError {
				t.Fatalf("got err %v, result %.200q", err, got)
			}
			if !strings.Contains(got, tt.contains) || tt.lacks != "" && strings.Contains(got, tt.lacks) {
				t.Errorf("got %.300q, want %q and not %q", got, tt.contains, tt.lacks)
			}
			if m, ok := fitMeta(t, res); !ok || m.Fit == nil || m.Offloaded != nil {
				t.Errorf("got _meta %v, want a fit note and no second offload", res.Meta)
			}
		})
	}
	// Another tree of the store may not read the ref.
	other := newFixture(t, testPolicy, "observe", nil, func(c *fixtureConfig) { c.kernel.Scope.Tree = "someone-else" })
	if got, res, err := other.call("read_result", map[string]any{"ref": stub.Offloaded.Ref}); err != nil || !res.IsError || !strings.Contains(got, "not found") {
		t.Errorf("another tree got %.100q, %v; want not found", got, err)
	}
}

// TestTooLarge: a result over 31 MiB fails the call and asks for less.
func TestTooLarge(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", nil, nil)
	got, res, err := f.call("exec", map[string]any{"command": "head -c 33554432 /dev/zero | tr '\\0' a"})
	if err != nil {
		t.Fatalf("got error %v, want a failed call", err)
	}
	if !res.IsError || !strings.Contains(got, "ask for less") || len(got) > 1000 {
		t.Errorf("got isError %v, %.300q; want a short failed call asking for less", res.IsError, got)
	}
}

// TestExecOffloaded: a command's big output is offloaded like a file's,
// and a view asked for is fitted before the threshold is applied.
func TestExecOffloaded(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", func(work string) {
		var b strings.Builder
		for i := 0; i < 4000; i++ {
			fmt.Fprintf(&b, "log line %d: the widget was checked and found in order\n", i)
		}
		os.WriteFile(filepath.Join(work, "log.txt"), []byte(b.String()), 0o644)
	}, nil)
	cmd := []string{"cat", "log.txt"}
	text, res, err := f.call("exec", map[string]any{"argv": cmd})
	if err != nil || res.IsError {
		t.Fatalf("got %.200q, %v", text, err)
	}
	var stub offload.Stub
	if err := json.Unmarshal([]byte(text), &stub); err != nil || stub.Offloaded.Ref == "" {
		t.Fatalf("got %.200q, want a stub: %v", text, err)
	}
	got, _, err := f.call("read_result", map[string]any{"ref": stub.Offloaded.Ref, "range": "3001-3001"})
	if err != nil || !strings.Contains(got, "log line 3000:") || strings.Contains(got, "log line 2999:") {
		t.Errorf("read_result range: got %.200q, %v; want line 3001 alone", got, err)
	}
	text, res, err = f.call("exec", map[string]any{"argv": cmd, "budget": 500})
	if m, ok := fitMeta(t, res); err != nil || !ok || m.Fit == nil || m.Offloaded != nil || fit.Weigh(text) > 500 {
		t.Errorf("with a budget: got %d tokens, _meta %v, %v; want a fitted answer of at most 500 tokens, inline", fit.Weigh(text), res.Meta, err)
	}
}
