package runner

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/cgroup"
)

// group is the cgroup a run's whole process tree starts in (package
// sandbox/cgroup). It is placed outermost: bubblewrap itself starts inside
// it, so nothing the command spawns can leave it or multiply the budget.
type group struct {
	g       *cgroup.Group
	version string
}

// groupName names a run's groups: airlock-<runner pid>-<random>, so a
// later run can tell a group whose runner died. The random part is 48
// bits of the runtime's generator (seeded by the kernel for each
// process): a name taken already fails New, never adopts the group, and
// crypto/rand's first use costs a start the memory of its per-thread
// state.
func groupName() string {
	return strconv.Itoa(os.Getpid()) + "-" + fmt.Sprintf("%012x", rand.Uint64()&(1<<48-1))
}

// newGroup makes a cgroup with the limits l, or fails with errs.Unavailable
// naming the limit and the fix. It first removes the empty groups of runs
// whose airlock died without a guard.
func newGroup(l sandbox.Limits) (*group, error) {
	g, err := cgroup.New(groupName(), cgroup.Limits{MemoryBytes: l.MemoryBytes, CPU: l.CPU, Pids: l.Pids})
	if err != nil {
		return nil, err
	}
	// Off the run's path: the sweep only tidies after runs long gone.
	parents := g.Dirs()
	go func() {
		for _, d := range parents {
			sweepStale(filepath.Dir(d))
		}
	}()
	return &group{g: g, version: "v" + strconv.Itoa(g.Version())}, nil
}

// sweepStale removes airlock-<pid>-* groups in parent whose pid is gone.
// rmdir only succeeds on an empty group, so a live one is never touched.
func sweepStale(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "airlock-")
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			unix.Rmdir(filepath.Join(parent, e.Name()))
		}
	}
}

func (g *group) controllers() []string { return g.g.Controllers() }

// start runs cmd.Start so that the new process begins inside the group.
func (g *group) start(cmd *exec.Cmd) error { return g.g.Start(cmd.SysProcAttr, cmd.Start) }

// kill ends every process in the group and waits until it is empty.
func (g *group) kill() { g.g.Kill() }

func (g *group) oom() bool { return g.g.OOM() }

// paths are the run's directories for the guard, one listing every process
// first.
func (g *group) paths() []string { return g.g.Dirs() }

func (g *group) close() { g.g.Close() }
