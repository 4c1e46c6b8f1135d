package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/airlock-run/airlock/errs"
)

// runningFile, in a job's directory, marks a run this node started and has
// not seen end: what a node that died mid-run leaves, and reaps at its next
// start.
const runningFile = "running"

// lostFile replaces runningFile once a restarted node reaped the run.
const lostFile = "lost"

// runMark is what runningFile holds: the node process that ran the job.
// The runner names each box's cgroup airlock-<that pid>-..., so the mark
// says which cgroups were the dead node's.
type runMark struct {
	Pid int `json:"pid"`
}

// markRunning records that the job in dir is running under this process.
func markRunning(dir string) error {
	b, _ := json.Marshal(runMark{Pid: os.Getpid()})
	if err := os.WriteFile(filepath.Join(dir, runningFile), b, 0o600); err != nil {
		return errs.Wrap(errs.Unavailable, err, "node: mark the run")
	}
	return nil
}

// unmarkRunning records that the job in dir ended and its box is gone.
func unmarkRunning(dir string) { os.Remove(filepath.Join(dir, runningFile)) }

// reapLost ends what runs this node's state directory marks as running
// were left by a node process that died (SIGKILL, a crash, a power cut):
// every process still in one of their boxes. A tier-1 box dies with its
// node (bubblewrap's PID namespace ends with its parent); a tier-0 run's
// children, and anything a box left that outlived its namespace, do not,
// and would run on unwatched. It returns the jobs reaped.
func reapLost(stateDir string, log *slog.Logger) ([]string, error) {
	marks, err := filepath.Glob(filepath.Join(stateDir, "jobs", "*", runningFile))
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "node: find lost runs")
	}
	var reaped []string
	var failed []error
	for _, m := range marks {
		dir := filepath.Dir(m)
		id := filepath.Base(dir)
		var mark runMark
		b, err := os.ReadFile(m)
		if err == nil {
			err = json.Unmarshal(b, &mark)
		}
		if err != nil || mark.Pid <= 0 {
			failed = append(failed, errs.Invalidf("node: job %s: run mark %s unreadable (%v): end the job's processes by hand, then remove the mark", id, m, err))
			continue
		}
		if mark.Pid != os.Getpid() && processAlive(mark.Pid) && sameProgram(mark.Pid) {
			return reaped, errs.Unavailablef("node: state directory %s is in use by process %d (another node on it?): stop it, or give this node its own --state", stateDir, mark.Pid)
		}
		n, err := killBox(dir, mark.Pid)
		if err != nil {
			failed = append(failed, fmt.Errorf("node: job %s: %w", id, err))
			continue
		}
		if err := os.Rename(m, filepath.Join(dir, lostFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			failed = append(failed, errs.Wrap(errs.Unavailable, err, "node: job %s: mark it lost", id))
		}
		log.Warn("node: reaped a run the previous node process left", "job", id, "processes", n)
		reaped = append(reaped, id)
	}
	return reaped, errors.Join(failed...)
}
