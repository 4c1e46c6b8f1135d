package runner

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox"
)

// group is the cgroup a run's whole process tree starts in. It is placed
// outermost: bubblewrap itself starts inside it, so nothing the command
// spawns can leave it or multiply the budget.
type group struct {
	version string            // "v1" or "v2"
	dirs    map[string]string // v1: controller -> directory; v2: "" -> directory
	home    map[string]string // v1: controller -> this process's own directory
	fd      int               // v2: directory descriptor for CLONE_INTO_CGROUP
}

// cgroupLayout is where this process sits in each hierarchy.
type cgroupLayout struct {
	v2root  string            // mount point of cgroup2 with controllers, "" if none
	v2path  string            // this process's path in it
	v1mount map[string]string // controller -> mount point
	v1path  map[string]string // controller -> this process's path
}

func readLayout() (cgroupLayout, error) {
	l := cgroupLayout{v1mount: map[string]string{}, v1path: map[string]string{}}
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return l, err
	}
	defer mi.Close()
	sc := bufio.NewScanner(mi)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		i := -1
		for j, x := range f {
			if x == "-" {
				i = j
				break
			}
		}
		if i < 0 || i+3 >= len(f) || len(f) < 5 {
			continue
		}
		switch f[i+1] {
		case "cgroup2":
			if _, err := os.Stat(filepath.Join(f[4], "cgroup.controllers")); err == nil {
				data, _ := os.ReadFile(filepath.Join(f[4], "cgroup.controllers"))
				if len(strings.Fields(string(data))) > 0 && l.v2root == "" {
					l.v2root = f[4]
				}
			}
		case "cgroup":
			for _, o := range strings.Split(f[i+3], ",") {
				switch o {
				case "memory", "cpu", "pids", "freezer":
					l.v1mount[o] = f[4]
				}
			}
		}
	}
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return l, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(pc)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			l.v2path = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			l.v1path[c] = parts[2]
		}
	}
	return l, nil
}

func randName() string {
	var b [6]byte
	rand.Read(b[:])
	return fmt.Sprintf("airlock-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
}

func writeFile(path, value string) error {
	return os.WriteFile(path, []byte(value), 0)
}

// newGroup makes a cgroup with the limits l. A limit that cannot be applied
// is an errs.Unavailable naming it and the fix.
func newGroup(l sandbox.Limits) (*group, error) {
	lay, err := readLayout()
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "limits: read cgroups")
	}
	name := randName()
	if lay.v2root != "" && len(lay.v1mount) == 0 {
		return newGroupV2(lay, name, l)
	}
	if len(lay.v1mount) == 0 {
		return nil, errs.Unavailablef("limits: this host has no usable cgroup hierarchy (mount cgroup2 at /sys/fs/cgroup, or the v1 memory, cpu and pids controllers)")
	}
	g := &group{version: "v1", dirs: map[string]string{}, home: map[string]string{}, fd: -1}
	want := []string{"pids"}
	if l.MemoryBytes > 0 {
		want = append(want, "memory")
	}
	if l.CPU > 0 {
		want = append(want, "cpu")
	}
	for _, c := range want {
		mnt, ok := lay.v1mount[c]
		if !ok {
			if c == "pids" && l.Pids == 0 {
				continue
			}
			return nil, errs.Unavailablef("limits: the cgroup v1 %s controller is not mounted (mount -t cgroup -o %s cgroup /sys/fs/cgroup/%s)", c, c, c)
		}
		home := filepath.Join(mnt, lay.v1path[c])
		dir := filepath.Join(home, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			g.close()
			return nil, errs.Wrap(errs.Unavailable, err, "limits: create cgroup (run as root or in a delegated cgroup)")
		}
		g.dirs[c], g.home[c] = dir, home
	}
	if err := g.apply(l); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

func newGroupV2(lay cgroupLayout, name string, l sandbox.Limits) (*group, error) {
	parent := filepath.Join(lay.v2root, lay.v2path)
	dir := filepath.Join(parent, name)
	var need []string
	if l.MemoryBytes > 0 {
		need = append(need, "memory")
	}
	if l.CPU > 0 {
		need = append(need, "cpu")
	}
	if l.Pids > 0 {
		need = append(need, "pids")
	}
	if len(need) > 0 {
		sub, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
		have := strings.Fields(string(sub))
		for _, c := range need {
			if !contains(have, c) {
				if err := writeFile(filepath.Join(parent, "cgroup.subtree_control"), "+"+c); err != nil {
					return nil, errs.Wrap(errs.Unavailable, err, "limits: enable the cgroup v2 %s controller in %s (a process in a non-leaf cgroup or no delegation; run airlock in its own delegated scope: systemd-run --scope -p Delegate=yes)", c, parent)
				}
			}
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "limits: create cgroup (run as root or in a delegated cgroup)")
	}
	g := &group{version: "v2", dirs: map[string]string{"": dir}, fd: -1}
	if err := g.apply(l); err != nil {
		g.close()
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		g.close()
		return nil, errs.Wrap(errs.Unavailable, err, "limits: open cgroup")
	}
	g.fd = fd
	return g, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (g *group) apply(l sandbox.Limits) error {
	set := func(ctrl, file, value string) error {
		dir := g.dirs[ctrl]
		if g.version == "v2" {
			dir = g.dirs[""]
		}
		if err := writeFile(filepath.Join(dir, file), value); err != nil {
			return errs.Wrap(errs.Unavailable, err, "limits: set %s to %s", file, value)
		}
		return nil
	}
	if g.version == "v1" {
		if l.MemoryBytes > 0 {
			v := strconv.FormatInt(l.MemoryBytes, 10)
			if err := set("memory", "memory.limit_in_bytes", v); err != nil {
				return err
			}
			// Without swap accounting the box could page out past the
			// limit; where the file exists, cap memory plus swap too.
			if _, err := os.Stat(filepath.Join(g.dirs["memory"], "memory.memsw.limit_in_bytes")); err == nil {
				if err := set("memory", "memory.memsw.limit_in_bytes", v); err != nil {
					return err
				}
			}
		}
		if l.CPU > 0 {
			if err := set("cpu", "cpu.cfs_period_us", "100000"); err != nil {
				return err
			}
			q := int64(l.CPU * 100000)
			if q < 1000 {
				q = 1000
			}
			if err := set("cpu", "cpu.cfs_quota_us", strconv.FormatInt(q, 10)); err != nil {
				return err
			}
		}
		if l.Pids > 0 {
			if err := set("pids", "pids.max", strconv.Itoa(l.Pids)); err != nil {
				return err
			}
		}
		return nil
	}
	if l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		if err := set("", "memory.max", v); err != nil {
			return err
		}
		if err := set("", "memory.swap.max", "0"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if l.CPU > 0 {
		q := int64(l.CPU * 100000)
		if q < 1000 {
			q = 1000
		}
		if err := set("", "cpu.max", fmt.Sprintf("%d 100000", q)); err != nil {
			return err
		}
	}
	if l.Pids > 0 {
		if err := set("", "pids.max", strconv.Itoa(l.Pids)); err != nil {
			return err
		}
	}
	return nil
}

func (g *group) controllers() []string {
	var out []string
	for c := range g.dirs {
		if c != "" {
			out = append(out, c)
		}
	}
	if g.version == "v2" {
		data, _ := os.ReadFile(filepath.Join(g.dirs[""], "cgroup.controllers"))
		out = strings.Fields(string(data))
	}
	sort.Strings(out)
	return out
}

// start runs cmd.Start so that the new process begins inside the group.
// v2: CLONE_INTO_CGROUP. v1: the starting thread joins the group's tasks
// for the fork (a child inherits the forking thread's cgroups) and leaves
// again; the goroutine is locked to that thread meanwhile.
func (g *group) start(cmd *exec.Cmd) error {
	if g.version == "v2" {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = g.fd
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := strconv.Itoa(unix.Gettid())
	var joined []string
	leave := func() {
		for _, c := range joined {
			writeFile(filepath.Join(g.home[c], "tasks"), tid)
		}
	}
	for c, dir := range g.dirs {
		if err := writeFile(filepath.Join(dir, "tasks"), tid); err != nil {
			leave()
			return fmt.Errorf("join cgroup %s: %w", dir, err)
		}
		joined = append(joined, c)
	}
	err := cmd.Start()
	leave()
	return err
}

// procsDir is the directory whose cgroup.procs lists every process of the
// run.
func (g *group) procsDir() string {
	if g.version == "v2" {
		return g.dirs[""]
	}
	if d, ok := g.dirs["pids"]; ok {
		return d
	}
	for _, d := range g.dirs {
		return d
	}
	return ""
}

// kill ends every process in the group and waits until it is empty.
func (g *group) kill() {
	sandbox.KillCgroup(g.version, g.procsDir())
}

func (g *group) oom() bool {
	var path, key string
	if g.version == "v2" {
		path, key = filepath.Join(g.dirs[""], "memory.events"), "oom_kill"
	} else if d, ok := g.dirs["memory"]; ok {
		path, key = filepath.Join(d, "memory.oom_control"), "oom_kill"
	} else {
		return false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key && f[1] != "0" {
			return true
		}
	}
	if g.version == "v1" {
		fc, _ := os.ReadFile(filepath.Join(g.dirs["memory"], "memory.failcnt"))
		return strings.TrimSpace(string(fc)) != "0" && len(fc) > 0
	}
	return false
}

// paths are the run's directories for the guard, the one listing every
// process first.
func (g *group) paths() []string {
	out := []string{g.procsDir()}
	for _, d := range g.dirs {
		if d != out[0] {
			out = append(out, d)
		}
	}
	return out
}

func (g *group) close() {
	g.kill()
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
	for _, d := range g.dirs {
		removeCgroup(d)
	}
}

func removeCgroup(dir string) {
	for i := 0; i < 100; i++ {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}
