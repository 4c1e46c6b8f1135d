//go:build linux

package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
)

// host is where the kernel tells a process about its cgroups; tests of the
// parsers give other text.
type host struct {
	mountinfo []byte // /proc/self/mountinfo
	cgroup    []byte // /proc/self/cgroup
}

func readHost() (host, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return host{}, err
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return host{}, err
	}
	return host{mountinfo: mi, cgroup: cg}, nil
}

// layout is what the host text says: v1 mounts by controller, the v2 mount,
// and this process's path in each hierarchy.
type layout struct {
	v1     map[string]mount  // controller -> mount
	v2     *mount            // unified hierarchy
	paths1 map[string]string // controller -> own path
	path2  string            // own path in the unified hierarchy
	has2   bool
}

func parseLayout(h host) layout {
	l := layout{v1: map[string]mount{}, paths1: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(h.mountinfo))
	// Grown only for a line that needs it: a buffer's every page is a
	// page fault on each start, and the table is read twice per box.
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	for sc.Scan() {
		// id parent maj:min root point options [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		m := mount{point: unescapeMount(f[4]), root: unescapeMount(f[3])}
		switch g[0] {
		case "cgroup2":
			if l.v2 == nil {
				l.v2 = &m
			}
		case "cgroup":
			for _, o := range strings.Split(g[2], ",") {
				if _, seen := l.v1[o]; !seen {
					l.v1[o] = m
				}
			}
		}
	}
	sc = bufio.NewScanner(bytes.NewReader(h.cgroup))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			l.path2, l.has2 = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			l.paths1[c] = parts[2]
		}
	}
	return l
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownDir is the directory of path (a process's cgroup path) under m, or ""
// when the path lies outside what the mount shows (another cgroup namespace).
func ownDir(m mount, path string) string {
	rel := path
	if m.root != "/" {
		if path != m.root && !strings.HasPrefix(path, m.root+"/") {
			return ""
		}
		rel = strings.TrimPrefix(path, m.root)
	}
	if strings.Contains(rel, "/../") || strings.HasSuffix(rel, "/..") {
		return ""
	}
	return filepath.Join(m.point, rel)
}

var wanted = []string{Memory, CPU, Pids}

// Detect reports the host's control groups as airlock can use them: version
// 2 when the unified hierarchy holds memory, cpu and pids for airlock's own
// cgroup, else version 1 when those are mounted separately.
func Detect() Info {
	h, err := readHost()
	if err != nil {
		return Info{Reason: "cannot read this process's cgroups: " + err.Error()}
	}
	l := parseLayout(h)
	v2, v1 := detect2(l), detect1(l)
	switch {
	case v2.Version != 0 && v2.Reason == "":
		return v2
	case v1.Version != 0 && v1.Reason == "":
		return v1
	case len(v2.Controllers) >= len(v1.Controllers) && v2.Version != 0:
		return v2
	case v1.Version != 0:
		return v1
	}
	if v2.Reason != "" {
		return v2
	}
	return Info{Reason: "no cgroup hierarchy is mounted (mount cgroup2 on /sys/fs/cgroup)"}
}

// DetectVersion reports what version v alone offers (for tests and for
// `sandbox check`, which shows both).
func DetectVersion(v int) Info {
	h, err := readHost()
	if err != nil {
		return Info{Reason: "cannot read this process's cgroups: " + err.Error()}
	}
	if v == 2 {
		return detect2(parseLayout(h))
	}
	return detect1(parseLayout(h))
}

func detect1(l layout) Info {
	info := Info{Parents: map[string]string{}, Writable: true, mounts1: l.v1}
	var missing, notWritable []string
	for _, c := range []string{Memory, CPU, Pids, Freezer, CPUAcct} {
		m, ok := l.v1[c]
		path, ok2 := l.paths1[c]
		if !ok || !ok2 {
			if isWanted(c) {
				missing = append(missing, c)
			}
			continue
		}
		dir := ownDir(m, path)
		if dir == "" {
			missing = append(missing, c)
			continue
		}
		if unix.Access(dir, unix.W_OK) != nil {
			notWritable = append(notWritable, c)
			info.Writable = false
			continue
		}
		info.Parents[c] = dir
		info.Controllers = append(info.Controllers, c)
	}
	if len(info.Controllers) == 0 {
		info.Writable = false
		if len(l.v1) == 0 {
			info.Reason = "no cgroup v1 controller is mounted"
			return info
		}
	}
	info.Version = 1
	info.Reason = reasonFor(missing, notWritable, 1)
	return info
}

func detect2(l layout) Info {
	info := Info{Parents: map[string]string{}}
	if l.v2 == nil || !l.has2 {
		return Info{Reason: "no cgroup v2 (unified) hierarchy is mounted"}
	}
	dir := ownDir(*l.v2, l.path2)
	if dir == "" {
		return Info{Reason: "airlock's cgroup lies outside the mounted unified hierarchy"}
	}
	info.Version = 2
	info.Writable = unix.Access(dir, unix.W_OK) == nil
	avail, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	have := map[string]bool{}
	for _, c := range strings.Fields(string(avail)) {
		have[c] = true
	}
	var missing, notWritable []string
	for _, c := range wanted {
		if !have[c] {
			missing = append(missing, c)
			continue
		}
		if !info.Writable {
			notWritable = append(notWritable, c)
			continue
		}
		info.Parents[c] = dir
		info.Controllers = append(info.Controllers, c)
	}
	if info.Writable {
		// The group itself, even without controllers, can be made and
		// killed (cgroup.kill).
		info.Parents[""] = dir
	}
	info.Reason = reasonFor(missing, notWritable, 2)
	return info
}

func isWanted(c string) bool {
	for _, w := range wanted {
		if w == c {
			return true
		}
	}
	return false
}

func reasonFor(missing, notWritable []string, v int) string {
	var parts []string
	if len(missing) > 0 {
		if v == 2 {
			parts = append(parts, fmt.Sprintf("controllers %s are not enabled for airlock's cgroup in the unified hierarchy (they may be bound to v1 hierarchies; enable them in the parent's cgroup.subtree_control, or boot with systemd.unified_cgroup_hierarchy=1)", strings.Join(missing, ", ")))
		} else {
			parts = append(parts, fmt.Sprintf("controllers %s are not mounted (mount them under /sys/fs/cgroup, or use cgroup v2)", strings.Join(missing, ", ")))
		}
	}
	if len(notWritable) > 0 {
		parts = append(parts, fmt.Sprintf("airlock may not create groups for %s (run as root, or in a delegated cgroup: systemd-run --user --scope -p Delegate=yes airlock ...)", strings.Join(notWritable, ", ")))
	}
	return strings.Join(parts, "; ")
}

// Group is a control group (one directory per v1 controller, one directory
// on v2) holding a box's process tree.
type Group struct {
	version int
	// dirs maps each controller to the group's directory for it; on v2
	// every controller (and "") maps to the one directory.
	dirs   map[string]string
	limits Limits

	mu     sync.Mutex
	closed bool
	done   chan struct{} // closed by Close; releases a parked thread
	// back, on v1, is closed once the thread the last Start forked from
	// has left the group again (or is parked); nil before any Start or
	// Place.
	back chan struct{}
	// placed, on v1, is the thread Place moved into the group, waiting
	// for the next Start; nil when none waits.
	placed *placement
	// mounts1 are the v1 mounts Detect read (Info.mounts1), nil when
	// unknown: Start then reads the mount table.
	mounts1 map[string]mount
}

// settle waits until no thread of airlock's is in the group (see Start):
// until then the group's process list holds airlock itself.
func (g *Group) settle() {
	g.mu.Lock()
	b := g.back
	g.mu.Unlock()
	if b != nil {
		<-b
	}
}

// New makes a group named name (airlock-NAME in each hierarchy) with limits
// l, using the hierarchy Detect picks. See Info.New.
func New(name string, l Limits) (*Group, error) {
	return Detect().New(name, l)
}

// New makes a group named name under the parents i describes and applies l.
// Every limit asked for is applied and read back, or New fails with
// errs.Unavailable and removes what it made; a group already present with
// that name is an error, never adopted.
func (i Info) New(name string, l Limits) (*Group, error) {
	dn, err := dirName(name)
	if err != nil {
		return nil, err
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if i.Version == 0 {
		return nil, errs.Unavailablef("cgroups: %s", i.Reason)
	}
	need := map[string]string{Memory: "limits.memory", CPU: "limits.cpu", Pids: "limits.pids"}
	asked := map[string]bool{Memory: l.MemoryBytes > 0, CPU: l.CPU > 0, Pids: l.Pids > 0}
	for _, c := range wanted {
		if asked[c] && !i.Has(c) {
			return nil, unavailable(need[c], "the %s cgroup controller is not usable here (cgroup v%d): %s", c, i.Version, i.Reason)
		}
	}
	g := &Group{version: i.Version, dirs: map[string]string{}, limits: l, done: make(chan struct{}), mounts1: i.mounts1}
	fail := func(err error) (*Group, error) {
		g.removeDirs()
		return nil, err
	}
	if i.Version == 2 {
		parent, ok := i.Parents[""]
		if !ok {
			return nil, errs.Unavailablef("cgroups: %s", i.Reason)
		}
		var enable []string
		for _, c := range wanted {
			if asked[c] {
				enable = append(enable, "+"+c)
			}
		}
		if len(enable) > 0 {
			if err := writeFile(filepath.Join(parent, "cgroup.subtree_control"), strings.Join(enable, " ")); err != nil {
				return nil, errs.Wrap(errs.Unavailable, err, "cgroups: enable %s for airlock's groups in %s (a cgroup holding processes cannot hand controllers down; run airlock in a delegated scope: systemd-run --user --scope -p Delegate=yes airlock ...)", strings.Join(enable, " "), parent)
			}
		}
		dir := filepath.Join(parent, dn)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "cgroups: create group")
		}
		g.dirs[""] = dir
		for _, c := range wanted {
			if asked[c] {
				g.dirs[c] = dir
			}
		}
		if err := g.apply2(); err != nil {
			return fail(err)
		}
		return g, nil
	}
	made := map[string]bool{}
	for _, c := range i.join1(asked) {
		dir := filepath.Join(i.Parents[c], dn)
		// Controllers mounted together (cpu,cpuacct) share a directory.
		if !made[dir] {
			if err := os.Mkdir(dir, 0o755); err != nil {
				return fail(errs.Wrap(errs.Unavailable, err, "cgroups: create %s group", c))
			}
			made[dir] = true
		}
		g.dirs[c] = dir
	}
	if err := g.apply1(); err != nil {
		return fail(err)
	}
	return g, nil
}

// join1 lists the v1 controllers a group with the limits asked joins: each
// limited one, and one whose directory lists every process for Kill — the
// freezer, which also stops forks while Kill works, else pids, else any.
// Every controller costs a directory and two thread moves per Start, so
// one without a limit is left out (no cpuacct, no memory just to count),
// unless it is mounted with a joined one and comes free.
func (i Info) join1(asked map[string]bool) []string {
	use := map[string]bool{}
	for c, ok := range asked {
		use[c] = ok
	}
	switch {
	case i.Has(Freezer):
		use[Freezer] = true
	case i.Has(Pids):
		use[Pids] = true
	case len(i.Controllers) > 0:
		use[i.Controllers[0]] = true
	}
	dirs := map[string]bool{}
	for _, c := range i.Controllers {
		if use[c] {
			dirs[i.Parents[c]] = true
		}
	}
	var out []string
	for _, c := range i.Controllers {
		if use[c] || dirs[i.Parents[c]] {
			out = append(out, c)
		}
	}
	return out
}

func (g *Group) apply1() error {
	l := g.limits
	if d, ok := g.dirs[Memory]; ok {
		// A parent's oom_kill_disable is inherited; a box whose hog is
		// paused instead of killed would hang its run.
		if err := writeFile(filepath.Join(d, "memory.oom_control"), "0"); err != nil {
			return unavailable("limits.memory", "enable the OOM killer: %v", err)
		}
		if l.MemoryBytes > 0 {
			if err := setAndCheck(d, "memory.limit_in_bytes", l.MemoryBytes, pageSlack); err != nil {
				return unavailable("limits.memory", "%v", err)
			}
			// Where swap is accounted, memory+swap gets the same cap so
			// swapping does not stretch the budget.
			if exists(filepath.Join(d, "memory.memsw.limit_in_bytes")) {
				if err := setAndCheck(d, "memory.memsw.limit_in_bytes", l.MemoryBytes, pageSlack); err != nil {
					return unavailable("limits.memory", "%v", err)
				}
			}
		}
	}
	if l.CPU > 0 {
		d := g.dirs[CPU]
		if err := setAndCheck(d, "cpu.cfs_period_us", cpuPeriodUS, 0); err != nil {
			return unavailable("limits.cpu", "%v", err)
		}
		if err := setAndCheck(d, "cpu.cfs_quota_us", l.cpuQuotaUS(), 0); err != nil {
			return unavailable("limits.cpu", "%v", err)
		}
	}
	if l.Pids > 0 {
		if err := setAndCheck(g.dirs[Pids], "pids.max", int64(l.Pids), 0); err != nil {
			return unavailable("limits.pids", "%v", err)
		}
	}
	return nil
}

func (g *Group) apply2() error {
	l := g.limits
	d := g.dirs[""]
	if l.MemoryBytes > 0 {
		if err := setAndCheck(d, "memory.max", l.MemoryBytes, pageSlack); err != nil {
			return unavailable("limits.memory", "%v", err)
		}
		if exists(filepath.Join(d, "memory.swap.max")) {
			if err := writeFile(filepath.Join(d, "memory.swap.max"), "0"); err != nil {
				return unavailable("limits.memory", "memory.swap.max: %v", err)
			}
		}
	}
	if l.CPU > 0 {
		want := fmt.Sprintf("%d %d", l.cpuQuotaUS(), cpuPeriodUS)
		if err := writeFile(filepath.Join(d, "cpu.max"), want); err != nil {
			return unavailable("limits.cpu", "cpu.max: %v", err)
		}
		if got, _ := os.ReadFile(filepath.Join(d, "cpu.max")); strings.TrimSpace(string(got)) != want {
			return unavailable("limits.cpu", "cpu.max reads %q after writing %q", strings.TrimSpace(string(got)), want)
		}
	}
	if l.Pids > 0 {
		if err := setAndCheck(d, "pids.max", int64(l.Pids), 0); err != nil {
			return unavailable("limits.pids", "%v", err)
		}
	}
	return nil
}

// pageSlack is how far below the value asked for the kernel may round a
// memory limit (down to a page; 64 KiB covers every page size).
const pageSlack = 64 << 10

// setAndCheck writes v to file in dir and reads it back: the kernel may clamp
// a value, and a limit that did not take is an error.
func setAndCheck(dir, file string, v, slack int64) error {
	p := filepath.Join(dir, file)
	if err := writeFile(p, strconv.FormatInt(v, 10)); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	got, err := readInt(p)
	if err != nil {
		return fmt.Errorf("%s: read back: %w", file, err)
	}
	if got > v || got < v-slack {
		return fmt.Errorf("%s reads %d after writing %d", file, got, v)
	}
	return nil
}

// Version is the cgroup version of the group.
func (g *Group) Version() int { return g.version }

// Limits returns the limits applied.
func (g *Group) Limits() Limits { return g.limits }

// Controllers lists the controllers the group has a directory in.
func (g *Group) Controllers() []string {
	var out []string
	for c := range g.dirs {
		if c != "" {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// Dirs lists the group's directories.
func (g *Group) Dirs() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range g.dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

// Dir returns the group's directory for controller c ("" on v2 for the
// group itself), or "" when it has none.
func (g *Group) Dir(c string) string { return g.dirs[c] }

// Start runs start (which must start exactly one process, as exec.Cmd.Start
// or os.StartProcess do, with attr as its SysProcAttr) so the new process
// begins life inside the group: nothing it or its children do runs outside
// the budget, not even before a later AddPID.
//
// On v2 it sets attr.UseCgroupFD and attr.CgroupFD (CLONE_INTO_CGROUP). On
// v1 it locks a thread, moves that thread alone into the group, calls start
// (the child inherits the forking thread's cgroups) and moves the thread
// back; Place does the first half ahead. Should the move back fail, the
// thread is parked until Close and then ends with its goroutine, so no other
// work ever runs on it.
//
// On v1 Start returns once start has, while the thread moves back: the box
// starts meanwhile. Whatever lists, adds to or kills the group's processes
// (Procs, AddPID, Kill, Close, another Start) first waits for the move, so
// it never finds airlock's own thread among them.
func (g *Group) Start(attr *syscall.SysProcAttr, start func() error) error {
	if g.isClosed() {
		return errs.Invalidf("cgroups: group is closed")
	}
	if g.version == 2 {
		if attr == nil {
			return errs.Invalidf("cgroups: Start needs the SysProcAttr that start uses")
		}
		f, err := os.Open(g.dirs[""])
		if err != nil {
			return errs.Wrap(errs.Unavailable, err, "cgroups: open group")
		}
		defer f.Close()
		attr.UseCgroupFD, attr.CgroupFD = true, int(f.Fd())
		err = start()
		attr.UseCgroupFD, attr.CgroupFD = false, 0
		return err
	}
	g.mu.Lock()
	p := g.placed
	g.placed = nil
	g.mu.Unlock()
	if p == nil {
		g.settle()
		p = g.place()
	}
	p.start <- start
	return <-p.errc
}

// Place readies the next Start on v1, for a caller that has other work
// to do meanwhile: it returns at once, while a thread of its own is locked
// and moved into the group (a read of its cgroups and a write per
// hierarchy), so that Start only forks from it. Returning at once spares
// the caller two hand-overs between threads, each a wait for a core on a
// busy host. The thread waits in the group, running nothing else, until
// Start hands it the start or Close releases it; until then the group's
// process list holds airlock itself, and Procs, AddPID and Kill wait. A
// move that failed is Start's error. On v2, or once Start or Close ran, it
// does nothing.
func (g *Group) Place() {
	if g.version != 1 {
		return
	}
	g.mu.Lock()
	busy := g.closed || g.back != nil
	g.mu.Unlock()
	if busy {
		return
	}
	p := g.place()
	g.mu.Lock()
	g.placed = p
	g.mu.Unlock()
}

// placement is a thread on its way into the group: start takes the one
// start it runs there, errc gives exactly one answer (start's error, the
// move's, or the group's closing).
type placement struct {
	start chan func() error
	errc  chan error
}

// place starts a thread moving into the group (hold) and returns its
// placement.
func (g *Group) place() *placement {
	p := &placement{start: make(chan func() error, 1), errc: make(chan error, 1)}
	back := make(chan struct{})
	g.mu.Lock()
	g.back = back
	g.mu.Unlock()
	go g.hold(p, back)
	return p
}

// hold is the placed thread: into the group, the one start handed to it
// (or none, when the group closes first), and out again; back closes once
// it is out (or parked for good).
func (g *Group) hold(p *placement, back chan struct{}) {
	runtime.LockOSThread()
	// LockOSThread also keeps the runtime from cloning new threads off
	// this one, so no Go thread but this one joins the group.
	tid := unix.Gettid()
	if tid == unix.Getpid() {
		// Never the main thread: /proc/self/cgroup names its groups as
		// the process's own, and the runtime never ends it, so one not
		// moved back would stay in the box's for good. Locked to this
		// goroutine meanwhile, it runs none of the placement.
		go g.hold(p, back)
		<-back
		runtime.UnlockOSThread()
		return
	}
	old, err := threadCgroups(tid, g.mounts1)
	if err != nil {
		runtime.UnlockOSThread()
		close(back)
		p.errc <- errs.Wrap(errs.Unavailable, err, "cgroups: read this thread's cgroups")
		return
	}
	moved, err := g.moveThread(tid, nil)
	select {
	case start := <-p.start:
		if err == nil {
			err = start()
		}
	case <-g.done:
		err = errs.Invalidf("cgroups: group is closed")
	}
	// The child is in the group from its fork on; the caller goes on
	// with it while this thread leaves (settle waits for that).
	p.errc <- err
	if _, backErr := g.moveThread(tid, restrict(old, moved)); backErr != nil {
		close(back)
		<-g.done // the thread stays locked and ends with this goroutine
		return
	}
	runtime.UnlockOSThread()
	close(back)
}

func restrict(m map[string]string, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

// moveThread moves the calling thread, tid, (locked to its goroutine) into
// each controller's group (to == nil) or into the directories in to, and
// returns the controllers moved.
func (g *Group) moveThread(tid int, to map[string]string) ([]string, error) {
	var moved []string
	ctrls := g.Controllers()
	if to != nil {
		ctrls = ctrls[:0]
		for c := range to {
			ctrls = append(ctrls, c)
		}
	}
	done := map[string]bool{}
	for _, c := range ctrls {
		dir := g.dirs[c]
		if to != nil {
			dir = to[c]
		}
		if dir == "" {
			return moved, errs.New(errs.Internal, "cgroups: no %s directory to move thread %d to", c, tid)
		}
		if done[dir] {
			// Mounted with a controller already moved.
			moved = append(moved, c)
			continue
		}
		done[dir] = true
		// "0" names the writing thread itself. The kernel then moves it
		// without taking the global lock that any other pid needs, whose
		// writer side waits out an RCU grace period: milliseconds per write
		// on a busy host, two writes per controller per box.
		if err := writeFile(filepath.Join(dir, "tasks"), "0"); err != nil {
			return moved, errs.Wrap(errs.Unavailable, err, "cgroups: move thread %d into %s", tid, dir)
		}
		moved = append(moved, c)
	}
	return moved, nil
}

// threadCgroups maps each v1 controller to the directory tid is in now,
// under mounts (the hierarchies by controller; nil reads the mount table).
func threadCgroups(tid int, mounts map[string]mount) (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/cgroup", tid))
	if err != nil {
		return nil, err
	}
	var mi []byte
	if mounts == nil {
		if mi, err = os.ReadFile("/proc/self/mountinfo"); err != nil {
			return nil, err
		}
	}
	l := parseLayout(host{mountinfo: mi, cgroup: b})
	if mounts != nil {
		l.v1 = mounts
	}
	out := map[string]string{}
	for c, p := range l.paths1 {
		if m, ok := l.v1[c]; ok {
			if d := ownDir(m, p); d != "" {
				out[c] = d
			}
		}
	}
	return out, nil
}

// AddPID moves the process pid (all its threads) into the group. Processes
// it already started stay where they are: prefer Start.
func (g *Group) AddPID(pid int) error {
	g.settle()
	for _, d := range g.Dirs() {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return errs.Wrap(errs.Unavailable, err, "cgroups: add process %d to %s", pid, d)
		}
	}
	return nil
}

// Procs lists the processes in the group (in any of its directories).
func (g *Group) Procs() ([]int, error) {
	g.settle()
	seen := map[int]bool{}
	var out []int
	for _, d := range g.Dirs() {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
				seen[pid] = true
				out = append(out, pid)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// Kill sends SIGKILL to every process in the group and waits until none is
// left. On v2 it uses cgroup.kill; on v1 it freezes the group first (when the
// freezer is mounted) so no process forks between being listed and killed.
// Processes that have ended but wait to be reaped by their parent are not
// counted: the runner reaps its own child.
func (g *Group) Kill() error {
	// The normal end of a box finds the group empty already (its PID
	// namespace ended with its init): nothing to freeze or kill. An empty
	// group cannot fill itself, since only a member forks into it.
	left, err := g.Procs()
	if err != nil {
		return errs.Wrap(errs.Internal, err, "cgroups: list processes")
	}
	if len(left) == 0 {
		return nil
	}
	if g.version == 2 {
		if p := filepath.Join(g.dirs[""], "cgroup.kill"); exists(p) {
			if err := writeFile(p, "1"); err != nil {
				return errs.Wrap(errs.Internal, err, "cgroups: kill group")
			}
		}
	}
	frozen := false
	if d, ok := g.dirs[Freezer]; ok && g.version == 1 {
		if err := writeFile(filepath.Join(d, "freezer.state"), "FROZEN"); err == nil {
			frozen = true
			// Wait (briefly) for FREEZING to become FROZEN; a task stuck in
			// the kernel may keep it FREEZING, and killing still works.
			for i := 0; i < 200; i++ {
				if s, _ := os.ReadFile(filepath.Join(d, "freezer.state")); strings.TrimSpace(string(s)) == "FROZEN" {
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	thaw := func() {
		if frozen {
			writeFile(filepath.Join(g.dirs[Freezer], "freezer.state"), "THAWED")
			frozen = false
		}
	}
	defer thaw()
	wait := time.Millisecond
	for round := 0; round < 100; round++ {
		var err error
		left, err = g.Procs()
		if err != nil {
			return errs.Wrap(errs.Internal, err, "cgroups: list processes")
		}
		if len(left) == 0 {
			return nil
		}
		for _, pid := range left {
			unix.Kill(pid, unix.SIGKILL)
		}
		// A frozen task dies of SIGKILL only once thawed; being killed,
		// it can no longer fork.
		thaw()
		time.Sleep(wait)
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
	return errs.New(errs.Internal, "cgroups: processes %v survive SIGKILL", left)
}

// statSource is where one counter lives: a controller's file, and the key
// within it ("" for a file holding just the number).
type statSource struct {
	ctrl, file, key string
	set             func(*Stats, int64)
}

var (
	setPeak      = func(s *Stats, v int64) { s.MemoryPeak = v }
	setOOM       = func(s *Stats, v int64) { s.OOMKills = v }
	setPidsPeak  = func(s *Stats, v int64) { s.PidsPeak = v }
	setRefused   = func(s *Stats, v int64) { s.PidsRefused = v }
	setPeriods   = func(s *Stats, v int64) { s.CPUPeriods = v }
	setThrottled = func(s *Stats, v int64) { s.CPUThrottled = v }
)

// oomFile is where each version counts the group's OOM kills, under the
// key oom_kill.
var oomFile = map[int]string{1: "memory.oom_control", 2: "memory.events"}

var statSources = map[int][]statSource{
	1: {
		{Memory, "memory.max_usage_in_bytes", "", setPeak},
		{Memory, oomFile[1], "oom_kill", setOOM},
		{Pids, "pids.peak", "", setPidsPeak},
		{Pids, "pids.events", "max", setRefused},
		{CPUAcct, "cpuacct.usage", "", func(s *Stats, v int64) { s.CPUUsage = time.Duration(v) }},
		{CPU, "cpu.stat", "nr_periods", setPeriods},
		{CPU, "cpu.stat", "nr_throttled", setThrottled},
	},
	2: {
		{Memory, "memory.peak", "", setPeak},
		{Memory, oomFile[2], "oom_kill", setOOM},
		{Pids, "pids.peak", "", setPidsPeak},
		{Pids, "pids.events", "max", setRefused},
		{"", "cpu.stat", "usage_usec", func(s *Stats, v int64) { s.CPUUsage = time.Duration(v) * time.Microsecond }},
		{"", "cpu.stat", "nr_periods", setPeriods},
		{"", "cpu.stat", "nr_throttled", setThrottled},
	},
}

// Stats reads the group's counters. A counter the kernel does not keep stays
// zero.
func (g *Group) Stats() (Stats, error) {
	var s Stats
	var err error
	for _, src := range statSources[g.version] {
		d, ok := g.dirs[src.ctrl]
		if !ok {
			continue
		}
		p := filepath.Join(d, src.file)
		if src.key != "" {
			src.set(&s, keyed(p, src.key))
			continue
		}
		v, e := readInt(p)
		if e != nil && err == nil && !errors.Is(e, os.ErrNotExist) {
			err = e
		}
		src.set(&s, v)
	}
	return s, err
}

// OOM reports whether the OOM killer ended a process of the group.
// It reads that one counter: the runner asks after every run.
func (g *Group) OOM() bool {
	d, ok := g.dirs[Memory]
	return ok && keyed(filepath.Join(d, oomFile[g.version]), "oom_kill") > 0
}

// Close kills what is left in the group and removes its directories. It is
// safe to call more than once.
func (g *Group) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	close(g.done)
	g.mu.Unlock()
	killErr := g.Kill()
	if err := g.removeDirs(); err != nil {
		return err
	}
	return killErr
}

func (g *Group) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

func (g *Group) removeDirs() error {
	var first error
	for _, d := range g.Dirs() {
		var err error
		for i := 0; i < 50; i++ {
			// A just-killed task can hold the group busy for a moment.
			if err = unix.Rmdir(d); err == nil || err == unix.ENOENT {
				err = nil
				break
			}
			if err != unix.EBUSY {
				break
			}
			time.Sleep(time.Duration(i+1) * time.Millisecond)
		}
		if err != nil && first == nil {
			first = errs.Wrap(errs.Internal, err, "cgroups: remove %s", d)
		}
	}
	return first
}

func writeFile(p, v string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func readInt(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// keyed reads the value of key from a "key value" per line file; 0 when
// absent.
func keyed(p, key string) int64 {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
