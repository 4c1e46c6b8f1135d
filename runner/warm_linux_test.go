package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// warmPool is a pool for one test, closed with it.
func warmPool(t testing.TB) *Pool {
	t.Helper()
	p := NewPool(testExe(t), 0)
	t.Cleanup(p.Close)
	return p
}

// warmRun runs argv through p in a tier-1 box of spec.
func warmRun(t *testing.T, p *Pool, spec sandbox.Spec, argv ...string) outcome {
	t.Helper()
	return warmRunAt(t, p, sandbox.Tier1, spec, argv...)
}

// warmRunAt runs argv through p in a box of spec at tier.
func warmRunAt(t *testing.T, p *Pool, tier sandbox.Tier, spec sandbox.Spec, argv ...string) outcome {
	t.Helper()
	var o, e bytes.Buffer
	res, err := p.Run(context.Background(), Request{Argv: argv, Spec: spec, Tier: tier, Stdout: &o, Stderr: &e})
	return outcome{res, err, o.String(), e.String()}
}

// mustWarm is warmRun that fails the test unless the command exited 0.
func mustWarm(t *testing.T, p *Pool, spec sandbox.Spec, argv ...string) outcome {
	t.Helper()
	return mustWarmAt(t, p, sandbox.Tier1, spec, argv...)
}

// mustWarmAt is warmRunAt that fails the test unless the command exited 0.
func mustWarmAt(t *testing.T, p *Pool, tier sandbox.Tier, spec sandbox.Spec, argv ...string) outcome {
	t.Helper()
	o := warmRunAt(t, p, tier, spec, argv...)
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("%q: exit %d, err %v, stderr %q", argv, o.res.ExitCode, o.err, o.stderr)
	}
	return o
}

// warmHelper is helperMain for a warm box: `true` makes the box, then
// Argv runs in it.
func warmHelper(exe string, hr helperReq) int {
	p := NewPool(exe, 0)
	defer p.Close()
	req := Request{Argv: []string{"true"}, Spec: hr.Spec, Tier: hr.Tier}
	if _, err := p.Run(context.Background(), req); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 125
	}
	req.Argv, req.Stdout, req.Stderr = hr.Argv, os.Stdout, os.Stderr
	res, err := p.Run(context.Background(), req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 125
	}
	return res.ExitCode
}

// TestWarmIsolation: nothing one call leaves is there for the next in the
// same box: files in the scratch directories, processes that left the
// call's session or process group, System V IPC objects, environment.
func TestWarmIsolation(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	marker := "987654.3" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { killMarked(marker) })
	first := spec
	first.Env = append(append([]string(nil), spec.Env...), "LEFT_BY_FIRST=1")
	o := mustWarm(t, p, first, "sh", "-c", `
		echo x >/tmp/left; mkdir -p /tmp/d/e && echo y >/tmp/d/e/f && chmod 0 /tmp/d
		echo x >/var/tmp/left; echo x >$HOME/left; echo x 2>/dev/null >/run/left; mkdir /dev/left
		export LEFT_EXPORTED=1
		setsid sleep `+marker+` >/dev/null 2>&1 &
		nohup sleep `+marker+` >/dev/null 2>&1 &
		( ( sleep `+marker+` & ) & ) >/dev/null 2>&1
		ipcmk -M 4096 >/dev/null 2>&1; echo ipc=$(ipcs -m | grep -c '^0x')
		sleep 0.2; ls /tmp/left && env | grep -c LEFT_ && chmod 0 /tmp`)
	if !strings.Contains(o.stdout, "/tmp/left") || !strings.Contains(o.stdout, "ipc=1") {
		t.Fatalf("the first call did not leave its file and shared memory (stdout %q), so this test shows nothing", o.stdout)
	}
	// The call's report comes only once every process of it has ended.
	if left := marked(marker); len(left) > 0 {
		t.Errorf("processes of the first call outlived it: %v", left)
	}
	o = mustWarm(t, p, spec, "sh", "-c", `
		ls -A /tmp /var/tmp $HOME /run; ls -d /dev/left 2>/dev/null; stat -c %a /tmp
		env | grep LEFT_; echo ipc=$(ipcs -m | grep -c '^0x')`)
	lines := strings.Fields(o.stdout)
	for _, bad := range []string{"left", "d", "LEFT_BY_FIRST=1", "LEFT_EXPORTED=1", "/dev/left"} {
		for _, l := range lines {
			if l == bad {
				t.Errorf("the second call saw %q left by the first:\n%s", bad, o.stdout)
			}
		}
	}
	if !strings.Contains(o.stdout, "ipc=0") {
		t.Errorf("the first call's shared memory segment was left:\n%s", o.stdout)
	}
	cold := runIn(t, sandbox.Tier1, spec, "", "stat", "-c", "%a", "/tmp")
	if mode := strings.TrimSpace(cold.stdout); mode == "" || !strings.Contains(o.stdout, "\n"+mode+"\n") {
		t.Errorf("/tmp's mode was not brought back to a new box's %q:\n%s", mode, o.stdout)
	}
	if !strings.Contains(o.res.Description.Notes[len(o.res.Description.Notes)-1], "call 2") || p.Boxes() != 1 {
		t.Errorf("the second call did not run in the first call's box (%d boxes, notes %q), so this test shows nothing", p.Boxes(), o.res.Description.Notes)
	}
}

// TestWarmControlUnreachable: a call cannot reach the init's control
// socket: it is not among the call's descriptors, and the init's own
// descriptors cannot be listed through /proc (nor is the init there when
// the box's /proc hides it). Unconfined first: a process
// of the same user reads a dumpable parent's descriptors and finds its
// socket.
func TestWarmControlUnreachable(t *testing.T) {
	requireTier1(t)
	// Unconfined: the descriptors of a process of the same user are open
	// to a tier-0 command.
	a, b, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	u := runIn(t, sandbox.Tier0, baseSpec(t), "", "ls", "-l", "/proc/"+strconv.Itoa(os.Getpid())+"/fd")
	if u.err != nil || !strings.Contains(u.stdout, "socket:") {
		t.Fatalf("unconfined, the test's own socket was not listed (err %v, %q): the attack does not work here, so this test shows nothing", u.err, u.stdout)
	}

	p := warmPool(t)
	spec := baseSpec(t)
	mustWarm(t, p, spec, "true")
	o := warmRun(t, p, spec, "sh", "-c", `ls -l /proc/self/fd/; echo ---; ls -l /proc/1/fd/ 2>&1; cat /proc/1/environ 2>&1 | head -c 100; echo; readlink /proc/1/fd/* 2>&1`)
	if o.err != nil {
		t.Fatal(o.err)
	}
	self, init, _ := strings.Cut(o.stdout, "---")
	if strings.Contains(self, "socket:") {
		t.Errorf("a call holds a socket descriptor:\n%s", self)
	}
	for _, l := range strings.Split(strings.TrimSpace(self), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) > 8 {
			if n, _ := strconv.Atoi(f[8]); n > 3 {
				t.Errorf("a call inherited descriptor %d: %s", n, l)
			}
		}
	}
	// Refused, or (the box's /proc showing a call only its own
	// processes, warm_private_linux.go) not there at all.
	refused := strings.Contains(init, "Permission denied") || strings.Contains(init, "Operation not permitted") || strings.Contains(init, "No such file or directory")
	if strings.Contains(init, "socket:") || !refused {
		t.Errorf("the init's descriptors were not refused to the call:\n%s", init)
	}
	if o.res.Description.Notes[len(o.res.Description.Notes)-1] != "warm box: call 2 of this box" {
		t.Errorf("the call did not run in a warm box (notes %q), so this test shows nothing", o.res.Description.Notes)
	}
}

func socketPair() (*os.File, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b"), nil
}

// TestWarmNewBox: a call of another confinement (mode, grants, working
// directory) gets another box; the same confinement gets the same box; a
// change on the host that a fresh plan sees (a socket appearing in the
// working directory) gets another box too, so a warm call never sees what a
// box of its own would have covered.
func TestWarmNewBox(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	wd := t.TempDir()
	observe := sandbox.Spec{Workdir: wd, Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}}
	grant := observe
	grant.Read = []string{t.TempDir()}
	other := baseSpec(t)
	limited := observe
	limited.Limits.MemoryBytes = 256 << 20
	limitedWall := limited
	limitedWall.Limits.Wall = time.Minute
	steps := []struct {
		name  string
		spec  sandbox.Spec
		boxes int
	}{
		{"first", observe, 1},
		{"same again", observe, 1},
		{"another grant", grant, 2},
		{"another directory", other, 3},
		{"observe once more", observe, 3},
		{"another memory limit", limited, 4},
		{"another wall-clock limit", limitedWall, 4},
	}
	for _, s := range steps {
		mustWarm(t, p, s.spec, "true")
		if got := p.Boxes(); got != s.boxes {
			t.Errorf("%s: got %d boxes, want %d", s.name, got, s.boxes)
		}
	}
	// Fix mode here needs placeholders on the host for the missing
	// protected paths: it runs cold, so they go when the call ends.
	if o := mustWarm(t, p, fixSpec(t, wd), "true"); p.Boxes() != 4 || strings.HasPrefix(o.res.Description.Notes[len(o.res.Description.Notes)-1], "warm box") {
		t.Errorf("a call with placeholders ran warm (%d boxes, notes %q)", p.Boxes(), o.res.Description.Notes)
	}
	// A socket appears in the working directory: the fresh plan covers
	// it, and the call runs in a new box that does.
	sock := filepath.Join(wd, "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := mustWarm(t, p, observe, "sh", "-c", "test -S "+sock+" && echo socket || echo covered")
	if strings.TrimSpace(o.stdout) != "covered" || p.Boxes() != 5 {
		t.Errorf("after a socket appeared: got %q with %d boxes, want it covered in a fifth box", o.stdout, p.Boxes())
	}
}

// TestWarmKillAirlock: SIGKILL of airlock while a call runs in a warm box
// leaves no process of the box behind.
func TestWarmKillAirlock(t *testing.T) {
	requireTier1(t)
	marker := "876543.2" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { killMarked(marker) })
	req, _ := json.Marshal(helperReq{Spec: baseSpec(t), Tier: sandbox.Tier1, Warm: true,
		Argv: []string{"sh", "-c", "setsid sleep " + marker + " & sleep " + marker}})
	cmd := exec.Command(testExe(t), helperArg, string(req))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The helper's own command line holds the marker too: count the
	// sleeps only.
	sleeps := func() (out []int) {
		for _, pid := range marked(marker) {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); strings.HasPrefix(string(b), "sleep\x00") {
				out = append(out, pid)
			}
		}
		return out
	}
	for deadline := time.Now().Add(30 * time.Second); len(sleeps()) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the warm call never started")
		}
	}
	var inits []int
	for _, pid := range marked(boxconf.FlagServe) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if strings.HasPrefix(string(b), sandbox.InitPath+"\x00") && parentOf(parentOf(pid)) == cmd.Process.Pid {
			inits = append(inits, pid)
		}
	}
	if len(inits) == 0 {
		t.Fatal("no warm box's init is running, so this test shows nothing")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !waitGone(marker, 30*time.Second) {
		t.Errorf("the call's processes survived airlock's death: %v", marked(marker))
	}
	for _, pid := range inits {
		for end := time.Now().Add(30 * time.Second); alive(pid) && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("the warm box's init %d survived airlock's death", pid)
		}
	}
}

func parentOf(pid int) int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// TestWarmConformance runs the conformance suite, and the containment
// rows, with every tier-1 call without network going through one warm
// pool: the warm shape must give what a box of its own gives. Calls the
// warm path does not take run cold, as before.
func TestWarmConformance(t *testing.T) {
	requireTier1(t)
	warmConformance(t, func(Request) bool { return true })
}

// warmConformance runs the conformance suite, the containment rows and
// the output cap with the calls warm takes going through one warm pool
// (the pool runs cold what it cannot take), and fails when none ran in a
// warm box.
func warmConformance(t *testing.T, warm func(Request) bool) {
	p := warmPool(t)
	n := 0
	runVia = func(ctx context.Context, exe string, req Request) (Result, error) {
		if !warm(req) {
			return Run(ctx, exe, req)
		}
		res, err := p.Run(ctx, req)
		if notes := res.Description.Notes; len(notes) > 0 && strings.HasPrefix(notes[len(notes)-1], "warm box: call") {
			n++
		}
		return res, err
	}
	t.Cleanup(func() { runVia = Run })
	t.Run("conformance", TestConformance)
	t.Run("containment", TestContainment)
	t.Run("output cap", TestOutputCap)
	if n == 0 {
		t.Fatal("no call went through the warm pool, so this test shows nothing")
	}
	t.Logf("%d calls ran in warm boxes, %d boxes left", n, p.Boxes())
}

// TestWarmSideBySide: calls running at the same time get a box each; once
// they end the pool keeps at most maxIdleBoxes of them.
func TestWarmSideBySide(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	const n = 3
	errc := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			res, err := p.Run(context.Background(), Request{Argv: []string{"sleep", "0.5"}, Spec: spec, Tier: sandbox.Tier1})
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d", res.ExitCode)
			}
			errc <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	p.settledAll() // the third box is retired once it is clear
	if got := p.Boxes(); got != maxIdleBoxes {
		t.Errorf("after %d calls side by side the pool holds %d boxes, want %d", n, got, maxIdleBoxes)
	}
}

// TestWarmIdleEnds: a box ends after its idle time without a call, and
// nothing of it is left.
func TestWarmIdleEnds(t *testing.T) {
	requireTier1(t)
	p := NewPool(testExe(t), 200*time.Millisecond)
	defer p.Close()
	mustWarm(t, p, baseSpec(t), "true")
	if p.Boxes() != 1 {
		t.Fatalf("got %d boxes after a call, want 1", p.Boxes())
	}
	for end := time.Now().Add(10 * time.Second); p.Boxes() > 0 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if p.Boxes() != 0 {
		t.Errorf("the idle box was not ended")
	}
	ours := func() (out []int) {
		for _, pid := range marked(boxconf.FlagServe) {
			if parentOf(parentOf(pid)) == os.Getpid() && alive(pid) {
				out = append(out, pid)
			}
		}
		return out
	}
	for end := time.Now().Add(10 * time.Second); len(ours()) > 0 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if left := ours(); len(left) > 0 {
		t.Errorf("the idle box's init is still running: %v", left)
	}
}

// TestWarmCancel: a call whose context ends is cut short at once, its box
// is retired and nothing of it is left.
func TestWarmCancel(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	mustWarm(t, p, spec, "true")
	marker := "765432.1" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { killMarked(marker) })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := p.Run(ctx, Request{Argv: []string{"sleep", marker}, Spec: spec, Tier: sandbox.Tier1})
	if err == nil {
		t.Fatal("a cancelled call reported no error")
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("the cancelled call took %v to return", took)
	}
	if p.Boxes() != 0 {
		t.Errorf("the cancelled call's box is still in the pool (%d boxes)", p.Boxes())
	}
	if !waitGone(marker, 10*time.Second) {
		t.Errorf("the cancelled call's process survived: %v", marked(marker))
	}
	mustWarm(t, p, spec, "true") // the next call gets a new box
}

// TestWarmWorkdirScratch: a working directory that is one of the box's
// scratch directories (/var/tmp) is the host's tree bound over the box's
// own tmpfs there, as in a box of its own. The box's reset must not enter
// that tree: a file the host makes there after the box began stays (and
// is seen, as a fresh box would see it), the box stays clean and serves
// the next call, and what a call left in the scratch the box does own is
// gone for the next. One that holds a scratch directory (/var) leaves the
// box's own /var/tmp to be reset as ever. (A writable grant of /var/tmp
// runs cold: its placeholders for protected paths are on the host.)
func TestWarmWorkdirScratch(t *testing.T) {
	rows := []struct {
		name     string
		tier     sandbox.Tier
		wd       string
		seesHost bool // the host's /var/tmp is the box's
		left     string
	}{
		{"tier 1 in /var/tmp", sandbox.Tier1, "/var/tmp", true, "/tmp/left"},
		{"tier 1 in /var", sandbox.Tier1, "/var", false, "/var/tmp/left"},
		{"tier 2 in /var/tmp", sandbox.Tier2, "/var/tmp", true, "/tmp/left"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			if r.tier == sandbox.Tier2 {
				requireTier2(t)
			} else {
				requireTier1(t)
			}
			p := warmPool(t)
			spec := testSpec(sandbox.Spec{Workdir: r.wd, Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}})
			mustWarmAt(t, p, r.tier, spec, "sh", "-c", "echo x >"+r.left+" && echo x >$HOME/left")
			// Made on the host once the box has taken its first state.
			host, err := os.CreateTemp("/var/tmp", "airlock-warm-host-")
			if err != nil {
				t.Fatal(err)
			}
			host.Close()
			t.Cleanup(func() { os.Remove(host.Name()) })
			p.settledAll()
			for call := 2; call <= 3; call++ {
				o := mustWarmAt(t, p, r.tier, spec, "sh", "-c", "ls -A /tmp /var/tmp $HOME; test -e "+host.Name()+" && echo host-file; true")
				if strings.Contains(o.stdout, "host-file") != r.seesHost || strings.Contains(o.stdout, "left") {
					t.Errorf("call %d: saw %q, want the host's file %v and nothing the first call left", call, o.stdout, r.seesHost)
				}
				p.settledAll()
				if _, err := os.Stat(host.Name()); err != nil {
					t.Fatalf("call %d: the box's reset touched the host's file: %v", call, err)
				}
				note := o.res.Description.Notes[len(o.res.Description.Notes)-1]
				if want := fmt.Sprintf("call %d of this box", call); !strings.Contains(note, want) || p.Boxes() != 1 {
					t.Errorf("call %d: notes end %q with %d boxes, want %q in the one box", call, note, p.Boxes(), want)
				}
			}
		})
	}
}
