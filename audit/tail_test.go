package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTailKept: a log opened again after this process appended takes its
// chain up from the record it wrote, as a fresh parse of the file would
// (the kept line, its sequence number and its hash are what parseLine
// finds); a last line changed in place, to the same length, is parsed
// and refused, never taken for the kept one.
func TestTailKept(t *testing.T) {
	var tails TailCache
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{Now: fixedClock(), Tails: &tails})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := l.Append(sample(i)); err != nil {
			t.Fatal(err)
		}
	}
	seq, hash := l.Head()
	l.Close()

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := bytes.TrimSuffix(data, []byte("\n"))
	last = last[bytes.LastIndexByte(last, '\n')+1:]
	rec, problem := parseLine(last)
	if problem != "" || rec.Seq != seq || rec.Hash != hash {
		t.Fatalf("the last line parses to %d %q (%s); the log wrote %d %q", rec.Seq, rec.Hash, problem, seq, hash)
	}
	if s, h, ok := tails.get(last); !ok || s != seq || h != hash {
		t.Fatalf("kept tail: %d %q %v; want %d %q", s, h, ok, seq, hash)
	}

	again, err := Open(path, Options{Now: fixedClock(), Tails: &tails})
	if err != nil {
		t.Fatal(err)
	}
	if s, h := again.Head(); s != seq || h != hash {
		t.Errorf("opened again: head %d %q, want %d %q", s, h, seq, hash)
	}
	again.Close()

	// The same length, another reason: the record no longer matches its
	// hash.
	changed := strings.Replace(string(data), "call 2 refused", "call 9 refused", 1)
	if changed == string(data) || len(changed) != len(data) {
		t.Fatal("the test's change did not apply")
	}
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := Open(path, Options{Now: fixedClock(), Tails: &tails}); err == nil {
		l.Close()
		t.Fatal("Open of a log whose last record was changed in place: got nil, want an error")
	} else if !strings.Contains(err.Error(), "does not match its hash") {
		t.Fatalf("Open: %v, want the last record's hash refused", err)
	}
}
