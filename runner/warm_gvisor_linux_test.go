package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// warmRun2 runs argv through p in a tier-2 box of spec.
func warmRun2(t *testing.T, p *Pool, spec sandbox.Spec, argv ...string) outcome {
	t.Helper()
	return warmRunAt(t, p, sandbox.Tier2, spec, argv...)
}

func mustWarm2(t *testing.T, p *Pool, spec sandbox.Spec, argv ...string) outcome {
	t.Helper()
	return mustWarmAt(t, p, sandbox.Tier2, spec, argv...)
}

// lastNote is the last of a result's notes ("warm box: call N…").
func lastNote(o outcome) string {
	n := o.res.Description.Notes
	if len(n) == 0 {
		return ""
	}
	return n[len(n)-1]
}

// TestWarmGVisorIsolation: at tier 2 too, nothing one call leaves is
// there for the next in the same box: files in the scratch directories,
// processes that left the call's session, exported variables, System V
// shared memory. The processes live in gVisor's kernel, not the host's,
// so the second call looks for them from inside.
func TestWarmGVisorIsolation(t *testing.T) {
	requireTier2(t)
	p := warmPool(t)
	spec := baseSpec(t)
	marker := "765432.1" + strconv.Itoa(os.Getpid())
	first := spec
	first.Env = append(append([]string(nil), spec.Env...), "LEFT_BY_FIRST=1")
	o := mustWarm2(t, p, first, "sh", "-c", `
		echo x >/tmp/left; mkdir -p /tmp/d/e && echo y >/tmp/d/e/f && chmod 0 /tmp/d
		echo x >/var/tmp/left; echo x >$HOME/left; echo x 2>/dev/null >/run/left
		export LEFT_EXPORTED=1
		setsid sleep `+marker+` >/dev/null 2>&1 &
		nohup sleep `+marker+` >/dev/null 2>&1 &
		( ( sleep `+marker+` & ) & ) >/dev/null 2>&1
		SHM=$(ipcmk -M 4096 | tr -dc 0-9); export SHM; echo id=$SHM; `+shmCheck+`
		sleep 0.2; echo procs=$(pgrep -c -f "^sleep `+marker+`")
		ls /tmp/left && env | grep -c LEFT_`)
	shm := regexp.MustCompile(`id=([0-9]+)`).FindStringSubmatch(o.stdout)
	if !strings.Contains(o.stdout, "/tmp/left") || !strings.Contains(o.stdout, "procs=3") || !strings.Contains(o.stdout, "shm=present") || shm == nil {
		t.Fatalf("the first call did not leave its file, processes and segment (stdout %q), so this test shows nothing", o.stdout)
	}
	o = mustWarm2(t, p, spec, "sh", "-c", `export SHM=`+shm[1]+`
		ls -A /tmp /var/tmp $HOME /run
		env | grep LEFT_; `+shmCheck+`
		echo procs=$(pgrep -c -f "^sleep `+marker+`")`)
	lines := strings.Fields(o.stdout)
	for _, bad := range []string{"left", "d", "LEFT_BY_FIRST=1", "LEFT_EXPORTED=1"} {
		for _, l := range lines {
			if l == bad {
				t.Errorf("the second call saw %q left by the first:\n%s", bad, o.stdout)
			}
		}
	}
	if !strings.Contains(o.stdout, "procs=0") {
		t.Errorf("processes of the first call outlived it:\n%s", o.stdout)
	}
	if !strings.Contains(o.stdout, "shm=absent") {
		t.Errorf("the first call's shared memory segment was left:\n%s", o.stdout)
	}
	if !strings.Contains(lastNote(o), "call 2") || p.Boxes() != 1 || o.res.Description.Tier != 2 {
		t.Errorf("the second call did not run in the first call's tier-2 box (%d boxes, tier %d, notes %q), so this test shows nothing",
			p.Boxes(), o.res.Description.Tier, o.res.Description.Notes)
	}
}

// shmCheck says whether the shared memory segment $SHM exists: gVisor has
// no /proc/sysvipc for ipcs to list.
const shmCheck = `perl -MIPC::SysV=IPC_STAT -e 'print defined(shmctl($ENV{SHM},IPC_STAT,$b)) ? "shm=present\n" : "shm=absent\n"'`

// killSentries kills the runsc sandbox processes (gVisor's kernel) of this
// process's tier-2 boxes and says how many it killed.
func killSentries(t *testing.T) int {
	killed := 0
	for d := range gvisorBoxes(t, os.Getpid()) {
		for _, p := range hostProcsOf(d) {
			if b, _ := os.ReadFile("/proc/" + itoa(p) + "/cmdline"); strings.Contains(string(b), "\x00boot\x00") {
				syscall.Kill(p, syscall.SIGKILL)
				killed++
			}
		}
	}
	return killed
}

// TestWarmGVisorSentryDies: a warm box's Sentry killed between calls
// gives the next call a new box; killed during a call, that call fails as
// unavailable (exit 125) and the box is replaced.
func TestWarmGVisorSentryDies(t *testing.T) {
	requireTier2(t)
	p := warmPool(t)
	spec := baseSpec(t)
	mustWarm2(t, p, spec, "true")
	if o := mustWarm2(t, p, spec, "true"); !strings.Contains(lastNote(o), "call 2") {
		t.Fatalf("the second call did not reuse the box (%q), so this test shows nothing", lastNote(o))
	}
	if killSentries(t) == 0 {
		t.Fatal("found no runsc sandbox process to kill, so this test shows nothing")
	}
	for end := time.Now().Add(30 * time.Second); p.Boxes() > 0 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
	}
	if o := mustWarm2(t, p, spec, "echo", "again"); o.stdout != "again\n" || !strings.Contains(lastNote(o), "call 1") {
		t.Fatalf("after its Sentry died, got %q in %q; want a new box", o.stdout, lastNote(o))
	}

	// The call says it started on its stdout, read through a pipe.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	done := make(chan outcome, 1)
	go func() {
		res, err := p.Run(context.Background(), Request{Argv: []string{"sh", "-c", "echo started; sleep 60"}, Spec: spec, Tier: sandbox.Tier2, Stdout: pw})
		pw.Close()
		done <- outcome{res: res, err: err}
	}()
	if line, _ := bufio.NewReader(pr).ReadString('\n'); line != "started\n" {
		t.Fatalf("the call did not start (%q)", line)
	}
	if killSentries(t) == 0 {
		t.Fatal("found no runsc sandbox process to kill, so this test shows nothing")
	}
	select {
	case o := <-done:
		if !errs.Is(o.err, errs.Unavailable) || errs.ExitCode(o.err) != 125 {
			t.Fatalf("got err %v, exit %d; want the call failed as unavailable (125)", o.err, o.res.ExitCode)
		}
		t.Logf("failed: %v", o.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end within 30 s of its Sentry's death")
	}
	if o := mustWarm2(t, p, spec, "echo", "replaced"); o.stdout != "replaced\n" || !strings.Contains(lastNote(o), "call 1") {
		t.Fatalf("after a Sentry died mid-call, got %q in %q; want a new box", o.stdout, lastNote(o))
	}
}

// TestWarmGVisorKillAirlock: SIGKILL of airlock (a stand-in running a
// warm pool) while a call runs in a tier-2 warm box leaves no process of
// the box on the host.
func TestWarmGVisorKillAirlock(t *testing.T) {
	requireTier2(t)
	spec := baseSpec(t)
	spec.Limits.MemoryBytes = 1 << 30 // a cgroup the box's record names
	req, _ := json.Marshal(helperReq{Spec: spec, Tier: sandbox.Tier2, Warm: true,
		Argv: []string{"sh", "-c", "setsid sleep 300 & echo started; sleep 300"}})
	cmd := exec.Command(testExe(t), helperArg, string(req))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "started\n" {
		t.Fatalf("the warm call never started (%q)", line)
	}
	var dir string
	for d := range gvisorBoxes(t, cmd.Process.Pid) {
		dir = d
	}
	if dir == "" || len(hostProcsOf(dir)) < 3 {
		t.Fatalf("no running box found (directory %q, processes %v), so this test shows nothing", dir, hostProcsOf(dir))
	}
	if !serving(hostProcsOf(dir)) {
		t.Fatalf("the box of directory %s is not a warm one (no --serve-fd), so this test shows nothing", dir)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	var left []int
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if left = liveOnly(hostProcsOf(dir)); len(left) == 0 {
			break
		}
	}
	if len(left) > 0 {
		t.Fatalf("processes of the warm box survived airlock's death: %v", left)
	}
	// The next tier-2 box reaps the dead airlock's directory.
	mustWarm2(t, warmPool(t), baseSpec(t), "true")
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the dead airlock's box directory %s was not reaped", dir)
	}
}

// serving reports whether one of pids is a warm box's runsc: the box's
// config.json names the serving init's flag.
func serving(pids []int) bool {
	for _, p := range pids {
		b, _ := os.ReadFile("/proc/" + itoa(p) + "/cmdline")
		args := strings.Split(string(b), "\x00")
		for i, a := range args {
			if a == "--bundle" && i+1 < len(args) {
				cfg, _ := os.ReadFile(args[i+1] + "/config.json")
				if strings.Contains(string(cfg), boxconf.FlagServe) {
					return true
				}
			}
		}
	}
	return false
}

// TestWarmGVisorConformance runs the conformance suite, and the
// containment rows, with every tier-2 call without network going through
// one warm pool: a warm gVisor box must give what a box of its own gives.
// Every other call runs as Run runs it.
func TestWarmGVisorConformance(t *testing.T) {
	requireTier2(t)
	warmConformance(t, func(req Request) bool { return req.Tier == sandbox.Tier2 })
}

// TestWarmGVisorNewBox: a tier-2 call runs in a box of its own
// confinement: another grant, directory, limit, or a granted directory
// replaced on the host since the box was made gives another box; the same
// confinement (a wall-clock limit is each call's own) reuses it.
func TestWarmGVisorNewBox(t *testing.T) {
	requireTier2(t)
	p := warmPool(t)
	observe := sandbox.Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}}
	granted := filepath.Join(t.TempDir(), "granted")
	if err := os.Mkdir(granted, 0o755); err != nil {
		t.Fatal(err)
	}
	grant := observe
	grant.Read = []string{granted}
	limited := observe
	limited.Limits.MemoryBytes = 256 << 20
	limitedWall := limited
	limitedWall.Limits.Wall = time.Minute
	replace := func() {
		if err := os.Rename(granted, granted+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(granted, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name   string
		spec   sandbox.Spec
		before func()
		boxes  int
	}{
		{"first", observe, nil, 1},
		{"same again", observe, nil, 1},
		{"another grant", grant, nil, 2},
		{"another directory", baseSpec(t), nil, 3},
		{"observe once more", observe, nil, 3},
		{"another memory limit", limited, nil, 4},
		{"another wall-clock limit", limitedWall, nil, 4},
		{"the grant again", grant, nil, 4},
		{"the granted directory replaced", grant, replace, 5},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		mustWarm2(t, p, s.spec, "true")
		if got := p.Boxes(); got != s.boxes {
			t.Errorf("%s: got %d boxes, want %d", s.name, got, s.boxes)
		}
	}
}

// TestWarmGVisorControlUnreachable: in gVisor's kernel too, a call cannot
// reach its init's control socket: it holds no descriptor above the
// standard three, and the init's descriptors and memory are refused to it
// (the init is not dumpable). A call that wrote to the socket could hand
// the runner a forged report and outlive its own end.
func TestWarmGVisorControlUnreachable(t *testing.T) {
	requireTier2(t)
	p := warmPool(t)
	spec := baseSpec(t)
	mustWarm2(t, p, spec, "true")
	o := warmRun2(t, p, spec, "sh", "-c", `ls /proc/self/fd/; echo ---; ls -l /proc/1/fd/ 2>&1; cat /proc/1/environ 2>&1 | head -c 100; echo; echo forged >/proc/1/fd/5 && echo wrote`)
	if o.err != nil {
		t.Fatal(o.err)
	}
	self, init, _ := strings.Cut(o.stdout, "---")
	for _, f := range strings.Fields(self) {
		if n, _ := strconv.Atoi(f); n > 3 {
			t.Errorf("a call holds descriptor %d:\n%s", n, self)
		}
	}
	if strings.Contains(init, "socket:") || strings.Contains(init, "wrote") || strings.Contains(init, "GOMAXPROCS") {
		t.Errorf("the init's descriptors or environment were open to the call:\n%s", init)
	}
	if !strings.Contains(lastNote(o), "call 2") {
		t.Errorf("the call did not run in a warm box (%q), so this test shows nothing", lastNote(o))
	}
	t.Logf("the call saw:\n%s%s", o.stdout, o.stderr)
}

// TestWarmGVisorHomeInTmp: a HOME inside the box's private /tmp is made
// for every call of a tier-2 warm box, as a cold box makes it, and what
// one call wrote there is gone for the next.
func TestWarmGVisorHomeInTmp(t *testing.T) {
	requireTier2(t)
	p := warmPool(t)
	spec := sandbox.Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp/home/box"}}
	o := mustWarm2(t, p, spec, "sh", "-c", `echo x >"$HOME/left" && ls -A "$HOME"`)
	if o.stdout != "left\n" {
		t.Fatalf("the first call could not write in its HOME (%q), so this test shows nothing", o.stdout)
	}
	o = mustWarm2(t, p, spec, "sh", "-c", `test -d "$HOME" && ls -A "$HOME" && echo home`)
	if o.stdout != "home\n" || !strings.Contains(lastNote(o), "call 2") {
		t.Errorf("the second call's HOME: %q in %q; want it there, empty, in the first call's box", o.stdout, lastNote(o))
	}
}
