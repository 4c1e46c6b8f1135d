package node

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
)

// reapRounds bounds the kill's rounds: each round kills what it finds,
// and a process forked meanwhile is found by the next.
const reapRounds = 100

// killBox kills every process of the run in dir that node process pid
// started: those in one of its cgroups (airlock-<pid>-*, the runner's
// names; a box's whole tree starts in its group and cannot leave it
// without privilege the box lacks) and, for a run of this same process
// (whose other boxes must be spared), those working under dir. It
// returns how many it killed, and fails if any outlives the rounds.
func killBox(dir string, pid int) (int, error) {
	group := "/airlock-" + strconv.Itoa(pid) + "-"
	byGroup := pid != os.Getpid()
	mounts := cgroupMounts()
	groups := map[string]bool{}
	killed := 0
	for range reapRounds {
		found := 0
		for _, p := range processes() {
			if p == os.Getpid() {
				continue
			}
			var dirs []string
			if byGroup {
				dirs = groupDirs(p, group, mounts)
			}
			if len(dirs) == 0 && !worksUnder(p, dir) {
				continue
			}
			for _, d := range dirs {
				groups[d] = true
				// A group the dead node froze (the v1 freezer while it
				// started or killed a box) holds its processes past any
				// signal until thawed.
				thaw(d)
			}
			unix.Kill(p, unix.SIGKILL)
			found++
		}
		if found == 0 {
			// Empty now: the groups go too (rmdir removes only an empty
			// one).
			for d := range groups {
				unix.Rmdir(d)
			}
			return killed, nil
		}
		killed += found
		time.Sleep(20 * time.Millisecond)
	}
	return killed, errs.Unavailablef("processes of the run in %s outlived %d rounds of SIGKILL", dir, reapRounds)
}

// cgroupMount is a mounted cgroup hierarchy: v1 with its controllers, or
// v2 (controllers empty, v2 set).
type cgroupMount struct {
	root, point string
	controllers []string
	v2          bool
}

// cgroupMounts reads this process's mounted cgroup hierarchies.
func cgroupMounts() []cgroupMount {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []cgroupMount
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		switch g[0] {
		case "cgroup2":
			out = append(out, cgroupMount{root: f[3], point: f[4], v2: true})
		case "cgroup":
			var cs []string
			for _, o := range strings.Split(g[2], ",") {
				if o != "rw" && o != "ro" && !strings.Contains(o, "=") {
					cs = append(cs, o)
				}
			}
			out = append(out, cgroupMount{root: f[3], point: f[4], controllers: cs})
		}
	}
	return out
}

// groupDirs are the directories of process p's cgroups whose path holds
// group, in every hierarchy mounted here. A process that ended but is not
// reaped yet has none.
func groupDirs(p int, group string, mounts []cgroupMount) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cgroup")
	if err != nil || zombie(p) {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.Contains(parts[2], group) {
			continue
		}
		for _, m := range mounts {
			if (parts[1] == "" && m.v2) || (parts[1] != "" && !m.v2 && sameControllers(parts[1], m.controllers)) {
				rel := strings.TrimPrefix(parts[2], m.root)
				out = append(out, filepath.Join(m.point, rel))
			}
		}
	}
	return out
}

func sameControllers(list string, cs []string) bool {
	got := strings.Split(list, ",")
	if len(got) != len(cs) {
		return false
	}
	for _, c := range got {
		if !slices.Contains(cs, c) {
			return false
		}
	}
	return true
}

// thaw unfreezes the group in d, on either version; a group with no
// freezer has no such file and is left as it is.
func thaw(d string) {
	if _, err := os.Stat(filepath.Join(d, "freezer.state")); err == nil {
		os.WriteFile(filepath.Join(d, "freezer.state"), []byte("THAWED"), 0)
	}
	if _, err := os.Stat(filepath.Join(d, "cgroup.freeze")); err == nil {
		os.WriteFile(filepath.Join(d, "cgroup.freeze"), []byte("0"), 0)
	}
}

// processes lists the host's process ids.
func processes() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if p, err := strconv.Atoi(e.Name()); err == nil && p > 0 {
			out = append(out, p)
		}
	}
	return out
}

// worksUnder reports whether process p's working directory is dir or
// below it.
func worksUnder(p int, dir string) bool {
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(p) + "/cwd")
	if err != nil || zombie(p) {
		return false
	}
	return cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator))
}

// zombie reports whether process p has ended and waits to be reaped.
func zombie(p int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command's closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// processAlive reports whether process p exists (and is not a zombie).
func processAlive(p int) bool {
	return unix.Kill(p, 0) == nil && !zombie(p)
}

// sameProgram reports whether process p runs this process's executable:
// a live node on the same state directory, not a stranger that got the
// dead node's pid.
func sameProgram(p int) bool {
	self, err1 := os.Readlink("/proc/self/exe")
	other, err2 := os.Readlink("/proc/" + strconv.Itoa(p) + "/exe")
	return err1 == nil && err2 == nil && self == other
}
