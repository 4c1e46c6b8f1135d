//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
)

// The test binary re-executes itself as the processes put in groups.
const childEnv = "AIRLOCK_CGROUP_TEST_CHILD"

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		os.Exit(child(v))
	}
	os.Exit(m.Run())
}

func child(spec string) int {
	mode, arg, _ := strings.Cut(spec, ":")
	n, _ := strconv.Atoi(arg)
	switch mode {
	case "hog": // touch n MiB, one page at a time, and keep it
		var keep [][]byte
		for i := 0; i < n; i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		runtime.KeepAlive(keep)
		return 0
	case "bomb": // start n sleepers, say how many forks failed, then wait
		ok, refused := 0, 0
		for i := 0; i < n; i++ {
			if _, err := os.StartProcess("/bin/sleep", []string{"sleep", "300"}, &os.ProcAttr{}); err != nil {
				refused++
				continue
			}
			ok++
		}
		fmt.Printf("started %d refused %d\n", ok, refused)
		os.Stdout.Close()
		time.Sleep(time.Hour)
		return 0
	case "spin": // burn n ms of CPU time on two threads
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				x := 0
				for cpuTime() < time.Duration(n)*time.Millisecond {
					for i := 0; i < 1e5; i++ {
						x += i
					}
				}
				runtime.KeepAlive(x)
			}()
		}
		wg.Wait()
		return 0
	}
	return 3
}

func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// requireV1 skips unless this host offers cgroup v1 with memory, cpu and pids
// that this process may use (root, as in CI).
func requireV1(t *testing.T) Info {
	t.Helper()
	testsupport.Require(t, testsupport.CgroupV1orV2) // a host of the other version skips below
	i := DetectVersion(1)
	if i.Version != 1 || !i.Has(Memory) || !i.Has(CPU) || !i.Has(Pids) {
		t.Skipf("cgroup v1 with memory, cpu and pids is not usable here: %s", i.Reason)
	}
	return i
}

var (
	unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)
	groupSeq   atomic.Int64
)

func newGroup(t *testing.T, i Info, l Limits) *Group {
	t.Helper()
	name := fmt.Sprintf("test-%d-%d-%s", os.Getpid(), groupSeq.Add(1), unsafeName.ReplaceAllString(t.Name(), "_"))
	if len(name) > 64 {
		name = name[:64]
	}
	g, err := i.New(name, l)
	if err != nil {
		t.Fatalf("New(%+v): %v", l, err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, d := range g.Dirs() {
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s still exists after Close (%v)", d, err)
			}
		}
	})
	return g
}

// start starts argv in g with env, the way the runner does.
func start(t *testing.T, g *Group, argv []string, env []string) *os.Process {
	t.Helper()
	return startOut(t, g, argv, env, os.Stderr)
}

func startOut(t *testing.T, g *Group, argv []string, env []string, stdout *os.File) *os.Process {
	t.Helper()
	attr := &syscall.SysProcAttr{Setpgid: true}
	var p *os.Process
	err := g.Start(attr, func() error {
		var err error
		p, err = os.StartProcess(argv[0], argv, &os.ProcAttr{Env: env, Files: []*os.File{nil, stdout, os.Stderr}, Sys: attr})
		return err
	})
	if err != nil {
		t.Fatalf("Start %v: %v", argv, err)
	}
	return p
}

func startSelf(t *testing.T, g *Group, spec string) *os.Process {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return start(t, g, []string{exe, "-test.run=^$"}, []string{childEnv + "=" + spec})
}

func wait(t *testing.T, p *os.Process) syscall.WaitStatus {
	t.Helper()
	ws, _ := waitUsage(t, p)
	return ws
}

// waitUsage also returns what the process used, as the kernel counted it
// for its parent: a group joins no controller only to count.
func waitUsage(t *testing.T, p *os.Process) (syscall.WaitStatus, *syscall.Rusage) {
	t.Helper()
	st, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(syscall.WaitStatus), st.SysUsage().(*syscall.Rusage)
}

func TestDetect(t *testing.T) {
	i := Detect()
	t.Logf("detected: %+v", i)
	if i.Version == 0 && i.Reason == "" {
		t.Errorf("version 0 without a reason")
	}
	for _, c := range i.Controllers {
		if !i.Has(c) {
			t.Errorf("controller %s listed but has no parent", c)
		}
	}
	for _, v := range []int{1, 2} {
		d := DetectVersion(v)
		if d.Version != 0 && d.Version != v {
			t.Errorf("DetectVersion(%d): got version %d", v, d.Version)
		}
		t.Logf("v%d: %+v", v, d)
	}
}

func TestParseLayout(t *testing.T) {
	h := host{
		mountinfo: []byte(`30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 30 0:31 /box /sys/fs/cgroup/mem\040ory rw,relatime - cgroup cgroup rw,memory
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
bad line
`),
		cgroup: []byte(`8:pids:/a/b
4:memory:/box/inner
1:cpu:/
0::/u
junk
`),
	}
	l := parseLayout(h)
	cases := []struct{ name, got, want string }{
		{"pids dir", ownDir(l.v1[Pids], l.paths1[Pids]), "/sys/fs/cgroup/pids/a/b"},
		{"memory dir (mount root /box, escaped space)", ownDir(l.v1[Memory], l.paths1[Memory]), "/sys/fs/cgroup/mem ory/inner"},
		{"cpu dir", ownDir(l.v1[CPU], l.paths1[CPU]), "/sys/fs/cgroup/cpu"},
		{"v2 dir", ownDir(*l.v2, l.path2), "/sys/fs/cgroup/unified/u"},
		{"path outside the mount's root", ownDir(mount{point: "/m", root: "/box"}, "/other"), ""},
		{"dot-dot", ownDir(mount{point: "/m", root: "/"}, "/a/../../etc"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %q, want %q", c.got, c.want)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	i := Info{Version: 1, Parents: map[string]string{Pids: t.TempDir()}, Controllers: []string{Pids}}
	cases := []struct {
		name  string
		gname string
		l     Limits
		class errs.Class
	}{
		{"empty name", "", Limits{}, errs.Invalid},
		{"slash in name", "a/b", Limits{}, errs.Invalid},
		{"dot-dot name", "..", Limits{}, errs.Invalid},
		{"negative memory", "x", Limits{MemoryBytes: -1}, errs.Invalid},
		{"tiny memory", "x", Limits{MemoryBytes: 1000}, errs.Invalid},
		{"NaN cpu", "x", Limits{CPU: nanf()}, errs.Invalid},
		{"tiny cpu", "x", Limits{CPU: 0.001}, errs.Invalid},
		{"negative pids", "x", Limits{Pids: -3}, errs.Invalid},
		{"memory without the controller", "x", Limits{MemoryBytes: 64 << 20}, errs.Unavailable},
		{"cpu without the controller", "x", Limits{CPU: 1}, errs.Unavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := i.New(c.gname, c.l)
			if err == nil {
				g.Close()
				t.Fatalf("got a group, want a %v error", c.class)
			}
			if got := errs.ClassOf(err); got != c.class {
				t.Errorf("got class %v (%v), want %v", got, err, c.class)
			}
		})
	}
	if _, err := (Info{Reason: "none here"}).New("x", Limits{}); !errs.Is(err, errs.Unavailable) {
		t.Errorf("no hierarchy: got %v, want an unavailable error", err)
	}
}

func nanf() float64 { var z float64; return z / z }

func TestJoin1(t *testing.T) {
	apart := Info{Version: 1, Controllers: []string{Memory, CPU, Pids, Freezer, CPUAcct}, Parents: map[string]string{
		Memory: "/m", CPU: "/c", Pids: "/p", Freezer: "/f", CPUAcct: "/a"}}
	together := Info{Version: 1, Controllers: []string{Memory, CPU, Pids, CPUAcct}, Parents: map[string]string{
		Memory: "/m", CPU: "/c,a", Pids: "/p", CPUAcct: "/c,a"}}
	onlyMem := Info{Version: 1, Controllers: []string{Memory}, Parents: map[string]string{Memory: "/m"}}
	all := map[string]bool{Memory: true, CPU: true, Pids: true}
	cases := []struct {
		name  string
		i     Info
		asked map[string]bool
		want  []string
	}{
		{"every limit, separate mounts: no cpuacct", apart, all, []string{Memory, CPU, Pids, Freezer}},
		{"no limit: the freezer alone", apart, nil, []string{Freezer}},
		{"cpu only", apart, map[string]bool{CPU: true}, []string{CPU, Freezer}},
		{"no freezer: pids lists the processes", together, map[string]bool{Memory: true}, []string{Memory, Pids}},
		{"cpuacct mounted with cpu comes along", together, map[string]bool{CPU: true}, []string{CPU, Pids, CPUAcct}},
		{"neither freezer nor pids", onlyMem, nil, []string{Memory}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, c.i.join1(c.asked)); diff != "" {
				t.Errorf("controllers joined (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLimitsApplied(t *testing.T) {
	i := requireV1(t)
	g := newGroup(t, i, Limits{MemoryBytes: 64 << 20, CPU: 0.5, Pids: 17})
	cases := []struct{ ctrl, file, want string }{
		{Memory, "memory.limit_in_bytes", strconv.Itoa(64 << 20)},
		{CPU, "cpu.cfs_quota_us", "50000"},
		{CPU, "cpu.cfs_period_us", "100000"},
		{Pids, "pids.max", "17"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(g.Dir(c.ctrl), c.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(b)); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
	want := []string{CPU, Memory, Pids}
	if i.Has(Freezer) {
		want = append(want, Freezer)
	}
	if i.Has(CPUAcct) && i.Parents[CPUAcct] == i.Parents[CPU] {
		want = append(want, CPUAcct)
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, g.Controllers()); diff != "" {
		t.Errorf("controllers joined (-want +got):\n%s", diff)
	}
	// The group lies under this process's own cgroup, not the hierarchy root.
	for _, c := range g.Controllers() {
		if parent := filepath.Dir(g.Dir(c)); parent != i.Parents[c] {
			t.Errorf("%s group in %s, want under %s", c, parent, i.Parents[c])
		}
	}
	// A second group with the same name is refused, not adopted.
	if _, err := i.New(strings.TrimPrefix(filepath.Base(g.Dir(Pids)), "airlock-"), Limits{}); err == nil {
		t.Errorf("a second New with the same name succeeded")
	}
}

// TestStartKeepsThreadsOut shows that only the started process joined the
// group: every thread of this process is back where it was, after a plain
// Start and after one Place readied (whose thread is in the group before
// Start: the group lists airlock itself until then).
func TestStartKeepsThreadsOut(t *testing.T) {
	i := requireV1(t)
	for _, placed := range []bool{false, true} {
		t.Run(fmt.Sprintf("placed=%v", placed), func(t *testing.T) {
			g := newGroup(t, i, Limits{Pids: 8})
			if placed {
				g.Place()
				if !eventuallyIn(t, g) {
					t.Fatalf("no thread of this process joined the group after Place")
				}
			}
			p := start(t, g, []string{"/bin/sleep", "30"}, nil)
			defer wait(t, p)
			defer p.Kill()
			procs, err := g.Procs()
			if err != nil {
				t.Fatal(err)
			}
			if len(procs) != 1 || procs[0] != p.Pid {
				t.Errorf("group holds %v, want only the started process %d", procs, p.Pid)
			}
			if threadsIn(t, g) {
				t.Errorf("a thread of this process is still in the group after Start")
			}
			// The process began under the group's limit: it is counted there.
			if n, err := readInt(filepath.Join(g.Dir(Pids), "pids.current")); err != nil || n != 1 {
				t.Errorf("pids.current = %d (%v), want 1", n, err)
			}
		})
	}
}

// TestPlaceThenClose shows that a placed thread no Start took leaves the
// group when it closes: Close neither hangs nor leaves the group behind.
func TestPlaceThenClose(t *testing.T) {
	i := requireV1(t)
	g, err := i.New(fmt.Sprintf("test-%d-%d-place-close", os.Getpid(), groupSeq.Add(1)), Limits{Pids: 8})
	if err != nil {
		t.Fatal(err)
	}
	g.Place()
	if !eventuallyIn(t, g) {
		t.Fatalf("no thread of this process joined the group after Place")
	}
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close of a placed group hangs")
	}
	if threadsIn(t, g) {
		t.Errorf("a thread of this process is still in the group after Close")
	}
	for _, d := range g.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Close (%v)", d, err)
		}
	}
	if err := g.Start(&syscall.SysProcAttr{}, func() error { t.Error("start ran in a closed group"); return nil }); err == nil {
		t.Errorf("Start after Close succeeded")
	}
}

// eventuallyIn waits (a while) for a thread of this process to join g:
// Place returns before its thread is in.
func eventuallyIn(t *testing.T, g *Group) bool {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if threadsIn(t, g) {
			return true
		}
	}
	return false
}

// threadsIn reports whether a thread of this process is in g, by the
// kernel's own list of the group's threads.
func threadsIn(t *testing.T, g *Group) bool {
	t.Helper()
	self := map[string]bool{}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		self[task.Name()] = true
	}
	for _, d := range g.Dirs() {
		b, err := os.ReadFile(filepath.Join(d, "tasks"))
		if err != nil {
			continue
		}
		for _, tid := range strings.Fields(string(b)) {
			if self[tid] {
				return true
			}
		}
	}
	return false
}

func TestMemoryLimitOOMKills(t *testing.T) {
	i := requireV1(t)
	t.Run("control: the hog finishes without a memory limit", func(t *testing.T) {
		g := newGroup(t, i, Limits{})
		ws, ru := waitUsage(t, startSelf(t, g, "hog:96"))
		if !ws.Exited() || ws.ExitStatus() != 0 {
			t.Fatalf("hog of 96 MiB: got %v, want exit 0", ws)
		}
		if rss := ru.Maxrss << 10; rss < 96<<20 {
			t.Errorf("peak resident %d bytes, want at least 96 MiB", rss)
		}
	})
	t.Run("limited: the hog is OOM-killed", func(t *testing.T) {
		const limit = 48 << 20
		g := newGroup(t, i, Limits{MemoryBytes: limit})
		ws := wait(t, startSelf(t, g, "hog:96"))
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("hog of 96 MiB under %d: got %v, want killed by SIGKILL", limit, ws)
		}
		s, err := g.Stats()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("stats: %+v", s)
		if s.OOMKills < 1 || !g.OOM() {
			t.Errorf("oom kills: got %d, want at least 1", s.OOMKills)
		}
		// The kernel may charge a few pages past the limit before it
		// reclaims or kills; more than that is not a limit.
		if s.MemoryPeak > limit+256<<10 {
			t.Errorf("peak %d bytes, over the limit %d by more than 256 KiB", s.MemoryPeak, limit)
		}
	})
}

func TestPidsLimitStopsForkBomb(t *testing.T) {
	i := requireV1(t)
	const max, forks = 16, 60
	g := newGroup(t, i, Limits{Pids: max})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := startOut(t, g, []string{exe, "-test.run=^$"}, []string{fmt.Sprintf("%s=bomb:%d", childEnv, forks)}, w)
	w.Close()
	// The bomb says when it has tried every fork.
	var ok, refused int
	if _, err := fmt.Fscanf(r, "started %d refused %d", &ok, &refused); err != nil {
		t.Fatalf("bomb: %v", err)
	}
	s, _ := g.Stats()
	t.Logf("bomb: %d started, %d refused; stats: %+v", ok, refused, s)
	if ok+refused != forks || refused == 0 {
		t.Errorf("got %d started and %d refused of %d forks, want some refused", ok, refused, forks)
	}
	if s.PidsRefused == 0 {
		t.Errorf("no fork refused at pids.max=%d", max)
	}
	if s.PidsPeak > max {
		t.Errorf("peak %d tasks, over pids.max %d", s.PidsPeak, max)
	}
	before, _ := g.Procs()
	if len(before) > max {
		t.Errorf("%d processes in the group, over %d", len(before), max)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	wait(t, p)
	assertGone(t, g, before)
}

// TestKillLeavesNothing kills a tree whose members left the shell's process
// group and session: only the cgroup still knows them.
func TestKillLeavesNothing(t *testing.T) {
	i := requireV1(t)
	g := newGroup(t, i, Limits{})
	script := `setsid sleep 300 & (sleep 301 &) & (trap '' TERM HUP; exec sleep 302) & while :; do sleep 1; done`
	p := start(t, g, []string{"/bin/sh", "-c", script}, nil)
	var before []int
	for n := 0; n < 500 && len(before) < 5; n++ {
		before, _ = g.Procs()
		time.Sleep(5 * time.Millisecond)
	}
	if len(before) < 4 {
		t.Fatalf("group holds %v, want the shell and its sleepers", before)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if ws := wait(t, p); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("shell: got %v, want killed by SIGKILL", ws)
	}
	assertGone(t, g, before)
}

func assertGone(t *testing.T, g *Group, pids []int) {
	t.Helper()
	if left, _ := g.Procs(); len(left) != 0 {
		t.Errorf("after Kill the group still holds %v", left)
	}
	for _, pid := range pids {
		// Orphans are reaped by init, which may take a moment; a zombie
		// (state Z) is dead already.
		for n := 0; n < 200; n++ {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil || strings.Contains(string(b), ") Z ") {
				break
			}
			if n == 199 {
				t.Errorf("process %d still alive after Kill: %s", pid, b)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestCPUQuotaBoundsCPUTime(t *testing.T) {
	i := requireV1(t)
	const spinMS = 250
	run := func(l Limits) Stats {
		g := newGroup(t, i, l)
		ws, ru := waitUsage(t, startSelf(t, g, fmt.Sprintf("spin:%d", spinMS)))
		if !ws.Exited() || ws.ExitStatus() != 0 {
			t.Fatalf("spinner: %v", ws)
		}
		s, err := g.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if s.CPUUsage == 0 {
			// cpuacct is joined only where mounted with cpu.
			s.CPUUsage = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		return s
	}
	free := run(Limits{})
	t.Logf("without a quota: %+v", free)
	if free.CPUThrottled != 0 {
		t.Errorf("throttled %d times without a quota", free.CPUThrottled)
	}
	const cores = 0.2
	lim := run(Limits{CPU: cores})
	t.Logf("with %v cores: %+v", cores, lim)
	if lim.CPUThrottled == 0 {
		t.Errorf("never throttled under a %v-core quota", cores)
	}
	if lim.CPUUsage < spinMS*time.Millisecond {
		t.Errorf("used %v, want at least the %d ms the spinner burns", lim.CPUUsage, spinMS)
	}
	// Counters, not clocks: CPU time can exceed the quota of the periods it
	// ran in by at most one period's quota per CPU (the last, partly
	// accounted period) — allow two for scheduling slack.
	quota := time.Duration(cores*cpuPeriodUS) * time.Microsecond
	if bound := time.Duration(lim.CPUPeriods+2*int64(runtime.NumCPU()))*quota + 0; lim.CPUUsage > bound {
		t.Errorf("used %v of CPU in %d periods of %v quota (bound %v)", lim.CPUUsage, lim.CPUPeriods, quota, bound)
	}
}

// TestV2 uses the unified hierarchy where it has no controllers (as on this
// host, where they are bound to v1): the group can still be made, entered with
// CLONE_INTO_CGROUP and killed with cgroup.kill, and a limit it cannot apply is
// an error.
func TestV2(t *testing.T) {
	testsupport.Require(t, testsupport.CgroupV1orV2) // a host of the other version skips below
	i := DetectVersion(2)
	if i.Version != 2 || !i.Has("") {
		t.Skipf("no writable cgroup v2 hierarchy: %s", i.Reason)
	}
	if !i.Has(Memory) {
		if _, err := i.New(fmt.Sprintf("test-%d-v2mem", os.Getpid()), Limits{MemoryBytes: 64 << 20}); !errs.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "limits.memory") {
			t.Errorf("memory limit without the v2 controller: got %v, want an unavailable error naming limits.memory", err)
		}
	}
	g := newGroup(t, i, Limits{})
	p := start(t, g, []string{"/bin/sh", "-c", "sleep 300 & sleep 301 & wait"}, nil)
	var before []int
	for n := 0; n < 500 && len(before) < 3; n++ {
		before, _ = g.Procs()
		time.Sleep(5 * time.Millisecond)
	}
	if len(before) < 3 || before[0] != p.Pid && !contains(before, p.Pid) {
		t.Fatalf("group holds %v, want the shell %d and two sleepers", before, p.Pid)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	wait(t, p)
	assertGone(t, g, before)
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
