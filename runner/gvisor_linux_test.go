package runner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// requireTier2 stops a test on a host without a usable gVisor; under
// CI=true (where scripts/setup.sh installs runsc) that fails.
func requireTier2(t *testing.T) {
	t.Helper()
	testsupport.Require(t, testsupport.Root)
	if _, err := sandbox.Resolve(sandbox.Tier2, sandbox.ProbeHost()); err != nil {
		testsupport.Missing(t, "tier 2 unavailable here: %v", err)
	}
}

// gvisorBoxes lists the tier-2 box directories now present that the
// airlock process pid started (by each box's record): other processes'
// boxes (another test binary on the same host) are not this test's.
func gvisorBoxes(t testing.TB, pid int) map[string]bool {
	t.Helper()
	base := sandbox.GVisorBoxesDir()
	ents, _ := os.ReadDir(base)
	out := map[string]bool{}
	for _, e := range ents {
		dir := filepath.Join(base, e.Name())
		if r, err := sandbox.ReadGVisorRecord(dir); err == nil && r.Pid == pid {
			out[dir] = true
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// hostProcsOf lists host processes whose command line names dir: runsc,
// its sandbox and its gofer.
func hostProcsOf(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(b) == 0 {
			continue
		}
		if strings.Contains(string(b), dir) {
			if pid, err := strconv.Atoi(e.Name()); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestGVisorNothingLeft: after a tier-2 run, no process of the box and
// no directory of it remains.
func TestGVisorNothingLeft(t *testing.T) {
	requireTier2(t)
	before := gvisorBoxes(t, os.Getpid())
	o := runIn(t, sandbox.Tier2, fixSpec(t, gitRepo(t)), "", "sh", "-c", "sleep 30 & echo started")
	if o.err != nil || o.stdout != "started\n" {
		t.Fatalf("got %q, err %v", o.stdout, o.err)
	}
	for d := range gvisorBoxes(t, os.Getpid()) {
		if !before[d] {
			t.Errorf("box directory %s left behind (processes %v)", d, hostProcsOf(d))
		}
	}
}

// TestGVisorKillAirlock kills airlock (a stand-in running runner.Run) with
// SIGKILL in the middle of a fix-mode tier-2 run: runsc, its sandbox and
// gofer must go with it, the tree must be as it was, and the next tier-2
// box reaps the dead run's directory.
func TestGVisorKillAirlock(t *testing.T) {
	requireTier2(t)
	repo := gitRepo(t)
	status := gitStatus(t, repo)
	signal := t.TempDir()
	spec := fixSpec(t, repo)
	spec.Write = append(spec.Write, signal)
	// A limit puts runsc in a cgroup of the run's, which the box's
	// record names for the reaper.
	spec.Limits.MemoryBytes = 1 << 30
	req, _ := json.Marshal(helperReq{Spec: spec, Tier: sandbox.Tier2,
		Argv: []string{"sh", "-c", "touch " + filepath.Join(signal, "started") + "; sleep 300 & sleep 300"}})
	cmd := exec.Command(testExe(t), helperArg, string(req))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(signal, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the box never started")
		}
	}
	var dir string
	for d := range gvisorBoxes(t, cmd.Process.Pid) {
		dir = d
	}
	if dir == "" || len(hostProcsOf(dir)) < 3 {
		t.Fatalf("no running box found (directory %q, processes %v), so this test shows nothing", dir, hostProcsOf(dir))
	}
	if _, err := os.Lstat(filepath.Join(repo, ".vscode")); err != nil {
		t.Fatalf("no placeholder while the box runs, so this test shows nothing: %v", err)
	}
	rec, err := sandbox.ReadGVisorRecord(dir)
	if err != nil || rec.Pid != cmd.Process.Pid || !strings.HasPrefix(rec.ID, "airlock-") || len(rec.Cgroups) == 0 {
		t.Fatalf("the box's record %+v (%v) does not name its sandbox, its airlock and its cgroup", rec, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// Bounds on the guard's clean-up, which a loaded machine slows; not a
	// claim about speed.
	const cleanup = 30 * time.Second
	var left []int
	for end := time.Now().Add(cleanup); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if left = liveOnly(hostProcsOf(dir)); len(left) == 0 {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("processes of the box survived airlock's death: %v", left)
	}
	var after string
	for end := time.Now().Add(cleanup); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if after = gitStatus(t, repo); after == status {
			break
		}
	}
	if after != status {
		t.Errorf("the tree changed after airlock was killed:\nbefore:\n%s\nafter:\n%s", status, after)
	}
	// The next tier-2 box reaps what the dead run left.
	if o := runIn(t, sandbox.Tier2, baseSpec(t), "", "true"); o.err != nil {
		t.Fatal(o.err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the dead run's box directory %s was not reaped", dir)
	}
	if left := liveOnly(hostProcsOf(dir)); len(left) > 0 {
		t.Errorf("gVisor processes of the dead run are left after the next run: %v", left)
	}
	for _, cg := range rec.Cgroups {
		if data, err := os.ReadFile(filepath.Join(cg, "cgroup.procs")); err == nil && len(strings.TrimSpace(string(data))) > 0 {
			t.Errorf("the dead run's cgroup %s still holds processes: %s", cg, data)
		}
	}
}

// liveOnly drops zombies (runsc reparented to init and not yet reaped).
func liveOnly(pids []int) []int {
	var out []int
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + itoa(p) + "/stat")
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			continue
		}
		out = append(out, p)
	}
	return out
}

// gvisorCPULimit is the CPU row at tier 2, judged from the host: gVisor's
// kernel counts a task's CPU time by the turns it gives it, which the host
// cgroup's throttling stretches, so the box cannot measure its own quota.
// A fixed amount of work must take several times longer with the quota.
func gvisorCPULimit(t *testing.T, lim sandbox.Limits) {
	work := []string{"sh", "-c", "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done"}
	timed := func(spec sandbox.Spec) time.Duration {
		start := time.Now()
		o := runIn(t, sandbox.Tier2, spec, "", work...)
		if o.err != nil || o.res.ExitCode != 0 {
			t.Fatalf("exit %d, err %v: %s", o.res.ExitCode, o.err, o.stderr)
		}
		if spec.Limits.CPU > 0 && o.res.Description.Limits.Cgroup == "" {
			t.Errorf("the description names no cgroup: %+v", o.res.Description.Limits)
		}
		return time.Since(start)
	}
	free := timed(baseSpec(t))
	spec := baseSpec(t)
	spec.Limits = lim
	held := timed(spec)
	t.Logf("the work took %s unlimited, %s with %.2f cores", free, held, lim.CPU)
	if held < 4*free {
		t.Errorf("with %.2f cores the work took %s, not much longer than %s without: the quota did not hold", lim.CPU, held, free)
	}
}

// TestGVisorHidesSockets: a box with network at tier 2 runs runsc with
// --host-uds=open, which would let it connect to any host socket its
// mounts hold. Every socket in the granted trees but the egress proxy's
// must stay out of reach, as at tier 1: unconfined the agent socket
// answers, in a tier-2 box (with and without network) it does not.
func TestGVisorHidesSockets(t *testing.T) {
	requireTier2(t)
	rows := []struct {
		name  string
		setup func(t *testing.T) (sandbox.Spec, string)
	}{
		{"a socket inside a read grant", func(t *testing.T) (sandbox.Spec, string) {
			home := t.TempDir()
			os.MkdirAll(filepath.Join(home, ".gnupg"), 0o700)
			s := baseSpec(t)
			s.Read = []string{home}
			return s, canarySocket(t, filepath.Join(home, ".gnupg"))
		}},
		{"a socket in the writable working directory", func(t *testing.T) (sandbox.Spec, string) {
			wd := t.TempDir()
			os.MkdirAll(filepath.Join(wd, "run", "deep"), 0o700)
			return fixSpec(t, wd), canarySocket(t, filepath.Join(wd, "run", "deep"))
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			spec, sock := row.setup(t)
			if o := runIn(t, sandbox.Tier0, spec, "", testExe(t), attackArg, "connect", sock); o.err != nil || o.res.ExitCode != 0 {
				t.Fatalf("unconfined the socket did not answer (exit %d, %v): %s", o.res.ExitCode, o.err, o.stdout)
			}
			for _, tc := range []tierCase{{tier: sandbox.Tier2}, {tier: sandbox.Tier2, net: true}} {
				t.Run(tc.name(), func(t *testing.T) {
					spec, sock := row.setup(t)
					spec = withNet(t, tc, spec)
					o := runIn(t, sandbox.Tier2, spec, "", sandbox.InitPath, attackArg, "connect", sock)
					if o.err != nil {
						t.Fatalf("the box did not run: %v", o.err)
					}
					if o.res.ExitCode == 0 || !strings.HasPrefix(o.stdout, "held:") {
						t.Fatalf("the box reached the host socket: exit %d: %s%s", o.res.ExitCode, o.stdout, o.stderr)
					}
					t.Logf("held: %s", strings.TrimSpace(o.stdout))
				})
			}
		})
	}
}

// runWithin runs argv in a tier-2 box with spec and fails the test when the
// run has not ended within limit: a box that cannot start must say why,
// never hang.
func runWithin(t *testing.T, limit time.Duration, spec sandbox.Spec, argv ...string) outcome {
	t.Helper()
	done := make(chan outcome, 1)
	go func() { done <- runIn(t, sandbox.Tier2, spec, "", argv...) }()
	select {
	case o := <-done:
		return o
	case <-time.After(limit):
		t.Fatalf("the tier-2 run of %q did not end within %s", argv, limit)
	}
	return outcome{}
}

// TestGVisorStartFailure: a box runsc cannot build (a bind onto a path
// below a device file, which its kernel refuses while mounting) fails
// the run at once as unavailable (exit 125) with runsc's own reason from
// its log, with and without network.
func TestGVisorStartFailure(t *testing.T) {
	requireTier2(t)
	for _, tc := range []tierCase{{tier: sandbox.Tier2}, {tier: sandbox.Tier2, net: true}} {
		t.Run(tc.name(), func(t *testing.T) {
			spec := withNet(t, tc, baseSpec(t))
			spec.Binds = []sandbox.Bind{{Src: t.TempDir(), Dst: "/dev/null/airlock"}}
			o := runWithin(t, 60*time.Second, spec, "true")
			if !errs.Is(o.err, errs.Unavailable) || !strings.Contains(o.err.Error(), "gVisor box could not be built") || !strings.Contains(o.err.Error(), `"/dev/null/airlock"`) {
				t.Fatalf("got err %v (exit %d); want unavailable with runsc's reason naming the mount", o.err, o.res.ExitCode)
			}
			if strings.Contains(o.err.Error(), `{"msg"`) {
				t.Errorf("the reason is runsc's raw log line, not its message: %v", o.err)
			}
			t.Logf("refused: %v", o.err)
		})
	}
}

// TestGVisorSentryDies: gVisor's kernel (runsc's sandbox process) killed
// while a command runs fails that call as unavailable with a reason,
// whereas a command that kills itself with SIGKILL is that command's
// status: the init's report tells them apart.
func TestGVisorSentryDies(t *testing.T) {
	requireTier2(t)
	for _, tc := range []tierCase{{tier: sandbox.Tier2}, {tier: sandbox.Tier2, net: true}} {
		t.Run(tc.name(), func(t *testing.T) {
			sig := t.TempDir()
			spec := fixSpec(t, t.TempDir())
			spec.Write = append(spec.Write, sig)
			spec = withNet(t, tc, spec)
			if o := runWithin(t, 60*time.Second, spec, "sh", "-c", "kill -9 $$"); o.err != nil || o.res.Signal != 9 {
				t.Fatalf("a command that SIGKILLs itself: err %v, signal %d; want signal 9 and no error", o.err, o.res.Signal)
			}
			done := make(chan outcome, 1)
			go func() {
				done <- runIn(t, sandbox.Tier2, spec, "", "sh", "-c", "touch "+filepath.Join(sig, "started")+"; sleep 60")
			}()
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(sig, "started")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the box never started")
				}
			}
			killed := 0
			for d := range gvisorBoxes(t, os.Getpid()) {
				for _, p := range hostProcsOf(d) {
					if b, _ := os.ReadFile("/proc/" + itoa(p) + "/cmdline"); strings.Contains(string(b), "\x00boot\x00") {
						syscall.Kill(p, syscall.SIGKILL)
						killed++
					}
				}
			}
			if killed == 0 {
				t.Fatal("found no runsc sandbox process to kill, so this test shows nothing")
			}
			select {
			case o := <-done:
				if !errs.Is(o.err, errs.Unavailable) || !strings.Contains(o.err.Error(), "died while the command ran") {
					t.Fatalf("got err %v, exit %d, signal %d; want the call failed as unavailable because the box died", o.err, o.res.ExitCode, o.res.Signal)
				}
				t.Logf("failed: %v", o.err)
			case <-time.After(30 * time.Second):
				t.Fatal("the call did not end within 30 s of its Sentry's death")
			}
		})
	}
}
