package node

import (
	"bytes"
	"os"
	"path/filepath"
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
	group := []byte("/airlock-" + strconv.Itoa(pid) + "-")
	byGroup := pid != os.Getpid()
	killed := 0
	for range reapRounds {
		found := 0
		for _, p := range processes() {
			if p == os.Getpid() {
				continue
			}
			if (byGroup && inGroup(p, group)) || worksUnder(p, dir) {
				unix.Kill(p, unix.SIGKILL)
				found++
			}
		}
		if found == 0 {
			return killed, nil
		}
		killed += found
		time.Sleep(20 * time.Millisecond)
	}
	return killed, errs.Unavailablef("processes of the run in %s outlived %d rounds of SIGKILL", dir, reapRounds)
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

// inGroup reports whether process p is in a cgroup whose path holds
// group. A process that ended but is not reaped yet is not counted.
func inGroup(p int, group []byte) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cgroup")
	if err != nil || zombie(p) {
		return false
	}
	return bytes.Contains(b, group)
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
