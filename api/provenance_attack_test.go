package api

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// Every record the server writes to its provenance file it reads back at
// its next start: a job whose taint is long (a model's name of half a
// MiB, which JSON escapes to several) keeps a file, and the server, started
// again on the same state, still opens the file and still holds the taint.
// (Before, a line over the reader's 1 MiB buffer refused the start, and
// the only way back was to remove the file, forgetting every taint a read
// brought.)
func TestAttackProvenanceLongRecord(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "files-provenance.jsonl")
	p, err := OpenProvenance(path)
	if err != nil {
		t.Fatal(err)
	}
	long := "model " + strings.Repeat("<", 600<<10) + " is not vetted"
	if err := p.keep("default", "t-1", "airlock-file:sha256:"+strings.Repeat("a", 64), "j-t", long); err != nil {
		t.Fatal(err)
	}
	if _, err := p.read("j-r", "read the result of tainted job j-t"); err != nil {
		t.Fatal(err)
	}
	p.Close()
	p, err = OpenProvenance(path)
	if err != nil {
		t.Fatalf("reopen after a long record: %v", err)
	}
	defer p.Close()
	if p.readTaint("j-r") == "" {
		t.Errorf("after reopening: the read's taint is gone")
	}
	if _, taint := p.keepers("default", "t-1", "airlock-file:sha256:"+strings.Repeat("a", 64)); !strings.Contains(taint, "is not vetted") {
		t.Errorf("after reopening: the file's keeper taint %q", taint[:min(len(taint), 80)])
	}
}

// A model's name is a name: one that is not (control characters, spaces,
// a name of any length) is refused at the start, before it reaches a
// taint, the audit log or the provenance file.
func TestAttackModelName(t *testing.T) {
	f := newFileFleet(t, t.TempDir(), nil)
	for _, tc := range []struct{ name, model string }{
		{"a newline", `gpt-5\nread the result of tainted job j-x`},
		{"a control character", `gpt\u001b[2J`},
		{"a space", "gpt 5"},
		{"too long", strings.Repeat("m", 300)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := do(t, f.srv, "POST", "/v1/jobs", "Bearer "+token, `{"argv":["make"],"model":"`+tc.model+`"}`)
			if code != http.StatusBadRequest || !strings.Contains(out["error"].(string), "model") {
				t.Errorf("got %d %v, want 400 naming model", code, out)
			}
		})
	}
	for _, ok := range []string{"gpt-5", "claude-sonnet-4", "anthropic/claude-3-5-sonnet@20241022", "us.anthropic.claude-3-sonnet-20240229-v1:0"} {
		if code, out := do(t, f.srv, "POST", "/v1/jobs", "Bearer "+token, `{"argv":["make"],"model":"`+ok+`"}`); code != http.StatusCreated {
			t.Errorf("model %s: %d %v, want it taken", ok, code, out)
		}
	}
}
