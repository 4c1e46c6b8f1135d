package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/internal/warmrun"
	"github.com/airlock-run/airlock/sandbox"
)

// warmFixture is a real `airlock warm` of a home of the test's own, and the
// environment its runs share with it.
type warmFixture struct {
	bin, home, sockDir string
	env                []string
	srv                *exec.Cmd
	srvErr             *lockedBuffer
}

// lockedBuffer is the server's standard error, written by exec's copier
// while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startWarm starts `airlock warm` (the built binary) for a private
// XDG_RUNTIME_DIR and waits for its socket.
func startWarm(t *testing.T, with ...func(*exec.Cmd)) *warmFixture {
	t.Helper()
	if sandbox.Probe().Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "the host probe gives no tier 1 here")
	}
	f := &warmFixture{bin: testsupport.AirlockBin(t), home: t.TempDir(), srvErr: &lockedBuffer{}}
	run := filepath.Join(f.home, "run")
	f.sockDir = filepath.Join(run, "airlock")
	f.env = []string{"HOME=" + f.home, "XDG_CONFIG_HOME=" + filepath.Join(f.home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(f.home, "state"), "XDG_RUNTIME_DIR=" + run, "PATH=/usr/bin:/bin"}
	f.srv = exec.Command(f.bin, "warm", "--idle", "10m")
	f.srv.Env, f.srv.Dir, f.srv.Stderr = f.env, f.home, f.srvErr
	for _, w := range with {
		w(f.srv)
	}
	if err := f.srv.Start(); err != nil {
		t.Fatalf("start airlock warm: %v", err)
	}
	t.Cleanup(f.stop)
	for i := 0; ; i++ {
		if _, err := os.Lstat(warmrun.SocketPath(f.sockDir)); err == nil {
			return f
		}
		if i == 1000 {
			t.Fatalf("airlock warm made no socket: %s", f.srvErr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *warmFixture) stop() {
	if f.srv.ProcessState != nil {
		return
	}
	// The server may be a shell's child (asJob): the lock names it.
	if b, err := os.ReadFile(filepath.Join(f.sockDir, warmrun.LockName)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid != f.srv.Process.Pid {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	f.srv.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { f.srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		f.srv.Process.Kill()
		<-done
	}
}

// result is one run's end as its caller sees it.
type result struct {
	code           int
	stdout, stderr string
}

// run runs `airlock ARGS` in dir with warm ("off" runs cold, "verbose"
// hands over and says why a run went cold), stdin as its input, through
// wrap (a program and its arguments before airlock, if any).
func (f *warmFixture) run(t *testing.T, warm, dir, stdin string, args []string, wrap ...string) result {
	t.Helper()
	argv := append(append(append([]string(nil), wrap...), f.bin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = append(append([]string(nil), f.env...), warmrun.Env+"="+warm), dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run %v: %v", argv, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// bothWays runs args cold and warm and fails unless they end alike; it
// returns the warm run's result.
func (f *warmFixture) bothWays(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	cold := f.run(t, "off", dir, stdin, args)
	warm := f.run(t, "verbose", dir, stdin, args)
	if strings.Contains(warm.stderr, "running cold") || strings.Contains(warm.stderr, "warm server") {
		t.Fatalf("the run did not run warm: %q", warm.stderr)
	}
	if cold != warm {
		t.Fatalf("cold and warm differ:\ncold %+v\nwarm %+v", cold, warm)
	}
	return warm
}

// TestWarmConformance: the same runs cold and through `airlock warm` give
// the same exit codes, the same bytes on both streams, the same input and
// the same --report.
func TestWarmConformance(t *testing.T) {
	f := startWarm(t)
	tests := []struct {
		name, policy, stdin string
		args                []string
		code                int
		stdout              string
	}{
		{name: "exit 0", args: []string{"run", "--", "/bin/true"}},
		{name: "exit 3 and both streams", args: []string{"run", "--", "sh", "-c", "echo out; echo err >&2; exit 3"}, code: 3, stdout: "out\n"},
		{name: "refused", policy: "shell:\n  allow: [ls]\n", args: []string{"run", "--", "curl", "http://x"}, code: 126},
		{name: "wall-clock limit", policy: "limits:\n  wall: 300ms\n", args: []string{"run", "--", "sleep", "5"}, code: 124},
		{name: "cannot run", policy: "fs:\n  write: [w]\n", args: []string{"run", "--report", "w/r.json", "--", "true"}, code: 125},
		{name: "killed by a signal", args: []string{"run", "--", "sh", "-c", "kill -TERM $$"}, code: 128 + 15},
		{name: "stdin passed through", stdin: "hello\n", args: []string{"run", "--", "cat"}, stdout: "hello\n"},
		{name: "usage", args: []string{"run", "--bogus"}, code: 2},
		{name: "help", args: []string{"run", "--help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.Mkdir(filepath.Join(dir, "w"), 0o755)
			if tt.policy != "" {
				writeFile(t, dir, "airlock.yaml", tt.policy)
			}
			got := f.bothWays(t, dir, tt.stdin, tt.args...)
			if got.code != tt.code {
				t.Errorf("got exit %d, want %d (stderr %q)", got.code, tt.code, got.stderr)
			}
			if tt.stdout != "" && got.stdout != tt.stdout {
				t.Errorf("got stdout %q, want %q", got.stdout, tt.stdout)
			}
		})
	}
}

// TestWarmReport: --report written by the server is the cold run's: the
// golden reports (a refused run, a run with no box) both ways, and a run in
// a box alike cold and warm but for the notes on how its box was made
// (a warm box says it is one, and what it was brought back to).
func TestWarmReport(t *testing.T) {
	f := startWarm(t)
	for _, tt := range []struct {
		name, policy, golden string
		args                 []string
	}{
		{"refused", "shell:\n  allow: [ls]\n", "report-refused.golden", []string{"--", "curl", "http://x"}},
		{"ran", "isolation: none\nshell:\n  allow: [\"true\"]\n", "report-ran.golden", []string{"--sandbox", "off", "--", "true"}},
		{"box", "", "", []string{"--", "true"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.policy != "" {
				writeFile(t, dir, "airlock.yaml", tt.policy)
			}
			reports := map[string]string{}
			for _, mode := range []string{"off", "verbose"} {
				rep := filepath.Join(t.TempDir(), "report.json")
				r := f.run(t, mode, dir, "", append([]string{"run", "--report", rep}, tt.args...))
				if strings.Contains(r.stderr, "running cold") {
					t.Fatalf("went cold: %s", r.stderr)
				}
				data, err := os.ReadFile(rep)
				if err != nil {
					t.Fatalf("%s: no report: %v (stderr %q)", mode, err, r.stderr)
				}
				var v any
				if err := json.Unmarshal(data, &v); err != nil {
					t.Fatal(err)
				}
				var bad []string
				v = normalize(v, "", &bad)
				if tt.golden == "" {
					dropNotes(v)
				}
				b, _ := json.MarshalIndent(v, "", "  ")
				reports[mode] = string(b) + "\n"
			}
			if reports["off"] != reports["verbose"] {
				t.Fatalf("reports differ:\ncold:\n%s\nwarm:\n%s", reports["off"], reports["verbose"])
			}
			if tt.golden != "" {
				want, err := os.ReadFile(filepath.Join("testdata", tt.golden))
				if err != nil {
					t.Fatal(err)
				}
				if reports["verbose"] != string(want) {
					t.Fatalf("warm report differs from %s:\n%s", tt.golden, reports["verbose"])
				}
			}
		})
	}
}

// dropNotes removes result.description.notes: the box's own account of how
// it was made, which differs between a fresh and a warm box.
func dropNotes(v any) {
	m, _ := v.(map[string]any)
	res, _ := m["result"].(map[string]any)
	if d, ok := res["description"].(map[string]any); ok {
		delete(d, "notes")
	}
}

// TestWarmTerminalStillEscaped: a run whose output is a terminal goes
// through termsafe warm as cold: the server sees the terminal it received.
func TestWarmTerminalStillEscaped(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	writeFile(t, dir, "airlock.yaml", "shell:\n  allow: [printf]\n")
	args := []string{"run", "--", "printf", `\033]52;c;cm0gLXJmIH4K\a\033[31mred\033[0m\n`}
	outs := map[string][]byte{}
	for _, mode := range []string{"off", "verbose"} {
		master, slave := testsupport.OpenPTY(t)
		tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		tio.Oflag &^= unix.OPOST
		unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, tio)
		cmd := exec.Command(f.bin, args...)
		cmd.Env, cmd.Dir = append(append([]string(nil), f.env...), warmrun.Env+"="+mode), dir
		cmd.Stdout, cmd.Stderr = slave, slave
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		done := make(chan []byte)
		go func() { b, _ := io.ReadAll(master); done <- b }()
		cmd.Wait()
		select {
		case outs[mode] = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the terminal's output did not end")
		}
	}
	if bytes.Contains(outs["verbose"], []byte("\x1b]52;c;")) || !bytes.Contains(outs["verbose"], []byte("\x1b[31mred")) {
		t.Fatalf("warm terminal output %q: want the clipboard write shown, colours passed", outs["verbose"])
	}
	if !bytes.Equal(outs["off"], outs["verbose"]) {
		t.Fatalf("cold %q and warm %q differ", outs["off"], outs["verbose"])
	}
}

// TestWarmSignals: SIGINT and SIGTERM to the client end the command as
// they end a cold run.
func TestWarmSignals(t *testing.T) {
	f := startWarm(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			got := map[string]result{}
			for _, mode := range []string{"off", "verbose"} {
				cmd := exec.Command(f.bin, "run", "--", "sleep", "30")
				cmd.Env, cmd.Dir = append(append([]string(nil), f.env...), warmrun.Env+"="+mode), dir
				var errb bytes.Buffer
				cmd.Stderr = &errb
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(700 * time.Millisecond)
				start := time.Now()
				cmd.Process.Signal(sig)
				cmd.Wait()
				if d := time.Since(start); d > 10*time.Second {
					t.Fatalf("%s: the run took %v to end after %v", mode, d, sig)
				}
				got[mode] = result{code: cmd.ProcessState.ExitCode(), stderr: errb.String()}
			}
			if got["off"] != got["verbose"] {
				t.Fatalf("cold %+v and warm %+v differ", got["off"], got["verbose"])
			}
		})
	}
}

// TestWarmUmaskGoesCold: a client with another umask than the server's
// runs cold, so a file a fix-mode run makes gets the client's umask; with
// the server's umask it runs warm.
func TestWarmUmaskGoesCold(t *testing.T) {
	f := startWarm(t)
	for _, tt := range []struct {
		umask string
		mode  os.FileMode
		cold  bool
	}{
		{"077", 0o600, true},
		{"022", 0o644, false},
	} {
		t.Run(tt.umask, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "airlock.yaml", "fs:\n  write: [\".\"]\nshell:\n  allow: [touch]\n")
			r := f.run(t, "verbose", dir, "", []string{"--mode", "fix", "--", "touch", "made"},
				"sh", "-c", "umask "+tt.umask+"; exec \"$0\" run \"$@\"")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if cold := strings.Contains(r.stderr, "running cold: another Umask"); cold != tt.cold {
				t.Fatalf("went cold for the umask: %v, want %v (stderr %q)", cold, tt.cold, r.stderr)
			}
			st, err := os.Stat(filepath.Join(dir, "made"))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != tt.mode {
				t.Fatalf("the file has mode %v, want %v (the client's umask)", st.Mode().Perm(), tt.mode)
			}
		})
	}
}

// TestWarmRebuiltBinaryGoesCold: another airlock binary than the server's
// (a rebuild) runs cold until the server restarts.
func TestWarmRebuiltBinaryGoesCold(t *testing.T) {
	f := startWarm(t)
	other := filepath.Join(t.TempDir(), "airlock")
	testsupport.CopyBin(t, f.bin, other, 0o755)
	g := *f
	g.bin = other
	r := g.run(t, "verbose", t.TempDir(), "", []string{"run", "--", "/bin/true"})
	if r.code != 0 || !strings.Contains(r.stderr, "running cold: another airlock binary") {
		t.Fatalf("got %+v, want a cold run for another binary", r)
	}
}

// TestWarmServerGone: the server killed while it runs a call: the client
// exits 125 saying the command may have run, and does not run it again.
func TestWarmServerGone(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	writeFile(t, dir, "airlock.yaml", "fs:\n  write: [\".\"]\n")
	go func() {
		// Once the command has run (a loaded host may take longer than
		// any fixed wait to start it).
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if b, _ := os.ReadFile(filepath.Join(dir, "count")); len(b) > 0 {
				break
			}
		}
		f.srv.Process.Kill()
	}()
	r := f.run(t, "verbose", dir, "", []string{"run", "--mode", "fix", "--", "sh", "-c", "echo ran >> count; sleep 20"})
	if r.code != 125 || !strings.Contains(r.stderr, "the warm server went away; the command may have run") {
		t.Fatalf("got %+v, want exit 125 saying the server went away", r)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "count"))
	if string(b) != "ran\n" {
		t.Fatalf("the command ran %q, want exactly once", b)
	}
}

// TestWarmOneServer: a second `airlock warm` in the same directory fails
// with one line naming the first.
func TestWarmOneServer(t *testing.T) {
	f := startWarm(t)
	r := f.run(t, "off", f.home, "", []string{"warm"})
	if r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "another airlock warm (pid") {
		t.Fatalf("got %+v, want one line naming the running server", r)
	}
}

// onTerminal makes cmd a session leader whose controlling terminal, and
// standard streams, are slave.
func onTerminal(slave *os.File) func(*exec.Cmd) {
	return func(cmd *exec.Cmd) {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
}

// asJob runs the server as a shell's child on slave, the shell leading
// the terminal's session: as `airlock warm &` from a shell. The server
// gives the terminal up at start.
func asJob(slave *os.File) func(*exec.Cmd) {
	return func(cmd *exec.Cmd) {
		cmd.Args = append([]string{"sh", "-c", `"$0" "$@"; :`}, cmd.Args...)
		cmd.Path = "/bin/sh"
		onTerminal(slave)(cmd)
	}
}

// startOnTerminal starts `airlock ARGS` handing over (AIRLOCK_WARM=verbose)
// in dir on a new terminal it leads; out gives all the terminal showed so
// far, master is where its keys are typed.
func (f *warmFixture) startOnTerminal(t *testing.T, dir string, args ...string) (cmd *exec.Cmd, master *os.File, out *terminalOutput) {
	t.Helper()
	cmd = exec.Command(f.bin, args...)
	cmd.Env, cmd.Dir = append(append([]string(nil), f.env...), warmrun.Env+"=verbose"), dir
	master, out = startCmdOnTerminal(t, cmd)
	return cmd, master, out
}

// startCmdOnTerminal starts cmd in a session of its own whose controlling
// terminal is a new pseudo-terminal, and returns the terminal's master with
// what it reads; both end with the test.
func startCmdOnTerminal(t *testing.T, cmd *exec.Cmd) (*os.File, *terminalOutput) {
	t.Helper()
	master, slave := testsupport.OpenPTY(t)
	onTerminal(slave)(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return master, readTerminal(master)
}

// terminalOutput is what a pseudo-terminal's master has read so far.
type terminalOutput struct {
	mu  sync.Mutex
	out []byte
	// done is closed once the master reads its end (every slave closed).
	done chan struct{}
}

// readTerminal reads master to its end in the background.
func readTerminal(master *os.File) *terminalOutput {
	o := &terminalOutput{done: make(chan struct{})}
	go func() {
		defer close(o.done)
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			o.mu.Lock()
			o.out = append(o.out, b[:n]...)
			o.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return o
}

func (o *terminalOutput) bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]byte(nil), o.out...)
}

// all is everything the terminal showed, once it has ended.
func (o *terminalOutput) all() string {
	<-o.done
	return string(o.bytes())
}

// wait reports whether s was read within d.
func (o *terminalOutput) wait(s string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if bytes.Contains(o.bytes(), []byte(s)) {
			return true
		}
	}
	return false
}

// TestWarmLeavesInputAlone: once a run has ended, what its caller's
// standard input carries next is the caller's: the server reads none of it
// (as a cold run's process, gone, reads none). The caller runs
// `airlock run -- true` and then reads its input itself; the line it is
// sent after the run must reach it, warm as cold.
func TestWarmLeavesInputAlone(t *testing.T) {
	f := startWarm(t)
	for _, warm := range []string{"off", "verbose"} {
		t.Run(warm, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("sh", "-c", `"$0" run -- true; echo "ran $?"; exec cat`, f.bin)
			cmd.Env, cmd.Dir = append(append([]string(nil), f.env...), warmrun.Env+"="+warm), dir
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			first := make([]byte, len("ran 0\n"))
			if _, err := io.ReadFull(out, first); err != nil || string(first) != "ran 0\n" {
				t.Fatalf("the run: %q %v (stderr %q)", first, err, errb.String())
			}
			// The run has ended: this line is for the caller's cat.
			io.WriteString(in, "after the run\n")
			in.Close()
			rest, _ := io.ReadAll(out)
			cmd.Wait()
			if strings.Contains(errb.String(), "running cold") {
				t.Fatalf("the run did not run warm: %q", errb.String())
			}
			if string(rest) != "after the run\n" {
				t.Fatalf("the caller read %q after the run, want %q: the server took its input", rest, "after the run\n")
			}
		})
	}
}

// TestWarmTerminalCall: a run from a terminal (its controlling terminal,
// whose /dev/tty the client sends) runs warm, is asked on that terminal,
// and once it has ended the next line typed there is the shell's: neither
// the call's input nor the approvals prompt's reader of the terminal is
// left reading it in the server.
func TestWarmTerminalCall(t *testing.T) {
	f := startWarm(t)
	for _, mode := range []string{"off", "verbose"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "airlock.yaml", "shell:\n  allow: [sh, echo]\n")
			writeFile(t, dir, "s.sh", "echo inside\n")
			// sh s.sh cannot be decided before it runs: a person is asked.
			cmd := exec.Command("sh", "-c", `"$0" run -- sh s.sh; echo "RAN $?"; read l; echo "GOT:[$l]"`, f.bin)
			cmd.Env, cmd.Dir = append(append([]string(nil), f.env...), warmrun.Env+"="+mode), dir
			master, term := startCmdOnTerminal(t, cmd)
			wait := func(s string) {
				t.Helper()
				if !term.wait(s, 40*time.Second) {
					t.Fatalf("no %q on the terminal: %q", s, term.bytes())
				}
			}
			wait("? ")
			master.Write([]byte("o\n"))
			wait("RAN 0")
			time.Sleep(200 * time.Millisecond)
			master.Write([]byte("typed after the run\n"))
			wait("GOT:[")
			wait("]")
			out := term.bytes()
			if bytes.Contains(out, []byte("running cold")) {
				t.Fatalf("the run did not run warm: %q", out)
			}
			if !bytes.Contains(out, []byte("inside")) || !bytes.Contains(out, []byte("GOT:[typed after the run]")) {
				t.Fatalf("the shell did not read the line typed after the run: %q", out)
			}
		})
	}
}

// TestWarmServerInJobControlShell: `airlock warm &` started from an
// interactive shell (job control: the server a background job of the
// terminal's session) and a run in the foreground that reads the terminal.
// A background job that reads its controlling terminal is stopped by the
// kernel (SIGTTIN), and a stopped server hangs every caller: the server
// gives up its controlling terminal, so the caller's is a terminal like
// any other to it.
func TestWarmServerInJobControlShell(t *testing.T) {
	if sandbox.Probe().Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "the host probe gives no tier 1 here")
	}
	bin := testsupport.AirlockBin(t)
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_RUNTIME_DIR=" + filepath.Join(home, "run"), "PATH=/usr/bin:/bin"}
	dir := t.TempDir()
	writeFile(t, dir, "airlock.yaml", "shell:\n  allow: [cat]\n")
	script := `set -m; "$0" warm --idle 1m & sleep 1
AIRLOCK_WARM=verbose "$0" run -- cat; echo "RAN $?"; kill -CONT $!; kill $!; wait`
	cmd := exec.Command("sh", "-c", script, bin)
	cmd.Env, cmd.Dir = env, dir
	master, term := startCmdOnTerminal(t, cmd)
	term.wait("serving on", 20*time.Second)
	time.Sleep(500 * time.Millisecond) // the run has handed over
	master.Write([]byte("a line for cat\n"))
	time.Sleep(500 * time.Millisecond)
	master.Write([]byte{4}) // end of input
	term.wait("RAN ", 20*time.Second)
	out := term.bytes()
	if !bytes.Contains(out, []byte("RAN 0")) {
		t.Fatalf("the run did not end (a stopped server?): %q", out)
	}
	if bytes.Contains(out, []byte("running cold")) {
		t.Fatalf("the run did not run warm: %q", out)
	}
	if bytes.Count(out, []byte("a line for cat")) != 2 {
		t.Fatalf("cat did not give back the line typed (once echoed, once its output): %q", out)
	}
}

// TestWarmApprovalOnCallersTerminal: an escalation of a warm run is put on
// the caller's controlling terminal, which it handed over, and answered
// there; the server's own terminal shows nothing of it.
func TestWarmApprovalOnCallersTerminal(t *testing.T) {
	srvMaster, srvSlave := testsupport.OpenPTY(t)
	f := startWarm(t, asJob(srvSlave))
	srvOut := readTerminal(srvMaster)
	dir := t.TempDir()
	writeFile(t, dir, "airlock.yaml", "shell:\n  allow: [echo]\n  args:\n    echo:\n      escalate: [\"hi\"]\nescalation: {timeout: 20s}\n")
	cmd, master, out := f.startOnTerminal(t, dir, "run", "--", "echo", "hi")
	if !out.wait("[o]nce", 20*time.Second) {
		t.Fatalf("no prompt on the caller's terminal: %q (the server's terminal: %q)", out.bytes(), srvOut.bytes())
	}
	// Named by the caller's pid, as its own kernel would name it (and
	// its approvals socket with it, one per call).
	if id := fmt.Sprintf("approval [%d-", cmd.Process.Pid); !bytes.Contains(out.bytes(), []byte(id)) {
		t.Errorf("prompt %q: want the escalation named %s…", out.bytes(), id)
	}
	master.Write([]byte("o\n"))
	cmd.Wait()
	seen := out.all()
	if code := cmd.ProcessState.ExitCode(); code != 0 || strings.Contains(seen, "running cold") {
		t.Fatalf("exit %d, terminal %q: want the warm run allowed once", code, seen)
	}
	if !strings.Contains(seen, "hi\r\n") {
		t.Fatalf("terminal %q: want the command's output", seen)
	}
	if s := srvOut.bytes(); bytes.Contains(s, []byte("approval")) {
		t.Fatalf("the server's own terminal got the question: %q", s)
	}
}

// TestWarmInputNotReadAfterCall: once a warm run is over, the server reads
// nothing more of the caller's input, which is shared with whatever reads
// it next (a shell): what is written after the call reaches the next
// reader, as after a cold run.
func TestWarmInputNotReadAfterCall(t *testing.T) {
	f := startWarm(t)
	for _, mode := range []string{"off", "verbose"} {
		t.Run(mode, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			cmd := exec.Command(f.bin, "run", "--", "/bin/true")
			cmd.Env, cmd.Dir = append(append([]string(nil), f.env...), warmrun.Env+"="+mode), t.TempDir()
			cmd.Stdin = r
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Run(); err != nil || strings.Contains(errb.String(), "running cold") {
				t.Fatalf("run: %v: %s", err, errb.Bytes())
			}
			// The next reader of the same input: this test.
			w.Write([]byte("next\n"))
			got := make(chan string, 1)
			go func() {
				b := make([]byte, 16)
				n, _ := r.Read(b)
				got <- string(b[:n])
			}()
			select {
			case s := <-got:
				if s != "next\n" {
					t.Fatalf("the next reader got %q, want %q", s, "next\n")
				}
			case <-time.After(3 * time.Second):
				t.Fatal("the input written after the run never reached its next reader: the server took it")
			}
		})
	}
}

// boxClient is a client of the warm socket that a box runs: it sends a
// well-formed request for `true` with its own three streams and prints
// what came back.
const boxClient = `import socket, array, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect(sys.argv[1])
except Exception as e:
    print("connect:", e); sys.exit(0)
msg = b"AWR1\x00" + (1).to_bytes(4, "little") + (4).to_bytes(4, "little") + b"true" + (0).to_bytes(4, "little") + (1).to_bytes(4, "little") + b"/"
try:
    s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    print("reply:", s.recv(65536))
except Exception as e:
    print("send:", e)
`

// TestWarmBoxRefused: a box whose policy names the warm socket in fs.read
// (the one way a socket in a granted tree is not covered) reaches it, and
// is refused before anything of its request is read: its process lives in
// other user and pid namespaces. A box granted only the directory finds
// the socket covered.
func TestWarmBoxRefused(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testsupport.Missing(t, "python3 is not installed: %v", err)
	}
	f := startWarm(t)
	sock := warmrun.SocketPath(f.sockDir)
	// Refused before its request is read, the box sees the refusal, or
	// the reset or broken pipe of a record left unread, by timing.
	refused := []string{"send: [Errno 32] Broken pipe", "send: [Errno 104] Connection reset by peer", `reply: b'{"answer":"refused"`}
	for _, tt := range []struct {
		name, read string
		want       []string
	}{
		{"socket named", sock, refused},
		{"directory granted", f.sockDir, []string{"connect: [Errno 111] Connection refused"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "c.py", boxClient)
			writeFile(t, dir, "airlock.yaml", "fs:\n  read: [\""+tt.read+"\"]\nshell:\n  allow: [python3]\n")
			r := f.run(t, "off", dir, "", []string{"run", "--", "python3", "c.py", sock})
			ok := false
			for _, w := range tt.want {
				ok = ok || strings.Contains(r.stdout, w)
			}
			if r.code != 0 || !ok {
				t.Fatalf("got %+v, want the box to print one of %q", r, tt.want)
			}
			if tt.name == "socket named" && !strings.Contains(f.srvErr.String(), "refused a connection from another namespace") {
				t.Fatalf("the server did not log the refusal: %s", f.srvErr)
			}
		})
	}
}

// TestWarmUnboxedWithTerminalGoesCold: a caller with a controlling
// terminal whose run may be unboxed (tier 0: the command is the kernel's
// child, in its session) runs cold, since the server cannot give the
// command the caller's terminal; a boxed run (a new session in the box)
// runs warm. A server that leads its terminal's session is refused.
func TestWarmUnboxedWithTerminalGoesCold(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		args []string
		cold bool
	}{
		{"sandbox off", []string{"run", "--sandbox", "off", "--", "true"}, true},
		{"boxed", []string{"run", "--", "true"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd, _, out := f.startOnTerminal(t, dir, tt.args...)
			cmd.Wait()
			seen := out.all()
			if cold := strings.Contains(seen, "running cold: an unboxed run"); cold != tt.cold || cmd.ProcessState.ExitCode() != 0 {
				t.Fatalf("exit %d, terminal %q: want cold %v", cmd.ProcessState.ExitCode(), seen, tt.cold)
			}
		})
	}
	t.Run("session leader refused", func(t *testing.T) {
		_, slave := testsupport.OpenPTY(t)
		cmd := exec.Command(f.bin, "warm", "--socket-dir", filepath.Join(t.TempDir(), "s"))
		cmd.Env = f.env
		onTerminal(slave)(cmd)
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = nil, &errb
		if err := cmd.Run(); err == nil || !strings.Contains(errb.String(), "leads the session of its terminal") {
			t.Fatalf("got %v, %q: want the refusal", err, errb.String())
		}
	})
}

// TestWarmApprovalsPerCall: calls the server runs side by side that each
// wait for a person (no terminal: through `airlock approvals`) are each
// listed, under their own client's pid, as cold runs are under theirs.
// Named by the server's pid, the second call's socket took the first's
// place, and the first could be answered by no one.
func TestWarmApprovalsPerCall(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	writeFile(t, dir, "airlock.yaml", "shell:\n  allow: [sh, echo]\n")
	writeFile(t, dir, "s.sh", "echo inside\n")
	var pids []int
	var logs []string
	for i := 0; i < 2; i++ {
		// sh s.sh cannot be decided before it runs: a person is asked.
		cmd := exec.Command(f.bin, "run", "--", "sh", "s.sh")
		cmd.Env, cmd.Dir = append(append([]string(nil), f.env...), warmrun.Env+"=verbose"), dir
		log, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close()
		cmd.Stderr = log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		pids, logs = append(pids, cmd.Process.Pid), append(logs, log.Name())
		time.Sleep(300 * time.Millisecond) // the first asks before the second starts
	}
	listed := func(out []byte) bool {
		for _, pid := range pids {
			if !bytes.Contains(out, []byte(fmt.Sprintf("(pid %d,", pid))) {
				return false
			}
		}
		return true
	}
	var out []byte
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && !listed(out); time.Sleep(100 * time.Millisecond) {
		list := exec.Command(f.bin, "approvals", "list")
		list.Env = f.env
		out, _ = list.CombinedOutput()
	}
	for _, l := range logs {
		if b, _ := os.ReadFile(l); bytes.Contains(b, []byte("running cold")) {
			t.Fatalf("a run did not run warm: %q", b)
		}
	}
	if !listed(out) {
		t.Fatalf("airlock approvals list shows %q, want a question from each of the clients %v", out, pids)
	}
}

// TestWarmSignalStateAsCold: a command inherits the signals its airlock
// ignored at start (nohup's SIGHUP) and those it blocked, from the process
// that starts its box: cold that is the caller, warm the server. A caller
// whose signal state is not the server's runs cold, so the command sees
// the caller's; under the server's it runs warm.
func TestWarmSignalStateAsCold(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	show := []string{"run", "--", "grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"}
	for _, tt := range []struct {
		name string
		wrap []string
		cold string
	}{
		{"SIGHUP ignored", []string{"sh", "-c", "trap '' HUP; exec \"$0\" \"$@\""}, "another SigIgn"},
		{"SIGUSR1 blocked", []string{"/usr/bin/python3", "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1]); os.execv(sys.argv[1], sys.argv[1:])"}, "another signal mask"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := exec.LookPath(tt.wrap[0]); err != nil {
				testsupport.Missing(t, "%s is not installed: %v", tt.wrap[0], err)
			}
			cold := f.run(t, "off", dir, "", show, tt.wrap...)
			warm := f.run(t, "verbose", dir, "", show, tt.wrap...)
			if cold.code != 0 || cold.stdout == f.run(t, "off", dir, "", show).stdout {
				t.Fatalf("cold %+v: want the caller's signal state shown", cold)
			}
			if warm.stdout != cold.stdout {
				t.Fatalf("the command saw %q warm, %q cold (stderr %q)", warm.stdout, cold.stdout, warm.stderr)
			}
			if !strings.Contains(warm.stderr, "running cold: "+tt.cold) {
				t.Fatalf("stderr %q: want the run gone cold for %q", warm.stderr, tt.cold)
			}
		})
	}
	if r := f.bothWays(t, dir, "", show...); r.code != 0 {
		t.Fatalf("the server's own signal state: %+v", r)
	}
}

// TestWarmTraceNamesTheCaller: the spans of AIRLOCK_TRACE_FILE name the
// service and sampler of the caller's OTEL_ variables, warm as cold; the
// server once read them from its own process.
func TestWarmTraceNamesTheCaller(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	trace := filepath.Join(t.TempDir(), "spans")
	g := *f
	g.env = append(append([]string(nil), f.env...), "AIRLOCK_TRACE_FILE="+trace, "OTEL_SERVICE_NAME=the-callers")
	for _, mode := range []string{"off", "verbose"} {
		os.Remove(trace)
		r := g.run(t, mode, dir, "", []string{"run", "--", "/bin/true"})
		if r.code != 0 || strings.Contains(r.stderr, "running cold") {
			t.Fatalf("%s: %+v", mode, r)
		}
		b, err := os.ReadFile(trace)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if !bytes.Contains(b, []byte(`"the-callers"`)) {
			t.Fatalf("%s: the spans do not name the caller's service: %s", mode, b)
		}
	}
}

// TestWarmProcessVarsGoCold: variables that airlock's own process reads
// rather than the environment it is handed (the trust roots of the egress
// proxy's upstream checks, SSL_CERT_FILE and SSL_CERT_DIR; GODEBUG's TLS
// and X.509 settings) make a run go cold when they are not the server's.
func TestWarmProcessVarsGoCold(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	for _, v := range []string{"SSL_CERT_FILE=" + filepath.Join(dir, "ca.pem"), "SSL_CERT_DIR=" + dir, "GODEBUG=x509sha1=1"} {
		k, _, _ := strings.Cut(v, "=")
		t.Run(k, func(t *testing.T) {
			g := *f
			g.env = append(append([]string(nil), f.env...), v)
			r := g.run(t, "verbose", dir, "", []string{"run", "--", "/bin/true"})
			if r.code != 0 || !strings.Contains(r.stderr, "running cold: another "+k+" than the server's") {
				t.Fatalf("got %+v, want a cold run for %s", r, k)
			}
		})
	}
	if r := f.bothWays(t, dir, "", "run", "--", "/bin/true"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
}

// TestWarmCallerFilesAsCold: a file the caller names that the server would
// open as another file than the caller's own process (its standard input
// as /dev/stdin, a link through /proc/self) runs cold, so the policy is
// the one a cold run reads; the old shape read the server's own.
func TestWarmCallerFilesAsCold(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	writeFile(t, dir, "pol.yaml", "shell:\n  allow: [echo]\n")
	if err := os.Symlink("/proc/self/cwd/pol.yaml", filepath.Join(dir, "viaproc")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, policy string }{
		{"standard input", "/dev/stdin"},
		{"a link through /proc/self", "viaproc"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"run", "--policy", tt.policy, "--", "echo", "hi"}
			stdin := "shell:\n  allow: [echo]\n"
			cold := f.run(t, "off", dir, stdin, args)
			warm := f.run(t, "verbose", dir, stdin, args)
			if cold.code != 0 || cold.stdout != "hi\n" {
				t.Fatalf("cold %+v: want the caller's policy read", cold)
			}
			if warm.code != cold.code || warm.stdout != cold.stdout {
				t.Fatalf("warm %+v, cold %+v: want alike", warm, cold)
			}
			if !strings.Contains(warm.stderr, "running cold: ") {
				t.Fatalf("stderr %q: want the run gone cold", warm.stderr)
			}
		})
	}
}

// TestWarmFIFOPolicyLeavesNoReader: a policy file that is a FIFO blocks
// the read of whichever process opens it until a writer comes. Cold, that
// is the caller's own process; warm, the old shape left a server thread
// waiting in the FIFO's open for every such call, for good (the caller
// killed or not), and a server that never ends its calls never stops.
// Such a call now runs cold: the server reads no policy that is not a
// regular file.
func TestWarmFIFOPolicyLeavesNoReader(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "airlock.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(f.bin, "run", "--", "/bin/true")
	cmd.Env, cmd.Dir = append(append([]string(nil), f.env...), warmrun.Env+"=verbose"), dir
	// A file, not a pipe: a server holding the caller's stderr would
	// keep a pipe's reader from its end.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	time.Sleep(200 * time.Millisecond)
	errb, _ := os.ReadFile(stderr.Name())
	if n := fifoWaiters(t, f.srv.Process.Pid); n != 0 {
		t.Fatalf("%d threads of the server wait in a FIFO's open after the call's caller was killed (stderr %q)", n, errb)
	}
	if !strings.Contains(string(errb), "running cold: policy "+filepath.Join(dir, "airlock.yaml")+" is not a regular file") {
		t.Fatalf("stderr %q: want the run gone cold for its FIFO", errb)
	}
}

// fifoWaiters counts the threads of pid blocked opening a FIFO.
func fifoWaiters(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, task.Name()))
		if string(b) == "wait_for_partner" || string(b) == "fifo_open" {
			n++
		}
	}
	return n
}

// TestWarmHugePolicyNotHeld: a policy file over the policy's bound is read
// whole before the parser refuses it; the old shape did so in the server,
// which every call shares (it grew by the file's size each time, and calls
// at once by their sum), where cold each caller holds only its own. Such a
// call now runs cold, with the cold run's error.
func TestWarmHugePolicyNotHeld(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	const size = 64 << 20
	writeFile(t, dir, "airlock.yaml", "shell:\n  allow: [\"true\"]\n")
	if err := os.Truncate(filepath.Join(dir, "airlock.yaml"), size); err != nil {
		t.Fatal(err)
	}
	before := peakRSS(t, f.srv.Process.Pid)
	cold := f.run(t, "off", dir, "", []string{"run", "--", "true"})
	warm := f.run(t, "verbose", dir, "", []string{"run", "--", "true"})
	if grew := peakRSS(t, f.srv.Process.Pid) - before; grew > size/2 {
		t.Fatalf("the server grew by %d bytes for the call", grew)
	}
	if !strings.Contains(warm.stderr, "running cold: policy ") || warm.code != cold.code || !strings.Contains(warm.stderr, "document is larger than") {
		t.Fatalf("warm %+v, cold %+v: want the run gone cold and failed alike", warm, cold)
	}
}

// peakRSS is process pid's peak resident size (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "VmHWM:")
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.SplitN(rest, "\n", 2)[0], "kB")), 10, 64)
	if err != nil {
		t.Fatalf("VmHWM: %v", err)
	}
	return kb << 10
}

// TestWarmBrokenPipeEndsTheRun: a run whose standard output's reader is
// gone (`airlock run -- yes | head -1`) ends at once with 141, as the
// SIGPIPE that kills a cold run's process (and its box) ends it; the old
// shape ran the command on for as long as it liked, its output dropped.
func TestWarmBrokenPipeEndsTheRun(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	for _, mode := range []string{"off", "verbose"} {
		t.Run(mode, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close() // the reader is gone before the first write
			cmd := exec.Command(f.bin, "run", "--", "sh", "-c", "yes | head -c 1048576; sleep 20")
			cmd.Env, cmd.Dir = append(append([]string(nil), f.env...), warmrun.Env+"="+mode), dir
			cmd.Stdout = w
			var errb lockedBuffer
			cmd.Stderr = &errb
			start := time.Now()
			err = cmd.Run()
			w.Close()
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("the run went on %v after its output's reader was gone (stderr %q)", d, errb.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("run: %v", err)
			}
			if code := ee.ExitCode(); code != 141 && !(code == -1 && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGPIPE) {
				t.Fatalf("exit %v, want SIGPIPE's (stderr %q)", ee, errb.String())
			}
			if mode == "verbose" && strings.Contains(errb.String(), "running cold") {
				t.Fatalf("the run went cold: %q", errb.String())
			}
		})
	}
}
