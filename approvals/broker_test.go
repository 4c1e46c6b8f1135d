package approvals

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/policy"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// fakeClock fires After channels only when the test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []fakeTimer
	waiting chan time.Duration
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), waiting: make(chan time.Duration, 100)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	ch := make(chan time.Time, 1)
	c.timers = append(c.timers, fakeTimer{c.now.Add(d), ch})
	c.mu.Unlock()
	c.waiting <- d
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- c.now
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

// socketDir makes a short private directory (Unix socket paths are short).
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "alk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sub := filepath.Join(dir, "s")
	return sub
}

func gitPush() Request {
	argv := []string{"git", "push", "origin", "main"}
	g, err := policy.GrantFor(policy.Call{Argv: argv}, time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	if err != nil {
		panic(err)
	}
	return Request{Kind: "argv", Argv: argv, Category: "shell", Rule: "shell.args.git.escalate[0]", Reason: "git push needs approval", Grant: &g}
}

type asked struct {
	o  Outcome
	ok chan struct{}
}

// ask runs b.Ask in the background.
func ask(b *Broker, req Request, timeout time.Duration) *asked {
	a := &asked{ok: make(chan struct{})}
	go func() {
		a.o = b.Ask(context.Background(), req, timeout)
		close(a.ok)
	}()
	return a
}

func (a *asked) wait(t *testing.T) Outcome {
	t.Helper()
	select {
	case <-a.ok:
		return a.o
	case <-time.After(20 * time.Second):
		t.Fatal("Ask did not return")
	}
	return Outcome{}
}

// waitPending polls the socket directory until n escalations are pending.
func waitPending(t *testing.T, dir string, n int) []Pending {
	t.Helper()
	for i := 0; i < 2000; i++ {
		ps, err := List(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) >= n {
			return ps
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never saw %d pending escalations", n)
	return nil
}

func newBroker(t *testing.T, opts Options) *Broker {
	t.Helper()
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestSocketDecide(t *testing.T) {
	tests := []struct {
		name    string
		answer  Answer
		grant   func(p Pending) string
		want    Answer
		decider string
		saved   bool
	}{
		{"allow once", AllowOnce, nil, AllowOnce, "person:tester", false},
		{"deny", Deny, nil, Deny, "person:tester", false},
		{"allow always", AllowAlways, func(p Pending) string { return p.Grant }, AllowAlways, "person:tester", true},
		{"allow always, other grant text", AllowAlways, func(p Pending) string { return strings.Replace(p.Grant, "main", "*", 1) }, Error, "error", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := socketDir(t)
			grants := filepath.Join(t.TempDir(), "grants.yaml")
			logPath := filepath.Join(t.TempDir(), "audit.jsonl")
			lg, err := audit.Open(logPath, audit.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer lg.Close()
			b := newBroker(t, Options{SocketDir: dir, GrantsFile: grants, Person: "tester", Audit: lg})
			a := ask(b, gitPush(), time.Hour)
			ps := waitPending(t, dir, 1)
			p := ps[0]
			if p.Pid != os.Getpid() || !strings.HasPrefix(p.ID, fmt.Sprint(os.Getpid())+"-") || p.Reason != "git push needs approval" {
				t.Fatalf("pending: got %+v", p)
			}
			if want := `{"kind": "argv", "argv": ["git", "push", "origin", "main"], "created": "2026-11-30T10:00:00Z"}`; p.Grant != want {
				t.Errorf("grant line:\n got %s\nwant %s", p.Grant, want)
			}
			grant := ""
			if tc.grant != nil {
				grant = tc.grant(p)
			}
			d, derr := Decide(context.Background(), dir, p.ID, tc.answer, grant)
			o := a.wait(t)
			if o.Answer != tc.want || o.Decider != tc.decider {
				t.Fatalf("outcome: got %v by %q (%v), want %v by %q", o.Answer, o.Decider, o.Err, tc.want, tc.decider)
			}
			if (derr == nil) != (tc.want != Error) {
				t.Errorf("Decide error: got %v", derr)
			}
			gs, err := LoadGrants(grants)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(gs) == 1; got != tc.saved {
				t.Fatalf("grants saved: got %v, want %v", gs, tc.saved)
			}
			if tc.saved {
				if d.Saved != p.Grant || d.File != grants || o.GrantsFile != grants {
					t.Errorf("decision: got %+v, want the grant line shown", d)
				}
				if diff := cmp.Diff(*gitPush().Grant, gs[0]); diff != "" {
					t.Errorf("saved grant (-want +got):\n%s", diff)
				}
				f, _ := os.Open(logPath)
				defer f.Close()
				var kinds []string
				audit.Read(f, func(r audit.Record) error { kinds = append(kinds, r.Kind+" "+r.Decider); return nil })
				if diff := cmp.Diff([]string{"grant.saved person:tester"}, kinds); diff != "" {
					t.Errorf("audit records (-want +got):\n%s", diff)
				}
			}
			// The question is over: a second answer finds nothing.
			if _, err := Decide(context.Background(), dir, p.ID, AllowOnce, ""); err == nil {
				t.Error("second answer: got no error")
			}
		})
	}
}

func TestMalformedSocketAnswerDenies(t *testing.T) {
	dir := socketDir(t)
	b := newBroker(t, Options{SocketDir: dir})
	a := ask(b, gitPush(), time.Hour)
	p := waitPending(t, dir, 1)[0]
	rep := rawCall(t, b.SocketPath(), fmt.Sprintf(`{"op":"decide","id":%q,"answer":"yes please"}`, p.ID))
	if !strings.Contains(rep, "denied") {
		t.Errorf("reply: got %s, want it to say the call was denied", rep)
	}
	o := a.wait(t)
	if o.Answer != Error || o.Decider != "error" || o.Err == nil {
		t.Errorf("got %v by %q (%v), want an error denial", o.Answer, o.Decider, o.Err)
	}
	if o.Answer.Allowed() {
		t.Error("a malformed answer allowed the call")
	}
}

func rawCall(t *testing.T, path, line string) string {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintln(c, line)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	rep, _ := bufio.NewReader(c).ReadString('\n')
	return rep
}

func TestTimeoutDenies(t *testing.T) {
	clk := newFakeClock()
	dir := socketDir(t)
	b := newBroker(t, Options{SocketDir: dir, Clock: clk})
	a := ask(b, gitPush(), 0)
	if d := <-clk.waiting; d != DefaultTimeout {
		t.Errorf("timeout: got %v, want %v", d, DefaultTimeout)
	}
	p := waitPending(t, dir, 1)[0]
	if got := p.Deadline.Sub(p.Created); got != 30*time.Second {
		t.Errorf("deadline: got %v after creation, want 30s", got)
	}
	clk.Advance(29 * time.Second)
	if ps, _ := List(context.Background(), dir); len(ps) != 1 {
		t.Fatalf("after 29s: got %d pending, want 1", len(ps))
	}
	clk.Advance(time.Second)
	o := a.wait(t)
	if o.Answer != Timeout || o.Decider != "timeout" {
		t.Fatalf("got %v by %q, want timeout", o.Answer, o.Decider)
	}
	if _, err := Decide(context.Background(), dir, p.ID, AllowOnce, ""); err == nil {
		t.Error("answer after the timeout: got no error")
	}
	if ps, _ := List(context.Background(), dir); len(ps) != 0 {
		t.Errorf("after the timeout: got %d pending, want 0", len(ps))
	}
}

func TestNobodyToAskTimesOut(t *testing.T) {
	clk := newFakeClock()
	b := newBroker(t, Options{Clock: clk})
	a := ask(b, gitPush(), 5*time.Second)
	<-clk.waiting
	clk.Advance(5 * time.Second)
	if o := a.wait(t); o.Answer != Timeout {
		t.Errorf("got %v, want timeout", o.Answer)
	}
}

func TestContextAndCloseDeny(t *testing.T) {
	b := newBroker(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Outcome)
	go func() { done <- b.Ask(ctx, gitPush(), time.Hour) }()
	cancel()
	if o := <-done; o.Answer != Error || o.Err == nil {
		t.Errorf("cancelled: got %v (%v), want an error denial", o.Answer, o.Err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer dcancel()
	if o := b.Ask(dctx, gitPush(), time.Hour); o.Answer != Timeout || o.Decider != "timeout" {
		t.Errorf("caller's deadline: got %v by %q, want a timeout", o.Answer, o.Decider)
	}
	go func() { done <- b.Ask(context.Background(), gitPush(), time.Hour) }()
	time.Sleep(10 * time.Millisecond)
	b.Close()
	if o := <-done; o.Answer != Error {
		t.Errorf("closed: got %v, want an error denial", o.Answer)
	}
}

// term is a terminal made of pipes: the test types into in and reads
// what the broker writes from out.
type term struct {
	io.Reader
	io.Writer
	in  *io.PipeWriter
	out *bufio.Reader
}

func newTerm(t *testing.T) *term {
	ir, iw := io.Pipe()
	or, ow := io.Pipe()
	t.Cleanup(func() { iw.Close(); ow.Close() })
	return &term{Reader: ir, Writer: ow, in: iw, out: bufio.NewReader(or)}
}

// readPrompt reads what the broker wrote up to the question mark.
func (tm *term) readPrompt(t *testing.T) string {
	t.Helper()
	var s strings.Builder
	for !strings.HasSuffix(s.String(), "? ") {
		r, _, err := tm.out.ReadRune()
		if err != nil {
			t.Fatalf("reading the prompt: %v (so far %q)", err, s.String())
		}
		s.WriteRune(r)
	}
	return s.String()
}

func TestTerminalAnswers(t *testing.T) {
	tests := []struct {
		name, typed string
		grant       bool
		want        Answer
		decider     string
		result      string
	}{
		{"once", "o\n", true, AllowOnce, "person:tester", "allowed once"},
		{"once spelled out", " allow-once \n", true, AllowOnce, "person:tester", "allowed once"},
		{"always", "a\n", true, AllowAlways, "person:tester", "grant saved"},
		{"deny", "d\n", true, Deny, "person:tester", "denied (person:tester, terminal)"},
		{"malformed", "yes\n", true, Error, "error", "denied: "},
		{"empty line", "\n", true, Error, "error", "denied: "},
		{"always when not offered", "a\n", false, Error, "error", "not offered"},
		{"terminal closed", "", true, Error, "error", "terminal was closed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tm := newTerm(t)
			grants := filepath.Join(t.TempDir(), "grants.yaml")
			b := newBroker(t, Options{Terminal: tm, GrantsFile: grants, Person: "tester"})
			req := gitPush()
			if !tc.grant {
				req.Grant, req.NoGrant = nil, "python -c runs inline code"
			}
			a := ask(b, req, time.Hour)
			prompt := tm.readPrompt(t)
			if tc.grant != strings.Contains(prompt, "[a]lways") {
				t.Errorf("prompt offers always: got %v, want %v:\n%s", !tc.grant, tc.grant, prompt)
			}
			if tc.typed == "" {
				tm.in.Close()
			} else {
				io.WriteString(tm.in, tc.typed)
			}
			o := a.wait(t)
			res, _ := tm.out.ReadString('\n')
			if o.Answer != tc.want || o.Decider != tc.decider {
				t.Errorf("got %v by %q (%v), want %v by %q", o.Answer, o.Decider, o.Err, tc.want, tc.decider)
			}
			if o.Answer != Error && o.Via != "terminal" {
				t.Errorf("via: got %q, want terminal", o.Via)
			}
			if !strings.Contains(res, tc.result) {
				t.Errorf("result line: got %q, want it to contain %q", res, tc.result)
			}
			gs, _ := LoadGrants(grants)
			if got, want := len(gs), map[bool]int{true: 1, false: 0}[tc.want == AllowAlways]; got != want {
				t.Errorf("grants saved: got %d, want %d", got, want)
			}
		})
	}
}

// TestFirstAnswerWins answers on the socket while the terminal shows the
// question: the terminal is told, and its late answer changes nothing.
func TestFirstAnswerWins(t *testing.T) {
	tm := newTerm(t)
	dir := socketDir(t)
	b := newBroker(t, Options{Terminal: tm, SocketDir: dir, Person: "tester"})
	a := ask(b, gitPush(), time.Hour)
	tm.readPrompt(t)
	p := waitPending(t, dir, 1)[0]
	if _, err := Decide(context.Background(), dir, p.ID, Deny, ""); err != nil {
		t.Fatal(err)
	}
	o := a.wait(t)
	if o.Answer != Deny || !strings.HasPrefix(o.Via, "socket") {
		t.Fatalf("got %v via %q, want deny via the socket", o.Answer, o.Via)
	}
	tm.out.ReadString('\n') // the newline that ends the unanswered prompt
	res, _ := tm.out.ReadString('\n')
	if !strings.Contains(res, "denied") {
		t.Errorf("terminal told: got %q, want the denial", res)
	}
}

// TestQuestionsQueueOnTerminal asks two questions at once: the terminal
// shows one, then the other.
func TestQuestionsQueueOnTerminal(t *testing.T) {
	tm := newTerm(t)
	b := newBroker(t, Options{Terminal: tm, Person: "tester"})
	r1, r2 := gitPush(), gitPush()
	r1.Reason, r2.Reason = "first", "second"
	a1 := ask(b, r1, time.Hour)
	p1 := tm.readPrompt(t)
	a2 := ask(b, r2, time.Hour)
	io.WriteString(tm.in, "o\n")
	tm.out.ReadString('\n')
	p2 := tm.readPrompt(t)
	io.WriteString(tm.in, "d\n")
	if o := a1.wait(t); o.Answer != AllowOnce || !strings.Contains(p1, "first") {
		t.Errorf("first: got %v after prompt %q", o.Answer, p1)
	}
	if o := a2.wait(t); o.Answer != Deny || !strings.Contains(p2, "second") {
		t.Errorf("second: got %v after prompt %q", o.Answer, p2)
	}
}

func TestListGathersEveryProcess(t *testing.T) {
	dir := socketDir(t)
	b1 := newBroker(t, Options{SocketDir: dir, Pid: 1001})
	b2 := newBroker(t, Options{SocketDir: dir, Pid: 1002})
	a1 := ask(b1, gitPush(), time.Hour)
	a2 := ask(b2, gitPush(), time.Hour)
	// A socket whose process is gone is cleaned up by List.
	stale := filepath.Join(dir, "approvals-999999.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	ps := waitPending(t, dir, 2)
	pids := map[int]bool{}
	for _, p := range ps {
		pids[p.Pid] = true
	}
	if !pids[1001] || !pids[1002] {
		t.Errorf("pids: got %v, want 1001 and 1002", pids)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale socket: got %v, want it removed", err)
	}
	for _, p := range ps {
		if _, err := Decide(context.Background(), dir, p.ID, Deny, ""); err != nil {
			t.Fatal(err)
		}
	}
	if a1.wait(t).Answer != Deny || a2.wait(t).Answer != Deny {
		t.Error("want both denied")
	}
	got, err := Find(context.Background(), dir, "1001-00000000")
	if err == nil {
		t.Errorf("Find of an unknown id: got %+v", got)
	}
}

func TestSocketDirRefused(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o755)
	link := filepath.Join(base, "link")
	os.Symlink(t.TempDir(), link)
	for _, dir := range []string{open, link} {
		if _, err := New(Options{SocketDir: dir}); err == nil {
			t.Errorf("%s: got a broker, want a refusal", dir)
		}
		if _, err := List(context.Background(), dir); err == nil {
			t.Errorf("List %s: got no error, want a refusal", dir)
		}
	}
	if _, err := Decide(context.Background(), open, "../../x-1", Deny, ""); err == nil {
		t.Error("Decide with a path in the id: got no error")
	}
}

func TestSocketModes(t *testing.T) {
	dir := socketDir(t)
	b := newBroker(t, Options{SocketDir: dir})
	a := ask(b, gitPush(), time.Hour)
	waitPending(t, dir, 1)
	for path, want := range map[string]os.FileMode{dir: 0o700, b.SocketPath(): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: got mode %v, want %v", path, got, want)
		}
	}
	b.Close()
	a.wait(t)
	if _, err := os.Stat(b.SocketPath()); !os.IsNotExist(err) {
		t.Errorf("socket after Close: got %v, want it gone", err)
	}
}

// TestSocketAtFirstEscalation: a broker makes its socket only when it
// first puts a call to a person (until then it serves nothing), and a
// socket that cannot be made then (its directory opened to others since
// New checked it) fails that call, and every later one, closed.
func TestSocketAtFirstEscalation(t *testing.T) {
	dir := socketDir(t)
	b := newBroker(t, Options{SocketDir: dir})
	if p := b.SocketPath(); p != "" {
		t.Fatalf("socket before any escalation: %q, want none", p)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("socket directory before any escalation: %v %v, want it empty", ents, err)
	}
	a := ask(b, gitPush(), time.Hour)
	if ps := waitPending(t, dir, 1); len(ps) != 1 || b.SocketPath() == "" {
		t.Fatalf("pending %v, socket %q; want the call listed on the broker's socket", ps, b.SocketPath())
	}
	if _, err := Decide(context.Background(), dir, waitPending(t, dir, 1)[0].ID, Deny, ""); err != nil {
		t.Fatal(err)
	}
	if o := a.wait(t); o.Answer != Deny {
		t.Errorf("answer %v, want deny", o.Answer)
	}

	dir2 := socketDir(t)
	b2 := newBroker(t, Options{SocketDir: dir2})
	if err := os.Chmod(dir2, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if o := ask(b2, gitPush(), time.Hour).wait(t); o.Answer != Error || o.Err == nil {
			t.Fatalf("escalation %d with the socket's directory open to others: %v (%v), want an error", i, o.Answer, o.Err)
		}
	}
	if ents, _ := os.ReadDir(dir2); len(ents) != 0 {
		t.Errorf("socket directory %v, want no socket made there", ents)
	}
}

// TestOtherUserRefused connects as another uid. The directory and socket
// are opened up first so that the file system does not stop it; with the
// peer check off the attack lists the pending call and denies it, with
// the check on it gets nothing.
func TestOtherUserRefused(t *testing.T) {
	if path := os.Getenv("AIRLOCK_APPROVALS_ATTACK"); path != "" {
		// AIRLOCK_APPROVALS_ATTACK_N dials that many times first (a box
		// flooding the socket), then once more to report.
		n, _ := strconv.Atoi(os.Getenv("AIRLOCK_APPROVALS_ATTACK_N"))
		for i := 0; i < n; i++ {
			if c, err := net.Dial("unix", path); err == nil {
				io.Copy(io.Discard, c)
				c.Close()
			}
		}
		c, err := net.Dial("unix", path)
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(0)
		}
		fmt.Fprintln(c, `{"op":"list"}`)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		rep, err := bufio.NewReader(c).ReadString('\n')
		fmt.Printf("reply:%s err:%v\n", strings.TrimSpace(rep), err)
		os.Exit(0)
	}
	testsupport.Require(t, testsupport.Root) // to run a child as another uid
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	// The test binary must be reachable by the other user.
	pub, err := os.MkdirTemp("", "alkpub")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(pub)
	os.Chmod(pub, 0o755)
	bin := filepath.Join(pub, "approvals.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	attack := func(sock string) string {
		r, w, _ := os.Pipe()
		defer r.Close()
		p, err := os.StartProcess(bin, []string{bin, "-test.run=^TestOtherUserRefused$"}, &os.ProcAttr{
			Env:   []string{"AIRLOCK_APPROVALS_ATTACK=" + sock},
			Files: []*os.File{nil, w, w},
			Sys:   &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}},
		})
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(r)
		p.Wait()
		return string(out)
	}
	for _, check := range []bool{false, true} {
		t.Run(fmt.Sprintf("peer check %v", check), func(t *testing.T) {
			dir := filepath.Join(pub, fmt.Sprintf("s%v", check))
			b := newBroker(t, Options{SocketDir: dir})
			b.skipPeerCheck.Store(!check)
			a := ask(b, gitPush(), time.Hour)
			waitPending(t, dir, 1)
			os.Chmod(dir, 0o711)
			os.Chmod(b.SocketPath(), 0o666)
			out := attack(b.SocketPath())
			leaked := strings.Contains(out, "git push needs approval")
			if leaked == check {
				t.Errorf("with the check %v: attacker saw the call = %v; output %q", check, leaked, out)
			}
			os.Chmod(dir, 0o700)
			b.Close()
			a.wait(t)
		})
	}
}

func TestDenialCodes(t *testing.T) {
	tests := []struct {
		a    Answer
		code string
	}{
		{AllowOnce, ""}, {AllowAlways, ""}, {Deny, "POLICY_DENIED"}, {Timeout, "ESCALATION_TIMEOUT"}, {Error, "ESCALATION_ERROR"}, {Answer(77), "ESCALATION_ERROR"},
	}
	for _, tc := range tests {
		t.Run(tc.a.String(), func(t *testing.T) {
			err := Outcome{Answer: tc.a}.Denial("shell", "git push needs approval")
			got := ""
			if err != nil {
				var d struct{ Code string }
				b, _ := json.Marshal(err)
				json.Unmarshal(b, &d)
				got = d.Code
			}
			if got != tc.code {
				t.Errorf("got %q, want %q", got, tc.code)
			}
		})
	}
}

// TestBoxedPeerRefused connects from inside a bubblewrap box (new user,
// mount and pid namespaces; the same uid seen from outside) with the
// socket made visible in it, as a careless policy might. With the
// namespace check off the boxed process lists the pending call; with it on
// it gets nothing.
func TestBoxedPeerRefused(t *testing.T) {
	const bwrap = "/usr/bin/bwrap"
	testsupport.Require(t, testsupport.Bwrap)
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	attack := func(t *testing.T, sock string) string {
		r, w, _ := os.Pipe()
		defer r.Close()
		argv := []string{bwrap, "--unshare-user", "--unshare-pid", "--die-with-parent",
			"--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
			"--", exe, "-test.run=^TestOtherUserRefused$"}
		p, err := os.StartProcess(bwrap, argv, &os.ProcAttr{
			Env:   []string{"AIRLOCK_APPROVALS_ATTACK=" + sock},
			Files: []*os.File{nil, w, w},
		})
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(r)
		st, _ := p.Wait()
		if !strings.Contains(string(out), "reply:") {
			testsupport.Missing(t, "bubblewrap cannot make a box here (%v): %s", st, out)
		}
		return string(out)
	}
	for _, check := range []bool{false, true} {
		t.Run(fmt.Sprintf("namespace check %v", check), func(t *testing.T) {
			dir := socketDir(t)
			b := newBroker(t, Options{SocketDir: dir})
			b.skipNamespaceCheck.Store(!check)
			a := ask(b, gitPush(), time.Hour)
			waitPending(t, dir, 1)
			out := attack(t, b.SocketPath())
			leaked := strings.Contains(out, "git push needs approval")
			if leaked == check {
				t.Errorf("with the check %v: the boxed process saw the call = %v; output %q", check, leaked, out)
			}
			b.Close()
			a.wait(t)
		})
	}
}

// TestSocketAppearsListening holds that a broker's socket is never there
// without a listener: List removes a socket that refuses a connection as a
// dead process's, so one seen between its bind and its listen was removed,
// and the broker's escalations were never listed again.
func TestSocketAppearsListening(t *testing.T) {
	for i := 0; i < 50; i++ {
		dir := socketDir(t)
		b := newBroker(t, Options{SocketDir: dir, Pid: 1001})
		path := filepath.Join(dir, sockPrefix+"1001"+sockSuffix)
		stop := make(chan struct{})
		refused := make(chan bool, 1)
		go func() {
			seen := false
			for {
				select {
				case <-stop:
					refused <- seen
					return
				default:
				}
				c, err := net.Dial("unix", path)
				if err == nil {
					c.Close()
				} else if errors.Is(err, syscall.ECONNREFUSED) {
					seen = true
				}
			}
		}()
		a := ask(b, gitPush(), time.Hour)
		waitPending(t, dir, 1)
		close(stop)
		if <-refused {
			t.Fatalf("round %d: the socket refused a connection while its broker was up", i)
		}
		b.Close()
		a.wait(t)
	}
}
