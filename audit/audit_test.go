package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fixedClock ticks one second per call from a fixed start.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 11, 30, 9, 0, 0, 123, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func openTemp(t *testing.T) (*Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "audit.jsonl")
	l, err := Open(path, Options{Now: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

func sample(i int) Record {
	return Record{
		Kind: "decision", CallDigest: strings.Repeat(strconv.Itoa(i%10), 64),
		Verdict: "deny", Rule: "shell.args.git.deny[0]", Reason: fmt.Sprintf("call %d refused <&>\u2028", i),
		Decider: "policy",
		Fields: map[string]any{"argv": []string{"git", "push"}, "n": i, "big": int64(9007199254740993),
			"desc": struct {
				Tier      int      `json:"tier"`
				Mechanism string   `json:"mechanism"`
				Notes     []string `json:"notes,omitempty"`
			}{1, "bwrap", []string{"a<b"}}},
	}
}

// writeLog writes n sample records and returns the file's bytes.
func writeLog(t *testing.T, n int) []byte {
	t.Helper()
	l, path := openTemp(t)
	for i := 0; i < n; i++ {
		if err := l.Append(sample(i)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	_, path := openTemp(t)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("file mode: got %v, want 0600", got)
	}
	dst, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if got := dst.Mode().Perm(); got != 0o700 {
		t.Errorf("directory mode: got %v, want 0700", got)
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	good := writeLog(t, 3)
	tests := []struct {
		name  string
		setup func(path string)
		want  string
	}{
		{"symlink", func(path string) {
			os.WriteFile(path+".real", nil, 0o600)
			os.Symlink(path+".real", path)
		}, "open"},
		{"world writable", func(path string) {
			os.WriteFile(path, nil, 0o600)
			os.Chmod(path, 0o666)
		}, "others may write"},
		{"incomplete last record", func(path string) {
			os.WriteFile(path, good[:len(good)-5], 0o600)
		}, "incomplete"},
		{"edited last record", func(path string) {
			os.WriteFile(path, bytes.Replace(good, []byte("call 2 refused"), []byte("call 2 allowed"), 1), 0o600)
		}, "does not match its hash"},
		{"not a record", func(path string) {
			os.WriteFile(path, []byte("hello\n"), 0o600)
		}, "not an airlock audit record"},
	}
	for _, later := range []bool{false, true} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/TailLater=%v", tc.name, later), func(t *testing.T) {
				path := filepath.Join(dir, fmt.Sprintf("%s-%v", strings.ReplaceAll(tc.name, " ", "-"), later))
				tc.setup(path)
				before, _ := os.ReadFile(path)
				l, err := Open(path, Options{TailLater: later})
				if later && err == nil {
					// The tail is read in the background: Ready, and
					// every append, refuse it instead.
					err = l.Ready()
					if aerr := l.Append(sample(9)); err != nil && (aerr == nil || aerr.Error() != err.Error()) {
						t.Errorf("Append after Ready said %v: got %v, want the same refusal", err, aerr)
					}
					l.Close()
				}
				if err == nil {
					if !later {
						l.Close()
					}
					t.Fatalf("Open: got no error, want one containing %q", tc.want)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Open: got %q, want it to contain %q", err, tc.want)
				}
				after, _ := os.ReadFile(path)
				if !bytes.Equal(before, after) {
					t.Errorf("Open changed the file it refused")
				}
			})
		}
	}
}

// TestOpenTailLater: a sound log opened with TailLater is ready, and
// appends chain onto its last record as after an Open that read it.
func TestOpenTailLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, writeLog(t, 3), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, Options{TailLater: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(sample(3)); err != nil {
		t.Fatal(err)
	}
	if err := l.Ready(); err != nil {
		t.Fatal(err)
	}
	if seq, _ := l.Head(); seq != 4 {
		t.Errorf("Head: seq %d, want 4", seq)
	}
	l.Close()
	b, _ := os.ReadFile(path)
	if rep, err := Verify(bytes.NewReader(b)); err != nil || !rep.OK || rep.Records != 4 {
		t.Fatalf("got %+v, %v; want an OK chain of 4", rep, err)
	}
}

func TestAppendVerifyRoundTrip(t *testing.T) {
	b := writeLog(t, 5)
	rep, err := Verify(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Records != 5 || rep.LastSeq != 5 || len(rep.Head) != 64 {
		t.Fatalf("got %+v, want an OK report of 5 records", rep)
	}
	var got []Record
	if err := Read(bytes.NewReader(b), func(r Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("Read: got %d records, want 5", len(got))
	}
	r := got[2]
	if r.Seq != 3 || r.Prev != got[1].Hash || r.Reason != "call 2 refused <&>\u2028" || r.Decider != "policy" {
		t.Errorf("record 3: got %+v", r)
	}
	// Large integers survive: they are kept as written, not as float64.
	if diff := cmp.Diff("9007199254740993", fmt.Sprint(r.Fields["big"])); diff != "" {
		t.Errorf("big field (-want +got):\n%s", diff)
	}
	if want := time.Date(2026, 11, 30, 9, 0, 3, 123, time.UTC); !r.Time.Equal(want) {
		t.Errorf("time: got %v, want %v", r.Time, want)
	}
}

func TestReopenContinuesChain(t *testing.T) {
	l, path := openTemp(t)
	for i := 0; i < 3; i++ {
		if err := l.Append(sample(i)); err != nil {
			t.Fatal(err)
		}
	}
	seq, head := l.Head()
	l.Close()
	l2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if s2, h2 := l2.Head(); s2 != seq || h2 != head {
		t.Fatalf("reopened head: got %d %s, want %d %s", s2, h2, seq, head)
	}
	if err := l2.Append(sample(3)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	rep, _ := Verify(bytes.NewReader(b))
	if !rep.OK || rep.Records != 4 {
		t.Errorf("got %+v, want 4 records, OK", rep)
	}
}

func TestAppendRefusesBadRecords(t *testing.T) {
	l, _ := openTemp(t)
	if err := l.Append(Record{}); err == nil {
		t.Error("record without kind: got no error")
	}
	if err := l.Append(Record{Kind: "x", Fields: map[string]any{"c": make(chan int)}}); err == nil {
		t.Error("record that does not encode: got no error")
	}
	if seq, _ := l.Head(); seq != 0 {
		t.Errorf("refused records moved the chain to %d", seq)
	}
}

func lines(b []byte) [][]byte { return bytes.SplitAfter(b, []byte("\n")) }

func join(ls [][]byte) []byte { return bytes.Join(ls, nil) }

// forge builds a line that is internally consistent (its own hash matches)
// with the given seq and prev: what someone who knows the format writes.
func forge(t *testing.T, seq int64, prev, reason string) []byte {
	t.Helper()
	line, _, err := encode(Record{Seq: seq, Prev: prev, Time: time.Unix(0, 0), Kind: "decision", Verdict: "allow", Reason: reason, Decider: "policy"})
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func hashOfLine(t *testing.T, l []byte) string {
	t.Helper()
	rec, p := parseLine(bytes.TrimSuffix(l, []byte("\n")))
	if p != "" {
		t.Fatal(p)
	}
	return rec.Hash
}

func TestVerifyDetectsTampering(t *testing.T) {
	good := writeLog(t, 6)
	ls := lines(good) // 6 lines and a final empty element
	tests := []struct {
		name     string
		tamper   func() []byte
		opts     VerifyOptions
		wantKind string
		wantLine int
	}{
		{"edit a field", func() []byte {
			return bytes.Replace(good, []byte("call 2 refused"), []byte("call 2 allowed"), 1)
		}, VerifyOptions{}, ProblemEdited, 3},
		{"edit the hash", func() []byte {
			c := append([][]byte(nil), ls...)
			l := append([]byte(nil), c[1]...)
			i := bytes.LastIndex(l, []byte(`"}`)) - 1
			l[i] = map[bool]byte{true: '1', false: '0'}[l[i] == '0']
			c[1] = l
			return join(c)
		}, VerifyOptions{}, ProblemEdited, 2},
		{"edit with a recomputed hash", func() []byte {
			c := append([][]byte(nil), ls...)
			c[3] = forge(t, 4, hashOfLine(t, c[2]), "call 3 allowed")
			return join(c)
		}, VerifyOptions{}, ProblemChain, 5},
		{"delete a record", func() []byte {
			c := append([][]byte(nil), ls[:2]...)
			return join(append(c, ls[3:]...))
		}, VerifyOptions{}, ProblemMissing, 3},
		{"delete the first record", func() []byte { return join(ls[1:]) }, VerifyOptions{}, ProblemMissing, 1},
		{"insert a copy", func() []byte {
			c := append([][]byte(nil), ls[:3]...)
			c = append(c, ls[2])
			return join(append(c, ls[3:]...))
		}, VerifyOptions{}, ProblemOrder, 4},
		{"insert a forged record", func() []byte {
			c := append([][]byte(nil), ls[:3]...)
			c = append(c, forge(t, 4, hashOfLine(t, ls[2]), "inserted"))
			return join(append(c, ls[3:]...))
		}, VerifyOptions{}, ProblemOrder, 5},
		{"swap two records", func() []byte {
			c := append([][]byte(nil), ls...)
			c[2], c[3] = c[3], c[2]
			return join(c)
		}, VerifyOptions{}, ProblemMissing, 3},
		{"cut bytes from the middle", func() []byte {
			i := bytes.Index(good, []byte("call 1"))
			return append(append([]byte(nil), good[:i]...), good[i+400:]...)
		}, VerifyOptions{}, ProblemEdited, 2},
		{"truncated last line", func() []byte { return good[:len(good)-10] }, VerifyOptions{}, ProblemTruncatedTail, 6},
		{"blank line", func() []byte {
			c := append([][]byte(nil), ls[:2]...)
			c = append(c, []byte("\n"))
			return join(append(c, ls[2:]...))
		}, VerifyOptions{}, ProblemMalformed, 3},
		{"last records deleted, head known", func() []byte { return join(ls[:4]) },
			VerifyOptions{Head: hashOfLine(t, ls[5])}, ProblemHead, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := VerifyWith(bytes.NewReader(tc.tamper()), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK || len(rep.Problems) == 0 {
				t.Fatalf("got OK report %+v, want a %s problem", rep, tc.wantKind)
			}
			p := rep.Problems[0]
			if p.Kind != tc.wantKind || p.Line != tc.wantLine {
				t.Errorf("first problem: got %s at line %d (%s), want %s at line %d", p.Kind, p.Line, p.Detail, tc.wantKind, tc.wantLine)
			}
			if got, want := rep.TruncatedTail, tc.wantKind == ProblemTruncatedTail; got != want {
				t.Errorf("TruncatedTail: got %v, want %v", got, want)
			}
		})
	}
	t.Run("untouched with head", func(t *testing.T) {
		rep, _ := VerifyWith(bytes.NewReader(good), VerifyOptions{Head: hashOfLine(t, ls[3])})
		if !rep.OK {
			t.Errorf("a log that grew past the noted head: got %+v, want OK", rep)
		}
	})
}

// TestVerifyEveryByteFlip changes each byte of a small log in turn: every
// change must be reported.
func TestVerifyEveryByteFlip(t *testing.T) {
	good := writeLog(t, 3)
	for i := range good {
		for _, delta := range []byte{1, 0x20} {
			b := append([]byte(nil), good...)
			b[i] ^= delta
			rep, err := Verify(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK {
				t.Fatalf("byte %d (%q) xor %#x: got OK, want a problem", i, good[i], delta)
			}
		}
	}
}

func TestConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	// Two Logs on the same file stand in for two processes: each has its
	// own open file description, so only flock keeps them apart.
	a, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errc := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		l := a
		if w%2 == 1 {
			l = b
		}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := l.Append(sample(w*each + i)); err != nil {
					errc <- err
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	rep, err := Verify(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Records != workers*each {
		t.Fatalf("got %+v, want %d records, OK", rep, workers*each)
	}
}

// TestCrossProcessAppend runs this test binary as child processes that
// append to the same log as the parent.
func TestCrossProcessAppend(t *testing.T) {
	if path := os.Getenv("AIRLOCK_AUDIT_CHILD"); path != "" {
		l, err := Open(path, Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		for i := 0; i < 50; i++ {
			if err := l.Append(Record{Kind: "child", Fields: map[string]any{"pid": os.Getpid(), "i": i}}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(4)
			}
		}
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip("cannot find the test binary:", err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	parent, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	var procs []*os.Process
	for i := 0; i < 3; i++ {
		p, err := os.StartProcess(exe, []string{exe, "-test.run=^TestCrossProcessAppend$"}, &os.ProcAttr{
			Env:   append(os.Environ(), "AIRLOCK_AUDIT_CHILD="+path),
			Files: []*os.File{nil, os.Stderr, os.Stderr},
		})
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	for i := 0; i < 50; i++ {
		if err := parent.Append(Record{Kind: "parent"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range procs {
		st, err := p.Wait()
		if err != nil || !st.Success() {
			t.Fatalf("child: %v %v", st, err)
		}
	}
	data, _ := os.ReadFile(path)
	rep, _ := Verify(bytes.NewReader(data))
	if !rep.OK || rep.Records != 200 {
		t.Fatalf("got %+v, want 200 records, OK", rep)
	}
}

func TestDefaultPath(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"xdg", map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, "/s/airlock/audit.jsonl"},
		{"home", map[string]string{"HOME": "/h"}, "/h/.local/state/airlock/audit.jsonl"},
		{"relative xdg ignored", map[string]string{"XDG_STATE_HOME": "s", "HOME": "/h"}, "/h/.local/state/airlock/audit.jsonl"},
		{"nothing", map[string]string{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DefaultPath(func(k string) string { return tc.env[k] })
			if got != tc.want || (err == nil) != (tc.want != "") {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	a, err := Digest(map[string]any{"argv": []string{"ls"}, "cwd": "/w"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Digest(map[string]any{"cwd": "/w", "argv": []string{"ls"}})
	c, _ := Digest(map[string]any{"cwd": "/w", "argv": []string{"ls", "-a"}})
	if a != b || a == c || len(a) != 64 {
		t.Errorf("got %s %s %s: want equal calls equal, different calls different", a, b, c)
	}
}

func FuzzVerify(f *testing.F) {
	good := writeLogF(f, 3)
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"seq":1,"time":"x","kind":"k","prev":"","hash":"` + strings.Repeat("0", 64) + `"}` + "\n"))
	f.Add(bytes.Repeat([]byte("\n"), 5))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Verify(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Verify of bytes in memory failed: %v", err)
		}
		if rep.OK {
			// Whatever Verify accepts, Read must decode completely and
			// the chain must hold.
			n := 0
			prev := ""
			Read(bytes.NewReader(data), func(r Record) error {
				n++
				if r.Seq != int64(n) || r.Prev != prev {
					t.Fatalf("accepted log has record %d with seq %d", n, r.Seq)
				}
				prev = r.Hash
				return nil
			})
			if n != rep.Records {
				t.Fatalf("Verify counted %d records, Read %d", rep.Records, n)
			}
		}
	})
}

func writeLogF(f *testing.F, n int) []byte {
	path := filepath.Join(f.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{Now: fixedClock()})
	if err != nil {
		f.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < n; i++ {
		if err := l.Append(sample(i)); err != nil {
			f.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	return b
}

// TestOpenRefusesSteeredPaths: a hard link to a host file at the log's
// name, a log in a directory the box may write, and a directory on the way
// replaced by a link in a directory others may write are refused, and the
// file they point at is left as it was. The old open (O_APPEND|O_CREATE|
// O_NOFOLLOW on the path) is first seen to append through the hard link.
func TestOpenRefusesSteeredPaths(t *testing.T) {
	victimText := []byte("root:x:0:0::/root:/bin/sh\n")
	tests := []struct {
		name  string
		setup func(t *testing.T, base, victim string) (string, Options)
		want  string
	}{
		{"hard link to a host file", func(t *testing.T, base, victim string) (string, Options) {
			path := filepath.Join(base, "audit.jsonl")
			if err := os.Link(victim, path); err != nil {
				t.Fatal(err)
			}
			old, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			old.WriteString("x")
			old.Close()
			if b, _ := os.ReadFile(victim); bytes.Equal(b, victimText) {
				t.Fatal("the old open did not reach the victim: the test shows nothing")
			}
			os.WriteFile(victim, victimText, 0o600)
			return path, Options{}
		}, "hard link"},
		{"in a directory the box may write", func(t *testing.T, base, victim string) (string, Options) {
			return filepath.Join(base, "state", "audit.jsonl"), Options{BoxWritable: []string{base}}
		}, "writable by the box"},
		{"link through a directory others may write", func(t *testing.T, base, victim string) (string, Options) {
			shared := filepath.Join(base, "shared")
			os.Mkdir(shared, 0o777)
			os.Chmod(shared, 0o777)
			os.Symlink(filepath.Dir(victim), filepath.Join(shared, "state"))
			return filepath.Join(shared, "state", "victim"), Options{}
		}, "others"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			outside := t.TempDir()
			victim := filepath.Join(outside, "victim")
			if err := os.WriteFile(victim, victimText, 0o600); err != nil {
				t.Fatal(err)
			}
			path, o := tt.setup(t, base, victim)
			l, err := Open(path, o)
			if err == nil {
				l.Append(sample(1))
				l.Close()
				t.Fatalf("Open(%s) succeeded; want a refusal", path)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want it to mention %q", err, tt.want)
			}
			if b, _ := os.ReadFile(victim); !bytes.Equal(b, victimText) {
				t.Errorf("victim changed: %q", b)
			}
		})
	}
}

// TestLastLine: the last line is found whatever its length against the
// reads lastLine makes (the first small, each next one twice as big),
// after another line or as the file's only one.
func TestLastLine(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, firstChunk - 2, firstChunk - 1, firstChunk, firstChunk + 1, 3*firstChunk + 7, maxChunk + 5, 5*maxChunk + 3} {
		for _, before := range []string{"", "an earlier record\n"} {
			name := fmt.Sprintf("%d bytes after %q", n, before)
			t.Run(name, func(t *testing.T) {
				last := bytes.Repeat([]byte("x"), n)
				content := append(append([]byte(before), last...), '\n')
				path := filepath.Join(dir, fmt.Sprintf("%d-%d", n, len(before)))
				if err := os.WriteFile(path, content, 0o600); err != nil {
					t.Fatal(err)
				}
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				got, err := lastLine(f, int64(len(content)))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, last) {
					t.Errorf("got %d bytes, want the %d of the last line", len(got), len(last))
				}
			})
		}
	}
}
