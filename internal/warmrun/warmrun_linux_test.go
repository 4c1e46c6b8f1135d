package warmrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/internal/warmhand"
)

// The test binary is its own client and server: roleEnv picks the role a
// re-executed copy plays.
const (
	roleEnv = "WARMRUN_TEST_ROLE"
	dirEnv  = "WARMRUN_TEST_DIR"
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "client", "raw-client":
		os.Exit(clientRole(os.Getenv(roleEnv) == "raw-client"))
	case "chroot-client":
		os.Exit(chrootClientRole())
	case "dying-server":
		os.Exit(dyingServerRole())
	case "fd-sender":
		os.Exit(fdSenderRole())
	case "send-then-exec":
		os.Exit(sendThenExecRole())
	case "exec-on-challenge":
		os.Exit(execOnChallengeRole())
	case "answer-on-3":
		os.Exit(answerOn3Role())
	case "landlocked":
		os.Exit(landlockedRole())
	case "hand-client":
		os.Exit(handClientRole())
	case "idle":
		time.Sleep(time.Second)
		fmt.Println("idle-done")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// clientRole hands `echo` over to the server in $WARMRUN_TEST_DIR and prints
// the outcome; raw skips the client's own check of the server (what a
// hostile process would do) and sends straight away.
func clientRole(raw bool) int {
	if m := os.Getenv("WARMRUN_TEST_UMASK"); m != "" {
		n, _ := strconv.ParseUint(m, 8, 32)
		unix.Umask(int(n))
	}
	wd, _ := os.Getwd()
	req := Request{Args: testArgs(), Env: []string{"A=1"}, Dir: wd}
	dir := os.Getenv(dirEnv)
	var r Result
	if raw {
		c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(dir), Net: "unixpacket"})
		if err != nil {
			fmt.Printf("outcome=dial-failed reason=%v\n", err)
			return 0
		}
		r = exchange(context.Background(), c, req, []int{0, 1, 2})
	} else {
		r = HandOver(context.Background(), dir, req, []int{0, 1, 2})
	}
	fmt.Printf("outcome=%d code=%d reason=%s warn=%s\n", r.Outcome, r.Code, r.Reason, r.Warn)
	return 0
}

// chrootClientRole connects to the server in $WARMRUN_TEST_DIR, then
// chroots to the empty directory $WARMRUN_TEST_JAIL (its namespaces and
// working directory stay the server's) and sends its request: its paths
// are now the jail's, not the server's.
func chrootClientRole() int {
	wd, _ := os.Getwd()
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(os.Getenv(dirEnv)), Net: "unixpacket"})
	if err != nil {
		fmt.Printf("outcome=dial-failed reason=%v\n", err)
		return 0
	}
	if err := unix.Chroot(os.Getenv("WARMRUN_TEST_JAIL")); err != nil {
		fmt.Printf("outcome=chroot-failed reason=%v\n", err)
		return 0
	}
	// By hand: in the jail there is no /proc to read the server's proof
	// through, and a hostile client answers anyway.
	handExchange(c, Request{Args: []string{"--", "echo"}, Env: []string{"A=1"}, Dir: wd})
	return 0
}

// fdSenderRole sends a request on descriptor 3, a connection another
// process made (and the server checked), as a forked child of a confined
// connector would, answering any challenge itself.
func fdSenderRole() int {
	c, err := net.FileConn(os.NewFile(3, "conn"))
	if err != nil {
		fmt.Printf("outcome=no-conn reason=%v\n", err)
		return 0
	}
	wd, _ := os.Getwd()
	r := exchange(context.Background(), c.(*net.UnixConn), Request{Args: []string{"--", "echo"}, Env: []string{"A=1"}, Dir: wd}, []int{0, 1, 2})
	fmt.Printf("outcome=%d code=%d reason=%s warn=%s\n", r.Outcome, r.Code, r.Reason, r.Warn)
	return 0
}

// sendThenExecRole connects, sends its request, and execs this binary as
// "idle": the connecting pid then runs the same program the server
// checks, which holds the connection (left open across the exec) and
// answers no challenge. It execs only once the server has said something
// (the challenge, or an answer where there is none): its facts were read
// as the connector's, not mid-exec, so what the server decides is the
// same on every run.
func sendThenExecRole() int {
	c := sendRequest()
	if c == nil {
		return 0
	}
	f, err := c.File()
	if err == nil {
		_, err = unix.FcntlInt(f.Fd(), unix.F_SETFD, 0)
	}
	if err == nil {
		err = awaitReadable(int(f.Fd()), 30*time.Second)
	}
	if err != nil {
		fmt.Printf("outcome=no-fd reason=%v\n", err)
		return 0
	}
	self, _ := os.Executable()
	return execAs(self, "idle")
}

// awaitReadable waits until fd has something to read, or gives up after d.
func awaitReadable(fd int, d time.Duration) error {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(d.Milliseconds()))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case n == 0:
			return fmt.Errorf("the server said nothing in %s", d)
		}
		return nil
	}
}

// sendRequest connects to the server in $WARMRUN_TEST_DIR and sends a
// request with descriptors 0, 1 and 2; nil (having said why) when it
// cannot.
func sendRequest() *net.UnixConn {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(os.Getenv(dirEnv)), Net: "unixpacket"})
	if err != nil {
		fmt.Printf("outcome=dial-failed reason=%v\n", err)
		return nil
	}
	wd, _ := os.Getwd()
	b, _ := (&Request{Args: []string{"--", "echo"}, Env: []string{"A=1"}, Dir: wd}).Encode()
	if _, _, err := c.WriteMsgUnix(b, syscall.UnixRights(0, 1, 2), nil); err != nil {
		fmt.Printf("outcome=send-failed reason=%v\n", err)
		return nil
	}
	return c
}

// execAs execs exe playing role, with extra in its environment; it
// returns only when the exec fails.
func execAs(exe, role string, extra ...string) int {
	// The first of a variable named twice is the one read: drop the
	// role this process plays.
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, roleEnv+"=") {
			env = append(env, e)
		}
	}
	env = append(append(env, roleEnv+"="+role), extra...)
	fmt.Printf("exec: %v\n", syscall.Exec(exe, []string{exe}, env))
	return 1
}

// execOnChallengeRole connects and sends its request, and once challenged
// execs the binary $WARMRUN_TEST_EXEC as "answer-on-3" with the connection
// and the challenge: the process the server read is then another program
// than the one that answers.
func execOnChallengeRole() int {
	c := sendRequest()
	if c == nil {
		return 0
	}
	r, err := readReply(c)
	if err != nil {
		fmt.Printf("outcome=lost reason=%v\n", err)
		return 0
	}
	if r.Answer != answerChallenge {
		fmt.Printf("outcome=%s reason=%s\n", r.Answer, r.Reason)
		return 0
	}
	f, err := c.File()
	if err == nil && f.Fd() != 3 {
		err = unix.Dup3(int(f.Fd()), 3, 0)
	}
	if err != nil {
		fmt.Printf("outcome=no-fd reason=%v\n", err)
		return 0
	}
	return execAs(os.Getenv("WARMRUN_TEST_EXEC"), "answer-on-3", "WARMRUN_TEST_PROOF_FD="+strconv.Itoa(r.Fd))
}

// answerOn3Role answers the challenge on descriptor 3 with the secret the
// server holds at its descriptor $WARMRUN_TEST_PROOF_FD, and prints how the
// call ended.
func answerOn3Role() int {
	fc, err := net.FileConn(os.NewFile(3, "conn"))
	if err != nil {
		fmt.Printf("outcome=no-conn reason=%v\n", err)
		return 0
	}
	c := fc.(*net.UnixConn)
	n, _ := strconv.Atoi(os.Getenv("WARMRUN_TEST_PROOF_FD"))
	secret, err := warmhand.ReadProof(3, n)
	if err != nil {
		fmt.Printf("outcome=no-proof reason=%v\n", err)
		return 0
	}
	if _, err := c.Write([]byte(challengeRecord + secret)); err != nil {
		fmt.Printf("outcome=answer-failed reason=%v\n", err)
		return 0
	}
	for {
		r, err := readReply(c)
		switch {
		case err != nil:
			fmt.Printf("outcome=lost reason=%v\n", err)
			return 0
		case r.Answer != answerAccepted:
			fmt.Printf("outcome=%s reason=%s\n", r.Answer, r.Reason)
			return 0
		}
	}
}

func readReply(c *net.UnixConn) (reply, error) {
	var r reply
	b := make([]byte, maxReply)
	n, err := c.Read(b)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b[:n], &r)
}

// dyingServerRole serves one call and dies after accepting it.
func dyingServerRole() int {
	s, err := Listen(os.Getenv(dirEnv), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s.Serve(context.Background(), Handler{Run: func(ctx context.Context, c *Call) int {
		os.Exit(9) // gone after "accepted", before an exit code
		return 0
	}}, 0)
	return 0
}

// testServer is a server in this process whose handler counts the calls
// it runs (each prints "ran" on the caller's standard output, exit 7).
type testServer struct {
	*Server
	dir  string
	runs atomic.Int32
	stop context.CancelFunc
	done chan struct{}
}

func startServer(t *testing.T, skip ...string) *testServer {
	t.Helper()
	return startServerWith(t, func(c *Call) int {
		fmt.Fprintln(c.Stdout, "ran")
		return 7
	}, skip...)
}

// startServerWith is startServer whose calls run run.
func startServerWith(t *testing.T, run func(c *Call) int, skip ...string) *testServer {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	s, err := Listen(dir, nil)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	if len(skip) > 0 {
		s.skip = map[string]bool{}
		for _, k := range skip {
			s.skip[k] = true
		}
	}
	ts := &testServer{Server: s, dir: dir, done: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	ts.stop = stop
	go func() {
		defer close(ts.done)
		s.Serve(ctx, Handler{Run: func(ctx context.Context, c *Call) int {
			ts.runs.Add(1)
			return run(c)
		}}, 0)
	}()
	t.Cleanup(func() { stop(); <-ts.done })
	return ts
}

// serveWith starts a server in this process with handler h, stopped when
// tb ends, and is its directory.
func serveWith(tb testing.TB, h Handler) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "run")
	s, err := Listen(dir, nil)
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(ctx, h, 0)
	}()
	tb.Cleanup(func() { stop(); <-done })
	return dir
}

// client runs this test binary as a client of ts with extra environment,
// through wrap (a program and its arguments before the binary, if any).
func (ts *testServer) client(t *testing.T, role string, env []string, wrap ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append([]string(nil), wrap...), self)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role, dirEnv+"="+ts.dir), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client %v: %v: %s", argv, err, out)
	}
	return string(out)
}

// blockUSR1 is a python program that blocks SIGUSR1 and execs its arguments.
const blockUSR1 = "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1]); os.execv(sys.argv[1], sys.argv[1:])"

const (
	ranWarm = "ran\noutcome=1 code=7 "
	ranCold = "outcome=0 code=0 "
)

// TestPeerFidelity: a client that differs from the server in what makes a
// run behave (its namespaces, no_new_privs, umask, a limit, the binary) is
// not served warm. Each case first runs against a server without that one
// comparison (the old shape) and is served there: the check is what turns
// it away.
func TestPeerFidelity(t *testing.T) {
	self, _ := os.Executable()
	rebuilt := filepath.Join(t.TempDir(), "rebuilt.test")
	testsupport.CopyBin(t, self, rebuilt, 0o755)
	tests := []struct {
		name string
		// skip is the comparison the old shape lacked.
		skip []string
		role string
		env  []string
		wrap []string
		need string
		// want is how the checked server ends the call.
		want string
	}{
		{name: "another mount namespace", skip: []string{"mnt"}, role: "raw-client", wrap: []string{"unshare", "-m"}, need: "unshare", want: ranCold},
		{name: "no_new_privs", skip: []string{"NoNewPrivs"}, role: "client", wrap: []string{"setpriv", "--no-new-privs"}, need: "setpriv", want: ranCold},
		{name: "another umask", skip: []string{"Umask"}, role: "client", env: []string{"WARMRUN_TEST_UMASK=077"}, want: ranCold},
		{name: "another nofile limit", skip: []string{"nofile"}, role: "client", wrap: []string{"prlimit", "--nofile=512:512"}, need: "prlimit", want: ranCold},
		{name: "another nice value", skip: []string{"sched"}, role: "client", wrap: []string{"nice", "-n", "5"}, need: "nice", want: ranCold},
		{name: "another CPU affinity", skip: []string{"Cpus_allowed"}, role: "client", wrap: []string{"taskset", "-c", "0"}, need: "taskset", want: ranCold},
		{name: "a rebuilt binary", skip: []string{"exe"}, role: "client", wrap: []string{rebuilt}, want: ranCold},
		{name: "traced", skip: []string{"TracerPid"}, role: "client", wrap: []string{"strace", "-f", "-o", "/dev/null"}, need: "strace", want: ranCold},
		{name: "address space randomization off", skip: []string{"personality"}, role: "client", wrap: []string{"setarch", "-R"}, need: "setarch", want: ranCold},
		{name: "SIGHUP ignored", skip: []string{"SigIgn"}, role: "client", wrap: []string{"nohup"}, need: "nohup", want: ranCold},
		{name: "SIGUSR1 blocked", skip: []string{"SigBlk"}, role: "client", wrap: []string{"/usr/bin/python3", "-c", blockUSR1}, need: "/usr/bin/python3", want: ranCold},
		{name: "another root directory", skip: []string{"root", "proof"}, role: "chroot-client", env: []string{"WARMRUN_TEST_JAIL=" + t.TempDir()}, need: "root", want: ranCold},
		// A raw client: it does not check the server first, as a hostile
		// process would not. Refused before its request is read: it gets
		// the refusal or the reset of its unread record, or cannot even
		// send; nothing runs ("" below).
		{name: "another user namespace", skip: []string{"user", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "proof"}, role: "hand-client", wrap: []string{"unshare", "-U", "--map-root-user"}, need: "unshare"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.need == "root" {
				if os.Geteuid() != 0 {
					testsupport.Missing(t, "chroot needs root")
				}
			} else if tt.need != "" {
				if _, err := exec.LookPath(tt.need); err != nil {
					testsupport.Missing(t, "%s is not installed: %v", tt.need, err)
				}
			}
			wrap := tt.wrap
			if len(wrap) == 1 && wrap[0] == rebuilt {
				// The copy is the client binary itself.
				wrap = nil
			}
			run := func(ts *testServer) string {
				if len(tt.wrap) == 1 && tt.wrap[0] == rebuilt {
					cmd := exec.Command(rebuilt)
					cmd.Env = append(append(os.Environ(), roleEnv+"="+tt.role, dirEnv+"="+ts.dir), tt.env...)
					out, err := cmd.CombinedOutput()
					if err != nil {
						t.Fatalf("client: %v: %s", err, out)
					}
					return string(out)
				}
				return ts.client(t, tt.role, tt.env, wrap...)
			}
			old := startServer(t, tt.skip...)
			if got := run(old); !strings.HasPrefix(got, ranWarm) {
				t.Fatalf("without the %v check: got %q, want the call served warm (the old shape's flaw)", tt.skip, got)
			}
			ts := startServer(t)
			got := run(ts)
			if tt.want == "" && (strings.HasPrefix(got, "ran") || !strings.Contains(got, "outcome=")) {
				t.Fatalf("got %q, want the call not served", got)
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if n := ts.runs.Load(); n != 0 {
				t.Errorf("the server ran %d calls, want none", n)
			}
		})
	}
}

// TestSameClientRunsWarm: a client like the server in every fact is served.
func TestSameClientRunsWarm(t *testing.T) {
	ts := startServer(t)
	if got := ts.client(t, "client", nil); !strings.HasPrefix(got, ranWarm) {
		t.Fatalf("got %q, want the call served warm", got)
	}
	if n := ts.runs.Load(); n != 1 {
		t.Errorf("the server ran %d calls, want 1", n)
	}
}

// TestClientRefusesDirectory: a socket directory that another user owns,
// that is open to others or that is a link is not used: the client runs
// cold without connecting, with one warning. The same directories with the
// client's check left out (a bare dial) reach the listener in them.
func TestClientRefusesDirectory(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, dir string) string // returns the directory the client is pointed at
		want string
	}{
		{"open to others", func(t *testing.T, dir string) string {
			os.Chmod(dir, 0o755)
			return dir
		}, "open to others"},
		{"a link", func(t *testing.T, dir string) string {
			l := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(dir, l); err != nil {
				t.Fatal(err)
			}
			return l
		}, "not a directory"},
		{"another user's", func(t *testing.T, dir string) string {
			if os.Geteuid() != 0 {
				testsupport.Missing(t, "changing a directory's owner needs root")
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "belongs to uid 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			os.Mkdir(dir, 0o700)
			ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: SocketPath(dir), Net: "unixpacket"})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan struct{}, 4)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					accepted <- struct{}{}
					c.Close()
				}
			}()
			target := tt.make(t, dir)
			// The old shape: dial without looking at the directory.
			c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(target), Net: "unixpacket"})
			if err != nil {
				t.Fatalf("bare dial: %v", err)
			}
			c.Close()
			<-accepted
			r := HandOver(context.Background(), target, Request{Args: []string{"x"}, Dir: "/"}, []int{0, 1, 2})
			if r.Outcome != Cold || !strings.Contains(r.Warn, tt.want) {
				t.Fatalf("got %+v, want cold with a warning naming %q", r, tt.want)
			}
			select {
			case <-accepted:
				t.Fatal("the client connected to the socket in a directory it should not use")
			case <-time.After(50 * time.Millisecond):
			}
		})
	}
}

// TestServerGoneAfterAccepted: the server dies after "accepted": the client
// reports the call lost (its caller exits 125 and runs nothing again).
func TestServerGoneAfterAccepted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	self, _ := os.Executable()
	srv := exec.Command(self)
	srv.Env = append(os.Environ(), roleEnv+"=dying-server", dirEnv+"="+dir)
	var serr bytes.Buffer
	srv.Stderr = &serr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	waitSocket(t, dir)
	wd, _ := os.Getwd()
	r := HandOver(context.Background(), dir, Request{Args: []string{"x"}, Dir: wd}, []int{0, 1, 2})
	if r.Outcome != Lost || !strings.Contains(r.Reason, "may have run") {
		t.Fatalf("got %+v, want lost (the command may have run)", r)
	}
	srv.Wait()
	if srv.ProcessState.ExitCode() != 9 {
		t.Fatalf("the server exited %d, want 9 (it died in the call): %s", srv.ProcessState.ExitCode(), serr.Bytes())
	}
}

func waitSocket(t *testing.T, dir string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if _, err := os.Lstat(SocketPath(dir)); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no socket in %s", dir)
}

// TestSilentFloodDoesNotStopCalls: many connections that never send a
// request hold no call back: each has its goroutine and its deadline.
func TestSilentFloodDoesNotStopCalls(t *testing.T) {
	ts := startServer(t)
	var conns []*net.UnixConn
	for i := 0; i < 200; i++ {
		c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(ts.dir), Net: "unixpacket"})
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	start := time.Now()
	if got := ts.client(t, "client", nil); !strings.HasPrefix(got, ranWarm) {
		t.Fatalf("got %q, want the call served warm beside the flood", got)
	}
	if d := time.Since(start); d >= RequestTimeout {
		t.Fatalf("the call took %v, as long as the flood's deadline: it waited for the flood", d)
	}
}

// TestBadRequestsRefused: malformed records, wrong descriptor counts and
// requests over the bounds are refused with one line; nothing runs.
func TestBadRequestsRefused(t *testing.T) {
	good, _ := (&Request{Args: []string{"x"}, Dir: "/"}).Encode()
	tests := []struct {
		name string
		msg  []byte
		fds  int
		want string
	}{
		{"bad magic", append([]byte("XXXX"), good[4:]...), 3, "bad magic"},
		{"unknown flag", append(append([]byte(magic), 0x80), good[5:]...), 3, "unknown flags"},
		{"trailing bytes", append(append([]byte(nil), good...), 0), 3, "bytes after"},
		{"cut short", good[:len(good)-1], 3, "cut short"},
		{"too few descriptors", good, 2, "2 descriptors, want 3"},
		{"too many descriptors", good, 4, "4 descriptors, want 3"},
		{"far too many descriptors", good, 8, "too many descriptors"},
		{"over the bound", bytes.Repeat([]byte("a"), MaxRequest+10), 3, "over"},
		{"relative dir", mustEncode(t, Request{Args: []string{"x"}, Dir: "rel"}), 3, "not absolute"},
		{"a variable named twice", mustEncode(t, Request{Args: []string{"x"}, Env: []string{"PATH=/evil", "A=1", "PATH=/usr/bin"}, Dir: "/"}), 3, "named twice"},
	}
	ts := startServer(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(ts.dir), Net: "unixpacket"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fds := make([]int, tt.fds)
			for i := range fds {
				fds[i] = int(os.Stdin.Fd())
			}
			if err := c.SetWriteBuffer(4 * MaxRequest); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.WriteMsgUnix(tt.msg, syscall.UnixRights(fds...), nil); err != nil {
				t.Fatalf("send: %v", err)
			}
			b, _ := io.ReadAll(io.LimitReader(c, 1<<16))
			if !strings.Contains(string(b), `"answer":"refused"`) || !strings.Contains(string(b), tt.want) || strings.Contains(string(b), "\n") {
				t.Fatalf("got %q, want one refusal line naming %q", b, tt.want)
			}
		})
	}
	if n := ts.runs.Load(); n != 0 {
		t.Errorf("the server ran %d calls, want none", n)
	}
}

func mustEncode(t *testing.T, r Request) []byte {
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeRoundTrip: what encode writes decodes to the same request, and
// bounds hold on both sides.
func TestDecodeRoundTrip(t *testing.T) {
	r := Request{Args: []string{"--", "sh", "-c", "echo é"}, Env: []string{"A=1", "B="}, Dir: "/tmp", TTY: true}
	got, err := decodeRequest(mustEncode(t, r))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(r) {
		t.Fatalf("got %+v, want %+v", got, r)
	}
	if _, err := (&Request{Args: make([]string, MaxArgs+1), Dir: "/"}).Encode(); err == nil {
		t.Error("encode took more arguments than MaxArgs")
	}
	if _, err := decodeRequest(mustEncode(t, Request{Args: []string{"a\x00b"}, Dir: "/"})); err == nil {
		t.Error("decode took an argument with a NUL")
	}
	if _, err := decodeRequest(mustEncode(t, Request{Env: []string{"=x"}, Dir: "/"})); err == nil {
		t.Error("decode took an environment entry without a name")
	}
}

// TestSecondServerRefused: one server per directory; the second names the
// first; the first's socket is removed at its end only while it is its own.
func TestSecondServerRefused(t *testing.T) {
	ts := startServer(t)
	if _, err := Listen(ts.dir, nil); err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Listen: got %v, want a refusal naming pid %d", err, os.Getpid())
	}
	// Another socket put in its place is not removed by the first's end.
	os.Remove(ts.Path())
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: ts.Path(), Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	defer ln.Close()
	ts.stop()
	<-ts.done
	if _, err := os.Lstat(ts.Path()); err != nil {
		t.Fatalf("the server removed a socket that was not its own: %v", err)
	}
}

// TestIdleEnds: a server with no call for --idle stops and removes its
// socket.
func TestIdleEnds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	s, err := Listen(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- s.Serve(context.Background(), Handler{}, 100*time.Millisecond) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop when idle")
	}
	if _, err := os.Lstat(s.Path()); err == nil {
		t.Fatal("the idle server left its socket")
	}
}

// FuzzDecodeRequest: any record decodes to a request within the bounds or
// to an error, never a panic; what decodes encodes back to the same bytes.
func FuzzDecodeRequest(f *testing.F) {
	for _, r := range []Request{{Dir: "/"}, {Args: []string{"--", "true"}, Env: []string{"A=1"}, Dir: "/tmp", TTY: true}} {
		b, _ := r.Encode()
		f.Add(b)
	}
	f.Add([]byte("AWR1\x00\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRequest(b)
		if err != nil {
			return
		}
		if len(r.Args) > MaxArgs || len(r.Env) > MaxEnv {
			t.Fatalf("decoded past the bounds: %d args, %d env", len(r.Args), len(r.Env))
		}
		again, err := r.Encode()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("decode then encode: %q, %v; want %q", again, err, b)
		}
	})
}

// TestReplyBounded: a reply fits the client's buffer whatever its reason.
func TestReplyBounded(t *testing.T) {
	for _, reason := range []string{strings.Repeat("a", 10000), strings.Repeat("<\x01", 5000)} {
		if b := encodeReply(reply{Answer: answerCold, Reason: reason}); len(b) > maxReply {
			t.Errorf("a reply of %d bytes, over the client's %d", len(b), maxReply)
		}
	}
}

// TestRequestTiedToConnector: the process the server checked (the one
// that connected) must be the one that sends the request and answers the
// challenge. A confinement /proc does not show (Landlock) is inherited by
// a child and by an exec'd program alike, so a confined connector could
// otherwise have its forked child send (the connector, the checked one, is
// then any airlock binary), or send and exec an airlock command. Each case
// is first served by a server without that check (the old shape).
func TestRequestTiedToConnector(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		skip string
		run  func(t *testing.T, ts *testServer) string
	}{
		{"a forked child sends", "sender", func(t *testing.T, ts *testServer) string {
			// This test process connects (and is checked: it is the
			// server itself); a child it starts sends on its connection.
			c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(ts.dir), Net: "unixpacket"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			f, err := c.File()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), roleEnv+"=fd-sender")
			cmd.ExtraFiles = []*os.File{f}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("sender: %v: %s", err, out)
			}
			return string(out)
		}},
		{"the connector sends and execs", "challenge", func(t *testing.T, ts *testServer) string {
			return ts.client(t, "send-then-exec", nil)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := startServer(t, tt.skip)
			if got := tt.run(t, old); !strings.Contains(got, "ran\n") || old.runs.Load() != 1 {
				t.Fatalf("without the %s check: got %q, want the call served (the old shape's flaw)", tt.skip, got)
			}
			ts := startServer(t)
			got := tt.run(t, ts)
			if strings.Contains(got, "ran\n") || ts.runs.Load() != 0 {
				t.Fatalf("got %q (%d runs), want the call not served", got, ts.runs.Load())
			}
		})
	}
}

// TestFactsReadBeforeChallenge: the challenge goes out only once every fact
// of the caller is read (what is left of the checks runs while it is
// answered). A process that would become another program once challenged
// (a rebuilt airlock that execs the server's own binary, which answers) is
// judged by what it was when read: "another airlock binary", and nothing
// runs. A server that overlaps the challenge with the reads as well (the
// old shape, shown first) reads what the process became, and serves it.
func TestFactsReadBeforeChallenge(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rebuilt := filepath.Join(t.TempDir(), "rebuilt.test")
	testsupport.CopyBin(t, self, rebuilt, 0o755)
	run := func(ts *testServer) string {
		cmd := exec.Command(rebuilt)
		cmd.Env = append(os.Environ(), roleEnv+"=exec-on-challenge", dirEnv+"="+ts.dir, "WARMRUN_TEST_EXEC="+self)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("client: %v: %s", err, out)
		}
		return string(out)
	}
	old := startServer(t, "challenge-first")
	if got := run(old); !strings.HasPrefix(got, "ran\noutcome=exit") || old.runs.Load() != 1 {
		t.Fatalf("with the challenge before the reads: got %q, want the call served (the old shape's flaw)", got)
	}
	ts := startServer(t)
	got := run(ts)
	if !strings.HasPrefix(got, "outcome=cold reason=another airlock binary") || ts.runs.Load() != 0 {
		t.Fatalf("got %q (%d runs), want the call cold as another airlock binary", got, ts.runs.Load())
	}
}

// TestCancelledCallGoesCold: a signal reached the client during the
// exchange, and the call goes cold after the challenge was answered (the
// handler's check): the client hears "cold" and runs the command itself.
// A cancel it had sent after its answer would be a record the server left
// unread, whose reset took the answer away (the call lost, exit 125 for a
// command that never ran).
func TestCancelledCallGoesCold(t *testing.T) {
	dir := serveWith(t, Handler{
		Check: func(*Call) string { return "the handler's reason" },
		Run:   func(context.Context, *Call) int { return 7 },
	})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 20; i++ {
		r := HandOver(cancelled, dir, Request{Args: []string{"--", "true"}, Dir: wd}, []int{0, 1, 2})
		if r.Outcome != Cold || r.Reason != "the handler's reason" {
			t.Fatalf("call %d: got %+v, want cold for the handler's reason", i, r)
		}
	}
}

// TestServerFactsPerCall: a server whose own facts change after it started
// (here its umask; a renice, a limit or a cgroup move alike) compares each
// caller with what it is now. The caller keeps the server's first umask:
// compared with the facts read at start (the old shape) it is served,
// though its box would have the server's new umask; it runs cold.
func TestServerFactsPerCall(t *testing.T) {
	first := unix.Umask(0o022)
	unix.Umask(first)
	env := []string{fmt.Sprintf("WARMRUN_TEST_UMASK=%o", first)}
	for _, tt := range []struct {
		name string
		skip []string
		want string
	}{
		{"facts read at start", []string{"stale-self"}, ranWarm},
		{"facts read per call", nil, ranCold},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.skip...)
			later := 0o077
			if first == later {
				later = 0o027
			}
			unix.Umask(later)
			defer unix.Umask(first)
			if got := ts.client(t, "client", env); !strings.HasPrefix(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestListenFollowsNoLink: a link put in the socket's place just after the
// bind must not have the server change the mode of the file it names, as a
// chmod by name (the old shape, shown first) does. The server sets the mode
// at the bind and, finding no socket of its own there, does not listen.
func TestListenFollowsNoLink(t *testing.T) {
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	swap := func(path string) {
		os.Remove(path)
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	mode := func() os.FileMode {
		fi, err := os.Stat(target)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	// The old shape: the chmod after the bind, by name.
	old := filepath.Join(t.TempDir(), "warm.sock")
	swap(old)
	os.Chmod(old, 0o600)
	if mode() != 0o600 {
		t.Fatalf("a chmod by name left %s at %o: the old shape's flaw not shown", target, mode())
	}
	os.Chmod(target, 0o644)

	testAfterBind = swap
	defer func() { testAfterBind = nil }()
	s, err := Listen(filepath.Join(t.TempDir(), "run"), nil)
	if err == nil {
		s.ln.Close()
		s.close()
		t.Fatal("Listen served a path that a link had taken")
	}
	if m := mode(); m != 0o644 {
		t.Fatalf("Listen changed %s to %o through the link", target, m)
	}
	// Without the swap the socket is 0600 from its bind.
	testAfterBind = nil
	ts := startServer(t)
	fi, err := os.Lstat(SocketPath(ts.dir))
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v: want a socket of mode 0600", fi, err)
	}
}

// TestPendingConnectionsCapped: silent connections beyond maxPending get
// no goroutine of the server's: they wait in the kernel's queue. Without
// the cap (the old shape, shown first) every one of them is taken at
// once. Once the flood goes, a call is served.
func TestPendingConnectionsCapped(t *testing.T) {
	defer func(n int) { maxPending = n }(maxPending)
	maxPending = 8
	const flood = 24
	for _, tt := range []struct {
		name string
		skip []string
		max  int
	}{
		{"no cap", []string{"pending-cap"}, flood},
		{"capped", nil, 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.skip...)
			var conns []*net.UnixConn
			for i := 0; i < flood; i++ {
				c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(ts.dir), Net: "unixpacket"})
				if err != nil {
					t.Fatalf("flood connection %d: %v", i, err)
				}
				conns = append(conns, c)
			}
			high := func() int {
				ts.mu.Lock()
				defer ts.mu.Unlock()
				return ts.pendingHigh
			}
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && high() < tt.max; time.Sleep(10 * time.Millisecond) {
			}
			time.Sleep(100 * time.Millisecond) // any over the cap would be taken by now
			if got := high(); got != tt.max {
				t.Fatalf("the server held %d unaccepted connections at once, want %d", got, tt.max)
			}
			for _, c := range conns {
				c.Close()
			}
			if got := ts.client(t, "client", nil); !strings.HasPrefix(got, ranWarm) {
				t.Fatalf("got %q, want the call served once the flood went", got)
			}
		})
	}
}

// handOverLater hands a call to the server in dir from this process and
// returns what waits for its result.
func handOverLater(t *testing.T, dir string) <-chan Result {
	t.Helper()
	wd, _ := os.Getwd()
	ch := make(chan Result, 1)
	go func() {
		ch <- HandOver(context.Background(), dir, Request{Args: []string{"--", "echo"}, Env: []string{"A=1"}, Dir: wd}, []int{0, 1, 2})
	}()
	return ch
}

func waitResult(t *testing.T, ch <-chan Result) Result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the hand-over did not end")
		return Result{}
	}
}

// TestStopTurnsQueuedAway: a server stopping (SIGTERM, --idle) with a call
// still in its listen queue answers it cold, so the caller runs the command
// itself. The old shape (shown first) closed the listener with the call
// queued, which reset it: the caller, which had sent its request, exited
// 125 for a command that never ran.
func TestStopTurnsQueuedAway(t *testing.T) {
	defer func(n int) { maxPending = n }(maxPending)
	maxPending = 1
	for _, tt := range []struct {
		name string
		skip []string
		want Outcome
	}{
		{"listener closed at once", []string{"turn-away"}, Lost},
		{"queue turned away", nil, Cold},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.skip...)
			hold, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(ts.dir), Net: "unixpacket"})
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Close()
			for end := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				ts.mu.Lock()
				held := ts.pending == 1
				ts.mu.Unlock()
				if held {
					break
				}
				if time.Now().After(end) {
					t.Fatal("the silent connection was not taken")
				}
			}
			res := handOverLater(t, ts.dir)
			time.Sleep(300 * time.Millisecond) // connected and sent, in the listen queue
			ts.stop()
			if r := waitResult(t, res); r.Outcome != tt.want {
				t.Fatalf("got %+v, want outcome %d", r, tt.want)
			}
			if n := ts.runs.Load(); n != 0 {
				t.Errorf("the server ran %d calls, want none", n)
			}
			if _, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(ts.dir), Net: "unixpacket"}); err == nil {
				t.Error("a stopping server still takes connections")
			}
		})
	}
}

// TestStopBeforeAcceptGoesCold: a call whose checks are under way when the
// server stops is answered cold. The old shape (shown first) accepted it,
// and ran it under a context already ended: the call was ended at once, as
// if signalled, and its caller exited with that code for a command no one
// stopped.
func TestStopBeforeAcceptGoesCold(t *testing.T) {
	for _, tt := range []struct {
		name  string
		skip  []string
		want  Outcome
		ended int32
	}{
		{"accepted while stopping", []string{"stopping"}, Ran, 1},
		{"cold while stopping", nil, Cold, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			s, err := Listen(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.skip = map[string]bool{}
			for _, k := range tt.skip {
				s.skip[k] = true
			}
			inCheck, release := make(chan struct{}), make(chan struct{})
			var ranEnded atomic.Int32
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.Serve(ctx, Handler{
					Check: func(*Call) string { close(inCheck); <-release; return "" },
					Run: func(ctx context.Context, c *Call) int {
						if ctx.Err() != nil {
							ranEnded.Add(1)
						}
						return 7
					},
				}, 0)
			}()
			defer func() { stop(); <-done }()
			res := handOverLater(t, dir)
			select {
			case <-inCheck:
			case <-time.After(10 * time.Second):
				t.Fatal("the call was not checked")
			}
			stop()
			time.Sleep(100 * time.Millisecond)
			close(release)
			r := waitResult(t, res)
			if n := ranEnded.Load(); n != tt.ended {
				t.Fatalf("the server ran %d calls under an ended context, want %d (outcome %+v)", n, tt.ended, r)
			}
			if r.Outcome != tt.want {
				t.Fatalf("got %+v, want outcome %d", r, tt.want)
			}
		})
	}
}
