package audit

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestAppendDeferred: a deferred record is in the file, in the chain, as
// soon as AppendDeferred returns, and what follows it (an Append, a Sync,
// a Close) waits for its fsync; the file verifies whichever comes next.
func TestAppendDeferred(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(*Log) error
		want  int
	}{
		{"then Append", func(l *Log) error { return l.Append(sample(1)) }, 2},
		{"then Sync", (*Log).Sync, 1},
		{"then Close", (*Log).Close, 1},
		{"twice, then Append", func(l *Log) error {
			if err := l.AppendDeferred(sample(1)); err != nil {
				return err
			}
			return l.Append(sample(2))
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, path := openTemp(t)
			defer l.Close()
			if err := l.AppendDeferred(sample(0)); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			if rep, _ := Verify(bytes.NewReader(b)); !rep.OK || rep.Records != 1 {
				t.Fatalf("after AppendDeferred: got %+v, want the record written at once", rep)
			}
			if err := tc.after(l); err != nil {
				t.Fatal(err)
			}
			if l.bg != nil {
				t.Errorf("the background fsync was not waited for")
			}
			b, _ = os.ReadFile(path)
			rep, err := Verify(bytes.NewReader(b))
			if err != nil || !rep.OK || rep.Records != tc.want || rep.LastSeq != int64(tc.want) {
				t.Fatalf("got %+v, %v; want an OK chain of %d records", rep, err, tc.want)
			}
		})
	}
}

// TestAppendDeferredFailure: a background fsync that failed fails the next
// Append and Sync, so nothing chained onto the record, or reported after
// it, goes by as recorded.
func TestAppendDeferredFailure(t *testing.T) {
	l, _ := openTemp(t)
	defer l.Close()
	failed := make(chan error, 1)
	failed <- os.ErrClosed
	l.bg = failed
	if err := l.Append(sample(0)); err == nil {
		t.Fatal("Append after a failed background fsync: got nil, want an error")
	}
	failed <- os.ErrClosed
	l.bg = failed
	if err := l.Sync(); err == nil {
		t.Fatal("Sync after a failed background fsync: got nil, want an error")
	}
	if err := l.Append(sample(1)); err == nil {
		t.Fatal("Append once the failure was reported: got nil, want the failure kept")
	}
}

// TestSyncFailureKept: a background fsync that failed is reported to every
// caller after it, not to the first alone: one call's Append taking the
// failure of another's record must not leave that other's Sync saying the
// record is durable. A log opened again picks the chain up from the file.
func TestSyncFailureKept(t *testing.T) {
	l, path := openTemp(t)
	defer l.Close()
	if err := l.AppendAsync(sample(0))(); err != nil {
		t.Fatal(err)
	}
	// The record's fsync fails.
	l.mu.Lock()
	if l.bg == nil {
		l.mu.Unlock()
		t.Fatal("no background fsync after AppendAsync")
	}
	<-l.bg
	failed := make(chan error, 1)
	failed <- os.ErrClosed
	l.bg = failed
	l.mu.Unlock()
	if err := l.Append(sample(1)); err == nil {
		t.Fatal("another call's Append after the failed fsync: got nil, want an error")
	}
	if err := l.Sync(); err == nil {
		t.Fatal("the record's own Sync after another call took the failure: got nil, want the failure")
	}
	if err := l.Close(); err == nil {
		t.Fatal("Close after a failed fsync: got nil, want the failure")
	}
	again, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("open the log again: %v", err)
	}
	defer again.Close()
	if err := again.Append(sample(2)); err != nil {
		t.Fatalf("Append to the log opened again: %v", err)
	}
}

// TestAppendAsync: records given to AppendAsync reach the file in the
// order given, before any record appended after them; written reports
// each one in the file; and Sync returns with them all durable.
func TestAppendAsync(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(*Log) error
	}{
		{"then Append", func(l *Log) error { return l.Append(sample(9)) }},
		{"then AppendDeferred", func(l *Log) error { return l.AppendDeferred(sample(9)) }},
		{"then Sync", (*Log).Sync},
		{"then Close", (*Log).Close},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, path := openTemp(t)
			var written []func() error
			for i := range 5 {
				written = append(written, l.AppendAsync(sample(i)))
			}
			if err := tc.after(l); err != nil {
				t.Fatal(err)
			}
			for i, w := range written {
				if err := w(); err != nil {
					t.Fatalf("record %d: written says %v, want nil", i, err)
				}
			}
			if err := l.Sync(); err != nil && tc.name != "then Close" {
				t.Fatal(err)
			}
			if l.pending != nil || l.bg != nil {
				t.Errorf("pending %v, background fsync %v: want both waited for", l.pending, l.bg)
			}
			b, _ := os.ReadFile(path)
			rep, err := Verify(bytes.NewReader(b))
			if err != nil || !rep.OK {
				t.Fatalf("got %+v, %v; want an OK chain", rep, err)
			}
			var got []string
			Read(bytes.NewReader(b), func(r Record) error {
				got = append(got, fmt.Sprint(r.Fields["n"]))
				return nil
			})
			want := "0 1 2 3 4"
			if tc.name == "then Append" || tc.name == "then AppendDeferred" {
				want += " 9"
			}
			if strings.Join(got, " ") != want {
				t.Errorf("records in the file: got %v, want %s (the order given)", got, want)
			}
		})
	}
}

// TestAppendAsyncFailure: a record AppendAsync could not write is
// reported by written, then by Sync (and only once), so a run waits on
// it and a result is not reported after it as recorded.
func TestAppendAsyncFailure(t *testing.T) {
	l, path := openTemp(t)
	bad := sample(0)
	bad.Fields = map[string]any{"unencodable": func() {}}
	written := l.AppendAsync(bad)
	if err := written(); err == nil {
		t.Fatal("written of a record that cannot be encoded: got nil, want its error")
	}
	if err := l.Sync(); err == nil {
		t.Fatal("Sync after a failed AppendAsync: got nil, want its error")
	}
	if err := l.Sync(); err != nil {
		t.Fatalf("Sync once the failure was reported: %v", err)
	}
	if err := l.Append(sample(1)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if rep, err := Verify(bytes.NewReader(b)); err != nil || !rep.OK || rep.Records != 1 {
		t.Fatalf("got %+v, %v; want the one record that could be written", rep, err)
	}
}
