package sandbox

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// GuardArg selects the guard after InitArg on the airlock command line.
const GuardArg = "guard"

// GuardConfig is the first line the runner sends its guard: what to clean
// if the runner dies before it could.
type GuardConfig struct {
	Stubs []Stub `json:"stubs,omitempty"`
	// CgroupVersion is "v1" or "v2"; Cgroups are the run's directories,
	// the first listing every process of the run.
	CgroupVersion string   `json:"cgroup_version,omitempty"`
	Cgroups       []string `json:"cgroups,omitempty"`
	// Runner is the pid of the runner that started the guard. Its shared
	// flocks on the stubs outlive the end of the guard's input: a killed
	// process's files are released in no set order, so the input can end
	// while the flocks still hold, and a stub removed then would be seen
	// as another run's and left in the tree. The guard waits for the
	// runner's exit, after which it holds nothing.
	Runner int `json:"runner,omitempty"`
}

// GuardPid is the second line: the host pid of the box's PID 1, whose
// exit means every process of the box is gone (or bubblewrap's, when that
// could not be had).
type GuardPid struct {
	Pid int `json:"pid"`
}

// GuardDone is the last line of a run that cleaned up after itself.
const GuardDone = "done"

// Guard is the cleanup guard: a small process of airlock's own, outside the
// box and in a session of its own, that reads its orders on in. When the
// runner ends normally it says GuardDone and the guard exits. When the
// runner dies (in reaches EOF without GuardDone), the guard ends every
// process of the box, and only then removes the stubs (removing a stub while
// the box lives would unmount its protection) and the cgroups. It returns
// the exit status.
func Guard(in io.Reader) int {
	br := bufio.NewReader(in)
	var cfg GuardConfig
	line, err := br.ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &cfg) != nil {
		return 0
	}
	// Opened while the runner is alive (it wrote the line just read); if
	// it is already gone, there is nothing of it to wait for.
	runner := -1
	if cfg.Runner > 0 {
		if fd, err := unix.PidfdOpen(cfg.Runner, 0); err == nil {
			runner = fd
		}
	}
	pidfd := -1
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			break
		}
		s := strings.TrimSpace(string(line))
		if s == GuardDone {
			return 0
		}
		var gp GuardPid
		if json.Unmarshal(line, &gp) == nil && gp.Pid > 0 && pidfd < 0 {
			if fd, err := unix.PidfdOpen(gp.Pid, 0); err == nil {
				pidfd = fd
			}
		}
	}
	// The runner is going: once its exit is reported, the kernel has
	// released every file it held, its flocks on the stubs too.
	if runner >= 0 {
		waitExit(runner, 10*time.Second)
	}
	if len(cfg.Cgroups) > 0 {
		killCgroup(cfg.CgroupVersion, cfg.Cgroups[0])
	} else if pidfd >= 0 {
		// The box's PID 1 dies with bubblewrap (--die-with-parent), and
		// the kernel has ended every process of its namespace before the
		// pidfd reports its exit.
		waitExit(pidfd, 10*time.Second)
	}
	RemoveStubs(cfg.Stubs)
	for i := len(cfg.Cgroups) - 1; i >= 0; i-- {
		for j := 0; j < 100; j++ {
			if err := unix.Rmdir(cfg.Cgroups[i]); err == nil || err == unix.ENOENT {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return 0
}

// waitExit waits until the process of pidfd has exited, at most d; a
// signal that interrupts the wait does not end it.
func waitExit(pidfd int, d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(left.Milliseconds())+1); err != unix.EINTR {
			return
		}
	}
}

// killCgroup sends SIGKILL to every process in the cgroup directory until it
// is empty (at most a few seconds).
func killCgroup(version, dir string) {
	if version == "v2" {
		os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return
		}
		pids := strings.Fields(string(data))
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if n, err := strconv.Atoi(p); err == nil && n > 0 {
				syscall.Kill(n, syscall.SIGKILL)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}
