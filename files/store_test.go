package files

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/google/go-cmp/cmp"
)

// clock is an injected clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// events collects audit events.
type events struct {
	mu   sync.Mutex
	list []Event
	fail error
}

func (e *events) record(_ context.Context, ev Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail != nil {
		return e.fail
	}
	e.list = append(e.list, ev)
	return nil
}

func (e *events) all() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.list...)
}

type fixture struct {
	s   *Store
	clk *clock
	ev  *events
	dir string
}

func newFixture(t *testing.T, opt Options) *fixture {
	t.Helper()
	f := &fixture{clk: newClock(), ev: &events{}, dir: t.TempDir()}
	opt.Now = f.clk.Now
	opt.Audit = f.ev.record
	s, err := Open(f.dir, opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	f.s = s
	return f
}

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

var ctx = context.Background()

func mustPut(t *testing.T, s *Store, sc Scope, data []byte) Ref {
	t.Helper()
	r, err := s.Put(ctx, sc, data)
	if err != nil {
		t.Fatalf("Put(%+v): %v", sc, err)
	}
	return r
}

func TestPutGetRoundTrip(t *testing.T) {
	f := newFixture(t, Options{})
	sc := Scope{Tenant: "acme", Tree: "job-1"}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"text", []byte("hello, airlock\n")},
		{"binary", randomBytes(t, 100_000)},
		{"largest", randomBytes(t, MaxSize)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustPut(t, f.s, sc, tc.data)
			if want := RefOf(tc.data); r != want {
				t.Fatalf("got ref %s, want %s", r, want)
			}
			got, err := f.s.Get(ctx, sc, r)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if !bytes.Equal(got, tc.data) {
				t.Fatalf("got %d bytes back, want the %d stored", len(got), len(tc.data))
			}
			again := mustPut(t, f.s, sc, tc.data)
			if again != r {
				t.Fatalf("storing again gave %s, want %s", again, r)
			}
		})
	}
}

func TestTooBigKeepsNothing(t *testing.T) {
	f := newFixture(t, Options{})
	sc := Scope{Tenant: "acme", Tree: "job-1"}
	big := make([]byte, MaxSize+1)
	for name, put := range map[string]func() error{
		"Put":       func() error { _, err := f.s.Put(ctx, sc, big); return err },
		"PutReader": func() error { _, err := f.s.PutReader(ctx, sc, bytes.NewReader(big)); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := put()
			if got, want := errs.ClassOf(err), errs.Invalid; got != want {
				t.Fatalf("got class %v (%v), want %v", got, err, want)
			}
			if !strings.Contains(err.Error(), "32 MiB") {
				t.Errorf("got %q, want it to name the 32 MiB limit", err)
			}
			if n := countFiles(t, filepath.Join(f.dir, "blobs")); n != 0 {
				t.Errorf("got %d files under blobs, want none", n)
			}
			if list, _ := f.s.List(ctx, sc); len(list) != 0 {
				t.Errorf("got %d listed files, want none", len(list))
			}
		})
	}
}

func countFiles(t *testing.T, root string) int {
	t.Helper()
	n := 0
	filepath.Walk(root, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func TestBadScope(t *testing.T) {
	f := newFixture(t, Options{})
	for _, tc := range []struct {
		name string
		sc   Scope
	}{
		{"no tenant", Scope{Tree: "t"}},
		{"no tree", Scope{Tenant: "a"}},
		{"control character", Scope{Tenant: "a", Tree: "t\n"}},
		{"not utf-8", Scope{Tenant: "a\xff", Tree: "t"}},
		{"too long", Scope{Tenant: strings.Repeat("a", 257), Tree: "t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.s.Put(ctx, tc.sc, []byte("x"))
			if got := errs.ClassOf(err); got != errs.Invalid {
				t.Fatalf("got class %v (%v), want invalid", got, err)
			}
		})
	}
}

func TestList(t *testing.T) {
	f := newFixture(t, Options{})
	sc := Scope{Tenant: "acme", Tree: "job-1"}
	a := mustPut(t, f.s, sc, []byte("first"))
	f.clk.Add(time.Minute)
	b := mustPut(t, f.s, sc, []byte("second"))
	mustPut(t, f.s, Scope{Tenant: "acme", Tree: "job-2"}, []byte("other tree"))
	list, err := f.s.List(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range list {
		got = append(got, in.Ref.String()+" "+in.Via+" "+in.Expires.Sub(in.Stored).String())
	}
	want := []string{b.String() + " stored 2160h0m0s", a.String() + " stored 2160h0m0s"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}
}

// notFoundOf is the error a fresh store gives for r: the answer for a file
// that was never stored, which every refusal must match exactly.
func notFoundOf(t *testing.T, r Ref) error {
	t.Helper()
	fresh := newFixture(t, Options{})
	_, err := fresh.s.Get(ctx, Scope{Tenant: "acme", Tree: "job-1"}, r)
	if err == nil {
		t.Fatal("a fresh store returned a file")
	}
	return err
}

func sameRefusal(t *testing.T, got, want error) {
	t.Helper()
	if got == nil {
		t.Fatal("got the file, want not found")
	}
	if errs.ClassOf(got) != errs.ClassOf(want) || got.Error() != want.Error() {
		t.Fatalf("got %v %q, want exactly %v %q (as for a file never stored)", errs.ClassOf(got), got, errs.ClassOf(want), want)
	}
	var e1, e2 *errs.Error
	if !errors.As(got, &e1) || !errors.As(want, &e2) || e1.Err != nil || e2.Err != nil {
		t.Fatalf("got a wrapped cause %v, want a bare not-found with nothing behind it", got)
	}
}

// TestPutReaderSources streams from a file, a pipe and a plain reader, and
// refuses a failing reader and an oversized pipe without leaving anything.
func TestPutReaderSources(t *testing.T) {
	f := newFixture(t, Options{})
	sc := Scope{Tenant: "acme", Tree: "a"}
	data := randomBytes(t, 9<<20+123) // more than two copy chunks
	path := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	pipeOf := func(n int) *os.File {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer pw.Close()
			for written := 0; written < n; {
				chunk := data[:min(len(data), n-written)]
				m, err := pw.Write(chunk)
				if err != nil {
					return
				}
				written += m
			}
		}()
		return pr
	}
	for _, tc := range []struct {
		name string
		open func() io.Reader
	}{
		{"file", func() io.Reader { fh, _ := os.Open(path); t.Cleanup(func() { fh.Close() }); return fh }},
		{"pipe", func() io.Reader { return pipeOf(len(data)) }},
		{"reader", func() io.Reader { return bytes.NewReader(data) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := f.s.PutReader(ctx, sc, tc.open())
			if err != nil || r != RefOf(data) {
				t.Fatalf("got %v, %v; want %v", r, err, RefOf(data))
			}
			got, err := f.s.Get(ctx, sc, r)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back: %v", err)
			}
		})
	}
	t.Run("a pipe over the limit", func(t *testing.T) {
		pr := pipeOf(MaxSize + 1)
		defer pr.Close()
		_, err := f.s.PutReader(ctx, sc, pr)
		if errs.ClassOf(err) != errs.Invalid {
			t.Fatalf("got %v, want invalid", err)
		}
	})
	t.Run("a failing reader", func(t *testing.T) {
		_, err := f.s.PutReader(ctx, sc, io.MultiReader(bytes.NewReader(data[:1000]), iotest.ErrReader(errors.New("connection reset"))))
		if err == nil || err.Error() != "files: read the file to keep: connection reset" {
			t.Fatalf("got %v, want the reader's error", err)
		}
	})
	if n := countTemps(t, f.dir); n != 0 {
		t.Errorf("%d temporary files left", n)
	}
	if list, _ := f.s.List(ctx, sc); len(list) != 1 {
		t.Errorf("got %d files, want the one stored three times", len(list))
	}
}
