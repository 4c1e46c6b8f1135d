package runner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
func gvisorBoxes(t *testing.T, pid int) map[string]bool {
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

// BenchmarkGVisorTrue measures a cold tier-2 call (`/bin/true` through
// runner.Run: plan, bundle, runsc run, teardown) against runsc run of the
// same bundle by hand, and against `runsc exec` into a box already
// running, the per-call price a warm box has to beat.
func BenchmarkGVisorTrue(b *testing.B) {
	if _, err := sandbox.Resolve(sandbox.Tier2, sandbox.ProbeHost()); err != nil {
		testsupport.Missing(b, "tier 2 unavailable here: %v", err)
	}
	exe := testExe(b)
	spec := sandbox.Spec{Workdir: b.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}}
	b.Run("cold", func(b *testing.B) {
		var air, hand []time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			res, err := Run(context.Background(), exe, Request{Argv: []string{"/bin/true"}, Spec: spec, Tier: sandbox.Tier2})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("airlock run: exit %d, %v", res.ExitCode, err)
			}
			air = append(air, time.Since(start))

			box, err := sandbox.Plan(spec, sandbox.Tier2, exe)
			if err != nil {
				b.Fatal(err)
			}
			argv, err := box.GVisorCommand([]string{"/bin/true"})
			if err != nil {
				b.Fatal(err)
			}
			byHand := exec.Command(argv[0], argv[1:]...)
			if byHand.ExtraFiles, err = box.GVisorFiles(); err != nil {
				b.Fatal(err)
			}
			start = time.Now()
			err = byHand.Run()
			hand = append(hand, time.Since(start))
			box.Close()
			if err != nil {
				b.Fatalf("runsc by hand: %v", err)
			}
		}
		b.ReportMetric(float64(median(air).Microseconds())/1000, "airlock-ms")
		b.ReportMetric(float64(median(hand).Microseconds())/1000, "runsc-run-ms")
	})
	b.Run("runsc-exec", func(b *testing.B) {
		box, err := sandbox.Plan(spec, sandbox.Tier2, exe)
		if err != nil {
			b.Fatal(err)
		}
		defer box.Close()
		argv, err := box.GVisorCommand([]string{"sleep", "600"})
		if err != nil {
			b.Fatal(err)
		}
		run := exec.Command(argv[0], argv[1:]...)
		if run.ExtraFiles, err = box.GVisorFiles(); err != nil {
			b.Fatal(err)
		}
		if err := run.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { run.Process.Kill(); run.Wait() }()
		// argv is (the launcher, then) runsc, its global flags, then
		// "run --bundle DIR ID".
		for argv[0] != box.Path {
			argv = argv[1:]
		}
		global, id := argv[1:len(argv)-4], argv[len(argv)-1]
		execArgs := append(append([]string(nil), global...), "exec", id, "/bin/true")
		deadline := time.Now().Add(20 * time.Second)
		for exec.Command(argv[0], execArgs...).Run() != nil {
			if time.Now().After(deadline) {
				b.Fatal("the box never ran")
			}
			time.Sleep(20 * time.Millisecond)
		}
		var ds []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if err := exec.Command(argv[0], execArgs...).Run(); err != nil {
				b.Fatalf("runsc exec: %v", err)
			}
			ds = append(ds, time.Since(start))
		}
		b.ReportMetric(float64(median(ds).Microseconds())/1000, "exec-ms")
	})
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
