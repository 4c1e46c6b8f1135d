package files

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// crashEnv, when set in the environment, makes the test binary a child that
// stores files in the named store until it is killed.
const crashEnv = "AIRLOCK_FILES_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild stores files of 1 to 4 MiB for ever, writing each reference to
// standard output once Put has returned.
func crashChild(dir string) {
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	sc := Scope{Tenant: "acme", Tree: "crash"}
	for i := 0; ; i++ {
		data := make([]byte, (1+i%4)<<20)
		rand.Read(data)
		r, err := s.Put(context.Background(), sc, data)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		fmt.Println(r.String())
	}
}

// TestCrashMidWrite kills a child process that is storing files, at
// different moments, and checks that the store opens, that every file the
// child was told was stored is whole, and that what the killed write left
// behind is swept.
func TestCrashMidWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	var stored []Ref
	for round, wait := range []time.Duration{0, 3 * time.Millisecond, 17 * time.Millisecond, 40 * time.Millisecond, 90 * time.Millisecond} {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		er, ew, _ := os.Pipe()
		p, err := os.StartProcess(os.Args[0], []string{os.Args[0], "-test.run=^$"}, &os.ProcAttr{
			Env:   append(os.Environ(), crashEnv+"="+dir),
			Files: []*os.File{nil, pw, ew},
		})
		pw.Close()
		ew.Close()
		if err != nil {
			t.Fatal(err)
		}
		go stderr.ReadFrom(er)
		sc := bufio.NewScanner(pr)
		// Let it store a couple of files, then kill it at some point of
		// the next write.
		for i := 0; i < 2 && sc.Scan(); i++ {
			r, err := ParseRef(sc.Text())
			if err != nil {
				t.Fatalf("round %d: child wrote %q", round, sc.Text())
			}
			stored = append(stored, r)
		}
		time.Sleep(wait)
		p.Signal(syscall.SIGKILL)
		for sc.Scan() {
			if r, err := ParseRef(sc.Text()); err == nil {
				stored = append(stored, r)
			}
		}
		st, _ := p.Wait()
		pr.Close()
		if st != nil && st.Exited() {
			t.Fatalf("round %d: the child exited by itself (%v): %s", round, st, stderr.String())
		}
	}

	clk := newClock()
	clk.t = time.Now()
	s, err := Open(dir, Options{Now: clk.Now})
	if err != nil {
		t.Fatalf("the store does not open after the crashes: %v", err)
	}
	defer s.Close()
	n, probs, err := s.Verify(ctx)
	if err != nil || len(probs) > 0 {
		t.Fatalf("Verify after the crashes: %v, problems %v", err, probs)
	}
	if n < len(stored) {
		t.Errorf("the store holds %d files, want at least the %d the child was told were stored", n, len(stored))
	}
	for _, r := range stored {
		if _, err := s.Get(ctx, Scope{Tenant: "acme", Tree: "crash"}, r); err != nil {
			t.Errorf("a file the child stored: %v", err)
		}
	}
	t.Logf("%d files stored across %d kills; %d temporary files left by the kills", len(stored), 5, countTemps(t, dir))
	clk.Add(2 * staleTemp)
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	if left := countTemps(t, dir); left != 0 {
		t.Errorf("GC left %d temporary files", left)
	}
}

func countTemps(t *testing.T, dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
			n++
		}
		return nil
	})
	return n
}

// TestConcurrent stores, reads, collects and erases from many goroutines
// through two handles on one directory, as two processes would.
func TestConcurrent(t *testing.T) {
	dir := t.TempDir()
	var handles [2]*Store
	for i := range handles {
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		handles[i] = s
	}
	shared := []byte("every worker stores this")
	var wg sync.WaitGroup
	errc := make(chan error, 1000)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s := handles[w%2]
			sc := Scope{Tenant: "acme", Tree: fmt.Sprintf("w%d", w)}
			for i := 0; i < 15; i++ {
				own := []byte(fmt.Sprintf("worker %d file %d %s", w, i, strings.Repeat("x", i*1000)))
				for _, data := range [][]byte{shared, own} {
					r, err := s.Put(ctx, sc, data)
					if err != nil {
						errc <- err
						return
					}
					got, err := s.Get(ctx, sc, r)
					if err != nil || !bytes.Equal(got, data) {
						errc <- fmt.Errorf("worker %d read back %d bytes, %v", w, len(got), err)
						return
					}
				}
				switch i % 5 {
				case 3:
					if _, err := s.GC(ctx); err != nil {
						errc <- err
					}
				case 4:
					if _, err := s.Erase(ctx, Erasure{Tenant: "acme", Job: sc.Tree}); err != nil {
						errc <- err
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if _, probs, err := handles[0].Verify(ctx); err != nil || len(probs) > 0 {
		t.Errorf("Verify: %v %v", probs, err)
	}
}
