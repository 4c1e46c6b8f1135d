package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox/cgroup"
)

// TestJudgeRunsc: only a static runsc no older than the floor may run
// boxes, and every refusal names the fix.
func TestJudgeRunsc(t *testing.T) {
	rows := []struct {
		name   string
		in     RunscReport
		usable bool
		why    string
	}{
		{"static and recent", RunscReport{Path: "/x/runsc", Static: true, Date: "20260701"}, true, ""},
		{"newer than the floor", RunscReport{Path: "/x/runsc", Static: true, Date: "20270105"}, true, ""},
		{"dynamically linked", RunscReport{Path: "/x/runsc", Static: false, Date: "20260701"}, false, "dynamically linked"},
		{"Debian's 2022 package", RunscReport{Path: "/usr/bin/runsc", Static: true, Version: "release-20220228.0", Date: "20220228"}, false, "older than"},
		{"no date", RunscReport{Path: "/x/runsc", Static: true, Version: "VERSION_MISSING"}, false, "no build date"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			got := judgeRunsc(r.in)
			if got.Usable != r.usable || !strings.Contains(got.Why, r.why) {
				t.Errorf("got usable %v, why %q; want %v and a reason with %q", got.Usable, got.Why, r.usable, r.why)
			}
			if !got.Usable && !strings.Contains(got.Fix, "scripts/setup.sh") {
				t.Errorf("refusal without the fix: %q", got.Fix)
			}
		})
	}
}

// TestCheckRunscReadsTheBinary: the ELF check sees a dynamically linked
// program for what it is (any of the host's ordinary programs), and the
// runsc on PATH, when there is one, for what it is too.
func TestCheckRunscReadsTheBinary(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	real, _ := filepath.EvalSymlinks(sh)
	if got := checkRunsc(RunscReport{Path: real}); got.Static || got.Usable {
		t.Errorf("%s read as static %v, usable %v; want a dynamically linked, refused binary", real, got.Static, got.Usable)
	}
	if gv := probeRunsc(os.Getenv("PATH"), nil); gv.Path != "" {
		t.Logf("runsc on PATH: %+v", gv)
		if gv.Usable && (!gv.Static || gv.Date < gvisorFloor) {
			t.Errorf("usable runsc %+v is not static and recent", gv)
		}
	}
}

// TestResolveTier2: tier 2 only by name, only where runsc is usable, and
// auto never picks it.
func TestResolveTier2(t *testing.T) {
	good := Report{Best: Tier2, Runsc: RunscReport{Path: "/x/runsc", Usable: true}}
	bad := Report{Best: Tier1, Runsc: RunscReport{Path: "/usr/bin/runsc", Why: "runsc at /usr/bin/runsc was built on 20220228", Fix: gvisorInstall}}
	if got, err := Resolve(TierAuto, HostFrom(good)); err != nil || got != Tier1 {
		t.Errorf("auto with gVisor = %v, %v; want tier 1", got, err)
	}
	if got, err := Resolve(Tier2, HostFrom(good)); err != nil || got != Tier2 {
		t.Errorf("tier 2 with gVisor = %v, %v; want tier 2", got, err)
	}
	_, err := Resolve(Tier2, HostFrom(bad))
	if !errs.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "20220228") || !strings.Contains(err.Error(), "scripts/setup.sh") {
		t.Errorf("tier 2 with an old runsc = %v; want errs.Unavailable naming why and the fix", err)
	}
	if _, err := Resolve(Tier2, HostFrom(Report{Best: Tier1})); !errs.Is(err, errs.Unavailable) {
		t.Errorf("tier 2 without runsc = %v; want errs.Unavailable", err)
	}
}

// TestReapGVisor: a box directory nobody holds (its airlock died) loses
// its processes and goes; one still held stays.
func TestReapGVisor(t *testing.T) {
	base := gvisorBoxesDir()
	if err := privateDir(filepath.Dir(base)); err != nil {
		t.Skip(err)
	}
	if err := privateDir(base); err != nil {
		t.Skip(err)
	}
	dead := filepath.Join(base, "airlock-deadtest"+strings.ReplaceAll(t.Name(), "/", "_"))
	os.MkdirAll(filepath.Join(dead, "state"), 0o700)
	os.WriteFile(filepath.Join(dead, "lock"), nil, 0o600)
	// A stand-in for a runsc process the dead run left: its command line
	// names the box's state root, as runsc's sandbox and gofer do.
	orphan := exec.Command("sh", "-c", "while :; do sleep 0.05; done", "sh", "--root="+filepath.Join(dead, "state"))
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { orphan.Process.Kill(); orphan.Wait() })
	exited := make(chan struct{})
	go func() { orphan.Wait(); close(exited) }()

	live, err := newGVisorBox("/x/runsc")
	if err != nil {
		t.Fatal(err)
	}
	defer live.close()

	reapAndCheck(t, dead, exited)
	if _, err := os.Stat(live.dir); err != nil {
		t.Errorf("a live box's directory was reaped: %v", err)
	}
	var st unix.Stat_t
	if unix.Stat(base, &st) == nil && st.Mode&0o077 != 0 {
		t.Errorf("the boxes' directory is open to others: %#o", st.Mode&0o777)
	}
}

// TestPlanGrantedFIFO: a FIFO named in fs.read is planned at every box
// tier without waiting for a writer (the walk of the granted trees once
// opened it for reading, and planning hung there for good).
func TestPlanGrantedFIFO(t *testing.T) {
	testsupport.Require(t, testsupport.Root)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tier := range []Tier{Tier1, Tier2} {
		t.Run("tier"+tier.String(), func(t *testing.T) {
			if _, err := Resolve(tier, ProbeHost()); err != nil {
				testsupport.Missing(t, "tier %s unavailable here: %v", tier, err)
			}
			done := make(chan error, 1)
			go func() {
				b, err := Plan(Spec{Workdir: t.TempDir(), Read: []string{fifo}, Env: []string{"PATH=/usr/bin:/bin"}}, tier, exe)
				if err == nil {
					b.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("plan: %v", err)
				}
			case <-time.After(10 * time.Second):
				// Unblock the planner's open so the test binary can end.
				if f, err := os.OpenFile(fifo, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				t.Fatal("planning a box with a granted FIFO did not end within 10 s")
			}
		})
	}
}

// TestReapGVisorCgroup: the record of a box whose airlock died names the
// run's cgroup, and the reaper ends what is in it, even a process whose
// command line carries nothing of the box (a helper gVisor started), and
// removes the group.
func TestReapGVisorCgroup(t *testing.T) {
	testsupport.Require(t, testsupport.Root)
	base := gvisorBoxesDir()
	if err := privateDir(filepath.Dir(base)); err != nil {
		t.Fatal(err)
	}
	if err := privateDir(base); err != nil {
		t.Fatal(err)
	}
	g, err := cgroup.New("reaptest-"+strconv.Itoa(os.Getpid()), cgroup.Limits{MemoryBytes: 256 << 20})
	if err != nil {
		testsupport.Missing(t, "no cgroup here: %v", err)
	}
	defer g.Close()
	orphan := exec.Command("sleep", "300")
	orphan.SysProcAttr = &syscall.SysProcAttr{}
	if err := g.Start(orphan.SysProcAttr, orphan.Start); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { orphan.Process.Kill() })
	exited := make(chan struct{})
	go func() { orphan.Wait(); close(exited) }()

	dead := filepath.Join(base, "airlock-deadcgtest")
	os.MkdirAll(dead, 0o700)
	os.WriteFile(filepath.Join(dead, "lock"), nil, 0o600)
	(&gvisorBox{dir: dead}).record(GVisorRecord{ID: "airlock-deadcgtest", Pid: 1 << 22, Cgroups: g.Dirs()})
	reapAndCheck(t, dead, exited)
	for _, d := range g.Dirs() {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("the dead run's cgroup %s was not removed", d)
		}
	}
}

// reapAndCheck reaps and checks that the dead box's process (exited
// closes when it ends) and its directory dead are gone.
func reapAndCheck(t *testing.T, dead string, exited <-chan struct{}) {
	t.Helper()
	ReapGVisor()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Errorf("the dead box's process survived the reaping")
	}
	if _, err := os.Stat(dead); err == nil {
		t.Errorf("the dead box's directory %s was not removed", dead)
	}
}
