package warmrun

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/internal/warmhand"
	"github.com/airlock-run/airlock/sandbox/landlock"
	"golang.org/x/sys/unix"
)

// Environment of the Landlock roles: the directory the domain hides, the
// role played once in it, and the arguments a client asks to run.
const (
	hideEnv = "WARMRUN_TEST_HIDE"
	nextEnv = "WARMRUN_TEST_NEXT"
	argsEnv = "WARMRUN_TEST_ARGS"
)

// testArgs are the arguments a client role asks to run: $WARMRUN_TEST_ARGS
// (separated by newlines), else `-- echo`.
func testArgs() []string {
	if a := os.Getenv(argsEnv); a != "" {
		return strings.Split(a, "\n")
	}
	return []string{"--", "echo"}
}

// landlockedRole puts this process in a Landlock domain in which nothing
// beneath $WARMRUN_TEST_HIDE can be read (and only this binary and libraries executed),
// then executes this binary again as $WARMRUN_TEST_NEXT: the whole process
// is in the domain, as an agent confined by another tool is. The domain
// sets no_new_privs (the kernel asks it of a process without CAP_SYS_ADMIN);
// the servers it is shown to skip that comparison, as a server started with
// no_new_privs too would match it.
func landlockedRole() int {
	runtime.LockOSThread()
	self, err := os.Executable()
	if err == nil {
		_, err = landlock.Restrict(landlock.Rules{ExecWall: true, Exec: []string{self, "/lib", "/lib64", "/usr/lib", "/usr/lib64"}, Hide: []string{os.Getenv(hideEnv)}})
	}
	if err != nil {
		fmt.Printf("outcome=no-landlock reason=%v\n", err)
		return 0
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, roleEnv+"=") {
			env = append(env, e)
		}
	}
	env = append(env, roleEnv+"="+os.Getenv(nextEnv))
	fmt.Printf("exec: %v\n", syscall.Exec(self, []string{self}, env))
	return 1
}

// handClientRole speaks the protocol by hand, as a program of the caller's
// own would (handExchange); in a domain ($WARMRUN_TEST_HIDE set) it first
// prints whether it can read the hidden file itself.
func handClientRole() int {
	args := testArgs()
	if os.Getenv(hideEnv) != "" {
		if _, err := os.ReadFile(args[len(args)-1]); err != nil {
			fmt.Println("self-read=denied")
		} else {
			fmt.Println("self-read=allowed")
		}
	}
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(os.Getenv(dirEnv)), Net: "unixpacket"})
	if err != nil {
		fmt.Printf("outcome=dial-failed reason=%v\n", err)
		return 0
	}
	wd, _ := os.Getwd()
	handExchange(c, Request{Args: args, Env: []string{"A=1"}, Dir: wd})
	return 0
}

// handExchange sends req and answers a challenge with the server's secret
// when it can read it and with a guess when it cannot, printing the end as
// the client roles print a Result.
func handExchange(c *net.UnixConn, req Request) {
	b, _ := req.Encode()
	if _, _, err := c.WriteMsgUnix(b, syscall.UnixRights(0, 1, 2), nil); err != nil {
		fmt.Printf("outcome=send-failed reason=%v\n", err)
		return
	}
	buf := make([]byte, maxReply)
	for {
		n, err := c.Read(buf)
		if err != nil || n == 0 {
			fmt.Printf("outcome=%d code=0 reason=gone: %v warn=\n", Lost, err)
			return
		}
		var r reply
		json.Unmarshal(buf[:n], &r)
		switch r.Answer {
		case answerChallenge:
			secret, err := readProofOn(c, r.Fd)
			if err != nil {
				secret = strings.Repeat("0", warmhand.ProofLen)
			}
			c.Write([]byte(challengeRecord + secret))
		case answerAccepted:
		case answerExit:
			fmt.Printf("outcome=%d code=%d reason= warn=\n", Ran, r.Code)
			return
		case answerCold:
			fmt.Printf("outcome=%d code=0 reason=%s warn=\n", Cold, r.Reason)
			return
		default:
			fmt.Printf("outcome=%d code=0 reason=%s: %s warn=\n", Lost, r.Answer, r.Reason)
			return
		}
	}
}

// runArgs runs a call's arguments after "--" with the call's streams, as
// the real server runs a command outside any box the caller is in.
func runArgs(c *Call) int {
	args := c.Args
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = c.Stdout, c.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 127
	}
	return 0
}

// TestLandlockedCallerGoesCold: a caller in a Landlock domain that hides a
// file F asks the server to `cat F`. A Landlock domain shows in no /proc
// file, so every fact compared is the server's; only the proof (the
// server's secret, readable through /proc/<server>/fd only to a process
// that may read the server's process) tells them apart. Without it (the
// old shape: the challenge's value sent on the connection) a hand-written
// client is served outside its domain and reads F; with it the call is not
// served. The client's own exchange, without its check of the server,
// cannot answer and goes cold; its full hand-over goes cold at that check
// already (it may not read the server's namespaces either).
func TestLandlockedCallerGoesCold(t *testing.T) {
	if abi, err := landlock.ABI(); err != nil || abi < 1 {
		testsupport.Missing(t, "no Landlock here (ABI %d, %v)", abi, err)
	}
	hidden := filepath.Join(t.TempDir(), "hidden")
	if err := os.Mkdir(hidden, 0o700); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(hidden, "F")
	if err := os.WriteFile(f, []byte("the-hidden-text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(next string) []string {
		return []string{hideEnv + "=" + hidden, nextEnv + "=" + next, argsEnv + "=--\ncat\n" + f}
	}
	tests := []struct {
		role string
		// oldServed says the server without the proof serves it (the
		// flaw shown). The client's own exchange, raw or not, never
		// answers a challenge it cannot read, and goes cold either way.
		oldServed bool
		// want is in what the caller prints when the call is not served.
		want string
	}{
		{"hand-client", true, "outcome=2 code=0 reason=refused: no proof that the caller may read the server's process"},
		{"raw-client", false, "outcome=0 code=0 reason=cannot read the warm server's process"},
		{"client", false, "outcome=0 code=0 reason=cannot read the warm server's process: this process is confined apart from it"},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			old := startServerWith(t, runArgs, "NoNewPrivs", "proof")
			got := old.client(t, "landlocked", env(tt.role))
			if tt.role == "hand-client" && !strings.Contains(got, "self-read=denied") {
				t.Fatalf("the caller's domain does not hide F: %q", got)
			}
			if served := strings.Contains(got, "the-hidden-text"); served != tt.oldServed {
				t.Fatalf("without the proof: F read through the server %v, want %v: %q", served, tt.oldServed, got)
			}
			ts := startServerWith(t, runArgs, "NoNewPrivs")
			got = ts.client(t, "landlocked", env(tt.role))
			if strings.Contains(got, "the-hidden-text") || ts.runs.Load() != 0 {
				t.Fatalf("got %q (%d runs), want the call not served", got, ts.runs.Load())
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestUnconfinedCallerProves: the same callers outside any domain read the
// server's secret and are served (F read through the server).
func TestUnconfinedCallerProves(t *testing.T) {
	f := filepath.Join(t.TempDir(), "F")
	if err := os.WriteFile(f, []byte("the-text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"hand-client", "raw-client", "client"} {
		t.Run(role, func(t *testing.T) {
			ts := startServerWith(t, runArgs)
			got := ts.client(t, role, []string{argsEnv + "=--\ncat\n" + f})
			if !strings.Contains(got, "the-text") || ts.runs.Load() != 1 {
				t.Fatalf("got %q (%d runs), want the call served", got, ts.runs.Load())
			}
		})
	}
}

// readProofOn is warmhand.ReadProof on c's descriptor.
func readProofOn(c *net.UnixConn, n int) (secret string, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	if cerr := raw.Control(func(fd uintptr) { secret, err = warmhand.ReadProof(int(fd), n) }); cerr != nil {
		return "", cerr
	}
	return secret, err
}

// BenchmarkProof is what the proof adds to a call: the server's pipe and
// secret, the caller's open and read of it through /proc (this process
// standing for both, over a socket pair).
func BenchmarkProof(b *testing.B) {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(sp[0])
	defer unix.Close(sp[1])
	for b.Loop() {
		pr, err := newProof()
		if err != nil {
			b.Fatal(err)
		}
		got, err := warmhand.ReadProof(sp[0], pr.fd)
		pr.close()
		if err != nil || got != pr.secret {
			b.Fatalf("read %q, %v; want %q", got, err, pr.secret)
		}
	}
}
