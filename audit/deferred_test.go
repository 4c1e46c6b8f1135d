package audit

import (
	"bytes"
	"os"
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
	if err := l.Append(sample(1)); err != nil {
		t.Fatalf("Append once the failure was reported: %v", err)
	}
}
